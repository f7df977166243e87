// Server.cpp — capabilities, one handler a method, diagnostics after each change.
#include "lsp/Server.h"

#include "lsp/Commands.h"
#include "lsp/Completion.h"
#include "lsp/DiagnosticsToLsp.h"
#include "lsp/Formatting.h"
#include "lsp/Hover.h"
#include "lsp/InlayHints.h"
#include "lsp/Outline.h"

#include <mlir/Tools/lsp-server-support/Logging.h>

namespace fsl::lsp {

using mlir::lsp::Logger;

Server::Server(mlir::lsp::JSONTransport &transport, ServerOptions options)
    : transport_(transport), handler_(transport), documents_(options), options_(options) {
  handler_.method("initialize", this, &Server::onInitialize);
  handler_.notification("initialized", this, &Server::onInitialized);
  handler_.method("shutdown", this, &Server::onShutdown);
  handler_.notification("textDocument/didOpen", this, &Server::onDidOpen);
  handler_.notification("textDocument/didChange", this, &Server::onDidChange);
  handler_.notification("textDocument/didClose", this, &Server::onDidClose);
  handler_.method("textDocument/formatting", this, &Server::onFormatting);
  handler_.method("textDocument/documentSymbol", this, &Server::onDocumentSymbol);
  handler_.method("textDocument/foldingRange", this, &Server::onFoldingRange);
  handler_.method("textDocument/hover", this, &Server::onHover);
  handler_.method("textDocument/definition", this, &Server::onDefinition);
  handler_.method("textDocument/references", this, &Server::onReferences);
  handler_.method("textDocument/completion", this, &Server::onCompletion);
  handler_.method("textDocument/inlayHint", this, &Server::onInlayHint);
  handler_.method("workspace/executeCommand", this, &Server::onExecuteCommand);
  publish_ = handler_.outgoingNotification<llvm::json::Value>("textDocument/publishDiagnostics");
}

bool Server::run() {
  if (llvm::Error error = transport_.run(handler_)) {
    Logger::error("fsl-lsp: {0}", llvm::toString(std::move(error)));
    return false;
  }
  return shutdownRequested_;
}

// --- Lifecycle ---------------------------------------------------------------------------

void Server::onInitialize(const mlir::lsp::InitializeParams &, Callback<llvm::json::Value> reply) {
  llvm::json::Object capabilities{
      {"textDocumentSync",
       llvm::json::Object{{"openClose", true},
                          {"change", int(mlir::lsp::TextDocumentSyncKind::Incremental)},
                          {"save", true}}},
      {"positionEncoding", "utf-16"},
      {"documentFormattingProvider", true},
      {"documentSymbolProvider", true},
      {"foldingRangeProvider", true},
      {"hoverProvider", true},
      {"definitionProvider", true},
      {"referencesProvider", true},
      {"completionProvider",
       llvm::json::Object{{"triggerCharacters", llvm::json::Array{" ", ".", "(", ">", "="}},
                          {"resolveProvider", false}}},
      {"inlayHintProvider", true},
      {"executeCommandProvider",
       llvm::json::Object{{"commands", llvm::json::Array{kShowGeneratedCuda, kShowKernelIR}}}},
  };
  reply(llvm::json::Object{
      {"capabilities", std::move(capabilities)},
      {"serverInfo", llvm::json::Object{{"name", "fsl-lsp"}}},
  });
}

void Server::onInitialized(const mlir::lsp::InitializedParams &) {}

void Server::onShutdown(const mlir::lsp::NoParams &, Callback<std::nullptr_t> reply) {
  shutdownRequested_ = true;
  reply(nullptr);
}

// --- Documents ---------------------------------------------------------------------------

void Server::onDidOpen(const mlir::lsp::DidOpenTextDocumentParams &params) {
  publishDiagnostics(documents_.open(params.textDocument.uri, params.textDocument.version,
                                     params.textDocument.text));
}

void Server::onDidChange(const mlir::lsp::DidChangeTextDocumentParams &params) {
  const Document *document = documents_.change(params.textDocument.uri, params.textDocument.version,
                                               params.contentChanges);
  if (!document) {
    Logger::error("didChange of {0}: not open, or an edit outside its text",
                  params.textDocument.uri.file());
    return;
  }
  publishDiagnostics(*document);
}

void Server::onDidClose(const mlir::lsp::DidCloseTextDocumentParams &params) {
  std::string path = params.textDocument.uri.file().str();
  documents_.close(params.textDocument.uri);
  // Its diagnostics go with it, in the files it reported for as well.
  std::set<std::string> files = publishedElsewhere_[path];
  files.insert(path);
  publishedElsewhere_.erase(path);
  for (const std::string &file : files) {
    if (file != path && documents_.isOpen(file))
      continue;
    if (auto uri = mlir::lsp::URIForFile::fromFile(file))
      publish_(llvm::json::Object{{"uri", uri->uri().str()}, {"diagnostics", llvm::json::Array()}});
    else
      llvm::consumeError(uri.takeError());
  }
}

void Server::publishDiagnostics(const Document &document) {
  std::string path = document.uri.file().str();
  bool isSource = llvm::StringRef(path).ends_with(".fsl");
  std::map<std::string, llvm::json::Array> byFile;
  if (isSource)
    byFile = lspDiagnostics(*document.current);
  byFile[path];
  std::set<std::string> &elsewhere = publishedElsewhere_[path];
  for (const std::string &file : elsewhere)
    byFile[file]; // cleared unless reported again
  elsewhere.clear();
  for (auto &[file, diagnostics] : byFile) {
    // A file open in the editor reports for itself.
    if (file != path && documents_.isOpen(file))
      continue;
    llvm::Expected<mlir::lsp::URIForFile> uri = mlir::lsp::URIForFile::fromFile(file);
    if (!uri) {
      llvm::consumeError(uri.takeError());
      continue;
    }
    if (file != path && !diagnostics.empty())
      elsewhere.insert(file);
    llvm::json::Object params{{"uri", uri->uri().str()}, {"diagnostics", std::move(diagnostics)}};
    if (file == path)
      params["version"] = document.version;
    publish_(std::move(params));
  }
}

llvm::Expected<const Document &> Server::document(const mlir::lsp::URIForFile &uri) const {
  if (const Document *document = documents_.find(uri))
    return *document;
  return llvm::make_error<mlir::lsp::LSPError>("document not open: " + uri.uri().str(),
                                               mlir::lsp::ErrorCode::InvalidParams);
}

const SymbolIndex &Server::indexOf(const std::shared_ptr<const Analysis> &analysis) {
  // Forget the indexes of analyses no document holds any more.
  for (auto it = indexes_.begin(); it != indexes_.end();)
    it = it->second.first.expired() ? indexes_.erase(it) : std::next(it);
  auto &entry = indexes_[analysis.get()];
  if (!entry.second) {
    entry.first = analysis;
    entry.second = std::make_unique<SymbolIndex>(*analysis);
  }
  return *entry.second;
}

// --- Features ----------------------------------------------------------------------------

void Server::onFormatting(const DocumentFormattingParams &params,
                          Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  llvm::Expected<llvm::json::Array> edits = formatDocument(*found->current);
  if (!edits)
    return reply(edits.takeError());
  reply(std::move(*edits));
}

void Server::onDocumentSymbol(const mlir::lsp::DocumentSymbolParams &params,
                              Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  reply(documentSymbols(*found->current));
}

void Server::onFoldingRange(const FoldingRangeParams &params, Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  reply(foldingRanges(*found->current));
}

void Server::onHover(const mlir::lsp::TextDocumentPositionParams &params,
                     Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  const Analysis &analysis = *found->current;
  std::optional<HoverText> text =
      hoverAt(analysis, indexOf(found->current), analysis.locAt(params.position));
  if (!text || text->markdown.empty())
    return reply(nullptr);
  mlir::lsp::Hover hover(analysis.rangeOf(text->range));
  hover.contents.value = text->markdown;
  reply(ownedJSON(mlir::lsp::toJSON(hover)));
}

void Server::onDefinition(const mlir::lsp::TextDocumentPositionParams &params,
                          Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  const Analysis &analysis = *found->current;
  const SymbolIndex &index = indexOf(found->current);
  llvm::json::Array locations;
  if (const Occurrence *occurrence = index.at(analysis.locAt(params.position))) {
    std::optional<mlir::lsp::Location> location;
    if (occurrence->symbol.kind == Symbol::Kind::Import) {
      for (const ImportedFile &imported : analysis.imports())
        if (imported.path == occurrence->symbol.scope)
          location = analysis.startOf(imported.buffer);
    } else if (const Occurrence *definition = index.definitionOf(occurrence->symbol)) {
      location = analysis.locationOf(definition->range);
    }
    if (location)
      locations.push_back(ownedJSON(mlir::lsp::toJSON(*location)));
  }
  reply(std::move(locations));
}

void Server::onReferences(const mlir::lsp::ReferenceParams &params,
                          Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  const Analysis &analysis = *found->current;
  const SymbolIndex &index = indexOf(found->current);
  llvm::json::Array locations;
  if (const Occurrence *occurrence = index.at(analysis.locAt(params.position)))
    for (const Occurrence *each : index.occurrencesOf(occurrence->symbol)) {
      if (each->isDefinition && !params.context.includeDeclaration)
        continue;
      if (std::optional<mlir::lsp::Location> location = analysis.locationOf(each->range))
        locations.push_back(ownedJSON(mlir::lsp::toJSON(*location)));
    }
  reply(std::move(locations));
}

void Server::onCompletion(const mlir::lsp::CompletionParams &params,
                          Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  const std::shared_ptr<const Analysis> &names = found->lastParsed;
  reply(completeAt(found->uri.file(), found->text, params.position, names.get(),
                   names ? &indexOf(names) : nullptr, options_));
}

void Server::onInlayHint(const mlir::lsp::InlayHintsParams &params,
                         Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.textDocument.uri);
  if (!found)
    return reply(found.takeError());
  reply(inlayHints(*found->current, params.range));
}

void Server::onExecuteCommand(const ExecuteCommandParams &params,
                              Callback<llvm::json::Value> reply) {
  llvm::Expected<const Document &> found = document(params.uri);
  if (!found)
    return reply(found.takeError());
  const Analysis &analysis = *found->current;
  reply(runCommand(analysis, params.command, analysis.locAt(params.position)));
}

} // namespace fsl::lsp
