// Unit tests of the fslc JSON → problems mapping (node --test).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { toProblems } = require('../src/diagnostics');

const sample = JSON.stringify({
  version: 1,
  diagnostics: [
    {
      id: 'syntax-error', severity: 'error', message: "unexpected end of file; expected '}'",
      file: 'a.fsl', range: { start: { line: 3, column: 1 }, end: { line: 3, column: 1 } },
      notes: [{ id: 'note-opened-here', severity: 'note', message: "'{' opened here",
                file: 'a.fsl', range: { start: { line: 1, column: 36 }, end: { line: 1, column: 37 } } }],
    },
    { id: 'empty-schedule', severity: 'warning', message: 'schedule block has no directives',
      file: 'a.fsl', range: { start: { line: 2, column: 10 }, end: { line: 2, column: 13 } }, notes: [] },
    { id: 'syntax-error', severity: 'error', message: 'elsewhere', file: 'b.fsl',
      range: { start: { line: 1, column: 1 }, end: { line: 1, column: 2 } }, notes: [] },
    { id: 'missing-include-dir', severity: 'warning', message: "include directory 'lib' does not exist", notes: [] },
  ],
});

test('positions become 0-based and zero-width ranges get one character', () => {
  const [first] = toProblems(sample, 'a.fsl', '/w');
  assert.deepStrictEqual(first.range, { start: { line: 2, character: 0 }, end: { line: 2, character: 1 } });
  assert.strictEqual(first.severity, 'error');
  assert.strictEqual(first.code, 'syntax-error');
  assert.strictEqual(first.source, 'fslc');
});

test('notes become related information with their id', () => {
  const [first] = toProblems(sample, 'a.fsl', '/w');
  assert.strictEqual(first.related.length, 1);
  assert.strictEqual(first.related[0].file, path.resolve('/w', 'a.fsl'));
  assert.strictEqual(first.related[0].message, "'{' opened here [note-opened-here]");
  assert.deepStrictEqual(first.related[0].range.start, { line: 0, character: 35 });
});

test('other files are dropped; file-less diagnostics go on the first line', () => {
  const problems = toProblems(sample, '/w/a.fsl', '/w');
  assert.deepStrictEqual(problems.map((p) => p.code), ['syntax-error', 'empty-schedule', 'missing-include-dir']);
  assert.strictEqual(problems[1].severity, 'warning');
  assert.deepStrictEqual(problems[2].range.start, { line: 0, character: 0 });
});

test('text that is not fslc JSON is an error, not an empty list', () => {
  assert.throws(() => toProblems('fslc: error: something', 'a.fsl'));
  assert.throws(() => toProblems(JSON.stringify({ version: 2, diagnostics: [] }), 'a.fsl'));
});
