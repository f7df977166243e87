// Unit tests of the commands' requests and answers (src/generatedDocuments.js).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { COMMANDS, commandArgument, toGeneratedDocument, requestGenerated } = require('../src/generatedDocuments');

const cuda = COMMANDS['fsl.openGeneratedCuda'];
const kir = COMMANDS['fsl.openKernelIR'];

test('the request is the server command with one {uri, position} argument', async () => {
  const sent = [];
  const sendRequest = async (method, params) => {
    sent.push({ method, params });
    return { fusion: 'softmax', language: 'kernel-ir', text: 'program softmax\n' };
  };
  // A vscode.Position carries more than line and character; only those two are sent.
  const position = { line: 4, character: 7, isBefore() {} };
  const shown = await requestGenerated(sendRequest, kir, 'file:///w/a.fsl', position);
  assert.deepStrictEqual(sent, [{
    method: 'workspace/executeCommand',
    params: { command: 'fsl.showKernelIR', arguments: [{ uri: 'file:///w/a.fsl', position: { line: 4, character: 7 } }] },
  }]);
  assert.deepStrictEqual(shown, { fusion: 'softmax', fileName: 'softmax.kir', languageId: 'plaintext', text: 'program softmax\n' });
  assert.deepStrictEqual(commandArgument('u', position), { uri: 'u', position: { line: 4, character: 7 } });
});

test('CUDA is shown as a .cu document in cuda-cpp', () => {
  const shown = toGeneratedDocument({ fusion: 'matmul', language: 'cuda', text: '// ---- matmul.h\n' }, cuda);
  assert.deepStrictEqual(shown, { fusion: 'matmul', fileName: 'matmul.cu', languageId: 'cuda-cpp', text: '// ---- matmul.h\n' });
});

test('answers that are not {fusion, language, text} of the language asked for are errors quoting them', () => {
  assert.throws(() => toGeneratedDocument(null, cuda), /fsl-lsp answered null, not \{fusion, language, text\}/);
  assert.throws(() => toGeneratedDocument([], cuda), /answered \[\]/);
  assert.throws(() => toGeneratedDocument({ fusion: '', language: 'cuda', text: '' }, cuda), /without a fusion name: ""/);
  assert.throws(() => toGeneratedDocument({ fusion: 'f', language: 'cuda' }, cuda), /without a text for fusion 'f'/);
  assert.throws(() => toGeneratedDocument({ fusion: 'f', language: 'kernel-ir', text: '' }, cuda),
    /"kernel-ir" for Show Generated CUDA, which expects 'cuda'/);
});

test("a server error (no fusion at the cursor) rejects with the server's message", async () => {
  const sendRequest = async () => {
    throw new Error('no fusion here: put the cursor in a fusion or in one of its schedules');
  };
  await assert.rejects(requestGenerated(sendRequest, cuda, 'file:///w/a.fsl', { line: 0, character: 0 }), /no fusion here/);
});
