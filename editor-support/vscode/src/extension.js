// extension.js — starts fsl-lsp as the language client of .fsl files, and the commands
// that show a fusion's generated CUDA or Kernel IR beside its source.
//
// Everything the server offers (diagnostics, formatting, hover, outline, completion,
// definitions, references, folding, inlay hints) comes through vscode-languageclient; this
// file only finds the server (serverLocation.js), builds its command line
// (serverArguments.js) and shows the commands' answers (generatedDocuments.js).
'use strict';

const os = require('os');
const vscode = require('vscode');
const { LanguageClient, RevealOutputChannelOn, TransportKind } = require('vscode-languageclient/node');
const { resolveServer } = require('./serverLocation');
const { serverArguments } = require('./serverArguments');
const { COMMANDS, requestGenerated } = require('./generatedDocuments');

/** Read-only documents of generated text: fsl-generated:/NAME.cu?SOURCE-URI. */
const GENERATED_SCHEME = 'fsl-generated';

/** The settings that change the server's command line; a change restarts it. */
const SERVER_SETTINGS = ['fsl.serverPath', 'fsl.serverArgs', 'fsl.fslcPath', 'fsl.serverLog'];

function settings() {
  const config = vscode.workspace.getConfiguration('fsl');
  return {
    serverPath: config.get('serverPath'),
    fslcPath: config.get('fslcPath'),
    serverArgs: config.get('serverArgs'),
    serverLog: config.get('serverLog'),
  };
}

function workspaceFolder() {
  const folders = vscode.workspace.workspaceFolders;
  return folders && folders.length > 0 ? folders[0].uri.fsPath : undefined;
}

class FslExtension {
  constructor() {
    // One channel for the extension's own lines and the client's log (it writes with
    // .error/.info, so it must be a log channel); the server's stderr lands there too.
    this.output = vscode.window.createOutputChannel('FSL', { log: true });
    this.client = undefined;
    this.generated = new Map(); // fsl-generated URI string -> text
    this.generatedChanged = new vscode.EventEmitter();
  }

  /** Starts fsl-lsp, or says why it cannot and what to set. */
  async start() {
    const current = settings();
    const folder = workspaceFolder();
    const found = resolveServer(current, { workspaceFolder: folder, envPath: process.env.PATH, home: os.homedir() });
    if (found.error) return this.refuse(found.error, 'fsl.serverPath');
    let args;
    try {
      args = serverArguments(current);
    } catch (error) {
      return this.refuse(error.message, 'fsl.serverArgs');
    }
    this.output.info(`starting ${[found.command, ...args].join(' ')} (found: ${found.from})`);

    const serverOptions = { command: found.command, args, transport: TransportKind.stdio, options: { cwd: folder } };
    const clientOptions = {
      documentSelector: [{ scheme: 'file', language: 'fsl' }],
      outputChannel: this.output,
      // A failed request is normal while typing (formatting a file that does not parse on
      // save, hover in a half-typed line): log it, do not pop up a notification each time.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    };
    this.client = new LanguageClient('fsl', 'FSL language server', serverOptions, clientOptions);
    try {
      await this.client.start();
    } catch (error) {
      this.client = undefined;
      return this.refuse(`fsl-lsp (${found.command}, found: ${found.from}) did not start: ${error.message}`, 'fsl.serverPath');
    }
  }

  async stop() {
    const client = this.client;
    this.client = undefined;
    if (client) await client.stop();
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  refuse(message, setting) {
    this.output.error(message);
    vscode.window.showErrorMessage(`FSL: ${message}`, 'Open Settings').then((choice) => {
      if (choice) vscode.commands.executeCommand('workbench.action.openSettings', setting);
    });
  }

  /** "FSL: Show Generated CUDA" and "FSL: Show Kernel IR": the fusion at the cursor, beside. */
  async showGenerated(command) {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'fsl') {
      vscode.window.showWarningMessage(`FSL: ${command.title}: put the cursor in a fusion of an .fsl file`);
      return;
    }
    if (!this.client || !this.client.isRunning()) {
      vscode.window.showErrorMessage(`FSL: ${command.title}: the language server is not running (see the FSL output)`);
      return;
    }
    const source = editor.document.uri;
    let generated;
    try {
      generated = await requestGenerated(
        (method, params) => this.client.sendRequest(method, params),
        command,
        this.client.code2ProtocolConverter.asUri(source),
        editor.selection.active);
    } catch (error) {
      vscode.window.showErrorMessage(`FSL: ${command.title}: ${error.message}`);
      return;
    }
    const uri = vscode.Uri.from({ scheme: GENERATED_SCHEME, path: `/${generated.fileName}`, query: source.toString() });
    this.generated.set(uri.toString(), generated.text);
    this.generatedChanged.fire(uri); // an already open one shows the new text
    const document = await vscode.languages.setTextDocumentLanguage(
      await vscode.workspace.openTextDocument(uri), generated.languageId);
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
  }

  /** The read-only provider of fsl-generated: documents. */
  generatedProvider() {
    return {
      onDidChange: this.generatedChanged.event,
      provideTextDocumentContent: (uri) => this.generated.get(uri.toString()) ?? '',
    };
  }
}

let extension;

async function activate(context) {
  extension = new FslExtension();
  context.subscriptions.push(
    extension.output,
    extension.generatedChanged,
    vscode.workspace.registerTextDocumentContentProvider(GENERATED_SCHEME, extension.generatedProvider()),
    ...Object.entries(COMMANDS).map(([id, command]) =>
      vscode.commands.registerCommand(id, () => extension.showGenerated(command))),
    vscode.commands.registerCommand('fsl.restartServer', () => extension.restart()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (SERVER_SETTINGS.some((setting) => event.affectsConfiguration(setting))) extension.restart();
    }),
    vscode.workspace.onDidCloseTextDocument((document) => {
      if (document.uri.scheme === GENERATED_SCHEME) extension.generated.delete(document.uri.toString());
    }));
  await extension.start();
}

async function deactivate() {
  if (extension) await extension.stop();
}

module.exports = { activate, deactivate };
