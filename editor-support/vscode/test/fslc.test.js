// The mapping applied to the real compiler's output (fslc from the CMake build, or $FSLC).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { toProblems } = require('../src/diagnostics');

const fslc = process.env.FSLC || path.join(__dirname, '..', '..', '..', 'build', 'bin', 'fslc');

test('fslc --diagnostics-format=json output maps to problems at the right place', () => {
  assert.ok(fs.existsSync(fslc), `build fslc first (looked for ${fslc})`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsl-'));
  const file = path.join(dir, 'bad.fsl');
  fs.writeFileSync(file, 'fusion f(x: f32[T]) -> (y: f32[T]) {\n    y = x *;\n');
  const result = spawnSync(fslc, ['--diagnostics-format=json', file], { encoding: 'utf8' });
  assert.strictEqual(result.status, 1);
  const problems = toProblems(result.stderr, file);
  assert.strictEqual(problems.length, 2);
  assert.strictEqual(problems[0].code, 'syntax-error');
  assert.deepStrictEqual(problems[0].range.start, { line: 1, character: 11 });
  assert.strictEqual(problems[1].related[0].message, "'{' opened here [note-opened-here]");
  assert.deepStrictEqual(problems[1].related[0].range.start, { line: 0, character: 35 });
});
