// StoreRounding.cpp — the `store-rounding` pass.
//
// An output written as `bf16(x)` from an f32 `x` would round twice in the CUDA (to bf16
// in a register, then again by the store's conversion). The store converts anyway, so it
// stores `x` and rounds once; the cast's `let` goes when nothing else reads it. The
// same for f16. Numerically identical; one conversion fewer an element.
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <map>
#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

bool roundsF32(const Expr &value, ir::DType stored) {
  return value->kind == kir::ExprKind::Cast && value->dtype == stored &&
         (stored == ir::DType::BF16 || stored == ir::DType::F16) &&
         value->operands[0]->dtype == ir::DType::F32;
}

class StoreRounding : public kir::Mutator {
public:
  std::map<const kir::Var *, Expr> casts; // let v = bf16(x) -> x
  std::map<const kir::Var *, int> uses;   // reads other than bypassed stores
  std::set<const kir::Var *> bypassed;
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (s->kind == kir::StmtKind::Store && s->buffer->space == kir::MemorySpace::Global &&
        s->value->kind == kir::ExprKind::Var) {
      auto found = casts.find(s->value->var.get());
      if (found != casts.end() && found->second && roundsF32Let(s->value->var, s->buffer->dtype)) {
        bypassed.insert(s->value->var.get());
        // The same store, rounding once.
        return kir::withOrigin(kir::store(s->buffer, s->index, found->second), s->origin);
      }
    }
    return mutateChildren(s);
  }

  std::map<const kir::Var *, ir::DType> castType;
  bool roundsF32Let(const kir::VarPtr &v, ir::DType stored) const {
    auto t = castType.find(v.get());
    return t != castType.end() && t->second == stored;
  }
};

class DropUnusedCasts : public kir::Mutator {
public:
  std::set<const kir::Var *> dead;
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->kind == kir::StmtKind::Let && dead.count(s->var.get()))
      return nullptr;
    return mutateChildren(s);
  }
};

} // namespace

bool storeRounding(LowerContext &context) {
  StoreRounding rewrite;
  kir::forEachStmt(context.kernel.body, [&](const Stmt &s) {
    if (s->kind == kir::StmtKind::Let && !s->mutableVar && roundsF32(s->value, s->value->dtype)) {
      rewrite.casts[s->var.get()] = s->value->operands[0];
      rewrite.castType[s->var.get()] = s->value->dtype;
    }
  });
  kir::Stmt body = rewrite.mutate(context.kernel.body);
  // A bypassed cast stays when anything still reads it.
  std::set<const kir::Var *> read;
  kir::forEachExpr(body, [&](const Expr &e) {
    if (e->kind == kir::ExprKind::Var)
      read.insert(e->var.get());
  });
  DropUnusedCasts drop;
  for (const kir::Var *v : rewrite.bypassed)
    if (!read.count(v))
      drop.dead.insert(v);
  context.kernel.body = drop.mutate(body);
  return true;
}

} // namespace fsl::lower
