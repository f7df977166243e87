// SymbolIndex.h — every name in a document, resolved: which fusion, fn, import,
// dimension, value or loop it declares or refers to.
//
// Built from the server's own parse of the document and of the files it imports
// directly (Analysis), so it works whether or not sema succeeded. Definitions, references
// and hover read it. Scopes follow the language: a fusion's dimensions and values (its
// parameters, outputs and lets) belong to the fusion, and a schedule block names them
// by the fusion in its header; a loop exists in the block whose split or merge makes it
// (two `when` variants may both split H into Ho, and those are different loops); a fn
// sees its parameters and the fns of its file and of the files that file imports.
#pragma once

#include "lsp/Analysis.h"

#include <compare>
#include <map>
#include <string>
#include <vector>

namespace fsl::lsp {

struct Symbol {
  enum class Kind { Fusion, Fn, FnParam, Import, Dim, Value, Loop };
  Kind kind = Kind::Fusion;
  std::string name;
  /// Fusion, Fn: the file declaring it. Import: the file imported (the written path when
  /// it was not found). Dim, Value, Loop: the fusion. FnParam: the fn.
  std::string scope;
  /// Loop: the byte offset of its schedule declaration in the document.
  size_t block = 0;
  auto operator<=>(const Symbol &) const = default;
};

llvm::StringRef symbolKindName(Symbol::Kind kind);

struct Occurrence {
  Symbol symbol;
  llvm::SMRange range; // the name as written
  bool isDefinition = false;
};

class SymbolIndex {
public:
  explicit SymbolIndex(const Analysis &analysis);

  /// The occurrence under `loc` in the document (a cursor just after a name is on it).
  const Occurrence *at(llvm::SMLoc loc) const;
  /// Where `symbol` is declared: in the document or in a file it imports.
  const Occurrence *definitionOf(const Symbol &symbol) const;
  /// Every occurrence of `symbol`, definitions included, in source order of each file.
  std::vector<const Occurrence *> occurrencesOf(const Symbol &symbol) const;
  /// The declaration of a fusion or fn of the document or of its direct imports.
  const ast::FusionDecl *fusionDecl(const Symbol &symbol) const;
  const ast::FnDecl *fnDecl(const Symbol &symbol) const;
  /// The names a fusion's body and schedules see (for completion).
  std::vector<const Occurrence *> definitionsIn(Symbol::Kind kind, llvm::StringRef scope) const;

private:
  friend class IndexBuilder;
  std::vector<Occurrence> occurrences_;  // document first, then the imports
  std::map<Symbol, size_t> definitions_; // index into occurrences_
  std::map<Symbol, const ast::FusionDecl *> fusions_;
  std::map<Symbol, const ast::FnDecl *> fns_;
  const Analysis *analysis_;
};

} // namespace fsl::lsp
