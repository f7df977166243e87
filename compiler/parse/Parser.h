// Parser.h — .fsl text to AST.
//
// The one entry point of the front end: it checks the bytes (UTF-8), lexes with the
// ANTLR lexer generated from grammar/FSL.g4, reports lexical errors once each, guards
// against inputs that would exhaust the stack, parses with ANTLR's recovering parser
// (several syntax errors per file), and builds the AST with comments attached.
#pragma once

#include "ast/AST.h"

#include <memory>

namespace llvm {
class SourceMgr;
}

namespace fsl {

class DiagnosticEngine;

struct ParseLimits {
  /// Deepest nesting of brackets and prefix operators accepted.
  unsigned maxNesting = 256;
  /// Most binary operators in one statement (a left-deep chain is a deep tree).
  unsigned maxOperatorsPerStatement = 4096;
};

/// Parses buffer `bufferId` of `sources`. Returns null if any error was reported.
std::unique_ptr<ast::File> parseFile(llvm::SourceMgr &sources, unsigned bufferId,
                                     DiagnosticEngine &diagnostics, ParseLimits limits = {});

} // namespace fsl
