// DocumentStore.h — the open documents: their text, version and latest analysis.
//
// Every change recompiles the document at once (a file compiles in milliseconds, the
// whole pipeline through lowering), so diagnostics always describe the text the editor
// shows. The last analysis that parsed is kept as well: while the user types, the text
// usually does not parse, and completion still needs the names of the file.
#pragma once

#include "lsp/Analysis.h"

#include <map>
#include <memory>
#include <string>

namespace fsl::lsp {

struct Document {
  mlir::lsp::URIForFile uri;
  int64_t version = 0;
  std::string text;
  std::shared_ptr<const Analysis> current;
  /// The latest analysis with a syntax tree (the current one when it parsed).
  std::shared_ptr<const Analysis> lastParsed;
};

class DocumentStore {
public:
  explicit DocumentStore(ServerOptions options) : options_(std::move(options)) {}

  /// Opens or replaces a document and analyses it.
  const Document &open(const mlir::lsp::URIForFile &uri, int64_t version, std::string text);
  /// Applies edits to an open document and analyses it again; null when the document is
  /// not open or an edit does not apply (a range outside the text).
  const Document *change(const mlir::lsp::URIForFile &uri, int64_t version,
                         llvm::ArrayRef<mlir::lsp::TextDocumentContentChangeEvent> changes);
  void close(const mlir::lsp::URIForFile &uri);
  const Document *find(const mlir::lsp::URIForFile &uri) const;
  bool isOpen(llvm::StringRef path) const { return documents_.count(path.str()) != 0; }

private:
  void analyze(Document &document);

  ServerOptions options_;
  std::map<std::string, Document> documents_; // by file path
};

} // namespace fsl::lsp
