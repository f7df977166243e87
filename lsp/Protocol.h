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
bool fromJSON(const llvm::json::Value &value, ExecuteCommandParams &result,
              llvm::json::Path path);

/// The commands, as executeCommandProvider lists them.
inline constexpr const char *kShowGeneratedCuda = "fsl.showGeneratedCuda";
inline constexpr const char *kShowKernelIR = "fsl.showKernelIR";

} // namespace fsl::lsp
