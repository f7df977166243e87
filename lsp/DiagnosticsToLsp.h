// DiagnosticsToLsp.h — the compiler's diagnostics of one analysis as LSP diagnostics,
// by the file they belong to.
//
// A diagnostic in the document is the document's. One in a file the document imports
// (directly or through another import) is reported twice: at the document's import
// line, which the user is looking at ("in imported file ...: ..."), and in the imported
// file itself, for an editor that shows it. One with no file behind it (an fsl.toml
// setting, the target) is reported at the document's first line.
#pragma once

#include "lsp/Analysis.h"

#include <llvm/Support/JSON.h>

#include <map>
#include <string>

namespace fsl::lsp {

/// The LSP diagnostics (JSON objects, with the registry id as `code`) by file path; the
/// document's own path is always present, possibly with none.
std::map<std::string, llvm::json::Array> lspDiagnostics(const Analysis &analysis);

} // namespace fsl::lsp
