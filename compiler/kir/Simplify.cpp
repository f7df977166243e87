// Simplify.cpp — interval bounds of index expressions and the rewrites they allow.
#include "kir/Simplify.h"

#include "kir/Mutator.h"

#include <llvm/Support/CheckedArithmetic.h>
#include <map>

namespace fsl::kir {
namespace {

struct Interval {
  std::optional<int64_t> lo, hi; // inclusive; none: unbounded
};

class Simplifier : public Mutator {
public:
  Stmt mutate(const Stmt &s) override {
    if (s->kind != StmtKind::For)
      return mutateChildren(s);
    Expr extent = mutate(s->extent);
    std::optional<int64_t> n = asConstant(extent);
    Interval range{0, n ? std::optional<int64_t>(*n - 1) : std::nullopt};
    auto saved = ranges_.find(s->var.get()) != ranges_.end();
    ranges_[s->var.get()] = range;
    Stmt body = mutate(s->body[0]);
    if (!saved)
      ranges_.erase(s->var.get());
    if (extent == s->extent && body == s->body[0])
      return s;
    auto copy = std::make_shared<StmtNode>(*s);
    copy->extent = extent;
    copy->body = {body};
    return copy;
  }

  Expr mutate(const Expr &e) override {
    Expr simplified = mutateChildren(e);
    if (simplified->kind != ExprKind::Binary || !ir::isInteger(simplified->dtype))
      return simplified;
    const Expr &a = simplified->operands[0], &b = simplified->operands[1];
    std::optional<int64_t> c = asConstant(b);
    if (simplified->binary == BinaryOp::Div && c && *c > 0) {
      if (within(a, *c))
        return index(0);
      if (Expr quotient = divideExactly(a, *c))
        return quotient;
    } else if (simplified->binary == BinaryOp::Mod && c && *c > 0) {
      if (within(a, *c))
        return a;
      if (Expr remainder = remainderOf(a, *c))
        return remainder;
    } else if (simplified->binary == BinaryOp::Mul && c && a->kind == ExprKind::Binary) {
      // (x * c1) * c2 -> x * (c1 * c2)
      if (a->binary == BinaryOp::Mul)
        if (std::optional<int64_t> inner = asConstant(a->operands[1]))
          if (std::optional<int64_t> both = llvm::checkedMul(*inner, *c))
            return a->operands[0] * index(*both);
      // (x + y) * c -> x * c + y * c: the strides of split loops meet their constants
      // (`Hp * 4096 + Hx * 8`, not `(Hp * 512 + Hx) * 8`), the form people write and
      // the one that gave ptxas the faster schedule (docs/performance.md, 2026-11-30).
      if (a->binary == BinaryOp::Add)
        return mutate(binary(BinaryOp::Mul, a->operands[0], b)) +
               mutate(binary(BinaryOp::Mul, a->operands[1], b));
    }
    // Rebuilt through the folding constructor (constants, 0 and 1).
    return foldedBinary(simplified->binary, a, b);
  }

private:
  Interval bounds(const Expr &e) const {
    if (std::optional<int64_t> c = asConstant(e))
      return {*c, *c};
    if (e->kind == ExprKind::Var) {
      auto found = ranges_.find(e->var.get());
      if (found != ranges_.end())
        return found->second;
      return {};
    }
    if (e->kind != ExprKind::Binary || !ir::isInteger(e->dtype))
      return {};
    Interval x = bounds(e->operands[0]), y = bounds(e->operands[1]);
    // A bound past 64 bits is no bound (static sizes near 2^63 once wrapped here).
    auto both = [](auto f, std::optional<int64_t> p, std::optional<int64_t> q) {
      return p && q ? f(*p, *q) : std::nullopt;
    };
    auto add = [](int64_t p, int64_t q) { return llvm::checkedAdd(p, q); };
    auto mul = [](int64_t p, int64_t q) { return llvm::checkedMul(p, q); };
    auto div = [](int64_t p, int64_t q) { return std::optional<int64_t>(p / q); };
    if (e->binary == BinaryOp::Add)
      return {both(add, x.lo, y.lo), both(add, x.hi, y.hi)};
    bool nonNegative = x.lo && *x.lo >= 0 && y.lo && *y.lo >= 0;
    if (e->binary == BinaryOp::Mul && nonNegative)
      return {both(mul, x.lo, y.lo), both(mul, x.hi, y.hi)};
    if (e->binary == BinaryOp::Div && nonNegative && *y.lo > 0)
      return {0, both(div, x.hi, y.lo)};
    if (e->binary == BinaryOp::Mod && x.lo && *x.lo >= 0 && y.hi && *y.hi > 0)
      return {0, *y.hi - 1};
    return {}; // unbounded as far as these rules need
  }

  /// 0 <= e < c.
  bool within(const Expr &e, int64_t c) const {
    Interval r = bounds(e);
    return r.lo && *r.lo >= 0 && r.hi && *r.hi < c;
  }

  /// e / c when e = x * c + y with 0 <= y < c (either order of the sum), else null.
  Expr divideExactly(const Expr &e, int64_t c) const {
    if (e->kind != ExprKind::Binary)
      return nullptr;
    if (e->binary == BinaryOp::Mul) {
      if (asConstant(e->operands[1]) == c && bounds(e->operands[0]).lo.value_or(-1) >= 0)
        return e->operands[0];
      return nullptr;
    }
    if (e->binary != BinaryOp::Add)
      return nullptr;
    for (int i = 0; i < 2; ++i) {
      const Expr &multiple = e->operands[i], &rest = e->operands[1 - i];
      if (!within(rest, c))
        continue;
      if (Expr quotient = divideExactly(multiple, c))
        return quotient;
    }
    return nullptr;
  }

  /// e % c when e = x * c + y with 0 <= y < c, else null.
  Expr remainderOf(const Expr &e, int64_t c) const {
    if (e->kind != ExprKind::Binary)
      return nullptr;
    if (e->binary == BinaryOp::Mul && asConstant(e->operands[1]) == c &&
        bounds(e->operands[0]).lo.value_or(-1) >= 0)
      return index(0);
    if (e->binary != BinaryOp::Add)
      return nullptr;
    for (int i = 0; i < 2; ++i) {
      const Expr &multiple = e->operands[i], &rest = e->operands[1 - i];
      if (within(rest, c) && divideExactly(multiple, c))
        return rest;
    }
    return nullptr;
  }

  std::map<const Var *, Interval> ranges_;
};

} // namespace

Stmt simplify(const Stmt &s) { return Simplifier().mutate(s); }
Expr simplify(const Expr &e) { return Simplifier().mutate(e); }

} // namespace fsl::kir
