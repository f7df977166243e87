// Analysis.h — one version of one open document, compiled: its diagnostics, its syntax
// tree, and what the compiler derived (Fusion IR, checked schedules, Kernel IR).
//
// The document goes through pipeline::Compilation as `fslc FILE` would take it (fsl.toml
// next to it, its imports from disk, the heuristics' schedules for fusions without one,
// lowering when nothing failed), in memory and in-process. The server keeps its own
// parse of the text and of each file it imports: sema consumes the compilation's tree
// and drops it after a semantic error, but hover, definitions and the outline should
// still work on a file with a misspelt name.
#pragma once

#include "lsp/LineTable.h"

#include "ast/AST.h"
#include "pipeline/Compilation.h"
#include "pipeline/Settings.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include <llvm/Support/SourceMgr.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsl::lsp {

/// What the server was started with (fsl-lsp's flags); fsl.toml adds to it per document.
struct ServerOptions {
  std::string stdlibDir;
  std::vector<std::string> includeDirs;
  std::string target; // empty: fsl.toml's, else the default
};

/// A file the document imports directly, parsed by the server.
struct ImportedFile {
  std::string path; // as resolved by sema (the buffer's name)
  unsigned buffer = 0;
  llvm::SMLoc importedAt;            // the import's path in the document
  std::unique_ptr<ast::File> syntax; // null when it has syntax errors
};

class Analysis {
public:
  /// Compiles `text` as the file `path` (an absolute path: imports and fsl.toml are
  /// found from its folder).
  Analysis(std::string path, std::string text, const ServerOptions &options);
  Analysis(const Analysis &) = delete;
  Analysis &operator=(const Analysis &) = delete;
  ~Analysis();

  const std::string &path() const { return path_; }
  llvm::StringRef text() const;
  const LineTable &lines() const { return *lines_; }
  llvm::SourceMgr &sources() const { return sources_; }
  unsigned mainBuffer() const { return mainBuffer_; }

  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_.diagnostics; }
  /// The parse of this text; null after a syntax error.
  const ast::File *syntax() const { return syntax_.get(); }
  /// The files the document imports directly, in the order sema loaded them.
  const std::vector<ImportedFile> &imports() const { return imports_; }
  /// After sema without errors: the Fusion IR and the planned, built, checked schedules.
  const Program *program() const;
  const pipeline::SchedulePlan *schedules() const;
  /// The compilation, lowered when nothing failed (then programOf and generate work).
  const pipeline::Compilation *compilation() const {
    return compilation_ ? &*compilation_ : nullptr;
  }
  bool lowered() const { return lowered_; }
  const Settings &settings() const { return settings_; }

  // --- Positions ---------------------------------------------------------------------

  llvm::SMLoc locAt(const mlir::lsp::Position &position) const;
  size_t offsetOf(llvm::SMLoc loc) const;
  bool inMainFile(llvm::SMLoc loc) const;
  /// A range of the document itself.
  mlir::lsp::Range rangeOf(llvm::SMRange range) const;
  /// A range in any buffer the compilation read (the document, an import, fsl.toml, a
  /// target file); none for an invalid range or a buffer without a file behind it.
  std::optional<mlir::lsp::Location> locationOf(llvm::SMRange range) const;
  /// The start of the file held in `buffer`.
  std::optional<mlir::lsp::Location> startOf(unsigned buffer) const;
  /// For a location in a file the document imports (directly or not): the import in
  /// the document that brought it in.
  std::optional<llvm::SMRange> importLineOf(llvm::SMLoc loc) const;

private:
  void compile(const ServerOptions &options);
  void parseImports();
  const LineTable &linesOf(unsigned buffer) const;

  std::string path_;
  mutable llvm::SourceMgr sources_;
  unsigned mainBuffer_ = 0;
  std::unique_ptr<LineTable> lines_;
  mutable std::map<unsigned, std::unique_ptr<LineTable>> otherLines_;
  CollectingDiagnosticConsumer diagnostics_;
  Settings settings_;
  std::unique_ptr<ast::File> syntax_;
  std::vector<ImportedFile> imports_;
  std::optional<pipeline::Compilation> compilation_;
  bool analyzed_ = false;
  bool lowered_ = false;
};

} // namespace fsl::lsp
