// Mutator.h — walking and rewriting the Kernel IR (Halide's IRVisitor / IRMutator).
//
// A Visitor sees every statement and expression, children after their parent unless an
// override stops the walk. A Mutator returns a rewritten tree: the default rebuilds a
// node only when one of its children changed, so untouched subtrees stay shared.
#pragma once

#include "kir/IR.h"

#include <functional>

namespace fsl::kir {

class Visitor {
public:
  virtual ~Visitor() = default;
  virtual void visit(const Expr &e) { visitChildren(e); }
  virtual void visit(const Stmt &s) { visitChildren(s); }

protected:
  void visitChildren(const Expr &e);
  void visitChildren(const Stmt &s);
};

class Mutator {
public:
  virtual ~Mutator() = default;
  virtual Expr mutate(const Expr &e) { return mutateChildren(e); }
  virtual Stmt mutate(const Stmt &s) { return mutateChildren(s); }

protected:
  Expr mutateChildren(const Expr &e);
  Stmt mutateChildren(const Stmt &s);
};

/// Calls `f` on every statement of `s`, parents first.
void forEachStmt(const Stmt &s, const std::function<void(const Stmt &)> &f);
/// Calls `f` on every expression of `s` (and their subexpressions), parents first.
void forEachExpr(const Stmt &s, const std::function<void(const Expr &)> &f);
/// `e` with every use of a variable in `replacements` replaced.
Expr substitute(const Expr &e, const std::function<Expr(const VarPtr &)> &replacement);
Stmt substitute(const Stmt &s, const std::function<Expr(const VarPtr &)> &replacement);
/// Whether `e` reads variable `v` (or any variable, for `v` null).
bool uses(const Expr &e, const VarPtr &v);

} // namespace fsl::kir
