// Printer.h — the canonical printer (`fslc --emit=format`).
//
// Writes an AST back as .fsl text in one canonical layout: four-space indentation, one
// statement or directive per line, signatures wrapped one parameter per line when they
// do not fit in 100 columns or carry comments, and the user's comments, parentheses,
// literal spellings and single blank lines kept. Printing the parse of printed text
// gives the same text (tests check this for every .fsl file in the repository).
#pragma once

#include "ast/AST.h"

#include <llvm/ADT/STLFunctionalExtras.h>

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl::ast {

std::string formatFile(const File &file);

/// What --emit=schedule prints instead of a declaration: whole blocks of text, their
/// leading comments included, a blank line apart; none: the declaration itself.
using DeclReplacement = llvm::function_ref<std::vector<std::string>(const Decl &)>;

/// formatFile with some declarations replaced, and `appended` blocks (declarations that
/// exist only as text: the schedules chosen for fusions without one) after the last
/// declaration.
std::string formatFile(const File &file, DeclReplacement replace,
                       const std::vector<std::string> &appended);
void printExpr(const Expr &expr, llvm::raw_ostream &out);
std::string formatExpr(const Expr &expr);
void printType(const Type &type, llvm::raw_ostream &out);
void printDirective(const Directive &directive, llvm::raw_ostream &out);

} // namespace fsl::ast
