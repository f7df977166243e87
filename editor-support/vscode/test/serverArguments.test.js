// Unit tests of fsl-lsp's command line from the settings (src/serverArguments.js).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { serverArguments } = require('../src/serverArguments');

test('the defaults give no arguments (the server logs errors only)', () => {
  assert.deepStrictEqual(serverArguments({ serverArgs: [], serverLog: 'error' }), []);
  assert.deepStrictEqual(serverArguments({}), []);
});

test('fsl.serverLog becomes --log=LEVEL before fsl.serverArgs, which keep their order', () => {
  assert.deepStrictEqual(serverArguments({ serverArgs: ['-I', 'lib', '--target=h100'], serverLog: 'info' }),
    ['--log=info', '-I', 'lib', '--target=h100']);
  assert.deepStrictEqual(serverArguments({ serverArgs: [], serverLog: 'verbose' }), ['--log=verbose']);
});

test('a --log in fsl.serverArgs wins: the server accepts the flag once', () => {
  assert.deepStrictEqual(serverArguments({ serverArgs: ['--log=verbose'], serverLog: 'info' }), ['--log=verbose']);
  assert.deepStrictEqual(serverArguments({ serverArgs: ['--log', 'info'], serverLog: 'verbose' }), ['--log', 'info']);
  // --logfile is not --log.
  assert.deepStrictEqual(serverArguments({ serverArgs: ['--logfile'], serverLog: 'info' }), ['--log=info', '--logfile']);
});

test('settings of the wrong type are errors that show the offending value', () => {
  assert.throws(() => serverArguments({ serverArgs: '-I lib' }), /fsl\.serverArgs must be a list of strings, not "-I lib"/);
  assert.throws(() => serverArguments({ serverArgs: ['-I', 3] }), /fsl\.serverArgs\[1\] must be a string, not 3/);
  assert.throws(() => serverArguments({ serverArgs: [], serverLog: 'debug' }), /fsl\.serverLog is "debug"; it must be one of error, info, verbose/);
});
