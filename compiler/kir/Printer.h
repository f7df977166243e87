// Printer.h — the Kernel IR as text (`--emit=kernel-ir`, `--print-after=PASS`).
//
// One line a statement, nested by indentation; expressions in infix form with the
// type of every variable at its binding. Meant for reading and for lit tests, not for
// parsing back.
#pragma once

#include "kir/IR.h"

namespace llvm {
class raw_ostream;
}

namespace fsl::kir {

void printExpr(const Expr &e, llvm::raw_ostream &out);
void printStmt(const Stmt &s, llvm::raw_ostream &out, int indent = 0);
void printKernel(const Kernel &kernel, llvm::raw_ostream &out);
void printProgram(const Program &program, llvm::raw_ostream &out);
std::string toString(const Expr &e);

} // namespace fsl::kir
