// Expressions.cpp — the arithmetic of Expressions.h: each operation rounded as the CUDA
// printer's code rounds it (bf16/f16 in f32 then to their type, f32 in f32, f64 exactly,
// integers exactly with C division and checked for overflow).
#include "sim/Expressions.h"

#include "eval/Evaluator.h"
#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace fsl::sim {

using kir::DType;
using kir::ExprKind;
using kir::ExprNode;

namespace {

bool isNarrow(DType type) { return type == DType::BF16 || type == DType::F16; }

/// The result of an operation of `type` as the CUDA printer computes it: bf16/f16
/// operations in f32, then rounded to their type (`__float2bfloat16_rn`); f32 in f32; f64
/// exactly; integers truncate.
double asComputed(double value, DType type) {
  if (isNarrow(type))
    return eval::roundTo(eval::roundTo(value, DType::F32), type);
  return eval::roundTo(value, type);
}

bool isIntegral(DType type) { return ir::isInteger(type) || type == DType::Bool; }

ir::Op pointwiseOp(kir::UnaryOp op) {
  switch (op) {
  case kir::UnaryOp::Neg:
    return ir::Op::Neg;
  case kir::UnaryOp::Not:
    return ir::Op::Not;
  case kir::UnaryOp::Exp:
  case kir::UnaryOp::FastExp:
    return ir::Op::Exp;
  case kir::UnaryOp::Log:
    return ir::Op::Log;
  case kir::UnaryOp::Sqrt:
    return ir::Op::Sqrt;
  case kir::UnaryOp::Rsqrt:
    return ir::Op::Rsqrt;
  case kir::UnaryOp::Tanh:
  case kir::UnaryOp::FastTanh:
    return ir::Op::Tanh;
  case kir::UnaryOp::Sigmoid:
    return ir::Op::Sigmoid;
  case kir::UnaryOp::Erf:
    return ir::Op::Erf;
  case kir::UnaryOp::Abs:
    return ir::Op::Abs;
  }
  FSL_UNREACHABLE("unary op");
}

/// The reference's operation for a binary op; Mod has none (fmod on floats).
std::optional<ir::Op> pointwiseOp(kir::BinaryOp op) {
  switch (op) {
  case kir::BinaryOp::Add:
    return ir::Op::Add;
  case kir::BinaryOp::Sub:
    return ir::Op::Sub;
  case kir::BinaryOp::Mul:
    return ir::Op::Mul;
  case kir::BinaryOp::Div:
  case kir::BinaryOp::FastDiv:
    return ir::Op::Div;
  case kir::BinaryOp::Mod:
  case kir::BinaryOp::Xor:
    return std::nullopt;
  case kir::BinaryOp::Min:
    return ir::Op::Min;
  case kir::BinaryOp::Max:
    return ir::Op::Max;
  case kir::BinaryOp::Pow:
    return ir::Op::Pow;
  case kir::BinaryOp::Lt:
    return ir::Op::Lt;
  case kir::BinaryOp::Le:
    return ir::Op::Le;
  case kir::BinaryOp::Gt:
    return ir::Op::Gt;
  case kir::BinaryOp::Ge:
    return ir::Op::Ge;
  case kir::BinaryOp::Eq:
    return ir::Op::Eq;
  case kir::BinaryOp::Ne:
    return ir::Op::Ne;
  case kir::BinaryOp::And:
    return ir::Op::And;
  case kir::BinaryOp::Or:
    return ir::Op::Or;
  }
  FSL_UNREACHABLE("binary op");
}

} // namespace

double inRegister(double value, DType type) {
  return eval::roundTo(value, isNarrow(type) ? DType::F32 : type);
}

int64_t exactInteger(double value, const char *what) {
  // Every index the simulator computes passes here: the common case is one conversion and
  // a compare (a NaN fails the range test, so the conversion is always defined).
  if (std::fabs(value) <= 9007199254740992.0) {
    int64_t integer = static_cast<int64_t>(value);
    if (static_cast<double>(integer) == value)
      return integer;
  }
  fail(llvm::formatv("{0} is not an integer ({1})", what, value));
}

namespace {

double integerBinary(kir::BinaryOp op, DType type, double x, double y) {
  // An i64 max or min starts at int64's extremes, +-2^63 here (FSL_INT64_MAX/MIN in CUDA):
  // they compare with every exact integer, and come out only if nothing else came in.
  bool extreme = std::fabs(x) == 9223372036854775808.0 || std::fabs(y) == 9223372036854775808.0;
  if (extreme && (op == kir::BinaryOp::Max || op == kir::BinaryOp::Min)) {
    double other = std::fabs(x) == 9223372036854775808.0 ? y : x;
    if (std::fabs(other) != 9223372036854775808.0)
      exactInteger(other, "an integer operand");
    return op == kir::BinaryOp::Max ? std::max(x, y) : std::min(x, y);
  }
  int64_t a = exactInteger(x, "an integer operand"), b = exactInteger(y, "an integer operand");
  int64_t r = 0;
  switch (op) {
  case kir::BinaryOp::Add:
    if (__builtin_add_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} + {1}", a, b));
    break;
  case kir::BinaryOp::Sub:
    if (__builtin_sub_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} - {1}", a, b));
    break;
  case kir::BinaryOp::Mul:
    if (__builtin_mul_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} * {1}", a, b));
    break;
  case kir::BinaryOp::Div:
  case kir::BinaryOp::Mod:
    if (b == 0)
      fail(llvm::formatv("integer division by zero ({0} {1} 0)", a, kir::binaryName(op)));
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      fail("integer overflow in a division");
    r = op == kir::BinaryOp::Div ? a / b : a % b; // C: truncate toward zero
    break;
  case kir::BinaryOp::Min:
    r = std::min(a, b);
    break;
  case kir::BinaryOp::Max:
    r = std::max(a, b);
    break;
  case kir::BinaryOp::Xor:
    if (a < 0 || b < 0)
      fail(llvm::formatv("exclusive or of a negative integer ({0} ^ {1})", a, b));
    r = a ^ b;
    break;
  case kir::BinaryOp::Pow:
    return eval::roundTo(std::pow(x, y), type);
  case kir::BinaryOp::FastDiv:
    fail("an approximate division of integers (fast_div applies to f32 only)");
    break;
  case kir::BinaryOp::Lt:
    return a < b;
  case kir::BinaryOp::Le:
    return a <= b;
  case kir::BinaryOp::Gt:
    return a > b;
  case kir::BinaryOp::Ge:
    return a >= b;
  case kir::BinaryOp::Eq:
    return a == b;
  case kir::BinaryOp::Ne:
    return a != b;
  case kir::BinaryOp::And:
    return a != 0 && b != 0;
  case kir::BinaryOp::Or:
    return a != 0 || b != 0;
  }
  // i32 index arithmetic that wraps on the GPU is a bug, not a value.
  if (type == DType::I32 &&
      (r < std::numeric_limits<int32_t>::min() || r > std::numeric_limits<int32_t>::max()))
    fail(llvm::formatv("i32 overflow: {0} {1} {2} = {3}", a, kir::binaryName(op), b, r));
  if (type == DType::Bool)
    return r != 0;
  return static_cast<double>(r);
}

} // namespace

double evaluate(const ExprNode &e, Scope &scope) {
  switch (e.kind) {
  case ExprKind::Const:
    // The printer writes a floating constant as an f32 (or f64) literal of its value.
    return inRegister(e.constant, e.dtype);
  case ExprKind::Var:
    return scope.variable(*e.var);
  case ExprKind::Unary: {
    double a = evaluate(*e.operands[0], scope);
    if (isIntegral(e.dtype) && e.unary == kir::UnaryOp::Neg)
      return eval::roundTo(-a, e.dtype);
    ir::Op op = pointwiseOp(e.unary);
    // Negation and fabs are exact and printed without a rounding.
    if (e.unary == kir::UnaryOp::Neg || e.unary == kir::UnaryOp::Abs)
      return eval::applyOp(op, &a);
    // __expf: the f32 product x * log2(e), then 2^product rounded to f32 (the hardware's
    // ex2.approx is within 2 ulp of that rounding).
    if (e.unary == kir::UnaryOp::FastExp) {
      double product = eval::roundTo(a * eval::roundTo(M_LOG2E, DType::F32), DType::F32);
      return asComputed(std::exp2(product), e.dtype);
    }
    // The printer spells a sigmoid `1.0f / (1.0f + expf(-x))`: three f32 roundings.
    if (e.unary == kir::UnaryOp::Sigmoid && e.dtype != DType::F64) {
      double denominator = eval::roundTo(1 + eval::roundTo(std::exp(-a), DType::F32), DType::F32);
      return asComputed(1 / denominator, e.dtype);
    }
    return asComputed(eval::applyOp(op, &a), e.dtype);
  }
  case ExprKind::Binary: {
    // && and || short-circuit as in C: `i < n && x[i] > 0` must not load x[n].
    double a = evaluate(*e.operands[0], scope);
    if (e.binary == kir::BinaryOp::And && a == 0)
      return 0;
    if (e.binary == kir::BinaryOp::Or && a != 0)
      return 1;
    double b = evaluate(*e.operands[1], scope);
    DType operandType = e.operands[0]->dtype;
    if (isIntegral(operandType) && isIntegral(e.operands[1]->dtype))
      return integerBinary(e.binary, kir::isComparison(e.binary) ? DType::Bool : e.dtype, a, b);
    double args[2] = {a, b};
    std::optional<ir::Op> op = pointwiseOp(e.binary);
    FSL_INTERNAL_ASSERT(e.binary != kir::BinaryOp::Xor, "an exclusive or of non-integers");
    double r = op ? eval::applyOp(*op, args) : std::fmod(a, b);
    // fsl_min/fsl_max return an operand (printed without a rounding); comparisons are bool.
    if (e.binary == kir::BinaryOp::Min || e.binary == kir::BinaryOp::Max ||
        kir::isComparison(e.binary))
      return r;
    return asComputed(r, e.dtype);
  }
  case ExprKind::Select:
    // Only the chosen operand is evaluated, as C's ?: does.
    return evaluate(*e.operands[0], scope) != 0 ? evaluate(*e.operands[1], scope)
                                                : evaluate(*e.operands[2], scope);
  case ExprKind::Cast: {
    // As KernelPrinter's printCast. Integer targets truncate toward zero (and saturate,
    // as cvt.rzi does).
    double a = evaluate(*e.operands[0], scope);
    DType to = e.dtype, from = e.operands[0]->dtype;
    if (isNarrow(to)) {
      if (from == to || from == DType::Bool)
        return a; // the value as it is (0 or 1 for a bool)
      if (from == DType::F32 || isNarrow(from))
        return asComputed(a, to);  // an f32 register rounded to the narrow type
      return eval::roundTo(a, to); // __double2bfloat16, __ll2bfloat16_rn...: rounded once
    }
    if (to == DType::F32 && isNarrow(from))
      return a; // already an f32 register: widening is exact
    return eval::roundTo(a, to);
  }
  case ExprKind::Load: {
    int64_t at = exactInteger(evaluate(*e.operands[0], scope), "a load index");
    return scope.load(*e.buffer, at);
  }
  }
  FSL_UNREACHABLE("expression kind");
}

} // namespace fsl::sim
