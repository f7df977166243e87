// ErrorBound.cpp — the reference's values again, each with the bound on the kernel's error
// that ErrorBound.h describes, operation by operation.
#include "driver/ErrorBound.h"

#include "driver/Simulate.h"
#include "support/Internal.h"

#include <algorithm>
#include <cmath>

namespace fsl {

namespace {

/// A value's elements and their error bounds, row-major over its dims (fusion order).
struct Bounded {
  std::vector<ir::DimId> dims;
  std::vector<double> value, error;
};

/// Every index of `dims`, with the offsets of tensors over subsets of them (a missing
/// dimension broadcasts), as the reference evaluator walks them.
class Walker {
public:
  Walker(std::vector<ir::DimId> dims, const std::vector<int64_t> &extents)
      : dims_(std::move(dims)), extents_(extents), index_(dims_.size(), 0) {}

  std::vector<int64_t> stridesOf(const std::vector<ir::DimId> &sub) const {
    std::vector<int64_t> strides(dims_.size(), 0);
    int64_t stride = 1;
    for (size_t i = sub.size(); i-- > 0;) {
      for (size_t j = 0; j < dims_.size(); ++j)
        if (dims_[j] == sub[i])
          strides[j] = stride;
      stride *= extents_[sub[i]];
    }
    return strides;
  }
  int64_t total() const { return eval::elementCount(dims_, extents_); }
  int64_t offset(const std::vector<int64_t> &strides) const {
    int64_t result = 0;
    for (size_t i = 0; i < index_.size(); ++i)
      result += index_[i] * strides[i];
    return result;
  }
  void next() {
    for (size_t i = dims_.size(); i-- > 0;) {
      if (++index_[i] < extents_[dims_[i]])
        return;
      index_[i] = 0;
    }
  }

private:
  std::vector<ir::DimId> dims_;
  const std::vector<int64_t> &extents_;
  std::vector<int64_t> index_;
};

std::vector<double> permute(const std::vector<double> &data, const std::vector<ir::DimId> &from,
                            const std::vector<ir::DimId> &to, const std::vector<int64_t> &extents) {
  std::vector<double> result(data.size());
  Walker walker(to, extents);
  std::vector<int64_t> strides = walker.stridesOf(from);
  for (int64_t i = 0, n = walker.total(); i < n; ++i, walker.next())
    result[i] = data[walker.offset(strides)];
  return result;
}

/// |f'(a)| e for a derivative that may be infinite where the error is zero: no error
/// moves nothing.
double moved(double slope, double e) { return e == 0 ? 0 : std::fabs(slope) * e; }

/// The bound of a pointwise operation's result `v` of type `type` on operands `x` with
/// error bounds `e`: the operands' errors through its derivatives, plus its own rounding.
double pointwiseError(ir::Op op, ir::DType type, double v, const double *x, const double *e,
                      ApproximateFunctions approximate) {
  using ir::Op;
  double u = unitRoundoff(type), round = u * std::fabs(v);
  switch (op) {
  case Op::Neg:
  case Op::Abs:
    return e[0]; // exact
  case Op::Exp: {
    double own = round;
    if (approximate.exp && type == ir::DType::F32) // x log2(e) rounded; ex2.approx's 2 ulp
      own += u * std::fabs(v) * (std::fabs(x[0]) + 2);
    return moved(v, e[0]) + own;
  }
  case Op::Log:
    return moved(1 / x[0], e[0]) + round;
  case Op::Sqrt:
    return (v > 0 ? moved(0.5 / v, e[0]) : std::sqrt(e[0])) + round;
  case Op::Rsqrt:
    return moved(0.5 * v / x[0], e[0]) + round;
  case Op::Tanh:
    if (approximate.tanh && type == ir::DType::F32) // tanh.approx.f32 instead of a rounding
      return moved(1 - v * v, e[0]) + kFastTanhRelativeError * std::fabs(v);
    return moved(1 - v * v, e[0]) + round;
  case Op::Sigmoid: // 1 / (1 + exp(-x)): three roundings
    return moved(v * (1 - v), e[0]) + 3 * round;
  case Op::Erf:
    return moved(M_2_SQRTPI * std::exp(-x[0] * x[0]), e[0]) + round;
  case Op::Add:
  case Op::Sub:
    return e[0] + e[1] + round;
  case Op::Mul:
    return moved(x[1], e[0]) + moved(x[0], e[1]) + round;
  case Op::Div: // div.full.f32 (fast_div): 2 ulp, 4 unit roundoffs, instead of one
    return moved(1 / x[1], e[0]) + moved(v / x[1], e[1]) +
           (approximate.div && type == ir::DType::F32 ? 4 * round : round);
  case Op::Pow: // d(a^b)/da = b a^b / a, d(a^b)/db = a^b ln a
    return moved(x[1] * v / x[0], e[0]) + moved(v * std::log(std::fabs(x[0])), e[1]) + round;
  case Op::Max:
  case Op::Min:
    return std::max(e[0], e[1]); // one of the operands, unrounded
  case Op::Where:
    return x[0] != 0 ? e[1] : e[2];
  case Op::Not:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
  case Op::Eq:
  case Op::Ne:
  case Op::And:
  case Op::Or:
    return 0; // booleans: taken as exact (a comparison that an error flips is not bounded)
  default:
    break;
  }
  FSL_UNREACHABLE("pointwiseError of an operation that is not pointwise");
}

} // namespace

std::vector<std::vector<double>> roundingErrorBounds(const ir::Fusion &fusion,
                                                     const eval::EvalRequest &request,
                                                     const std::vector<int64_t> &extents,
                                                     ApproximateFunctions approximate) {
  std::vector<Bounded> values(fusion.values.size());
  for (const auto &valuePtr : fusion.values) {
    const ir::Value &value = *valuePtr;
    Bounded &out = values[value.id];
    out.dims = value.dims;
    int64_t count = eval::elementCount(value.dims, extents);
    bool floating = isFloating(value.dtype);
    double u = unitRoundoff(value.dtype);
    switch (value.op) {
    case ir::Op::Input:
    case ir::Op::Scalar: {
      // Both sides read the same rounded inputs.
      const ir::Param &param = fusion.params[value.paramIndex];
      std::vector<double> given = request.params.at(value.paramIndex);
      if (given.empty())
        given = {param.defaultValue.value_or(0)};
      for (double &element : given)
        element = eval::roundTo(element, param.dtype);
      out.value = permute(given, param.dims, value.dims, extents);
      out.error.assign(out.value.size(), 0);
      break;
    }
    case ir::Op::Constant:
      out.value = {eval::roundTo(value.constant, value.dtype)};
      out.error = {0};
      break;
    case ir::Op::Cast: {
      const Bounded &in = values[value.operands[0]->id];
      out.value = in.value;
      out.error = in.error;
      for (size_t i = 0; i < out.value.size(); ++i) {
        out.value[i] = eval::roundTo(out.value[i], value.dtype);
        out.error[i] = floating ? out.error[i] + u * std::fabs(out.value[i]) : 0;
      }
      break;
    }
    case ir::Op::DimSize:
      out.value = {static_cast<double>(extents[value.indexed[0]])};
      out.error = {0};
      break;
    case ir::Op::DimIndex:
      out.value.resize(count);
      for (int64_t i = 0; i < count; ++i)
        out.value[i] = static_cast<double>(i);
      out.error.assign(count, 0);
      break;
    case ir::Op::Gather:
    case ir::Op::Window: {
      // A read of the parameter elsewhere: its values and their bounds move together.
      const Bounded &input = values[value.operands[0]->id];
      const std::vector<double> &index = values[value.operands[1]->id].value;
      out.value = eval::indexElements(value, extents, input.value, index);
      out.error = eval::indexElements(value, extents, input.error, index);
      break;
    }
    case ir::Op::ReduceArgMax:
    case ir::Op::ReduceArgMin:
      // An index, compared exactly (toleranceFor): its value does not matter here.
      out.value.assign(count, 0);
      out.error.assign(count, 0);
      break;
    case ir::Op::ReduceMax:
    case ir::Op::ReduceMin:
    case ir::Op::ReduceSum:
    case ir::Op::ReduceMean:
    case ir::Op::MatMul: {
      bool isMax = value.op == ir::Op::ReduceMax, isMin = value.op == ir::Op::ReduceMin;
      out.value.assign(count, isMax ? -INFINITY : isMin ? INFINITY : 0);
      out.error.assign(count, 0);
      // Per element: the squares of its sequential partial sums (the sum's own roundings).
      std::vector<double> partialSquares(isMax || isMin ? 0 : count, 0);
      std::vector<ir::DimId> space = value.dims;
      space.insert(space.end(), value.reduced.begin(), value.reduced.end());
      std::sort(space.begin(), space.end());
      Walker walker(space, extents);
      std::vector<int64_t> outStrides = walker.stridesOf(value.dims);
      const Bounded &a = values[value.operands[0]->id];
      std::vector<int64_t> aStrides = walker.stridesOf(a.dims);
      const Bounded *b = value.op == ir::Op::MatMul ? &values[value.operands[1]->id] : nullptr;
      std::vector<int64_t> bStrides = b ? walker.stridesOf(b->dims) : std::vector<int64_t>{};
      for (int64_t i = 0, n = walker.total(); i < n; ++i, walker.next()) {
        int64_t at = walker.offset(outStrides), ai = walker.offset(aStrides);
        double x = a.value[ai], e = a.error[ai];
        if (b) {
          int64_t bi = walker.offset(bStrides);
          e = moved(b->value[bi], e) + moved(x, b->error[bi]);
          x *= b->value[bi];
        }
        double &target = out.value[at];
        if (isMax || isMin) {
          target = std::isnan(target) || std::isnan(x) ? NAN
                   : isMax                             ? std::max(target, x)
                                                       : std::min(target, x);
          out.error[at] = std::max(out.error[at], e);
        } else {
          target += x;
          out.error[at] += e;
          partialSquares[at] += target * target;
        }
      }
      if (isMax || isMin)
        break;
      // The lowering accumulates bf16 and f16 in f32, wider types in their own.
      ir::DType accumulator = value.dtype == ir::DType::BF16 || value.dtype == ir::DType::F16
                                  ? ir::DType::F32
                                  : value.dtype;
      double divisor = value.op == ir::Op::ReduceMean
                           ? static_cast<double>(eval::elementCount(value.reduced, extents))
                           : 1;
      for (int64_t i = 0; i < count; ++i) {
        double own = unitRoundoff(accumulator) * std::sqrt(partialSquares[i]);
        out.value[i] /= divisor;
        out.error[i] = (out.error[i] + own) / divisor;
        if (value.op == ir::Op::ReduceMean || accumulator != value.dtype)
          out.error[i] += u * std::fabs(out.value[i]); // the division, the narrowing
      }
      break;
    }
    default: {
      out.value.assign(count, 0);
      out.error.assign(count, 0);
      Walker walker(value.dims, extents);
      std::vector<std::vector<int64_t>> strides;
      for (const ir::Value *operand : value.operands)
        strides.push_back(walker.stridesOf(operand->dims));
      double x[3], e[3];
      for (int64_t i = 0; i < count; ++i, walker.next()) {
        for (size_t k = 0; k < value.operands.size(); ++k) {
          const Bounded &operand = values[value.operands[k]->id];
          int64_t at = walker.offset(strides[k]);
          x[k] = operand.value[at];
          e[k] = operand.error[at];
        }
        out.value[i] = eval::applyOp(value.op, x);
        out.error[i] =
            floating ? pointwiseError(value.op, value.dtype, out.value[i], x, e, approximate) : 0;
      }
      break;
    }
    }
  }
  std::vector<std::vector<double>> bounds;
  for (const ir::Output &output : fusion.outputs) {
    const Bounded &tensor = values[output.value->id];
    std::vector<double> value = permute(tensor.value, tensor.dims, output.dims, extents);
    std::vector<double> error = permute(tensor.error, tensor.dims, output.dims, extents);
    // Both sides round to the output's type, the kernel's value from up to `error` away:
    // up to one step more. A bound that is not a finite number (an infinity on the way)
    // bounds nothing: 0, and the comparison falls back on toleranceFor's.
    double u = unitRoundoff(output.dtype);
    for (size_t i = 0; i < error.size(); ++i)
      error[i] = std::isfinite(error[i]) && std::isfinite(value[i])
                     ? error[i] + 2 * u * std::fabs(value[i])
                     : 0;
    bounds.push_back(std::move(error));
  }
  return bounds;
}

} // namespace fsl
