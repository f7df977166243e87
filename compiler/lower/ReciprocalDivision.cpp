// ReciprocalDivision.cpp — the `reciprocal-division` pass.
//
// A float division whose divisor is the same for every element a thread visits (built
// from reductions, scalars and constants: softmax's `e / sum(e)`) while its dividend is
// not becomes `a * (1 / b)`: one IEEE division a thread (hoisted by the compiler out of
// the loops) instead of one an element. A `fast_div` division (kir::BinaryOp::FastDiv)
// becomes `a * fast_div(1, b)` the same way. The simulator executes the rewritten
// expression, so it rounds exactly as the GPU does.
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

class Reciprocals : public kir::Mutator {
public:
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (s->kind == kir::StmtKind::For && s->loopKind != kir::LoopKind::Parallel) {
      // Inside a serial loop, only what is computed from invariant values is invariant.
      ++serialDepth_;
      Stmt result = mutateChildren(s);
      // Out of the loops, an accumulator they updated holds the same value for the rest.
      if (--serialDepth_ == 0) {
        invariant_.insert(updated_.begin(), updated_.end());
        updated_.clear();
      }
      return result;
    }
    // An accumulator updated in a serial loop changes from one element to the next
    // (Welford's running count divides there); its total after the loop is a new let.
    if (s->kind == kir::StmtKind::Assign && serialDepth_ > 0 && invariant_.erase(s->var.get()))
      updated_.insert(s->var.get());
    if (s->kind != kir::StmtKind::Let)
      return mutateChildren(s);
    Stmt result = mutateChildren(s);
    if (serialDepth_ == 0 || invariant(result->value))
      invariant_.insert(s->var.get());
    return result;
  }

  Expr mutate(const Expr &e) override {
    Expr result = mutateChildren(e);
    bool division =
        result->kind == kir::ExprKind::Binary &&
        (result->binary == kir::BinaryOp::Div || result->binary == kir::BinaryOp::FastDiv);
    if (division && ir::isFloat(result->dtype) && invariant(result->operands[1]) &&
        !invariant(result->operands[0])) {
      ir::DType registers = result->dtype == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32;
      Expr reciprocal =
          kir::binary(result->binary, kir::constant(1, registers), result->operands[1]);
      auto product = std::make_shared<kir::ExprNode>(
          *kir::binary(kir::BinaryOp::Mul, result->operands[0], reciprocal));
      product->dtype = result->dtype;
      return product;
    }
    return result;
  }

private:
  /// Reads no memory and no variable that changes from one element to the next.
  bool invariant(const Expr &e) const {
    switch (e->kind) {
    case kir::ExprKind::Const:
      return true;
    case kir::ExprKind::Var:
      return e->var->builtin != kir::Builtin::None || invariant_.count(e->var.get()) ||
             !bound_(e->var);
    case kir::ExprKind::Load:
      return false;
    case kir::ExprKind::Unary:
    case kir::ExprKind::Binary:
    case kir::ExprKind::Select:
    case kir::ExprKind::Cast:
      for (const Expr &operand : e->operands)
        if (!invariant(operand))
          return false;
      return true;
    }
    return false;
  }

public:
  /// Whether a variable is bound inside the kernel (parameters are not).
  std::function<bool(const kir::VarPtr &)> bound_;

private:
  std::set<const kir::Var *> invariant_;
  std::set<const kir::Var *> updated_; // accumulators the current serial loops update
  int serialDepth_ = 0;
};

} // namespace

bool reciprocalDivision(LowerContext &context) {
  std::set<const kir::Var *> parameters;
  for (const kir::KernelParam &param : context.kernel.params)
    if (param.var)
      parameters.insert(param.var.get());
  Reciprocals rewrite;
  rewrite.bound_ = [&](const kir::VarPtr &v) { return !parameters.count(v.get()); };
  context.kernel.body = rewrite.mutate(context.kernel.body);
  return true;
}

} // namespace fsl::lower
