// Formatting.h — textDocument/formatting: the canonical printer, as `fslc --emit=format`.
#pragma once

#include "lsp/Analysis.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/JSON.h>

namespace fsl::lsp {

/// The edits that make the document canonical: none when it already is, one edit of the
/// whole text otherwise. An error when the document does not parse (the printer needs a
/// syntax tree, and rewriting around an error would guess at the user's intent).
llvm::Expected<llvm::json::Array> formatDocument(const Analysis &analysis);

} // namespace fsl::lsp
