// Mutator.cpp — the default walks: every child expression and statement of every node, as
// Stmt.def lists the fields of each kind.
#include "kir/Mutator.h"

namespace fsl::kir {
namespace {

/// The extents of a tensor map, seen.
template <typename F> void tensorMapExtents(const TensorMapPtr &map, F &f) {
  if (map)
    for (const Expr &extent : map->extents)
      f(extent);
}

/// The extents of a tensor map, rewritten: a map whose extents change is rebuilt (one that
/// keeps them stays the same object, shared with the kernel's parameter).
template <typename F> void tensorMapExtents(TensorMapPtr &map, F &f) {
  if (!map)
    return;
  std::vector<Expr> extents = map->extents;
  for (Expr &extent : extents)
    f(extent);
  if (extents == map->extents)
    return;
  auto copy = std::make_shared<TensorMap>(*map);
  copy->extents = std::move(extents);
  map = std::move(copy);
}

/// The expression slots of one field in `role`: an Expr field, each element of an
/// expression list, each extent of a tensor map; nothing for the other roles.
template <StmtFieldRole role, typename Slot, typename F> void exprSlotsOf(Slot &slot, F &f) {
  if constexpr (role == StmtFieldRole::Expr)
    f(slot);
  else if constexpr (role == StmtFieldRole::Exprs)
    for (auto &e : slot)
      f(e);
  else if constexpr (role == StmtFieldRole::TensorMap)
    tensorMapExtents(slot, f);
}

/// The expression slots of a statement, in Stmt.def's order of the fields its kind uses
/// (shared by visit and mutate).
template <typename Node, typename F> void forEachExprSlot(Node &s, F &&f) {
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  if (stmtKindUses(s.kind, StmtField::Name))                                                       \
    exprSlotsOf<StmtFieldRole::Role>(s.Name, f);
#include "kir/Stmt.def"
}

/// The child statement lists of a statement (Stmts fields), in Stmt.def's order.
template <typename Node, typename F> void forEachStmtList(Node &s, F &&f) {
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  if constexpr (StmtFieldRole::Role == StmtFieldRole::Stmts)                                       \
    if (stmtKindUses(s.kind, StmtField::Name))                                                     \
      f(s.Name);
#include "kir/Stmt.def"
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
  forEachStmtList(*s, [&](const std::vector<Stmt> &children) {
    for (const Stmt &child : children)
      if (child)
        visit(child);
  });
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
  forEachStmtList(*copy, [&](std::vector<Stmt> &children) {
    std::vector<Stmt> rebuilt;
    for (const Stmt &child : children) {
      Stmt mutated = child ? mutate(child) : child;
      changed |= mutated != child;
      // A child rewritten to nothing is dropped from a block; elsewhere it is an empty block.
      if (!mutated && s->kind != StmtKind::Block)
        mutated = block({});
      if (mutated)
        rebuilt.push_back(std::move(mutated));
    }
    // Kept only if something changed (the copy is dropped otherwise).
    children = s->kind == StmtKind::Block ? flattenBlocks(std::move(rebuilt)) : std::move(rebuilt);
  });
  return changed ? copy : s;
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
