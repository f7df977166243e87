// Mutator.cpp — the default walks: every child expression and statement of every node.
#include "kir/Mutator.h"

namespace fsl::kir {
namespace {

/// The expression slots of a statement, in a fixed order (shared by visit and mutate).
template <typename Node, typename F> void forEachExprSlot(Node &s, F &&f) {
  f(s.extent);
  f(s.condition);
  f(s.value);
  f(s.index);
  f(s.sourceIndex);
  f(s.threads);
  f(s.count);
  for (auto &coordinate : s.coordinates)
    f(coordinate);
  f(s.barrierIndex);
  f(s.multicastMask);
  f(s.ctaRank);
  f(s.offsetA);
  f(s.offsetB);
}

} // namespace

void Visitor::visitChildren(const Expr &e) {
  for (const Expr &operand : e->operands)
    visit(operand);
}

void Visitor::visitChildren(const Stmt &s) {
  forEachExprSlot(*s, [&](const Expr &e) {
    if (e)
      visit(e);
  });
  for (const Stmt &child : s->body)
    if (child)
      visit(child);
}

Expr Mutator::mutateChildren(const Expr &e) {
  std::vector<Expr> operands;
  bool changed = false;
  for (const Expr &operand : e->operands) {
    operands.push_back(mutate(operand));
    changed |= operands.back() != operand;
  }
  if (!changed)
    return e;
  auto copy = std::make_shared<ExprNode>(*e);
  copy->operands = std::move(operands);
  return copy;
}

Stmt Mutator::mutateChildren(const Stmt &s) {
  auto copy = std::make_shared<StmtNode>(*s);
  bool changed = false;
  forEachExprSlot(*copy, [&](Expr &e) {
    if (!e)
      return;
    Expr mutated = mutate(e);
    changed |= mutated != e;
    e = std::move(mutated);
  });
  std::vector<Stmt> body;
  for (const Stmt &child : s->body) {
    Stmt mutated = child ? mutate(child) : child;
    changed |= mutated != child;
    // A child rewritten to nothing is dropped from a block; elsewhere it is an empty block.
    if (!mutated && s->kind != StmtKind::Block)
      mutated = block({});
    if (mutated)
      body.push_back(std::move(mutated));
  }
  if (!changed)
    return s;
  copy->body = s->kind == StmtKind::Block ? flattenBlocks(std::move(body)) : std::move(body);
  return copy;
}

namespace {

class FunctionVisitor : public Visitor {
public:
  std::function<void(const Stmt &)> onStmt;
  std::function<void(const Expr &)> onExpr;
  void visit(const Expr &e) override {
    if (onExpr)
      onExpr(e);
    visitChildren(e);
  }
  void visit(const Stmt &s) override {
    if (onStmt)
      onStmt(s);
    visitChildren(s);
  }
};

class Substituter : public Mutator {
public:
  explicit Substituter(const std::function<Expr(const VarPtr &)> &f) : f_(f) {}
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    if (e->kind == ExprKind::Var)
      if (Expr replaced = f_(e->var))
        return replaced;
    return mutateChildren(e);
  }

private:
  const std::function<Expr(const VarPtr &)> &f_;
};

} // namespace

void forEachStmt(const Stmt &s, const std::function<void(const Stmt &)> &f) {
  FunctionVisitor v;
  v.onStmt = f;
  v.visit(s);
}

void forEachExpr(const Stmt &s, const std::function<void(const Expr &)> &f) {
  FunctionVisitor v;
  v.onExpr = f;
  v.visit(s);
}

Expr substitute(const Expr &e, const std::function<Expr(const VarPtr &)> &replacement) {
  return Substituter(replacement).mutate(e);
}

Stmt substitute(const Stmt &s, const std::function<Expr(const VarPtr &)> &replacement) {
  return Substituter(replacement).mutate(s);
}

bool uses(const Expr &e, const VarPtr &v) {
  if (e->kind == ExprKind::Var)
    return !v || e->var == v;
  for (const Expr &operand : e->operands)
    if (uses(operand, v))
      return true;
  return false;
}

} // namespace fsl::kir
