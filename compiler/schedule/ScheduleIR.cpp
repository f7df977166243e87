// ScheduleIR.cpp — names and lookups.
#include "schedule/ScheduleIR.h"

#include "ir/Describe.h"

#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/MathExtras.h>

namespace fsl::sched {

std::optional<int64_t> SizeExpr::evaluate(const std::vector<int64_t> &extents) const {
  switch (kind) {
  case Kind::Const:
    return value;
  case Kind::Dim:
    return extents.at(dim);
  case Kind::CeilDiv: {
    std::optional<int64_t> n = lhs->evaluate(extents);
    if (!n)
      return std::nullopt;
    return llvm::divideCeilSigned(*n, value);
  }
  case Kind::Mul: {
    std::optional<int64_t> a = lhs->evaluate(extents), b = rhs->evaluate(extents);
    if (!a || !b)
      return std::nullopt;
    return llvm::checkedMul(*a, *b);
  }
  }
  return std::nullopt;
}

Extent Extent::of(int64_t value) {
  auto expr = std::make_shared<SizeExpr>();
  expr->value = value;
  return {value, std::to_string(value), expr};
}

Extent Extent::ofDim(ir::DimId dim, const std::string &name) {
  auto expr = std::make_shared<SizeExpr>();
  expr->kind = SizeExpr::Kind::Dim;
  expr->dim = dim;
  return {std::nullopt, name, expr};
}

Extent Extent::ceilDiv(const Extent &extent, int64_t divisor) {
  if (extent.isStatic())
    return of(llvm::divideCeilSigned(*extent.value, divisor));
  if (divisor == 1)
    return extent;
  auto expr = std::make_shared<SizeExpr>();
  expr->kind = SizeExpr::Kind::CeilDiv;
  expr->lhs = extent.expr;
  expr->value = divisor;
  return {std::nullopt, "ceilDiv(" + extent.text + ", " + std::to_string(divisor) + ")", expr};
}

std::optional<Extent> Extent::mul(const Extent &a, const Extent &b) {
  if (a.isStatic() && b.isStatic()) {
    if (std::optional<int64_t> product = llvm::checkedMul(*a.value, *b.value))
      return of(*product);
    return std::nullopt;
  }
  if (a.isStatic() && *a.value == 1)
    return b;
  if (b.isStatic() && *b.value == 1)
    return a;
  auto expr = std::make_shared<SizeExpr>();
  expr->kind = SizeExpr::Kind::Mul;
  expr->lhs = a.expr;
  expr->rhs = b.expr;
  return Extent{std::nullopt, a.text + "*" + b.text, expr};
}

int TensorSchedule::findLoop(llvm::StringRef loopName) const {
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].name == loopName)
      return static_cast<int>(i);
  return -1;
}

int Schedule::findTensor(llvm::StringRef name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name)
      return static_cast<int>(i);
    for (const std::string &alias : tensors[i].aliases)
      if (alias == name)
        return static_cast<int>(i);
  }
  return -1;
}

std::string loopNames(const TensorSchedule &tensor) {
  std::string text;
  for (size_t i = 0; i < tensor.loops.size(); ++i)
    text += (i ? ", " : "") + tensor.loops[i].name;
  return text.empty() ? "none" : text;
}

std::string userName(const TensorSchedule &tensor, const ir::Fusion &fusion) {
  if (tensor.name.find('%') == std::string::npos || !tensor.value)
    return tensor.name;
  return ir::userName(fusion, *tensor.value);
}

} // namespace fsl::sched
