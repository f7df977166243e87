// Completion.h — textDocument/completion: directives and their keywords, loop, tensor,
// value and dimension names in scope, knobs with their ranges, heuristic kinds, fns and
// builtins, element types; target names in fsl.toml.
//
// The context (which declaration the cursor is in, what the statement so far asks for)
// comes from the text as typed, which rarely parses mid-word; the names come from the
// latest analysis that parsed.
#pragma once

#include "lsp/Analysis.h"
#include "lsp/SymbolIndex.h"

#include <llvm/Support/JSON.h>

namespace fsl::lsp {

/// `text` is the document as the editor has it; `names` and `index`, the latest parse
/// (possibly of an older text; null when none parsed yet).
llvm::json::Value completeAt(llvm::StringRef path, llvm::StringRef text,
                             const mlir::lsp::Position &position, const Analysis *names,
                             const SymbolIndex *index, const ServerOptions &options);

} // namespace fsl::lsp
