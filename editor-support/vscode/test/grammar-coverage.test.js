// The TextMate grammar against grammar/FSL.g4 and every .fsl file of the repository:
// every keyword of the language grammar is highlighted (so the two cannot drift), and
// every example and stdlib file tokenizes with comments and keywords scoped and no
// block left open at the end.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tokenize } = require('./tokenize');

const repo = path.join(__dirname, '..', '..', '..');
const g4 = fs.readFileSync(path.join(repo, 'grammar', 'FSL.g4'), 'utf8');

/** Alphabetic literals of the lexer rules: every keyword, type and directive word. */
function keywordsOf(grammarText) {
  const words = new Set();
  for (const line of grammarText.split('\n')) {
    if (!/^[A-Z_]+\s*:/.test(line)) continue; // lexer rules only
    for (const [, word] of line.matchAll(/'([A-Za-z_][A-Za-z_0-9]*)'/g)) words.add(word);
  }
  return [...words];
}

const keywords = keywordsOf(g4);
const directiveWords = new Set(
  [...g4.matchAll(/^K_[A-Z_]+\s*:\s*'([a-z_]+)'/gm)].map((match) => match[1]));

function isPlain(scopes) {
  return scopes.length === 1 || scopes[scopes.length - 1] === 'variable.other.fsl';
}

test('FSL.g4 has the keywords this test expects to find', () => {
  assert.ok(keywords.length >= 60, `only ${keywords.length} keywords found in FSL.g4`);
  for (const word of ['fusion', 'schedule', 'bf16', 'TIDx', 'warp_specialize', 'tma_store'])
    assert.ok(keywords.includes(word), word);
});

test('every keyword of FSL.g4 is highlighted where the language reserves it', async () => {
  // Directive words are keywords inside schedule blocks; the rest everywhere.
  const outside = keywords.filter((word) => !directiveWords.has(word));
  const text = `${outside.join(' ')}\nschedule s {\n${[...directiveWords].join(' ')}\n}\n`;
  const { tokens } = await tokenize(text);
  const unhighlighted = [];
  for (const word of keywords) {
    const token = tokens.find((t) => t.text === word);
    if (!token || isPlain(token.scopes)) unhighlighted.push(word);
  }
  assert.deepStrictEqual(unhighlighted, [], `not highlighted: ${unhighlighted.join(', ')}`);
});

function fslFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return fslFiles(full);
    return entry.name.endsWith('.fsl') ? [full] : [];
  });
}

const files = [...fslFiles(path.join(repo, 'examples')), ...fslFiles(path.join(repo, 'stdlib'))];

test('there are example and stdlib files to check', () => {
  assert.ok(files.length >= 5, `found ${files.length}`);
});

for (const file of files) {
  test(`tokenizes ${path.relative(repo, file)}`, async () => {
    const text = fs.readFileSync(file, 'utf8');
    const { tokens, endStack } = await tokenize(text);
    // Back at the top level: no block comment or schedule left open.
    const { endStack: emptyStack } = await tokenize('');
    assert.ok(endStack.equals(emptyStack) || endStack.depth === emptyStack.depth,
              'a begin/end rule is still open at the end of the file');
    for (const token of tokens) {
      const inComment = token.scopes.some((scope) => scope.startsWith('comment.'));
      const trimmed = token.text.trim();
      if (trimmed.startsWith('//') || trimmed.startsWith('/*'))
        assert.ok(inComment, `line ${token.line}: comment '${trimmed}' not scoped as a comment`);
      if (!inComment && ['fusion', 'schedule', 'let', 'over', 'import', 'fn'].includes(trimmed))
        assert.ok(!isPlain(token.scopes), `line ${token.line}: keyword '${trimmed}' not highlighted`);
    }
  });
}
