// Server.h — the language server: LSP requests and notifications to the features.
//
// MLIR's lsp-server-support reads and writes the JSON-RPC messages (Transport) and
// decodes the standard structures (Protocol); this class registers one handler a method,
// keeps the open documents (DocumentStore) and answers each request from the document's
// latest analysis. Requests run one at a time on the thread that reads the messages,
// which is also the compiler's large-stack thread (main.cpp).
#pragma once

#include "lsp/Analysis.h"
#include "lsp/DocumentStore.h"
#include "lsp/Protocol.h"
#include "lsp/SymbolIndex.h"

#include <mlir/Tools/lsp-server-support/Transport.h>

#include <map>
#include <memory>
#include <set>
#include <string>

namespace fsl::lsp {

class Server {
public:
  Server(mlir::lsp::JSONTransport &transport, ServerOptions options);

  /// Serves until `exit` (true when `shutdown` came before it, as the protocol asks) or
  /// until the input ends (false).
  bool run();

private:
  template <typename T> using Callback = mlir::lsp::Callback<T>;

  // Lifecycle.
  void onInitialize(const mlir::lsp::InitializeParams &params, Callback<llvm::json::Value> reply);
  void onInitialized(const mlir::lsp::InitializedParams &params);
  void onShutdown(const mlir::lsp::NoParams &params, Callback<std::nullptr_t> reply);

  // Documents.
  void onDidOpen(const mlir::lsp::DidOpenTextDocumentParams &params);
  void onDidChange(const mlir::lsp::DidChangeTextDocumentParams &params);
  void onDidClose(const mlir::lsp::DidCloseTextDocumentParams &params);
  void publishDiagnostics(const Document &document);

  // Features.
  void onFormatting(const DocumentFormattingParams &params, Callback<llvm::json::Value> reply);
  void onDocumentSymbol(const mlir::lsp::DocumentSymbolParams &params,
                        Callback<llvm::json::Value> reply);
  void onFoldingRange(const FoldingRangeParams &params, Callback<llvm::json::Value> reply);
  void onHover(const mlir::lsp::TextDocumentPositionParams &params,
               Callback<llvm::json::Value> reply);
  void onDefinition(const mlir::lsp::TextDocumentPositionParams &params,
                    Callback<llvm::json::Value> reply);
  void onReferences(const mlir::lsp::ReferenceParams &params, Callback<llvm::json::Value> reply);
  void onCompletion(const mlir::lsp::CompletionParams &params, Callback<llvm::json::Value> reply);
  void onInlayHint(const mlir::lsp::InlayHintsParams &params, Callback<llvm::json::Value> reply);
  void onExecuteCommand(const ExecuteCommandParams &params, Callback<llvm::json::Value> reply);

  /// The document's latest analysis; an error for the client when it is not open.
  llvm::Expected<const Document &> document(const mlir::lsp::URIForFile &uri) const;
  /// The symbol index of an analysis, built on first use.
  const SymbolIndex &indexOf(const std::shared_ptr<const Analysis> &analysis);

  mlir::lsp::JSONTransport &transport_;
  mlir::lsp::MessageHandler handler_;
  DocumentStore documents_;
  ServerOptions options_;
  mlir::lsp::OutgoingNotification<llvm::json::Value> publish_;
  /// Other files each document published diagnostics for (its imports, fsl.toml): cleared
  /// when the document no longer has any there.
  std::map<std::string, std::set<std::string>> publishedElsewhere_;
  /// Indexes of the analyses in use, by analysis; dropped with their analysis.
  std::map<const Analysis *, std::pair<std::weak_ptr<const Analysis>, std::unique_ptr<SymbolIndex>>>
      indexes_;
  bool shutdownRequested_ = false;
};

} // namespace fsl::lsp
