// DocumentStore.cpp — open, change, close; an analysis per version.
#include "lsp/DocumentStore.h"

#include <mlir/Tools/lsp-server-support/Logging.h>

#include <chrono>

namespace fsl::lsp {

void DocumentStore::analyze(Document &document) {
  auto start = std::chrono::steady_clock::now();
  document.current =
      std::make_shared<const Analysis>(document.uri.file().str(), document.text, options_);
  if (document.current->syntax())
    document.lastParsed = document.current;
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  mlir::lsp::Logger::info("analysed {0} (version {1}) in {2} ms", document.uri.file(),
                          document.version, elapsed.count());
}

const Document &DocumentStore::open(const mlir::lsp::URIForFile &uri, int64_t version,
                                    std::string text) {
  Document &document = documents_[uri.file().str()];
  document = Document{uri, version, std::move(text), nullptr, nullptr};
  analyze(document);
  return document;
}

const Document *
DocumentStore::change(const mlir::lsp::URIForFile &uri, int64_t version,
                      llvm::ArrayRef<mlir::lsp::TextDocumentContentChangeEvent> changes) {
  auto found = documents_.find(uri.file().str());
  if (found == documents_.end())
    return nullptr;
  Document &document = found->second;
  std::string text = document.text;
  if (mlir::failed(mlir::lsp::TextDocumentContentChangeEvent::applyTo(changes, text)))
    return nullptr;
  document.text = std::move(text);
  document.version = version;
  analyze(document);
  return &document;
}

void DocumentStore::close(const mlir::lsp::URIForFile &uri) { documents_.erase(uri.file().str()); }

const Document *DocumentStore::find(const mlir::lsp::URIForFile &uri) const {
  auto found = documents_.find(uri.file().str());
  return found == documents_.end() ? nullptr : &found->second;
}

} // namespace fsl::lsp
