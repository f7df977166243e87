// The extension's pieces against the real fsl-lsp, through the JSON-RPC layer that
// vscode-languageclient itself uses (vscode-languageserver-protocol's node connection):
// the server started with the command line the extension builds, initialize, didOpen and
// its diagnostics, hover, formatting, both commands through the extension's own request
// code, a change that breaks the file, shutdown.
//
// The server is $FSL_LSP when set (the project's ctest sets it), else the repository's
// CMake build (build/bin/fsl-lsp); with neither, these tests are skipped and say why.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const { pathToFileURL } = require('url');
const { resolveServer, hostSystem } = require('../src/serverLocation');
const { serverArguments } = require('../src/serverArguments');
const { COMMANDS, requestGenerated } = require('../src/generatedDocuments');

// The protocol package the installed client depends on, not whichever copy is hoisted.
const protocol = require(require.resolve('vscode-languageserver-protocol/node',
  { paths: [path.dirname(require.resolve('vscode-languageclient'))] }));

const repo = path.join(__dirname, '..', '..', '..');

/** The fsl-lsp to run and where it was found; or the reason there is none. */
function findServer() {
  // Named explicitly: a wrong path is an error, not a reason to skip.
  if (process.env.FSL_LSP) return { path: process.env.FSL_LSP, from: '$FSL_LSP' };
  const built = path.join(repo, 'build', 'bin', 'fsl-lsp');
  if (fs.existsSync(built)) return { path: built, from: 'the CMake build' };
  return {
    skip: `no fsl-lsp: $FSL_LSP is not set and ${built} does not exist (build it with cmake; ` +
      'it needs libmlir-19-dev), or set FSL_LSP=/path/to/fsl-lsp',
  };
}

const server = findServer();
if (server.skip) console.log(`fsl-lsp.test.js: skipping the tests against the real server: ${server.skip}`);

const SOURCE = [
  '// Doubles x.',
  'fusion twice(x: f32[T, H]) -> (y: f32[T, H]) {',
  '    y = x*2.0;',
  '}',
  '',
].join('\n');

/** A started server: its connection, the diagnostics it published by URI, its exit. */
function startServer(file) {
  const args = serverArguments({ serverArgs: [`--stdlib=${path.join(repo, 'stdlib')}`], serverLog: 'error' });
  const child = spawn(server.path, args, { cwd: path.dirname(file), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const connection = protocol.createProtocolConnection(
    new protocol.StreamMessageReader(child.stdout), new protocol.StreamMessageWriter(child.stdin));
  const waiting = [];
  connection.onNotification(protocol.PublishDiagnosticsNotification.type, (params) => {
    for (const waiter of waiting.splice(0)) waiter(params);
  });
  connection.listen();
  const nextDiagnostics = (uri) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no diagnostics for ${uri} in 20 s; stderr: ${stderr}`)), 20000);
    const waiter = (params) => {
      if (params.uri !== uri) return waiting.push(waiter);
      clearTimeout(timer);
      resolve(params.diagnostics);
    };
    waiting.push(waiter);
  });
  // A server that exits fails the request it was answering, with what it wrote.
  const died = exited.then(({ code, signal }) => {
    throw new Error(`fsl-lsp exited (code ${code}, signal ${signal}): ${stderr}`);
  });
  died.catch(() => {}); // not awaited after a clean exit
  const request = (type, params) => Promise.race([connection.sendRequest(type, params), died]);
  return { child, connection, request, exited, nextDiagnostics, stderr: () => stderr };
}

test('fsl-lsp through the client\'s JSON-RPC layer: diagnostics, hover, formatting, both commands',
  { skip: server.skip || false, timeout: 60000 }, async () => {
    assert.ok(hostSystem.isExecutable(server.path), `fsl-lsp from ${server.from} is not an executable: ${server.path}`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsl-lsp-'));
    const file = path.join(dir, 'twice.fsl');
    fs.writeFileSync(file, SOURCE);
    const uri = pathToFileURL(file).href;
    const lsp = startServer(file);
    try {
      const init = await lsp.request(protocol.InitializeRequest.type, {
        processId: process.pid, rootUri: pathToFileURL(dir).href, capabilities: {}, workspaceFolders: null,
      });
      const capabilities = init.capabilities;
      assert.strictEqual(capabilities.documentFormattingProvider, true);
      assert.strictEqual(capabilities.hoverProvider, true);
      // Every server command the extension sends is one the server declares.
      for (const command of Object.values(COMMANDS))
        assert.ok(capabilities.executeCommandProvider.commands.includes(command.serverCommand),
          `${command.serverCommand} not in ${JSON.stringify(capabilities.executeCommandProvider)}`);
      await lsp.connection.sendNotification(protocol.InitializedNotification.type, {});

      const opened = lsp.nextDiagnostics(uri);
      await lsp.connection.sendNotification(protocol.DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId: 'fsl', version: 1, text: SOURCE },
      });
      assert.deepStrictEqual(await opened, [], 'a correct file has no diagnostics');

      // Hover on the `x` of `y = x*2.0;`: its dtype and shape.
      const hover = await lsp.request(protocol.HoverRequest.type,
        { textDocument: { uri }, position: { line: 2, character: 8 } });
      assert.ok(hover, 'no hover on x');
      const hoverText = JSON.stringify(hover.contents);
      assert.match(hoverText, /x: f32\[T, H\]/);
      assert.match(hoverText, /parameter of fusion `twice`/);

      // Formatting (what format-on-save runs): the canonical spacing, the comment kept.
      const edits = await lsp.request(protocol.DocumentFormattingRequest.type,
        { textDocument: { uri }, options: { tabSize: 4, insertSpaces: true } });
      assert.ok(Array.isArray(edits) && edits.length > 0, `no formatting edits for unformatted text: ${JSON.stringify(edits)}`);
      const formatted = edits.map((edit) => edit.newText).join('');
      assert.match(formatted, /y = x \* 2\.0;/);
      assert.match(formatted, /\/\/ Doubles x\./);

      // Both commands, through the extension's request code, cursor on the fusion's name.
      const send = lsp.request;
      const cuda = await requestGenerated(send, COMMANDS['fsl.openGeneratedCuda'], uri, { line: 1, character: 9 });
      assert.strictEqual(cuda.fileName, 'twice.cu');
      assert.strictEqual(cuda.languageId, 'cuda-cpp');
      assert.match(cuda.text, /^\/\/ ---- twice\.h/);
      assert.match(cuda.text, /__global__/);
      const kir = await requestGenerated(send, COMMANDS['fsl.openKernelIR'], uri, { line: 2, character: 4 });
      assert.strictEqual(kir.fileName, 'twice.kir');
      assert.match(kir.text, /^program twice/);
      assert.match(kir.text, /kernel twice_v0/);

      // On the comment above the fusion there is none: the server's message comes through.
      await assert.rejects(requestGenerated(send, COMMANDS['fsl.openGeneratedCuda'], uri, { line: 0, character: 3 }),
        /no fusion here/);

      // A change that breaks the file: a syntax error at the change, with its registry id.
      const changed = lsp.nextDiagnostics(uri);
      await lsp.connection.sendNotification(protocol.DidChangeTextDocumentNotification.type, {
        textDocument: { uri, version: 2 },
        contentChanges: [{ range: { start: { line: 2, character: 13 }, end: { line: 2, character: 14 } }, text: '' }],
      });
      const broken = await changed;
      assert.ok(broken.length > 0, 'no diagnostics after removing the semicolon');
      assert.strictEqual(broken[0].code, 'syntax-error');
      assert.strictEqual(broken[0].severity, protocol.DiagnosticSeverity.Error);

      await lsp.request(protocol.ShutdownRequest.type);
      await lsp.connection.sendNotification(protocol.ExitNotification.type);
      const exit = await lsp.exited;
      assert.deepStrictEqual(exit, { code: 0, signal: null }, lsp.stderr());
    } finally {
      lsp.connection.dispose();
      lsp.child.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

// The resolution on the real file system: an fslc with an fsl-lsp beside it, as installed
// (and as the CMake build leaves them in build/bin).
const fslc = process.env.FSLC && path.resolve(process.env.FSLC);
const besideFslc = fslc && hostSystem.isExecutable(path.join(path.dirname(fslc), 'fsl-lsp'));
test('with fsl.serverPath empty, the fsl-lsp next to fsl.fslcPath is found',
  { skip: besideFslc ? false : `needs $FSLC with an fsl-lsp beside it (FSLC is ${fslc ? `'${fslc}'` : 'not set'})` }, () => {
    const found = resolveServer({ serverPath: '', fslcPath: fslc }, { workspaceFolder: repo, envPath: '', home: os.homedir() });
    assert.deepStrictEqual(found, { command: path.join(path.dirname(fslc), 'fsl-lsp'), from: `next to fslc (${fslc})` });
  });
