// Naming.h — the one scope every identifier of generated CUDA and launchers comes from.
//
// Names in a fusion are the user's (`x`, `eps`, `H`) or the lowering's (`Hp_i`, `acc`),
// and both must reach C++ as distinct, legal identifiers: a user scalar named `H_i` must
// not be read as the loop counter `H_i`, and a tensor named `float` or `stream` must not
// break the file. The printers therefore never write an entity's name directly: they
// declare each variable, buffer and tensor map in a NameScope as C declares it (the
// kernel's parameters, then a loop's index for its body, a let for the rest of its
// block) and print the name the scope gave it. A wanted name is taken as it is unless it
// is reserved (C++ and CUDA keywords and builtins, the runtime's `fsl_` names, names C++
// reserves for the implementation) or bound in an open scope; then the first free
// `name_N` is taken. Names of closed scopes are free again, so ordinary programs print the
// names they always did. LLVM's value naming is the model.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace fsl::codegen {

class NameScope {
public:
  /// A scope with one open frame (a file's or a function's outermost one).
  NameScope();

  /// A C scope opens (`{`): what is declared until the matching close() is bound in it.
  void open();
  /// The innermost scope closes: its names are free again.
  void close();

  /// Declares `entity` in the innermost scope and returns its name: `wanted` when that
  /// is free, else `wanted_N` for the first free N (a reserved `wanted` is first given a
  /// `v_` prefix). Declaring an entity again binds it anew until its scope closes.
  std::string declare(const void *entity, llvm::StringRef wanted);
  /// Binds `entity` to the name `sameAs` has (two IR objects that stand for one C
  /// variable: a dimension's variable in each kernel and in the launcher).
  void alias(const void *entity, const void *sameAs);
  /// The name `entity` is bound to in the open scopes; empty when it is not declared.
  llvm::StringRef lookup(const void *entity) const;
  /// Takes `name` for the innermost scope: a name the printer writes itself (a local of
  /// the launcher, a kernel's symbol), which no declaration may then use.
  void reserve(llvm::StringRef name);
  /// Whether `name` is reserved or bound in an open scope.
  bool taken(llvm::StringRef name) const;

private:
  struct Frame {
    std::vector<const void *> entities;
    std::vector<std::string> names;
  };
  std::vector<Frame> frames_;
  llvm::StringMap<unsigned> inUse_;                              // over the open frames
  llvm::DenseMap<const void *, std::vector<std::string>> bound_; // innermost binding last
};

} // namespace fsl::codegen
