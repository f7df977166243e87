// src/extension.js without a VS Code host: `vscode` and the language client replaced by
// recording fakes, so the wiring is checked (the server found or refused with its message,
// the client's options, the commands' documents, a restart on a settings change).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const Module = require('module');
const path = require('path');

/** A fresh fake host with SETTINGS; returns it and the loaded extension module. */
function load(settings) {
  const host = {
    settings: { serverPath: '', fslcPath: 'fslc', serverArgs: [], serverLog: 'error', ...settings },
    errors: [], warnings: [], commands: {}, providers: {}, clients: [], shown: [], configListeners: [],
    activeTextEditor: undefined,
  };
  class EventEmitter {
    constructor() { this.listeners = []; this.event = (listener) => this.listeners.push(listener); }
    fire(value) { this.listeners.forEach((listener) => listener(value)); }
    dispose() {}
  }
  const disposable = { dispose() {} };
  const vscode = {
    EventEmitter,
    ViewColumn: { Beside: -2 },
    Uri: { from: (parts) => ({ ...parts, toString: () => `${parts.scheme}:${parts.path}?${parts.query}` }) },
    window: {
      createOutputChannel: () => ({ info() {}, error() {}, dispose() {} }),
      showErrorMessage: (message) => { host.errors.push(message); return Promise.resolve(undefined); },
      showWarningMessage: (message) => { host.warnings.push(message); return Promise.resolve(undefined); },
      get activeTextEditor() { return host.activeTextEditor; },
      showTextDocument: async (document, options) => { host.shown.push({ document, options }); },
    },
    workspace: {
      workspaceFolders: [{ uri: { fsPath: '/w' } }],
      getConfiguration: () => ({ get: (name) => host.settings[name] }),
      registerTextDocumentContentProvider: (scheme, provider) => { host.providers[scheme] = provider; return disposable; },
      onDidChangeConfiguration: (listener) => { host.configListeners.push(listener); return disposable; },
      onDidCloseTextDocument: () => disposable,
      openTextDocument: async (uri) => ({ uri, text: host.providers[uri.scheme].provideTextDocumentContent(uri) }),
    },
    languages: { setTextDocumentLanguage: async (document, languageId) => ({ ...document, languageId }) },
    commands: {
      registerCommand: (id, run) => { host.commands[id] = run; return disposable; },
      executeCommand: async () => {},
    },
  };
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, requests: [], stopped: false });
      this.code2ProtocolConverter = { asUri: (uri) => `file://${uri.fsPath}` };
      host.clients.push(this);
    }
    async start() {}
    async stop() { this.stopped = true; }
    isRunning() { return !this.stopped; }
    async sendRequest(method, params) {
      this.requests.push({ method, params });
      return { fusion: 'twice', language: 'cuda', text: '// ---- twice.h\n' };
    }
  }
  const client = { LanguageClient, RevealOutputChannelOn: { Never: 4 }, TransportKind: { stdio: 0 } };

  const source = path.join(__dirname, '..', 'src', 'extension.js');
  delete require.cache[source];
  const originalLoad = Module._load;
  Module._load = function (request, ...rest) {
    if (request === 'vscode') return vscode;
    if (request === 'vscode-languageclient/node') return client;
    return originalLoad.call(this, request, ...rest);
  };
  try {
    return { host, extension: require(source) };
  } finally {
    Module._load = originalLoad;
  }
}

test('no server: no client, an error saying what to set; the commands still answer', async () => {
  const { host, extension } = load({ serverPath: '/nope/fsl-lsp' });
  await extension.activate({ subscriptions: [] });
  assert.strictEqual(host.clients.length, 0);
  assert.strictEqual(host.errors.length, 1);
  assert.match(host.errors[0], /^FSL: fsl\.serverPath is '\/nope\/fsl-lsp' .* not an executable file; set fsl\.serverPath/);
  assert.deepStrictEqual(Object.keys(host.commands).sort(), ['fsl.openGeneratedCuda', 'fsl.openKernelIR', 'fsl.restartServer']);
  host.activeTextEditor = { document: { languageId: 'fsl', uri: { fsPath: '/w/a.fsl' } }, selection: { active: { line: 0, character: 0 } } };
  await host.commands['fsl.openGeneratedCuda']();
  assert.match(host.errors[1], /Show Generated CUDA: the language server is not running/);
});

test('the client starts the found server with the built arguments, in the workspace folder', async () => {
  const { host, extension } = load({ serverPath: process.execPath, serverArgs: ['-I', 'lib'], serverLog: 'info' });
  await extension.activate({ subscriptions: [] });
  assert.deepStrictEqual(host.errors, []);
  const [client] = host.clients;
  assert.strictEqual(client.id, 'fsl');
  assert.deepStrictEqual(client.serverOptions, { command: process.execPath, args: ['--log=info', '-I', 'lib'], transport: 0, options: { cwd: '/w' } });
  assert.deepStrictEqual(client.clientOptions.documentSelector, [{ scheme: 'file', language: 'fsl' }]);
  assert.strictEqual(client.clientOptions.revealOutputChannelOn, 4);
  await extension.deactivate();
  assert.ok(client.stopped);
});

test('Show Generated CUDA asks for the cursor\'s fusion and shows twice.cu beside, in cuda-cpp', async () => {
  const { host, extension } = load({ serverPath: process.execPath });
  await extension.activate({ subscriptions: [] });
  host.activeTextEditor = { document: { languageId: 'fsl', uri: { fsPath: '/w/a.fsl', toString: () => 'file:///w/a.fsl' } }, selection: { active: { line: 3, character: 5 } } };
  await host.commands['fsl.openGeneratedCuda']();
  assert.deepStrictEqual(host.errors, []);
  assert.deepStrictEqual(host.clients[0].requests, [{ method: 'workspace/executeCommand',
    params: { command: 'fsl.showGeneratedCuda', arguments: [{ uri: 'file:///w/a.fsl', position: { line: 3, character: 5 } }] } }]);
  const [{ document, options }] = host.shown;
  assert.strictEqual(document.uri.scheme, 'fsl-generated');
  assert.strictEqual(document.uri.path, '/twice.cu');
  assert.strictEqual(document.languageId, 'cuda-cpp');
  assert.strictEqual(document.text, '// ---- twice.h\n');
  assert.strictEqual(options.viewColumn, -2);

  host.activeTextEditor = { document: { languageId: 'plaintext' } };
  await host.commands['fsl.openKernelIR']();
  assert.match(host.warnings[0], /Show Kernel IR: put the cursor in a fusion of an \.fsl file/);
});

test('a change of a server setting restarts the client; another setting does not', async () => {
  const { host, extension } = load({ serverPath: process.execPath });
  await extension.activate({ subscriptions: [] });
  const changed = (name) => ({ affectsConfiguration: (setting) => setting === name });
  host.configListeners.forEach((listener) => listener(changed('editor.tabSize')));
  await new Promise((resolve) => setImmediate(resolve));
  assert.strictEqual(host.clients.length, 1);
  host.settings.serverArgs = ['--target=h100'];
  host.configListeners.forEach((listener) => listener(changed('fsl.serverArgs')));
  await new Promise((resolve) => setImmediate(resolve));
  assert.strictEqual(host.clients.length, 2);
  assert.ok(host.clients[0].stopped);
  assert.deepStrictEqual(host.clients[1].serverOptions.args, ['--target=h100']);
});
