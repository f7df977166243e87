// Context.cpp — sizes and addresses as Kernel IR expressions.
#include "lower/Context.h"

#include "support/Internal.h"

namespace fsl::lower {

kir::Expr LowerContext::dimExtent(ir::DimId dim) const {
  if (fusion.dims[dim].staticExtent)
    return kir::index(*fusion.dims[dim].staticExtent);
  return kir::var(dimVars[dim]);
}

kir::Expr LowerContext::extentOf(const sched::SizeExpr &size) const {
  switch (size.kind) {
  case sched::SizeExpr::Kind::Const:
    return kir::index(size.value);
  case sched::SizeExpr::Kind::Dim:
    return dimExtent(size.dim);
  case sched::SizeExpr::Kind::CeilDiv:
    return (extentOf(*size.lhs) + kir::index(size.value - 1)) / kir::index(size.value);
  case sched::SizeExpr::Kind::Mul:
    return extentOf(*size.lhs) * extentOf(*size.rhs);
  }
  FSL_UNREACHABLE("size expression");
}

kir::Expr LowerContext::extentOf(const sched::Extent &extent) const {
  if (extent.isStatic())
    return kir::index(*extent.value);
  FSL_INTERNAL_ASSERT(extent.expr, "a runtime extent without an expression");
  return extentOf(*extent.expr);
}

kir::Expr LowerContext::offsetOf(const std::vector<ir::DimId> &dims) const {
  kir::Expr offset;
  for (ir::DimId dim : dims)
    offset = offset ? offset * dimExtent(dim) + rootIndex[dim] : rootIndex[dim];
  return offset ? offset : kir::index(0);
}

kir::VarPtr LowerContext::vectorVar() const {
  return plan.vectorLoop >= 0 ? loopVars[plan.vectorLoop] : nullptr;
}

std::string labelOf(const kir::Stmt &s) { return s ? s->label : ""; }

kir::Stmt labelled(const kir::Stmt &s, const char *label) {
  auto copy = std::make_shared<kir::StmtNode>(*s);
  copy->label = label;
  return copy;
}

} // namespace fsl::lower
