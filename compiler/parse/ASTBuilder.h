// ASTBuilder.h — ANTLR parse tree to AST, attaching comments to the nodes they annotate.
//
// Called by parseFile() only for trees without syntax errors, so every child the grammar
// requires is present.
#pragma once

#include "FSLParser.h"
#include "ast/AST.h"

#include <memory>

namespace fsl {

class DiagnosticEngine;
class TokenLocator;

std::unique_ptr<ast::File> buildAST(FSLParser::FileContext *tree, antlr4::CommonTokenStream &tokens,
                                    const TokenLocator &locator, DiagnosticEngine &diagnostics);

} // namespace fsl
