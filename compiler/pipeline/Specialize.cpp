// Specialize.cpp — static and runtime dimensions chosen by the caller rather than the file.
#include "pipeline/Specialize.h"

#include "ast/AST.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Suggestions.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

namespace fsl::pipeline {

DroppedDims dropRuntimeDims(ast::File &file, const std::vector<std::string> &runtimeDims) {
  DroppedDims dropped;
  if (runtimeDims.empty())
    return dropped;
  for (ast::DeclPtr &decl : file.decls)
    if (auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get()))
      llvm::erase_if(fusion->staticDims, [&](const ast::StaticDim &dim) {
        if (!llvm::is_contained(runtimeDims, dim.name.text))
          return false;
        dropped[fusion->name.text].insert(dim.name.text);
        return true;
      });
  return dropped;
}

std::map<std::string, int64_t> semaDefines(const std::map<std::string, int64_t> &defines,
                                           const std::map<std::string, int64_t> &specializeDims) {
  std::map<std::string, int64_t> merged = defines;
  for (const auto &[name, value] : specializeDims)
    merged[name] = value;
  return merged;
}

void specializeRuntimeDims(Program &program, const std::map<std::string, int64_t> &specializeDims) {
  if (specializeDims.empty())
    return;
  for (const auto &fusion : program.fusions)
    for (ir::Dim &dim : fusion->dims)
      if (auto value = specializeDims.find(dim.name); value != specializeDims.end())
        dim.staticExtent = value->second;
}

std::set<std::string> staticDimNames(const ast::File &file,
                                     const std::map<std::string, int64_t> &specializeDims) {
  std::set<std::string> names;
  for (const ast::DeclPtr &decl : file.decls) {
    const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get());
    if (!fusion)
      continue;
    for (const ast::StaticDim &dim : fusion->staticDims)
      names.insert(dim.name.text);
    // A specialized runtime dimension is a static one of this fusion from now on.
    auto inSignature = [&](const std::string &name) {
      auto named = [&](const ast::Type &type) {
        return llvm::any_of(type.dims, [&](const ast::Name &dim) { return dim.text == name; });
      };
      return llvm::any_of(fusion->params, [&](const ast::Param &p) { return named(p.type); }) ||
             llvm::any_of(fusion->outputs, [&](const ast::Output &o) { return named(o.type); });
    };
    for (const auto &[name, value] : specializeDims)
      if (inSignature(name))
        names.insert(name);
  }
  return names;
}

bool checkDefines(const std::set<std::string> &declared,
                  const std::map<std::string, int64_t> &defines, DiagnosticEngine &diagnostics) {
  bool ok = true;
  for (const auto &[name, value] : defines) {
    if (declared.count(name))
      continue;
    std::vector<std::string> names(declared.begin(), declared.end());
    std::string hint = declared.empty() ? "; the inputs declare none"
                                        : "; static dimensions: " + llvm::join(declared, ", ") +
                                              didYouMean(name, names);
    diagnostics.report(DiagId::UnknownDefine, llvm::SMRange(), name, hint);
    ok = false;
  }
  return ok;
}

} // namespace fsl::pipeline
