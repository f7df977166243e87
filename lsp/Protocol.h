// Protocol.h — the requests fsl-lsp answers that MLIR 19's lsp-server-support does not
// declare: formatting, folding ranges, and workspace/executeCommand.
//
// Each is the subset of the LSP structure the server reads, with the fromJSON that
// MessageHandler finds by argument-dependent lookup.
#pragma once

#include <mlir/Tools/lsp-server-support/Protocol.h>

#include <llvm/Support/JSON.h>

#include <string>

namespace fsl::lsp {

/// textDocument/formatting (the options are ignored: the canonical form has one layout).
struct DocumentFormattingParams {
  mlir::lsp::TextDocumentIdentifier textDocument;
};
bool fromJSON(const llvm::json::Value &value, DocumentFormattingParams &result,
              llvm::json::Path path);

/// textDocument/foldingRange.
struct FoldingRangeParams {
  mlir::lsp::TextDocumentIdentifier textDocument;
};
bool fromJSON(const llvm::json::Value &value, FoldingRangeParams &result, llvm::json::Path path);

/// workspace/executeCommand: fsl-lsp's commands take one argument, the document and a
/// position in it: `{"uri": ..., "position": {"line": L, "character": C}}`.
struct ExecuteCommandParams {
  std::string command;
  mlir::lsp::URIForFile uri;
  mlir::lsp::Position position;
};
bool fromJSON(const llvm::json::Value &value, ExecuteCommandParams &result, llvm::json::Path path);

/// A copy of `value` that owns its strings. MLIR's toJSON writes a URI as a StringRef
/// into the structure it was given (llvm::json::Value keeps such strings unowned): the
/// JSON of a Location or Diagnostic built from a temporary must be copied before the
/// temporary goes.
llvm::json::Value ownedJSON(const llvm::json::Value &value);

/// The commands, as executeCommandProvider lists them.
inline constexpr const char *kShowGeneratedCuda = "fsl.showGeneratedCuda";
inline constexpr const char *kShowKernelIR = "fsl.showKernelIR";

} // namespace fsl::lsp
