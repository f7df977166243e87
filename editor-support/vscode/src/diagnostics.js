// diagnostics.js — fslc's JSON diagnostics (docs/diagnostics.md) to editor problems.
//
// Pure functions, no `vscode` import, so Node's test runner can check them. fslc uses
// 1-based lines and columns with an exclusive end; editors use 0-based positions.
'use strict';

const path = require('path');

const SEVERITIES = { error: 'error', warning: 'warning', note: 'information' };

function toPosition(position) {
  return { line: Math.max(0, position.line - 1), character: Math.max(0, position.column - 1) };
}

/** The range of a diagnostic or note; diagnostics without one go on the first line. */
function toRange(item) {
  if (!item.range) return { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
  const start = toPosition(item.range.start);
  const end = toPosition(item.range.end);
  // A zero-width range (end of file) still needs one visible character.
  if (end.line === start.line && end.character <= start.character) end.character = start.character + 1;
  return { start, end };
}

function samePath(a, b, cwd) {
  return path.resolve(cwd, a) === path.resolve(cwd, b);
}

/**
 * Parses fslc's standard error and returns the problems of `documentPath`:
 * [{ range, severity, message, code, source, related: [{ file, range, message }] }].
 * Diagnostics about other files are dropped; those about no file (options, I/O) are kept
 * and shown on the first line. Throws if the text is not fslc's JSON document.
 */
function toProblems(stderrText, documentPath, cwd = process.cwd()) {
  const document = JSON.parse(stderrText);
  if (document.version !== 1 || !Array.isArray(document.diagnostics))
    throw new Error(`unsupported fslc diagnostics document (version ${document.version})`);
  const problems = [];
  for (const diagnostic of document.diagnostics) {
    if (diagnostic.file && !samePath(diagnostic.file, documentPath, cwd)) continue;
    problems.push({
      range: toRange(diagnostic),
      severity: SEVERITIES[diagnostic.severity] || 'error',
      message: diagnostic.message,
      code: diagnostic.id,
      source: 'fslc',
      related: (diagnostic.notes || []).map((note) => ({
        file: note.file ? path.resolve(cwd, note.file) : path.resolve(cwd, documentPath),
        range: toRange(note),
        message: `${note.message} [${note.id}]`,
      })),
    });
  }
  return problems;
}

module.exports = { toProblems, toRange };
