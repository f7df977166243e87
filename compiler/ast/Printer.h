// Printer.h — the canonical printer (`fslc --emit=format`).
//
// Writes an AST back as .fsl text in one canonical layout: four-space indentation, one
// statement or directive per line, signatures wrapped one parameter per line when they
// do not fit in 100 columns or carry comments, and the user's comments, parentheses,
// literal spellings and single blank lines kept. Printing the parse of printed text
// gives the same text (tests check this for every .fsl file in the repository).
#pragma once

#include "ast/AST.h"

#include <string>

namespace llvm {
class raw_ostream;
}

namespace fsl::ast {

std::string formatFile(const File &file);
void printExpr(const Expr &expr, llvm::raw_ostream &out);
std::string formatExpr(const Expr &expr);
void printType(const Type &type, llvm::raw_ostream &out);
void printDirective(const Directive &directive, llvm::raw_ostream &out);

} // namespace fsl::ast
