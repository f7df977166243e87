// InlayHints.h — textDocument/inlayHint: after each directive of a user's schedule, what
// its build derived (`Ho: 512, Hv: 8`, `Hx: 64 threads, static`): the notes
// `fslc --emit=schedule` prints as comments, shown without writing them into the file.
#pragma once

#include "lsp/Analysis.h"

#include <llvm/Support/JSON.h>

namespace fsl::lsp {

/// The hints inside `range`; none when the schedules were not built (errors before).
llvm::json::Array inlayHints(const Analysis &analysis, const mlir::lsp::Range &range);

} // namespace fsl::lsp
