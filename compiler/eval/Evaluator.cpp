// Evaluator.cpp — dense tensors indexed by named dimensions, one value at a time.
#include "eval/Evaluator.h"

#include "support/Internal.h"

#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/FormatVariadic.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace fsl::eval {

double roundTo(double value, ir::DType type) {
  switch (type) {
  case ir::DType::F64:
    return value;
  case ir::DType::F32:
    return static_cast<double>(static_cast<float>(value));
  case ir::DType::F16:
    return static_cast<double>(static_cast<_Float16>(value));
  case ir::DType::BF16: {
    float f = static_cast<float>(value);
    if (std::isnan(f))
      return value;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    // Rounded once, as __double2bfloat16 does: a double that f32 does not hold goes to
    // f32 rounded to odd (toward zero, lowest bit set), which keeps the rounding to bf16
    // below (16 bits fewer) from meeting a tie that the double did not have.
    if (static_cast<double>(f) != value && std::isfinite(value)) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(value))
        --bits; // toward zero: the magnitude one f32 step down
      bits |= 1;
    }
    bits += 0x7FFF + ((bits >> 16) & 1); // round to nearest even on the upper 16 bits
    bits &= 0xFFFF0000u;
    std::memcpy(&f, &bits, sizeof f);
    return static_cast<double>(f);
  }
  case ir::DType::I32:
  case ir::DType::I64: {
    if (std::isnan(value))
      return 0;
    double limit = type == ir::DType::I32 ? 2147483647.0 : 9223372036854775807.0;
    return std::trunc(std::max(-limit - 1, std::min(limit, value)));
  }
  case ir::DType::Bool:
    return value != 0 ? 1 : 0;
  }
  return value;
}

int64_t elementCount(const std::vector<ir::DimId> &dims, const std::vector<int64_t> &extents) {
  int64_t count = 1;
  for (ir::DimId dim : dims)
    count *= extents[dim];
  return count;
}

std::optional<uint64_t> evaluationBytes(const ir::Fusion &fusion,
                                        const std::vector<int64_t> &extents) {
  auto count = [&](const std::vector<ir::DimId> &dims) -> std::optional<int64_t> {
    int64_t product = 1;
    for (ir::DimId dim : dims) {
      std::optional<int64_t> next =
          dim < extents.size() ? llvm::checkedMul(product, extents[dim]) : std::nullopt;
      if (!next)
        return std::nullopt;
      product = *next;
    }
    return product;
  };
  int64_t elements = 0;
  auto add = [&](const std::vector<ir::DimId> &dims, int64_t copies) {
    std::optional<int64_t> n = count(dims);
    std::optional<int64_t> held = n ? llvm::checkedMul(*n, copies) : std::nullopt;
    std::optional<int64_t> sum = held ? llvm::checkedAdd(elements, *held) : std::nullopt;
    if (sum)
      elements = *sum;
    return sum.has_value();
  };
  // An input is held as given and as permuted into fusion order.
  for (const ir::Param &param : fusion.params)
    if (!add(param.dims, 2))
      return std::nullopt;
  for (const auto &value : fusion.values)
    if (!add(value->dims, 1))
      return std::nullopt;
  for (const ir::Output &output : fusion.outputs)
    if (!add(output.dims, 1))
      return std::nullopt;
  std::optional<int64_t> bytes = llvm::checkedMul<int64_t>(elements, sizeof(double));
  if (!bytes)
    return std::nullopt;
  return static_cast<uint64_t>(*bytes);
}

namespace {

/// A value's elements, row-major over its dims (fusion dimension order).
struct Tensor {
  std::vector<ir::DimId> dims;
  std::vector<double> data;
};

/// Walks every index of `dims` and gives, for each, the linear offset into tensors
/// whose dimensions are subsets (a missing dimension broadcasts).
class IndexWalker {
public:
  IndexWalker(const std::vector<ir::DimId> &dims, const std::vector<int64_t> &extents)
      : dims_(dims), extents_(extents), index_(dims.size(), 0) {}

  /// Strides of `sub` (a subset of dims) seen from this walker's dims.
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

  int64_t total() const { return elementCount(dims_, extents_); }
  const std::vector<int64_t> &index() const { return index_; }

  void next() {
    for (size_t i = dims_.size(); i-- > 0;) {
      if (++index_[i] < extents_[dims_[i]])
        return;
      index_[i] = 0;
    }
  }

  static int64_t offset(const std::vector<int64_t> &index, const std::vector<int64_t> &strides) {
    int64_t result = 0;
    for (size_t i = 0; i < index.size(); ++i)
      result += index[i] * strides[i];
    return result;
  }

private:
  const std::vector<ir::DimId> &dims_;
  const std::vector<int64_t> &extents_;
  std::vector<int64_t> index_;
};

double nanMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nanMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

} // namespace

double applyOp(ir::Op op, const double *x) {
  using ir::Op;
  switch (op) {
  case Op::Neg:
    return -x[0];
  case Op::Not:
    return x[0] == 0 ? 1 : 0;
  case Op::Exp:
    return std::exp(x[0]);
  case Op::Log:
    return std::log(x[0]);
  case Op::Sqrt:
    return std::sqrt(x[0]);
  case Op::Rsqrt:
    return 1.0 / std::sqrt(x[0]);
  case Op::Tanh:
    return std::tanh(x[0]);
  case Op::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x[0]));
  case Op::Erf:
    return std::erf(x[0]);
  case Op::Abs:
    return std::fabs(x[0]);
  case Op::Add:
    return x[0] + x[1];
  case Op::Sub:
    return x[0] - x[1];
  case Op::Mul:
    return x[0] * x[1];
  case Op::Div:
    return x[0] / x[1];
  case Op::Max:
    return nanMax(x[0], x[1]);
  case Op::Min:
    return nanMin(x[0], x[1]);
  case Op::Pow:
    return std::pow(x[0], x[1]);
  case Op::Lt:
    return x[0] < x[1];
  case Op::Le:
    return x[0] <= x[1];
  case Op::Gt:
    return x[0] > x[1];
  case Op::Ge:
    return x[0] >= x[1];
  case Op::Eq:
    return x[0] == x[1];
  case Op::Ne:
    return x[0] != x[1];
  case Op::And:
    return x[0] != 0 && x[1] != 0;
  case Op::Or:
    return x[0] != 0 || x[1] != 0;
  case Op::Where:
    return x[0] != 0 ? x[1] : x[2];
  case Op::Input:
  case Op::Scalar:
  case Op::Constant:
  case Op::Cast:
  case Op::ReduceSum:
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceMean:
  case Op::ReduceArgMax:
  case Op::ReduceArgMin:
  case Op::MatMul:
  case Op::Gather:
  case Op::Window:
  case Op::DimSize:
  case Op::DimIndex:
    break;
  }
  FSL_UNREACHABLE("applyOp of an operation that is not pointwise");
}

std::optional<std::string> windowOutOfRange(const ir::Fusion &fusion, const ir::Value &window,
                                            const std::vector<int64_t> &extents, double offset) {
  ir::DimId along = window.indexed[0], as = window.indexed[1];
  int64_t from = static_cast<int64_t>(roundTo(offset, ir::DType::I64));
  if (from >= 0 && from <= extents[along] - extents[as])
    return std::nullopt;
  return llvm::formatv("the window of {0} along {1} from {2} of size {3} = {4} is outside "
                       "{1} = {5}",
                       fusion.params[window.operands[0]->paramIndex].name, fusion.dims[along].name,
                       from, fusion.dims[as].name, extents[as], extents[along])
      .str();
}

std::vector<double> indexElements(const ir::Value &value, const std::vector<int64_t> &extents,
                                  const std::vector<double> &input,
                                  const std::vector<double> &index) {
  // Each element reads the parameter at its own position, with the indexed dimension's
  // index replaced: the gathered index, or the window's offset plus the element's index
  // along the window.
  const ir::Value &source = *value.operands[0];
  ir::DimId along = value.indexed[0];
  bool isWindow = value.op == ir::Op::Window;
  int64_t extent = extents[along];
  std::vector<double> out(elementCount(value.dims, extents), 0);
  IndexWalker walker(value.dims, extents);
  std::vector<int64_t> indexStrides = walker.stridesOf(value.operands[1]->dims);
  // The input's strides as seen from the result (the window's dimension steps along the
  // indexed one), and the stride of the indexed dimension.
  std::vector<int64_t> inputStrides(value.dims.size(), 0);
  int64_t alongStride = 0, stride = 1;
  for (size_t i = source.dims.size(); i-- > 0;) {
    ir::DimId dim = source.dims[i];
    if (dim == along)
      alongStride = stride;
    ir::DimId seenAs = dim == along && isWindow ? value.indexed[1] : dim;
    for (size_t j = 0; j < value.dims.size(); ++j)
      if (value.dims[j] == seenAs && (dim != along || isWindow))
        inputStrides[j] = stride;
    stride *= extents[dim];
  }
  int64_t offset = isWindow ? static_cast<int64_t>(roundTo(index[0], ir::DType::I64)) : 0;
  for (size_t i = 0; i < out.size(); ++i, walker.next()) {
    int64_t at = IndexWalker::offset(walker.index(), inputStrides);
    if (isWindow) {
      out[i] = input[at + offset * alongStride];
      continue;
    }
    double position = index[IndexWalker::offset(walker.index(), indexStrides)];
    // Outside [0, extent) reads as 0: -100 (PyTorch's ignore_index) as any other.
    if (position >= 0 && position < static_cast<double>(extent))
      out[i] = input[at + static_cast<int64_t>(position) * alongStride];
  }
  return out;
}

namespace {

/// Reorders a tensor between fusion order and a declared order.
std::vector<double> permute(const std::vector<double> &data, const std::vector<ir::DimId> &from,
                            const std::vector<ir::DimId> &to, const std::vector<int64_t> &extents) {
  std::vector<double> result(data.size());
  IndexWalker walker(to, extents);
  std::vector<int64_t> fromStrides = walker.stridesOf(from);
  for (int64_t i = 0, n = walker.total(); i < n; ++i, walker.next())
    result[i] = data[IndexWalker::offset(walker.index(), fromStrides)];
  return result;
}

std::vector<ir::DimId> sortedDims(std::vector<ir::DimId> dims) {
  std::sort(dims.begin(), dims.end());
  return dims;
}

} // namespace

namespace {
/// evaluate() once the sizes are known and within the budget.
llvm::Expected<EvalResult> evaluateWithin(const ir::Fusion &fusion, const EvalRequest &request,
                                          EvalResult result);
} // namespace

llvm::Expected<EvalResult> evaluate(const ir::Fusion &fusion, const EvalRequest &request) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  EvalResult result;
  for (const ir::Dim &dim : fusion.dims) {
    auto given = request.sizes.find(dim.name);
    if (dim.staticExtent) {
      if (given != request.sizes.end() && given->second != *dim.staticExtent)
        return fail(llvm::formatv("{0} is static ({1}); it cannot be {2}", dim.name,
                                  *dim.staticExtent, given->second));
      result.extents.push_back(*dim.staticExtent);
    } else if (given == request.sizes.end()) {
      return fail("no size given for dimension " + dim.name);
    } else if (given->second <= 0) {
      return fail(llvm::formatv("size of {0} must be positive, not {1}", dim.name, given->second));
    } else {
      result.extents.push_back(given->second);
    }
  }
  if (request.params.size() != fusion.params.size())
    return fail(llvm::formatv("{0} parameters expected, {1} given", fusion.params.size(),
                              request.params.size()));
  std::optional<uint64_t> bytes = evaluationBytes(fusion, result.extents);
  if (!bytes || *bytes > kMemoryBudgetBytes)
    return fail(llvm::formatv("these sizes need {0} of float64 data; the evaluator holds at "
                              "most {1} bytes (2 GiB)",
                              bytes ? std::to_string(*bytes) + " bytes" : "more than 2^63 bytes",
                              kMemoryBudgetBytes));
  try {
    return evaluateWithin(fusion, request, std::move(result));
  } catch (const std::bad_alloc &) {
    return fail("out of memory while evaluating (under the 2 GiB budget, but more than this "
                "machine gives)");
  } catch (const std::length_error &) {
    return fail("a tensor too large to evaluate");
  }
}

namespace {

llvm::Expected<EvalResult> evaluateWithin(const ir::Fusion &fusion, const EvalRequest &request,
                                          EvalResult result) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };

  std::vector<Tensor> values(fusion.values.size());
  for (const auto &valuePtr : fusion.values) {
    const ir::Value &value = *valuePtr;
    Tensor &out = values[value.id];
    out.dims = value.dims;
    int64_t count = elementCount(value.dims, result.extents);
    switch (value.op) {
    case ir::Op::Input:
    case ir::Op::Scalar: {
      const ir::Param &param = fusion.params[value.paramIndex];
      std::vector<double> given = request.params[value.paramIndex];
      if (value.op == ir::Op::Scalar && given.empty()) {
        if (!param.defaultValue)
          return fail("no value given for scalar " + param.name);
        given = {*param.defaultValue};
      }
      if (static_cast<int64_t>(given.size()) != count)
        return fail(
            llvm::formatv("{0} needs {1} elements, {2} given", param.name, count, given.size()));
      for (double &element : given)
        element = roundTo(element, param.dtype);
      out.data = permute(given, param.dims, value.dims, result.extents);
      break;
    }
    case ir::Op::Constant:
      out.data = {roundTo(value.constant, value.dtype)};
      break;
    case ir::Op::Cast:
      out.data = values[value.operands[0]->id].data;
      for (double &element : out.data)
        element = roundTo(element, value.dtype);
      break;
    case ir::Op::DimSize:
      out.data = {static_cast<double>(result.extents[value.indexed[0]])};
      break;
    case ir::Op::DimIndex:
      out.data.resize(count);
      for (int64_t i = 0; i < count; ++i)
        out.data[i] = static_cast<double>(i);
      break;
    case ir::Op::Gather:
    case ir::Op::Window: {
      const std::vector<double> &index = values[value.operands[1]->id].data;
      if (value.op == ir::Op::Window)
        if (std::optional<std::string> outside =
                windowOutOfRange(fusion, value, result.extents, index[0]))
          return fail(*outside);
      out.data = indexElements(value, result.extents, values[value.operands[0]->id].data, index);
      break;
    }
    case ir::Op::ReduceArgMax:
    case ir::Op::ReduceArgMin: {
      // Walk the reduced dimension in increasing order and replace the best element only
      // by a strictly better one: the lowest index wins ties. NaN beats every number
      // (torch.argmax/argmin), so the first NaN of a row is its answer.
      bool isMax = value.op == ir::Op::ReduceArgMax;
      ir::DimId along = value.reduced.front();
      std::vector<double> best(count, NAN);
      out.data.assign(count, -1);
      std::vector<ir::DimId> space = sortedDims(value.dims);
      space.push_back(along); // innermost: each row's elements in index order
      IndexWalker walker(space, result.extents);
      std::vector<int64_t> outStrides = walker.stridesOf(value.dims);
      std::vector<int64_t> inStrides = walker.stridesOf(value.operands[0]->dims);
      const std::vector<double> &input = values[value.operands[0]->id].data;
      for (int64_t i = 0, n = walker.total(); i < n; ++i, walker.next()) {
        int64_t at = IndexWalker::offset(walker.index(), outStrides);
        double x = input[IndexWalker::offset(walker.index(), inStrides)];
        double &top = best[at];
        bool first = out.data[at] < 0;
        bool better = first || (!std::isnan(top) && (std::isnan(x) || (isMax ? x > top : x < top)));
        if (better) {
          top = x;
          out.data[at] = static_cast<double>(walker.index().back());
        }
      }
      break;
    }
    case ir::Op::ReduceSum:
    case ir::Op::ReduceMean:
    case ir::Op::ReduceMax:
    case ir::Op::ReduceMin:
    case ir::Op::MatMul: {
      bool isMax = value.op == ir::Op::ReduceMax, isMin = value.op == ir::Op::ReduceMin;
      double start = isMax ? -INFINITY : isMin ? INFINITY : 0;
      out.data.assign(count, start);
      // Walk the full space (kept + reduced dims) and accumulate.
      std::vector<ir::DimId> space = value.dims;
      space.insert(space.end(), value.reduced.begin(), value.reduced.end());
      space = sortedDims(space);
      IndexWalker walker(space, result.extents);
      std::vector<int64_t> outStrides = walker.stridesOf(value.dims);
      std::vector<std::vector<int64_t>> inStrides;
      for (const ir::Value *operand : value.operands)
        inStrides.push_back(walker.stridesOf(operand->dims));
      for (int64_t i = 0, n = walker.total(); i < n; ++i, walker.next()) {
        double &target = out.data[IndexWalker::offset(walker.index(), outStrides)];
        double x =
            values[value.operands[0]->id].data[IndexWalker::offset(walker.index(), inStrides[0])];
        if (value.op == ir::Op::MatMul)
          x *=
              values[value.operands[1]->id].data[IndexWalker::offset(walker.index(), inStrides[1])];
        target = isMax ? nanMax(target, x) : isMin ? nanMin(target, x) : target + x;
      }
      if (value.op == ir::Op::ReduceMean) {
        double reducedCount = static_cast<double>(elementCount(value.reduced, result.extents));
        for (double &element : out.data)
          element /= reducedCount;
      }
      break;
    }
    default: {
      out.data.assign(count, 0);
      IndexWalker walker(value.dims, result.extents);
      std::vector<std::vector<int64_t>> inStrides;
      for (const ir::Value *operand : value.operands)
        inStrides.push_back(walker.stridesOf(operand->dims));
      double args[3];
      for (int64_t i = 0; i < count; ++i, walker.next()) {
        for (size_t k = 0; k < value.operands.size(); ++k)
          args[k] =
              values[value.operands[k]->id].data[IndexWalker::offset(walker.index(), inStrides[k])];
        out.data[i] = applyOp(value.op, args);
      }
      // An integer division truncates toward zero, as C++ and the kernels do (x / 2 * 2
      // is not x for odd x); a division by zero stays infinite or NaN.
      if (value.op == ir::Op::Div && ir::isInteger(value.dtype))
        for (double &v : out.data)
          if (std::isfinite(v))
            v = std::trunc(v) + 0.0; // no -0 for an integer
      break;
    }
    }
  }
  for (const ir::Output &output : fusion.outputs) {
    const Tensor &tensor = values[output.value->id];
    std::vector<double> stored = permute(tensor.data, tensor.dims, output.dims, result.extents);
    for (double &element : stored)
      element = roundTo(element, output.dtype);
    result.outputs.push_back(std::move(stored));
  }
  return result;
}

} // namespace

} // namespace fsl::eval
