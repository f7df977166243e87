// Pointwise.cpp — Fusion IR operations as typed Kernel IR expressions.
#include "lower/Pointwise.h"

#include "support/Internal.h"

namespace fsl::lower {

ir::DType registerType(ir::DType type) {
  return type == ir::DType::BF16 || type == ir::DType::F16 ? ir::DType::F32 : type;
}

kir::Expr pointwiseOperation(const ir::Value &value, const std::vector<kir::Expr> &a,
                             Approximations approximate) {
  using kir::Expr;
  // The IR's constructors type an operation by its first operand; the value's own type
  // decides its rounding (a bf16 sum is computed in f32 and rounded), so retype it.
  auto typed = [&](Expr e) {
    auto copy = std::make_shared<kir::ExprNode>(*e);
    copy->dtype = value.dtype;
    return Expr(copy);
  };
  auto un = [&](kir::UnaryOp op) { return typed(kir::unary(op, a[0])); };
  auto bin = [&](kir::BinaryOp op) { return typed(kir::binary(op, a[0], a[1])); };
  switch (value.op) {
  case ir::Op::Neg:
    return un(kir::UnaryOp::Neg);
  case ir::Op::Not:
    return un(kir::UnaryOp::Not);
  case ir::Op::Exp:
    return un(approximate.exp && value.dtype == ir::DType::F32 ? kir::UnaryOp::FastExp
                                                               : kir::UnaryOp::Exp);
  case ir::Op::Log:
    return un(kir::UnaryOp::Log);
  case ir::Op::Sqrt:
    return un(kir::UnaryOp::Sqrt);
  case ir::Op::Rsqrt:
    return un(kir::UnaryOp::Rsqrt);
  case ir::Op::Tanh:
    return un(approximate.tanh && value.dtype == ir::DType::F32 ? kir::UnaryOp::FastTanh
                                                                : kir::UnaryOp::Tanh);
  case ir::Op::Sigmoid:
    return un(kir::UnaryOp::Sigmoid);
  case ir::Op::Erf:
    return un(kir::UnaryOp::Erf);
  case ir::Op::Abs:
    return un(kir::UnaryOp::Abs);
  case ir::Op::Add:
    return bin(kir::BinaryOp::Add);
  case ir::Op::Sub:
    return bin(kir::BinaryOp::Sub);
  case ir::Op::Mul:
    return bin(kir::BinaryOp::Mul);
  case ir::Op::Div:
    return bin(approximate.div && value.dtype == ir::DType::F32 ? kir::BinaryOp::FastDiv
                                                                : kir::BinaryOp::Div);
  case ir::Op::Max:
    return bin(kir::BinaryOp::Max);
  case ir::Op::Min:
    return bin(kir::BinaryOp::Min);
  case ir::Op::Pow:
    return bin(kir::BinaryOp::Pow);
  case ir::Op::Lt:
    return bin(kir::BinaryOp::Lt);
  case ir::Op::Le:
    return bin(kir::BinaryOp::Le);
  case ir::Op::Gt:
    return bin(kir::BinaryOp::Gt);
  case ir::Op::Ge:
    return bin(kir::BinaryOp::Ge);
  case ir::Op::Eq:
    return bin(kir::BinaryOp::Eq);
  case ir::Op::Ne:
    return bin(kir::BinaryOp::Ne);
  case ir::Op::And:
    return bin(kir::BinaryOp::And);
  case ir::Op::Or:
    return bin(kir::BinaryOp::Or);
  case ir::Op::Where:
    return typed(kir::select(a[0], a[1], a[2]));
  case ir::Op::Cast:
    return kir::cast(value.dtype, a[0]);
  case ir::Op::Input:
  case ir::Op::Scalar:
  case ir::Op::Constant:
  case ir::Op::ReduceSum:
  case ir::Op::ReduceMax:
  case ir::Op::ReduceMin:
  case ir::Op::ReduceMean:
  case ir::Op::ReduceArgMax:
  case ir::Op::ReduceArgMin:
  case ir::Op::MatMul:
  case ir::Op::Gather:
  case ir::Op::Window:
  case ir::Op::DimSize:
  case ir::Op::DimIndex:
    break;
  }
  FSL_UNREACHABLE("not a pointwise operation");
}

std::string valueName(const ir::Value &value) {
  return value.name.empty() ? "v" + std::to_string(value.id)
                            : value.name + "_" + std::to_string(value.id);
}

kir::Stmt fromFusion(const kir::Stmt &s, llvm::SMRange range) {
  kir::Origin origin = s->origin;
  origin.range = range;
  return kir::withOrigin(s, std::move(origin));
}

} // namespace fsl::lower
