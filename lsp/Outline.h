// Outline.h — textDocument/documentSymbol and textDocument/foldingRange: the shape of a
// document (imports, fns, fusions with their dimensions, parameters, outputs and lets,
// schedules with their directives) and the regions an editor can fold.
#pragma once

#include "lsp/Analysis.h"

#include <llvm/Support/JSON.h>

namespace fsl::lsp {

/// The document's declarations as a tree; empty when it does not parse.
llvm::json::Array documentSymbols(const Analysis &analysis);

/// Declarations over several lines, runs of comment lines, and runs of imports. Read
/// from the text as well as the tree, so that a file that does not parse still folds
/// its comments.
llvm::json::Array foldingRanges(const Analysis &analysis);

} // namespace fsl::lsp
