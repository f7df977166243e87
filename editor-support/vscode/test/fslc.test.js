// The mapping applied to the real compiler's output. The compiler is $FSLC when set (the
// project's ctest sets it), else the repository's CMake build (build/bin/fslc), else
// fslc on the PATH; with none of them, this test is skipped and says why.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { toProblems } = require('../src/diagnostics');

/** The fslc to run, and where it was found; or the reason there is none. */
function findFslc() {
  if (process.env.FSLC) {
    // Named explicitly: a wrong path is an error, not a reason to skip.
    return { path: process.env.FSLC, from: '$FSLC' };
  }
  const built = path.join(__dirname, '..', '..', '..', 'build', 'bin', 'fslc');
  if (fs.existsSync(built)) {
    return { path: built, from: 'the CMake build' };
  }
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const candidate = path.join(dir || '.', 'fslc');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) {
        return { path: candidate, from: 'the PATH' };
      }
    } catch {
      // not here
    }
  }
  return {
    skip: `no fslc: $FSLC is not set, ${built} does not exist and the PATH has none ` +
      '(build it with cmake, or set FSLC=/path/to/fslc)',
  };
}

const fslc = findFslc();
if (fslc.skip) {
  console.log(`fslc.test.js: skipping the test against the real compiler: ${fslc.skip}`);
}

test('fslc --diagnostics-format=json output maps to problems at the right place',
  { skip: fslc.skip || false }, () => {
    assert.ok(fs.existsSync(fslc.path), `fslc from ${fslc.from} does not exist: ${fslc.path}`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsl-'));
    const file = path.join(dir, 'bad.fsl');
    fs.writeFileSync(file, 'fusion f(x: f32[T]) -> (y: f32[T]) {\n    y = x *;\n');
    const result = spawnSync(fslc.path, ['--diagnostics-format=json', file], { encoding: 'utf8' });
    assert.strictEqual(result.status, 1, result.stderr);
    const problems = toProblems(result.stderr, file);
    assert.strictEqual(problems.length, 2);
    assert.strictEqual(problems[0].code, 'syntax-error');
    assert.deepStrictEqual(problems[0].range.start, { line: 1, character: 11 });
    assert.strictEqual(problems[1].related[0].message, "'{' opened here [note-opened-here]");
    assert.deepStrictEqual(problems[1].related[0].range.start, { line: 0, character: 35 });
  });
