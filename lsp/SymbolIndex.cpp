// SymbolIndex.cpp — one walk over the document's syntax tree, names resolved by scope.
#include "lsp/SymbolIndex.h"

#include <set>

namespace fsl::lsp {

llvm::StringRef symbolKindName(Symbol::Kind kind) {
  switch (kind) {
  case Symbol::Kind::Fusion:
    return "fusion";
  case Symbol::Kind::Fn:
    return "fn";
  case Symbol::Kind::FnParam:
    return "fn parameter";
  case Symbol::Kind::Import:
    return "import";
  case Symbol::Kind::Dim:
    return "dimension";
  case Symbol::Kind::Value:
    return "value";
  case Symbol::Kind::Loop:
    return "loop";
  }
  return "name";
}

class IndexBuilder {
public:
  IndexBuilder(SymbolIndex &index, const Analysis &analysis) : index_(index), analysis_(analysis) {}

  void build() {
    const ast::File *main = analysis_.syntax();
    if (!main)
      return;
    // The fns the document sees: its own and those of the files it imports directly.
    for (const ImportedFile &imported : analysis_.imports())
      if (imported.syntax)
        declareTopLevel(*imported.syntax, imported.path);
    declareTopLevel(*main, analysis_.path());
    // The document's definitions come first in each symbol's list: declare them again
    // in order so that `definitions_` points at the document where it declares them.
    for (const ast::DeclPtr &decl : main->decls)
      indexDecl(*decl);
  }

private:
  void add(Symbol symbol, llvm::SMRange range, bool isDefinition) {
    if (!range.Start.isValid())
      return;
    index_.occurrences_.push_back({symbol, range, isDefinition});
    if (isDefinition)
      index_.definitions_.try_emplace(symbol, index_.occurrences_.size() - 1);
  }

  /// Fusions and fns a file declares, visible by name to the document.
  void declareTopLevel(const ast::File &file, const std::string &path) {
    for (const ast::DeclPtr &decl : file.decls) {
      if (const auto *fn = llvm::dyn_cast<ast::FnDecl>(decl.get())) {
        Symbol symbol{Symbol::Kind::Fn, fn->name.text, path};
        index_.fns_.emplace(symbol, fn);
        fnFiles_.try_emplace(fn->name.text, path);
        if (path != analysis_.path())
          add(symbol, fn->name.range, true);
      } else if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get())) {
        Symbol symbol{Symbol::Kind::Fusion, fusion->name.text, path};
        index_.fusions_.emplace(symbol, fusion);
        if (path != analysis_.path())
          add(symbol, fusion->name.range, true);
      }
    }
    if (path == analysis_.path()) // its own fns hide the imported ones of that name
      for (const ast::DeclPtr &decl : file.decls)
        if (const auto *fn = llvm::dyn_cast<ast::FnDecl>(decl.get()))
          fnFiles_[fn->name.text] = path;
  }

  void indexDecl(const ast::Decl &decl) {
    if (const auto *import = llvm::dyn_cast<ast::ImportDecl>(&decl))
      indexImport(*import);
    else if (const auto *fn = llvm::dyn_cast<ast::FnDecl>(&decl))
      indexFn(*fn);
    else if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(&decl))
      indexFusion(*fusion);
    else if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(&decl))
      indexSchedule(*schedule);
  }

  void indexImport(const ast::ImportDecl &import) {
    std::string resolved = import.path;
    for (const ImportedFile &imported : analysis_.imports())
      if (imported.importedAt.getPointer() == import.pathRange.Start.getPointer())
        resolved = imported.path;
    add({Symbol::Kind::Import, import.path, resolved}, import.pathRange, false);
  }

  // --- Expressions ----------------------------------------------------------------------

  /// What names in an expression can mean where it is written.
  struct ExprScope {
    Symbol::Kind valueKind = Symbol::Kind::Value; // FnParam inside a fn
    std::string owner;                            // the fusion or fn
    std::set<std::string> values;
    std::set<std::string> dims; // a fusion's
  };

  void indexExpr(const ast::Expr &expr, const ExprScope &scope) {
    switch (expr.kind()) {
    case ast::Expr::Kind::Literal:
      return;
    case ast::Expr::Kind::NameRef: {
      const ast::Name &name = llvm::cast<ast::NameExpr>(expr).name;
      if (scope.values.count(name.text))
        add({scope.valueKind, name.text, scope.owner}, name.range, false);
      else if (scope.dims.count(name.text))
        add({Symbol::Kind::Dim, name.text, scope.owner}, name.range, false);
      return;
    }
    case ast::Expr::Kind::Call: {
      const auto &call = llvm::cast<ast::CallExpr>(expr);
      if (auto fn = fnFiles_.find(call.callee.text); fn != fnFiles_.end())
        add({Symbol::Kind::Fn, call.callee.text, fn->second}, call.callee.range, false);
      for (const ast::ExprPtr &argument : call.args)
        indexExpr(*argument, scope);
      if (scope.valueKind == Symbol::Kind::Value)
        for (const ast::Name &dim : call.overDims)
          add({Symbol::Kind::Dim, dim.text, scope.owner}, dim.range, false);
      return;
    }
    case ast::Expr::Kind::Cast:
      indexExpr(*llvm::cast<ast::CastExpr>(expr).operand, scope);
      return;
    case ast::Expr::Kind::Unary:
      indexExpr(*llvm::cast<ast::UnaryExpr>(expr).operand, scope);
      return;
    case ast::Expr::Kind::Binary:
      indexExpr(*llvm::cast<ast::BinaryExpr>(expr).lhs, scope);
      indexExpr(*llvm::cast<ast::BinaryExpr>(expr).rhs, scope);
      return;
    case ast::Expr::Kind::Paren:
      indexExpr(*llvm::cast<ast::ParenExpr>(expr).inner, scope);
      return;
    case ast::Expr::Kind::Index: {
      // `x[D = i]`, `x[H2 -> H from k]`: the tensor, the dimensions and the index.
      const auto &index = llvm::cast<ast::IndexExpr>(expr);
      if (scope.values.count(index.base.text))
        add({scope.valueKind, index.base.text, scope.owner}, index.base.range, false);
      for (const ast::Name *dim : {&index.dim, index.isWindow ? &index.window : nullptr})
        if (dim && scope.dims.count(dim->text))
          add({Symbol::Kind::Dim, dim->text, scope.owner}, dim->range, false);
      if (index.index)
        indexExpr(*index.index, scope);
      return;
    }
    }
  }

  // --- Declarations ---------------------------------------------------------------------

  void indexFn(const ast::FnDecl &fn) {
    add({Symbol::Kind::Fn, fn.name.text, analysis_.path()}, fn.name.range, true);
    ExprScope scope{Symbol::Kind::FnParam, fn.name.text, {}, {}};
    for (const ast::Name &param : fn.params) {
      add({Symbol::Kind::FnParam, param.text, fn.name.text}, param.range, true);
      scope.values.insert(param.text);
    }
    if (fn.body)
      indexExpr(*fn.body, scope);
  }

  void indexType(const ast::Type &type, const std::string &fusion) {
    for (const ast::Name &dim : type.dims) {
      Symbol symbol{Symbol::Kind::Dim, dim.text, fusion};
      // A dimension without `<D = N>` is declared where the signature first names it.
      add(symbol, dim.range, !index_.definitions_.count(symbol));
    }
  }

  void indexFusion(const ast::FusionDecl &fusion) {
    const std::string &name = fusion.name.text;
    add({Symbol::Kind::Fusion, name, analysis_.path()}, fusion.name.range, true);
    ExprScope scope{Symbol::Kind::Value, name, {}, {}};
    for (const ast::StaticDim &dim : fusion.staticDims) {
      add({Symbol::Kind::Dim, dim.name.text, name}, dim.name.range, true);
      scope.dims.insert(dim.name.text);
    }
    for (const ast::Param &param : fusion.params) {
      add({Symbol::Kind::Value, param.name.text, name}, param.name.range, true);
      indexType(param.type, name);
      if (param.defaultValue)
        indexExpr(*param.defaultValue, scope);
    }
    for (const ast::Output &output : fusion.outputs) {
      add({Symbol::Kind::Value, output.name.text, name}, output.name.range, true);
      indexType(output.type, name);
    }
    // `backward g, h`: references to fusions of this file.
    for (const ast::Name &backward : fusion.backward)
      add({Symbol::Kind::Fusion, backward.text, analysis_.path()}, backward.range, false);
    for (const ast::Param &param : fusion.params) {
      scope.values.insert(param.name.text);
      for (const ast::Name &dim : param.type.dims)
        scope.dims.insert(dim.text);
    }
    for (const ast::Output &output : fusion.outputs) {
      scope.values.insert(output.name.text);
      for (const ast::Name &dim : output.type.dims)
        scope.dims.insert(dim.text);
    }
    for (const ast::Statement &statement : fusion.body) {
      if (statement.value)
        indexExpr(*statement.value, scope);
      if (statement.declaredType)
        indexType(*statement.declaredType, name);
      add({Symbol::Kind::Value, statement.target.text, name}, statement.target.range,
          statement.isLet);
      scope.values.insert(statement.target.text);
    }
  }

  void indexSchedule(const ast::ScheduleDecl &schedule) {
    const std::string &fusion = schedule.fusion.text;
    add({Symbol::Kind::Fusion, fusion, analysis_.path()}, schedule.fusion.range, false);
    for (const ast::SizeCondition &condition : schedule.when)
      add({Symbol::Kind::Dim, condition.dim.text, fusion}, condition.dim.range, false);
    size_t block = analysis_.offsetOf(schedule.range.Start);
    std::set<std::string> loops;
    for (const ast::DirectivePtr &directive : schedule.directives) {
      if (const auto *split = llvm::dyn_cast<ast::SplitDirective>(directive.get())) {
        loops.insert(split->outer.text);
        loops.insert(split->inner.text);
      } else if (const auto *merge = llvm::dyn_cast<ast::MergeDirective>(directive.get())) {
        loops.insert(merge->result.text);
      }
    }
    auto loop = [&](const ast::Name &name, bool isDefinition) {
      add({Symbol::Kind::Loop, name.text, fusion, block}, name.range, isDefinition);
    };
    auto tensor = [&](const ast::Name &name) {
      add({Symbol::Kind::Value, name.text, fusion}, name.range, false);
    };
    auto dimRef = [&](const ast::DimRef &ref) {
      if (ref.tensor)
        tensor(*ref.tensor);
      if (loops.count(ref.dim.text))
        loop(ref.dim, false);
      else
        add({Symbol::Kind::Dim, ref.dim.text, fusion}, ref.dim.range, false);
    };
    using Kind = ast::Directive::Kind;
    for (const ast::DirectivePtr &pointer : schedule.directives) {
      const ast::Directive &directive = *pointer;
      switch (directive.kind()) {
      case Kind::Split: {
        const auto &split = llvm::cast<ast::SplitDirective>(directive);
        dimRef(split.dim);
        loop(split.outer, true);
        loop(split.inner, true);
        break;
      }
      case Kind::Merge: {
        const auto &merge = llvm::cast<ast::MergeDirective>(directive);
        dimRef(merge.first);
        dimRef(merge.second);
        loop(merge.result, true);
        break;
      }
      case Kind::Reorder:
        for (const ast::DimRef &ref : llvm::cast<ast::ReorderDirective>(directive).order)
          dimRef(ref);
        break;
      case Kind::Parallelize:
        for (const ast::ParallelBinding &binding :
             llvm::cast<ast::ParallelizeDirective>(directive).bindings)
          dimRef(binding.dim);
        break;
      case Kind::Vectorize:
        dimRef(llvm::cast<ast::VectorizeDirective>(directive).dim);
        break;
      case Kind::Unswitch:
        dimRef(llvm::cast<ast::UnswitchDirective>(directive).dim);
        break;
      case Kind::Prefetch:
        dimRef(llvm::cast<ast::PrefetchDirective>(directive).dim);
        break;
      case Kind::Rfactor:
        dimRef(llvm::cast<ast::RfactorDirective>(directive).dim);
        break;
      case Kind::Unroll:
        dimRef(llvm::cast<ast::UnrollDirective>(directive).dim);
        break;
      case Kind::Inline:
        if (const auto &name = llvm::cast<ast::InlineDirective>(directive).tensor)
          tensor(*name);
        break;
      case Kind::ComputeAt:
        tensor(llvm::cast<ast::ComputeAtDirective>(directive).tensor);
        dimRef(llvm::cast<ast::ComputeAtDirective>(directive).at);
        break;
      case Kind::ComputeWith:
        tensor(llvm::cast<ast::ComputeWithDirective>(directive).tensor);
        break;
      case Kind::Persistent:
        tensor(llvm::cast<ast::PersistentDirective>(directive).tensor);
        break;
      case Kind::Cache:
        tensor(llvm::cast<ast::CacheDirective>(directive).tensor);
        break;
      case Kind::Mma:
        add({Symbol::Kind::Dim, llvm::cast<ast::MmaDirective>(directive).reductionDim.text, fusion},
            llvm::cast<ast::MmaDirective>(directive).reductionDim.range, false);
        break;
      default: // the other directives name no loop, tensor or dimension
        break;
      }
    }
  }

  SymbolIndex &index_;
  const Analysis &analysis_;
  std::map<std::string, std::string> fnFiles_; // fn name -> the file declaring it
};

SymbolIndex::SymbolIndex(const Analysis &analysis) : analysis_(&analysis) {
  IndexBuilder(*this, analysis).build();
}

const Occurrence *SymbolIndex::at(llvm::SMLoc loc) const {
  const Occurrence *best = nullptr;
  for (const Occurrence &occurrence : occurrences_) {
    if (!analysis_->inMainFile(occurrence.range.Start))
      continue;
    const char *p = loc.getPointer();
    if (p < occurrence.range.Start.getPointer() || p > occurrence.range.End.getPointer())
      continue;
    // Touching two names (`a*b` with the cursor after `a`): the one starting here.
    if (!best || occurrence.range.Start.getPointer() > best->range.Start.getPointer())
      best = &occurrence;
  }
  return best;
}

const Occurrence *SymbolIndex::definitionOf(const Symbol &symbol) const {
  auto found = definitions_.find(symbol);
  return found == definitions_.end() ? nullptr : &occurrences_[found->second];
}

std::vector<const Occurrence *> SymbolIndex::occurrencesOf(const Symbol &symbol) const {
  std::vector<const Occurrence *> result;
  for (const Occurrence &occurrence : occurrences_)
    if (occurrence.symbol == symbol)
      result.push_back(&occurrence);
  return result;
}

const ast::FusionDecl *SymbolIndex::fusionDecl(const Symbol &symbol) const {
  auto found = fusions_.find(symbol);
  return found == fusions_.end() ? nullptr : found->second;
}

const ast::FnDecl *SymbolIndex::fnDecl(const Symbol &symbol) const {
  auto found = fns_.find(symbol);
  return found == fns_.end() ? nullptr : found->second;
}

std::vector<const Occurrence *> SymbolIndex::definitionsIn(Symbol::Kind kind,
                                                           llvm::StringRef scope) const {
  std::vector<const Occurrence *> result;
  for (const auto &[symbol, index] : definitions_)
    if (symbol.kind == kind && (scope.empty() || symbol.scope == scope))
      result.push_back(&occurrences_[index]);
  return result;
}

} // namespace fsl::lsp
