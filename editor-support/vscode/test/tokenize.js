// tokenize.js — tokenizes text with the extension's TextMate grammar, as VS Code does.
'use strict';

const fs = require('fs');
const path = require('path');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

let registryPromise;

function registry() {
  if (!registryPromise) {
    const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
    const onigLib = oniguruma.loadWASM(wasm).then(() => ({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }));
    const grammarPath = path.join(__dirname, '..', 'syntaxes', 'fsl.tmLanguage.json');
    registryPromise = Promise.resolve(new textmate.Registry({
      onigLib,
      loadGrammar: async () => textmate.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath),
    }));
  }
  return registryPromise;
}

/** Returns { tokens: [{ line, text, scopes }], endStack } for `text`. */
async function tokenize(text) {
  const grammar = await (await registry()).loadGrammar('source.fsl');
  let stack = textmate.INITIAL;
  const tokens = [];
  text.split('\n').forEach((line, lineIndex) => {
    const result = grammar.tokenizeLine(line, stack);
    for (const token of result.tokens)
      tokens.push({ line: lineIndex + 1, text: line.slice(token.startIndex, token.endIndex), scopes: token.scopes });
    stack = result.ruleStack;
  });
  return { tokens, endStack: stack };
}

module.exports = { tokenize, INITIAL: textmate.INITIAL };
