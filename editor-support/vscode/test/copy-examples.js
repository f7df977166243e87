// Copies every example and stdlib .fsl file into test/snap/ for the snapshot tests, so
// the snapshots always cover the repository's current files (the copies are ignored by
// git; the .snap files are committed). Run `npm run test:snap -- -u` after a deliberate
// change to an example, and read the diff.
'use strict';

const fs = require('fs');
const path = require('path');

const repo = path.join(__dirname, '..', '..', '..');
const target = path.join(__dirname, 'snap');

function fslFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return fslFiles(full);
    return entry.name.endsWith('.fsl') ? [full] : [];
  });
}

fs.mkdirSync(target, { recursive: true });
for (const file of fs.readdirSync(target))
  if (file.endsWith('.fsl')) fs.unlinkSync(path.join(target, file));
for (const file of [...fslFiles(path.join(repo, 'examples')), ...fslFiles(path.join(repo, 'stdlib'))]) {
  // examples/softmax.fsl -> examples--softmax.fsl
  const name = path.relative(repo, file).split(path.sep).join('--');
  fs.copyFileSync(file, path.join(target, name));
}
