// Bounds.cpp — the `bounds` pass: what happens past the end of a non-divisible split.
//
// A dimension whose loops can run past its extent (an inexact split) is either
//  - clamped, when only block and thread indices walk it and nothing reduces over it
//    (rows): loads read the last row again and stores past the end are skipped, so no
//    loop carries a check and fewer registers live across branches; or
//  - predicated: checked once a thread around the phase's nest when no serial loop walks
//    it, else in every iteration of the innermost serial loop (outside the vector loop
//    when vector accesses are whole: the vector is then all in or all out).
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <llvm/ADT/STLExtras.h>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

/// Replaces one shared subexpression (a dimension's index) by another.
class ReplaceSubexpression : public kir::Mutator {
public:
  ReplaceSubexpression(Expr from, Expr to) : from_(std::move(from)), to_(std::move(to)) {}
  using Mutator::mutate;
  Expr mutate(const Expr &e) override { return e == from_ ? to_ : mutateChildren(e); }

private:
  Expr from_, to_;
};

bool contains(const Expr &e, const Expr &part) {
  if (e == part)
    return true;
  for (const Expr &operand : e->operands)
    if (contains(operand, part))
      return true;
  return false;
}

class Clamp : public kir::Mutator {
public:
  explicit Clamp(const LowerContext &cx) : cx_(cx) {}
  using Mutator::mutate;

  Expr mutate(const Expr &e) override {
    if (e->kind != kir::ExprKind::Load || e->buffer->space != kir::MemorySpace::Global)
      return mutateChildren(e);
    Expr at = e->operands[0];
    for (ir::DimId root : cx_.plan.clampedRoots) {
      const Expr &index = cx_.rootIndex[root];
      at = ReplaceSubexpression(index, kir::min(index, cx_.dimExtent(root) - kir::index(1)))
               .mutate(at);
    }
    return at == e->operands[0] ? e : kir::load(e->buffer, at);
  }

  Stmt mutate(const Stmt &s) override {
    Stmt result = mutateChildren(s);
    // The column totals' vector stores (build-loop-nests) as well as scalar stores.
    if ((s->kind != kir::StmtKind::Store && s->kind != kir::StmtKind::VectorCopy) ||
        s->buffer->space != kir::MemorySpace::Global)
      return result;
    Expr inBounds;
    for (ir::DimId root : cx_.plan.clampedRoots)
      if (contains(s->index, cx_.rootIndex[root]))
        inBounds = inBounds && (cx_.rootIndex[root] < cx_.dimExtent(root));
    if (!inBounds)
      return result;
    return kir::withLabel(kir::ifThen(inBounds, result, nullptr, "a clamped row past the end"),
                          labels::ClampedStore);
  }

private:
  const LowerContext &cx_;
};

class Predicate : public kir::Mutator {
public:
  explicit Predicate(const LowerContext &cx) : cx_(cx) {
    const Plan &plan = cx.plan;
    std::vector<int> serial = plan.serialLoops();
    for (ir::DimId root : plan.inexactRoots) {
      bool walkedSerially = llvm::any_of(
          serial, [&](int loop) { return llvm::is_contained(plan.loops[loop].roots, root); });
      Expr check = cx.rootIndex[root] < cx.dimExtent(root);
      if (!walkedSerially)
        rowCheck_ = rowCheck_ && check;
      else
        iterationCheck_ = iterationCheck_ && check;
    }
    // The loop whose body the per-iteration check wraps.
    if (!serial.empty()) {
      int target = serial.back();
      if (plan.vectorAccessesExact && target == plan.vectorLoop) {
        target = serial.size() > 1 ? serial[serial.size() - 2] : -1;
        if (iterationCheck_)
          iterationCheck_ = kir::substitute(iterationCheck_, [&](const kir::VarPtr &v) {
            return v == cx.vectorVar() ? kir::index(0) : nullptr;
          });
      }
      if (target >= 0)
        checkedLoop_ = cx.loopVars[target];
    }
  }
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (labelOf(s) == labels::PhaseNest) {
      Stmt nest = mutateChildren(s);
      if (iterationCheck_ && !checkedLoop_) // only the vector loop: check around the nest
        nest = withBody(nest,
                        {kir::withLabel(kir::ifThen(iterationCheck_, kir::block(nest->body),
                                                    nullptr, "remainder of a non-divisible split"),
                                        labels::BoundsCheck)});
      if (rowCheck_)
        nest =
            withBody(nest, {kir::withLabel(kir::ifThen(rowCheck_, kir::block(nest->body), nullptr,
                                                       "this thread's row is in bounds"),
                                           labels::RowGuard)});
      return nest;
    }
    if (s->kind == kir::StmtKind::For && iterationCheck_ && s->var == checkedLoop_)
      return withBody(s, {kir::withLabel(kir::ifThen(iterationCheck_, mutate(s->body[0]), nullptr,
                                                     "remainder of a non-divisible split"),
                                         labels::BoundsCheck)});
    return mutateChildren(s);
  }

private:
  const LowerContext &cx_;
  Expr rowCheck_, iterationCheck_;
  kir::VarPtr checkedLoop_;
};

} // namespace

bool insertBounds(LowerContext &context) {
  kir::Stmt body = context.kernel.body;
  if (!context.plan.clampedRoots.empty())
    body = Clamp(context).mutate(body);
  if (!context.plan.inexactRoots.empty())
    body = Predicate(context).mutate(body);
  context.kernel.body = body;
  return true;
}

} // namespace fsl::lower
