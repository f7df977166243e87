// generatedDocuments.js — the commands "FSL: Show Generated CUDA" and "FSL: Show Kernel IR":
// the request each sends to fsl-lsp (workspace/executeCommand) and the document made of its
// answer, { fusion, language, text } (docs/lsp.md).
//
// No `vscode` import: the request goes through the `sendRequest` it is given (the language
// client's in the editor, a JSON-RPC connection in the tests), so Node's test runner drives
// it against the real server.
'use strict';

/**
 * The extension's commands. Their ids differ from the server's: the language client
 * registers the server's own command ids (executeCommandProvider) itself, and a second
 * registration of the same id would fail.
 */
const COMMANDS = {
  'fsl.openGeneratedCuda': { title: 'Show Generated CUDA', serverCommand: 'fsl.showGeneratedCuda', language: 'cuda' },
  'fsl.openKernelIR': { title: 'Show Kernel IR', serverCommand: 'fsl.showKernelIR', language: 'kernel-ir' },
};

/** The server's `language` values: the shown document's file extension and VS Code language. */
const LANGUAGES = {
  cuda: { extension: '.cu', languageId: 'cuda-cpp' },
  'kernel-ir': { extension: '.kir', languageId: 'plaintext' },
};

/** The commands' one argument: the document and the cursor, as the protocol writes them. */
function commandArgument(uri, position) {
  return { uri, position: { line: position.line, character: position.character } };
}

/**
 * Checks the server's answer to COMMAND and returns the document to show:
 * { fusion, fileName, languageId, text }. Throws an Error quoting what came back when it is
 * not the documented shape or not the language asked for.
 */
function toGeneratedDocument(result, command) {
  const shape = 'fsl-lsp answered';
  if (result === null || typeof result !== 'object' || Array.isArray(result))
    throw new Error(`${shape} ${JSON.stringify(result)}, not {fusion, language, text}`);
  if (typeof result.fusion !== 'string' || result.fusion === '')
    throw new Error(`${shape} without a fusion name: ${JSON.stringify(result.fusion)}`);
  if (typeof result.text !== 'string')
    throw new Error(`${shape} without a text for fusion '${result.fusion}'`);
  if (result.language !== command.language)
    throw new Error(`${shape} ${JSON.stringify(result.language)} for ${command.title}, which expects '${command.language}'`);
  const language = LANGUAGES[result.language];
  return {
    fusion: result.fusion,
    fileName: result.fusion + language.extension,
    languageId: language.languageId,
    text: result.text,
  };
}

/**
 * Runs COMMAND (an entry of COMMANDS) on the fusion at POSITION of the document URI (the
 * URI as the server knows it). sendRequest(method, params) returns a promise of the result;
 * a server error (no fusion there, a file with errors) rejects with the server's message.
 */
async function requestGenerated(sendRequest, command, uri, position) {
  const result = await sendRequest('workspace/executeCommand', {
    command: command.serverCommand,
    arguments: [commandArgument(uri, position)],
  });
  return toGeneratedDocument(result, command);
}

module.exports = { COMMANDS, LANGUAGES, commandArgument, toGeneratedDocument, requestGenerated };
