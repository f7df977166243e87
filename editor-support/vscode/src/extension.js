// extension.js — runs fslc on .fsl files and shows its diagnostics as problems.
'use strict';

const vscode = require('vscode');
const { execFile } = require('child_process');
const path = require('path');
const { toProblems } = require('./diagnostics');

const SEVERITY = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  information: vscode.DiagnosticSeverity.Information,
};

function toVsRange(range) {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

function check(document, collection, output) {
  if (document.languageId !== 'fsl' || document.uri.scheme !== 'file') return;
  const config = vscode.workspace.getConfiguration('fsl');
  if (!config.get('diagnosticsOnSave')) return;
  const fslc = config.get('fslcPath');
  const args = [...config.get('extraArguments'), '--diagnostics-format=json', document.fileName];
  const cwd = path.dirname(document.fileName);
  execFile(fslc, args, { cwd, timeout: 30000 }, (error, _stdout, stderr) => {
    if (error && error.code === 'ENOENT') {
      output.appendLine(`fslc not found at '${fslc}'; set fsl.fslcPath.`);
      return;
    }
    let problems;
    try {
      problems = toProblems(stderr, document.fileName, cwd);
    } catch (parseError) {
      output.appendLine(`could not read fslc's diagnostics: ${parseError.message}\n${stderr}`);
      return;
    }
    collection.set(
      document.uri,
      problems.map((problem) => {
        const diagnostic = new vscode.Diagnostic(toVsRange(problem.range), problem.message, SEVERITY[problem.severity]);
        diagnostic.code = problem.code;
        diagnostic.source = problem.source;
        diagnostic.relatedInformation = problem.related.map(
          (note) => new vscode.DiagnosticRelatedInformation(
            new vscode.Location(vscode.Uri.file(note.file), toVsRange(note.range)), note.message));
        return diagnostic;
      }));
  });
}

function activate(context) {
  const collection = vscode.languages.createDiagnosticCollection('fslc');
  const output = vscode.window.createOutputChannel('FSL');
  const run = (document) => check(document, collection, output);
  context.subscriptions.push(
    collection,
    output,
    vscode.workspace.onDidOpenTextDocument(run),
    vscode.workspace.onDidSaveTextDocument(run),
    vscode.workspace.onDidCloseTextDocument((document) => collection.delete(document.uri)));
  vscode.workspace.textDocuments.forEach(run);
}

function deactivate() {}

module.exports = { activate, deactivate };
