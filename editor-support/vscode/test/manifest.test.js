// package.json against the code: the commands it contributes are the ones the extension
// registers, the settings the code reads are declared, and the packaged extension carries
// vscode-languageclient (a runtime dependency) but not the test tools.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { COMMANDS } = require('../src/generatedDocuments');

const root = path.join(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const extensionSource = fs.readFileSync(path.join(root, 'src', 'extension.js'), 'utf8');

test('the contributed commands are the extension\'s, with their titles', () => {
  const contributed = Object.fromEntries(manifest.contributes.commands.map((c) => [c.command, c.title]));
  for (const [id, command] of Object.entries(COMMANDS)) assert.strictEqual(contributed[id], command.title, id);
  assert.strictEqual(contributed['fsl.restartServer'], 'Restart Language Server');
  assert.deepStrictEqual(Object.keys(contributed).sort(), [...Object.keys(COMMANDS), 'fsl.restartServer'].sort());
  for (const id of Object.keys(contributed)) assert.ok(extensionSource.includes(id) || id in COMMANDS, `${id} is not registered`);
  // The server's own ids are registered by the language client; contributing them would
  // put a second "FSL: Show ..." in the palette.
  for (const command of Object.values(COMMANDS)) assert.ok(!(command.serverCommand in contributed), command.serverCommand);
});

test('every setting the extension reads is declared, and the restricted ones exist', () => {
  const declared = manifest.contributes.configuration.properties;
  const read = [...extensionSource.matchAll(/config\.get\('([A-Za-z.]+)'\)/g)].map((m) => `fsl.${m[1]}`);
  assert.deepStrictEqual(read.sort(), ['fsl.fslcPath', 'fsl.serverArgs', 'fsl.serverLog', 'fsl.serverPath']);
  for (const setting of read) assert.ok(declared[setting], `${setting} is read but not declared`);
  assert.ok(declared['fsl.trace.server'], 'the client reads fsl.trace.server (its id is fsl)');
  assert.match(extensionSource, /new LanguageClient\('fsl'/);
  for (const setting of manifest.capabilities.untrustedWorkspaces.restrictedConfigurations)
    assert.ok(declared[setting], `${setting} is restricted but not declared`);
  assert.strictEqual(manifest.contributes.configurationDefaults['[fsl]']['editor.formatOnSave'], true);
});

test('the VS Code versions asked for are those the language client checks for at start', () => {
  const client = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', 'vscode-languageclient', 'package.json'), 'utf8'));
  assert.strictEqual(manifest.engines.vscode, client.engines.vscode);
});

test('the .vsix carries vscode-languageclient and its dependencies, not the test tools', () => {
  assert.ok(manifest.dependencies['vscode-languageclient'], 'vscode-languageclient must be a runtime dependency');
  const vsce = spawnSync(path.join(root, 'node_modules', '.bin', 'vsce'), ['ls'], { cwd: root, encoding: 'utf8' });
  assert.strictEqual(vsce.status, 0, vsce.stderr);
  const files = vsce.stdout.split('\n').filter((line) => line !== '');
  for (const file of ['src/extension.js', 'src/serverLocation.js', 'src/serverArguments.js', 'src/generatedDocuments.js',
    'node_modules/vscode-languageclient/lib/node/main.js', 'node_modules/vscode-languageserver-protocol/lib/node/main.js',
    'node_modules/vscode-jsonrpc/lib/node/main.js', 'syntaxes/fsl.tmLanguage.json'])
    assert.ok(files.includes(file), `${file} is not packaged`);
  for (const file of files) {
    assert.ok(!file.startsWith('test/'), `${file} is packaged`);
    assert.ok(!/^node_modules\/(vscode-tmgrammar-test|@vscode\/vsce|vscode-textmate|vscode-oniguruma)\//.test(file), `${file} is packaged`);
  }
});
