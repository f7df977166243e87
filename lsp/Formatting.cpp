// Formatting.cpp — one edit replacing the text with ast::formatFile's.
#include "lsp/Formatting.h"

#include "ast/Printer.h"

namespace fsl::lsp {

llvm::Expected<llvm::json::Array> formatDocument(const Analysis &analysis) {
  if (!analysis.syntax())
    return llvm::make_error<mlir::lsp::LSPError>("cannot format " + analysis.path() +
                                                     ": it has syntax errors (see its diagnostics)",
                                                 mlir::lsp::ErrorCode::RequestFailed);
  std::string formatted = ast::formatFile(*analysis.syntax());
  llvm::json::Array edits;
  if (formatted != analysis.text())
    edits.push_back(mlir::lsp::toJSON(
        mlir::lsp::TextEdit{analysis.lines().rangeOf(0, analysis.text().size()), formatted}));
  return edits;
}

} // namespace fsl::lsp
