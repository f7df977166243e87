// Unit tests of the server's location (src/serverLocation.js) on a fake file system.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { resolveServer } = require('../src/serverLocation');

/** A file system with the executables EXECUTABLES and the links LINKS (path -> target). */
function system(executables, links = {}) {
  return {
    isExecutable: (file) => executables.includes(file),
    realpath: (file) => links[file] || file,
  };
}

const context = { workspaceFolder: '/w', envPath: ['/usr/local/bin', '', '/usr/bin'].join(path.delimiter), home: '/home/u' };

test('fsl.serverPath wins when it names an executable', () => {
  const found = resolveServer({ serverPath: '/opt/x/fsl-lsp', fslcPath: 'fslc' }, context,
    system(['/opt/x/fsl-lsp', '/usr/bin/fslc', '/usr/bin/fsl-lsp']));
  assert.deepStrictEqual(found, { command: '/opt/x/fsl-lsp', from: 'fsl.serverPath' });
});

test('fsl.serverPath expands ~, ${workspaceFolder} and workspace-relative paths; a bare name is looked up on the PATH', () => {
  const fs = system(['/home/u/bin/fsl-lsp', '/w/build/bin/fsl-lsp', '/usr/bin/my-lsp']);
  assert.strictEqual(resolveServer({ serverPath: '~/bin/fsl-lsp' }, context, fs).command, '/home/u/bin/fsl-lsp');
  assert.strictEqual(resolveServer({ serverPath: '${workspaceFolder}/build/bin/fsl-lsp' }, context, fs).command, '/w/build/bin/fsl-lsp');
  assert.strictEqual(resolveServer({ serverPath: 'build/bin/fsl-lsp' }, context, fs).command, '/w/build/bin/fsl-lsp');
  assert.strictEqual(resolveServer({ serverPath: 'my-lsp' }, context, fs).command, '/usr/bin/my-lsp');
});

test('a wrong fsl.serverPath is an error naming it, with no fallback to the others', () => {
  const fs = system(['/usr/bin/fslc', '/usr/bin/fsl-lsp']);
  const missing = resolveServer({ serverPath: '/nope/fsl-lsp' }, context, fs);
  assert.strictEqual(missing.command, undefined);
  assert.match(missing.error, /fsl\.serverPath is '\/nope\/fsl-lsp' \(\/nope\/fsl-lsp\), which is not an executable file/);
  assert.match(missing.error, /set fsl\.serverPath/);
  assert.match(resolveServer({ serverPath: 'fsl-lsp-9' }, context, fs).error, /'fsl-lsp-9', which is not on the PATH/);
  assert.match(resolveServer({ serverPath: 'rel/fsl-lsp' }, { ...context, workspaceFolder: undefined }, fs).error,
    /relative path 'rel\/fsl-lsp' but no folder is open/);
  assert.match(resolveServer({ serverPath: '${workspaceFolder}/x' }, { ...context, workspaceFolder: undefined }, fs).error,
    /\$\{workspaceFolder\} but no folder is open/);
});

test('empty fsl.serverPath: the fsl-lsp next to fslc comes before the PATH', () => {
  const fs = system(['/opt/fslc/bin/fslc', '/opt/fslc/bin/fsl-lsp', '/usr/bin/fsl-lsp']);
  assert.deepStrictEqual(resolveServer({ serverPath: '', fslcPath: '/opt/fslc/bin/fslc' }, context, fs),
    { command: '/opt/fslc/bin/fsl-lsp', from: 'next to fslc (/opt/fslc/bin/fslc)' });
  // Whitespace is no setting either.
  assert.strictEqual(resolveServer({ serverPath: '  ', fslcPath: '/opt/fslc/bin/fslc' }, context, fs).command,
    '/opt/fslc/bin/fsl-lsp');
});

test('fslc found on the PATH through a link: fsl-lsp next to the link target', () => {
  const fs = system(['/usr/local/bin/fslc', '/opt/fslc/bin/fslc', '/opt/fslc/bin/fsl-lsp'],
    { '/usr/local/bin/fslc': '/opt/fslc/bin/fslc' });
  assert.deepStrictEqual(resolveServer({ serverPath: '', fslcPath: 'fslc' }, context, fs),
    { command: '/opt/fslc/bin/fsl-lsp', from: 'next to fslc (/usr/local/bin/fslc)' });
});

test('no fsl-lsp next to fslc: the PATH; an empty PATH entry (the current directory) is not searched', () => {
  const fs = system(['/usr/local/bin/fslc', '/usr/bin/fsl-lsp', 'fsl-lsp']);
  assert.deepStrictEqual(resolveServer({ serverPath: '', fslcPath: 'fslc' }, context, fs),
    { command: '/usr/bin/fsl-lsp', from: 'the PATH' });
});

test('nothing found: the error says where it looked and what to set', () => {
  const withFslc = resolveServer({ serverPath: '', fslcPath: '/opt/fslc/bin/fslc' }, context, system(['/opt/fslc/bin/fslc']));
  assert.strictEqual(withFslc.command, undefined);
  assert.match(withFslc.error, /fsl\.serverPath is not set/);
  assert.match(withFslc.error, /no fsl-lsp next to fslc \(\/opt\/fslc\/bin\/fsl-lsp\)/);
  assert.match(withFslc.error, /the PATH has no fsl-lsp/);
  assert.match(withFslc.error, /Set fsl\.serverPath to the fsl-lsp executable, or fsl\.fslcPath/);
  const withoutFslc = resolveServer({ serverPath: '', fslcPath: '' }, context, system([]));
  assert.match(withoutFslc.error, /fsl\.fslcPath is 'fslc', which is not on the PATH/);
});
