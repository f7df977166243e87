// Dumper.h — `fslc --emit=ast`: the AST as an indented tree with source ranges.
//
// Meant for golden tests and for people debugging the front end: every node prints its
// kind, its key fields and its range as <line:col-line:col> (end exclusive).
#pragma once

#include "ast/AST.h"

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace fsl::ast {

void dumpAST(const File &file, const llvm::SourceMgr &sources, llvm::raw_ostream &out);

} // namespace fsl::ast
