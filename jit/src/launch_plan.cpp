// launch_plan.cpp — parsing and evaluating launch metadata (launch_plan.h).
#include "launch_plan.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace fsl::jit {
namespace {

const char *const kDTypeNames[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64"};
const int kDTypeBytes[] = {1, 4, 8, 2, 2, 4, 8};

std::optional<fsl_dtype> dtypeNamed(const std::string &name) {
  for (int i = 0; i < 7; ++i)
    if (name == kDTypeNames[i])
      return static_cast<fsl_dtype>(i);
  return std::nullopt;
}

const char *dtypeName(fsl_dtype dtype) {
  return dtype >= 0 && dtype <= 6 ? kDTypeNames[dtype] : "unknown";
}

std::string format(const char *pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *pattern, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof buffer, pattern, args);
  va_end(args);
  return buffer;
}

bool parseInt(const std::string &token, int64_t &value) {
  if (token.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(token.c_str(), &end, 10);
  if (errno || *end)
    return false;
  value = parsed;
  return true;
}

/// The tokens of one line, with a cursor.
struct Tokens {
  std::vector<std::string> items;
  size_t at = 0;
  bool done() const { return at >= items.size(); }
  const std::string &next() {
    static const std::string none;
    return at < items.size() ? items[at++] : none;
  }
};

bool parseExpr(Tokens &tokens, LaunchExpr &expr, std::string &error) {
  if (tokens.done()) {
    error = "an expression is missing";
    return false;
  }
  const std::string &token = tokens.next();
  if (token == "(") {
    expr.kind = LaunchExpr::Kind::Op;
    expr.name = tokens.next();
    while (!tokens.done() && tokens.items[tokens.at] != ")") {
      LaunchExpr operand;
      if (!parseExpr(tokens, operand, error))
        return false;
      expr.operands.push_back(std::move(operand));
    }
    if (tokens.next() != ")") {
      error = "an expression lacks its ')'";
      return false;
    }
    size_t want = expr.name == "?" ? 3 : expr.name == "neg" || expr.name == "!" ? 1 : 2;
    if (expr.operands.size() != want) {
      error =
          "operator '" + expr.name + "' with " + std::to_string(expr.operands.size()) + " operands";
      return false;
    }
    expr.text = "(" + expr.name;
    for (const LaunchExpr &operand : expr.operands)
      expr.text += " " + operand.text;
    expr.text += ")";
    return true;
  }
  expr.text = token;
  if (parseInt(token, expr.value)) {
    expr.kind = LaunchExpr::Kind::Const;
    return true;
  }
  expr.kind = LaunchExpr::Kind::Dim;
  expr.name = token;
  return true;
}

/// The value of an expression; false on an overflow, a division by zero or an unknown
/// dimension (`error` says which).
bool evaluate(const LaunchExpr &expr, const std::map<std::string, int64_t> &dims, int64_t &value,
              std::string &error) {
  switch (expr.kind) {
  case LaunchExpr::Kind::Const:
    value = expr.value;
    return true;
  case LaunchExpr::Kind::Dim: {
    auto found = dims.find(expr.name);
    if (found == dims.end()) {
      error = "no value for dimension " + expr.name;
      return false;
    }
    value = found->second;
    return true;
  }
  case LaunchExpr::Kind::Op:
    break;
  }
  std::vector<int64_t> v(expr.operands.size());
  for (size_t i = 0; i < v.size(); ++i)
    if (!evaluate(expr.operands[i], dims, v[i], error))
      return false;
  const std::string &op = expr.name;
  bool overflow = false;
  if (op == "+")
    overflow = __builtin_add_overflow(v[0], v[1], &value);
  else if (op == "-")
    overflow = __builtin_sub_overflow(v[0], v[1], &value);
  else if (op == "*")
    overflow = __builtin_mul_overflow(v[0], v[1], &value);
  else if (op == "/" || op == "%") {
    if (v[1] == 0 || (v[0] == INT64_MIN && v[1] == -1)) {
      error = "division by zero or overflow in " + expr.text;
      return false;
    }
    value = op == "/" ? v[0] / v[1] : v[0] % v[1];
  } else if (op == "min")
    value = std::min(v[0], v[1]);
  else if (op == "max")
    value = std::max(v[0], v[1]);
  else if (op == "<")
    value = v[0] < v[1];
  else if (op == "<=")
    value = v[0] <= v[1];
  else if (op == ">")
    value = v[0] > v[1];
  else if (op == ">=")
    value = v[0] >= v[1];
  else if (op == "==")
    value = v[0] == v[1];
  else if (op == "!=")
    value = v[0] != v[1];
  else if (op == "&&")
    value = v[0] && v[1];
  else if (op == "||")
    value = v[0] || v[1];
  else if (op == "!")
    value = !v[0];
  else if (op == "neg")
    overflow = __builtin_sub_overflow(int64_t(0), v[0], &value);
  else if (op == "?")
    value = v[0] ? v[1] : v[2];
  else {
    error = "unknown operator '" + op + "'";
    return false;
  }
  if (overflow) {
    error = expr.text + " overflows 64 bits";
    return false;
  }
  return true;
}

bool parseThree(Tokens &tokens, std::array<LaunchExpr, 3> &three, std::string &error) {
  for (LaunchExpr &e : three)
    if (!parseExpr(tokens, e, error))
      return false;
  return true;
}

/// Bytes from the data pointer of a tensor with elements that checkCall accepted to the
/// end of its last element (all of its bytes for a contiguous tensor): fewer than 2^63.
int64_t bytesOf(const fsl_tensor *t, int elementBytes) {
  int64_t last = 0;
  for (int i = 0; i < t->rank; ++i)
    if (t->sizes[i] > 1)
      last += (t->sizes[i] - 1) * t->strides[i];
  return (last + 1) * elementBytes;
}

bool overlap(const fsl_tensor *a, int ab, const fsl_tensor *b, int bb) {
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(a->data),
                  b0 = reinterpret_cast<uintptr_t>(b->data);
  return a0 <= b0 ? b0 - a0 < static_cast<uint64_t>(bytesOf(a, ab))
                  : a0 - b0 < static_cast<uint64_t>(bytesOf(b, bb));
}

} // namespace

bool LaunchPlan::isRuntimeDim(const std::string &name) const {
  for (const auto &[dim, extent] : dims)
    if (dim == name)
      return !extent;
  return false;
}

std::unique_ptr<LaunchPlan> parseLaunchPlan(const std::string &text, std::string &error) {
  auto plan = std::make_unique<LaunchPlan>();
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  bool header = false, ended = false;
  PlanKernel *kernel = nullptr;
  auto fail = [&](const std::string &why) {
    error = "launch metadata, line " + std::to_string(number) + ": " + why;
    return nullptr;
  };
  while (std::getline(lines, line)) {
    ++number;
    Tokens tokens;
    std::istringstream words(line);
    for (std::string word; words >> word;)
      tokens.items.push_back(word);
    if (tokens.done())
      continue;
    std::string what = tokens.next();
    if (!header) {
      if (what != "fsl-launch" || tokens.next() != "1")
        return fail("not launch metadata of version 1 (expected 'fsl-launch 1')");
      header = true;
      continue;
    }
    if (ended)
      return fail("text after 'end'");
    std::string why;
    if (what == "fusion") {
      plan->fusion = tokens.next();
    } else if (what == "target") {
      plan->target = tokens.next();
      plan->arch = tokens.next();
    } else if (what == "limits") {
      int64_t *fields[] = {&plan->maxGrid[0],  &plan->maxGrid[1],  &plan->maxGrid[2],
                           &plan->maxBlock[0], &plan->maxBlock[1], &plan->maxBlock[2],
                           &plan->maxThreads,  &plan->maxCluster,  &plan->maxShared};
      for (int64_t *field : fields)
        if (!parseInt(tokens.next(), *field))
          return fail("limits need 9 integers");
    } else if (what == "pdl") {
      int64_t on = 0;
      if (!parseInt(tokens.next(), on) || (on != 0 && on != 1))
        return fail("pdl is 0 or 1");
      plan->pdl = on == 1;
    } else if (what == "workspace") {
      PlanWorkspace workspace;
      workspace.name = tokens.next();
      if (workspace.name.empty())
        return fail("a workspace without a name");
      if (!parseExpr(tokens, workspace.bytes, why))
        return fail("workspace " + workspace.name + ": " + why);
      plan->workspaces.push_back(std::move(workspace));
    } else if (what == "dim") {
      std::string name = tokens.next(), kind = tokens.next();
      if (kind == "runtime") {
        plan->dims.emplace_back(name, std::nullopt);
      } else {
        int64_t extent = 0;
        if (kind != "static" || !parseInt(tokens.next(), extent) || extent <= 0)
          return fail("dim " + name + " is neither runtime nor static with a positive extent");
        plan->dims.emplace_back(name, extent);
      }
    } else if (what == "reduced") {
      plan->reduced.push_back(tokens.next());
    } else if (what == "backward") {
      do
        plan->backward.push_back(tokens.next());
      while (!tokens.done());
    } else if (what == "same_gradient") {
      std::string input = tokens.next(), source = tokens.next();
      if (input.empty() || source.empty())
        return fail("same_gradient: expected two input names");
      plan->sameGradients.emplace_back(input, source);
    } else if (what == "tensor") {
      PlanTensor t;
      t.name = tokens.next();
      std::optional<fsl_dtype> dtype = dtypeNamed(tokens.next());
      std::string role = tokens.next();
      if (!dtype || (role != "in" && role != "inout" && role != "out") ||
          !parseInt(tokens.next(), t.alignment))
        return fail("tensor " + t.name + ": expected a dtype, in|inout|out and an alignment");
      t.dtype = *dtype;
      t.elementBytes = kDTypeBytes[*dtype];
      t.written = role != "in";
      if (!tokens.done() && tokens.items[tokens.at] == "strided") {
        tokens.next();
        if (t.written)
          return fail("tensor " + t.name + ": only inputs are strided");
        t.strided = true;
      }
      while (!tokens.done())
        t.dims.push_back(tokens.next());
      if (t.dims.empty() || t.dims.size() > FSL_MAX_RANK)
        return fail("tensor " + t.name + ": 1 to 8 dimensions");
      plan->tensors.push_back(std::move(t));
    } else if (what == "scalar") {
      PlanScalar s;
      s.name = tokens.next();
      std::optional<fsl_dtype> dtype = dtypeNamed(tokens.next());
      if (!dtype)
        return fail("scalar " + s.name + ": unknown dtype");
      s.dtype = *dtype;
      if (!tokens.done()) {
        char *end = nullptr;
        std::string value = tokens.next();
        s.defaultValue = std::strtod(value.c_str(), &end);
        if (*end)
          return fail("scalar " + s.name + ": default '" + value + "' is not a number");
      }
      plan->scalars.push_back(std::move(s));
    } else if (what == "kernel") {
      plan->kernels.emplace_back();
      kernel = &plan->kernels.back();
      kernel->name = tokens.next();
      if (!parseInt(tokens.next(), kernel->maxThreads))
        return fail("kernel " + kernel->name + ": expected its launch bound");
      for (auto *three : {&kernel->grid, &kernel->block, &kernel->cluster})
        for (LaunchExpr &e : *three)
          e.text = "1", e.value = 1;
      kernel->shared.text = "0";
    } else if (what == "arg" || what == "grid" || what == "block" || what == "cluster" ||
               what == "shared" || what == "tensormap" || what == "occupancy" ||
               what == "cooperative" || what == "fullgrid") {
      if (!kernel)
        return fail("'" + what + "' before any kernel");
      if (what == "arg") {
        static const std::map<std::string, PlanArg::Kind> kinds = {
            {"tensor", PlanArg::Kind::Tensor},
            {"scalar", PlanArg::Kind::Scalar},
            {"dim", PlanArg::Kind::Dim},
            {"workspace", PlanArg::Kind::Workspace},
            {"tensormap", PlanArg::Kind::TensorMap},
            {"stride", PlanArg::Kind::Stride}};
        std::string kind = tokens.next();
        auto found = kinds.find(kind);
        if (found == kinds.end())
          return fail("arg of kind '" + kind + "'");
        PlanArg arg;
        arg.kind = found->second;
        arg.name = tokens.next();
        if (arg.kind == PlanArg::Kind::TensorMap) {
          int64_t index = -1;
          if (!parseInt(arg.name, index) || index < 0 ||
              index >= static_cast<int64_t>(kernel->tensorMaps.size()))
            return fail("kernel " + kernel->name + " has no tensormap " + arg.name);
          arg.tensorMap = static_cast<size_t>(index);
          arg.name = kernel->tensorMaps[arg.tensorMap].name;
        }
        if (arg.kind == PlanArg::Kind::Stride) {
          int64_t axis = -1;
          if (!parseInt(tokens.next(), axis) || axis < 0)
            return fail("arg stride " + arg.name + ": expected an axis");
          arg.axis = static_cast<size_t>(axis);
        }
        kernel->args.push_back(std::move(arg));
      } else if (what == "tensormap") {
        PlanTensorMap map;
        map.name = tokens.next();
        map.tensor = tokens.next();
        std::optional<fsl_dtype> dtype = dtypeNamed(tokens.next());
        int64_t swizzle = -1, rank = 0;
        if (!dtype || !parseInt(tokens.next(), swizzle) ||
            (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128) ||
            !parseInt(tokens.next(), rank) || rank < 1 || rank > 5)
          return fail("tensormap " + map.name +
                      ": expected a dtype, a swizzle of 0, 32, 64 or 128 and a rank of 1 to 5");
        map.dtype = *dtype;
        map.elementBytes = kDTypeBytes[*dtype];
        map.swizzleBytes = static_cast<int>(swizzle);
        map.extents.resize(rank);
        for (LaunchExpr &extent : map.extents)
          if (!parseExpr(tokens, extent, why))
            return fail("tensormap " + map.name + ": " + why);
        for (int64_t i = 0; i < rank; ++i) {
          int64_t box = 0;
          if (!parseInt(tokens.next(), box) || box < 1 || box > 256)
            return fail("tensormap " + map.name + ": a box size of 1 to 256 for each dimension");
          map.box.push_back(box);
        }
        kernel->tensorMaps.push_back(std::move(map));
      } else if (what == "occupancy") {
        kernel->gridFromOccupancy = true;
      } else if (what == "cooperative") {
        kernel->cooperative = true;
      } else if (what == "fullgrid") {
        if (!parseInt(tokens.next(), kernel->fullGrid) || kernel->fullGrid < 1)
          return fail("kernel " + kernel->name + ": fullgrid takes a CTA count of at least 1");
      } else if (what == "shared") {
        if (!parseExpr(tokens, kernel->shared, why))
          return fail(why);
      } else if (!parseThree(tokens,
                             what == "grid"    ? kernel->grid
                             : what == "block" ? kernel->block
                                               : kernel->cluster,
                             why)) {
        return fail(why);
      }
    } else if (what == "variant") {
      PlanVariant variant;
      if (tokens.items[tokens.at] == "always")
        tokens.next();
      else if (!parseExpr(tokens, variant.guard.emplace(), why))
        return fail(why);
      while (!tokens.done()) {
        int64_t index = 0;
        if (!parseInt(tokens.next(), index) || index < 0 ||
            index >= static_cast<int64_t>(plan->kernels.size()))
          return fail("variant launches no such kernel");
        variant.kernels.push_back(static_cast<unsigned>(index));
      }
      plan->variants.push_back(std::move(variant));
    } else if (what == "end") {
      ended = true;
      continue;
    } else {
      return fail("unknown item '" + what + "'");
    }
    if (!tokens.done())
      return fail("extra tokens after '" + what + "'");
  }
  if (!header || !ended)
    return fail("the metadata is truncated (no 'end')");
  // Every name an argument uses is declared; its index is kept for the launches.
  for (PlanKernel &k : plan->kernels)
    for (PlanArg &arg : k.args) {
      bool known = false;
      if (arg.kind == PlanArg::Kind::Tensor) {
        for (size_t t = 0; t < plan->tensors.size() && !known; ++t)
          if ((known = plan->tensors[t].name == arg.name))
            arg.index = t;
      } else if (arg.kind == PlanArg::Kind::Scalar) {
        for (size_t s = 0; s < plan->scalars.size() && !known; ++s)
          if ((known = plan->scalars[s].name == arg.name))
            arg.index = s;
      } else if (arg.kind == PlanArg::Kind::Workspace) {
        for (size_t w = 0; w < plan->workspaces.size() && !known; ++w)
          if ((known = plan->workspaces[w].name == arg.name))
            arg.index = w;
      } else if (arg.kind == PlanArg::Kind::TensorMap) {
        known = true; // checked where it was read
      } else if (arg.kind == PlanArg::Kind::Stride) {
        for (size_t t = 0; t < plan->tensors.size() && !known; ++t) {
          const PlanTensor &tensor = plan->tensors[t];
          if ((known =
                   tensor.name == arg.name && tensor.strided && arg.axis + 1 < tensor.dims.size()))
            arg.index = t;
        }
      } else {
        known = plan->isRuntimeDim(arg.name);
      }
      if (!known)
        return fail("kernel " + k.name + " takes an undeclared " + arg.name);
    }
  // A tensor map describes a tensor of the signature.
  for (PlanKernel &k : plan->kernels)
    for (PlanTensorMap &map : k.tensorMaps) {
      bool known = false;
      for (size_t t = 0; t < plan->tensors.size() && !known; ++t)
        if ((known = plan->tensors[t].name == map.tensor && plan->tensors[t].dtype == map.dtype))
          map.tensorIndex = t;
      if (!known)
        return fail("tensormap " + map.name + " of kernel " + k.name + " describes " + map.tensor +
                    ", no tensor of that name and dtype");
    }
  return plan;
}

fsl_status checkCall(const LaunchPlan &plan, const fsl_tensor *const *tensors, int tensorCount,
                     int scalarCount, bool checkData, std::map<std::string, int64_t> &dims,
                     bool &empty, std::string &error) {
  dims.clear();
  empty = false;
  auto fail = [&](fsl_status status, std::string why) {
    error = std::move(why);
    return status;
  };
  if (tensorCount != static_cast<int>(plan.tensors.size()) || (tensorCount > 0 && !tensors)) {
    std::string expected;
    for (const PlanTensor &t : plan.tensors)
      expected += (expected.empty() ? "" : ", ") + t.name;
    return fail(FSL_ERROR_ARGUMENT, plan.fusion + " takes " + std::to_string(plan.tensors.size()) +
                                        " tensors (" + expected + "), given " +
                                        std::to_string(tensorCount));
  }
  if (scalarCount < 0 || scalarCount > static_cast<int>(plan.scalars.size()))
    return fail(FSL_ERROR_ARGUMENT, plan.fusion + " takes at most " +
                                        std::to_string(plan.scalars.size()) + " scalars, given " +
                                        std::to_string(scalarCount));
  for (size_t s = scalarCount; s < plan.scalars.size(); ++s)
    if (!plan.scalars[s].defaultValue)
      return fail(FSL_ERROR_ARGUMENT,
                  "scalar " + plan.scalars[s].name + " has no default: pass it");
  // Descriptors, as fsl_check_tensor.
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlanTensor &p = plan.tensors[i];
    const fsl_tensor *t = tensors[i];
    const char *name = p.name.c_str();
    if (!t)
      return fail(FSL_ERROR_NULL_POINTER, format("%s: null tensor descriptor", name));
    if (t->dtype != p.dtype)
      return fail(FSL_ERROR_DTYPE, format("%s: dtype %s, expected %s", name, dtypeName(t->dtype),
                                          dtypeName(p.dtype)));
    if (t->rank != static_cast<int>(p.dims.size()))
      return fail(FSL_ERROR_RANK,
                  format("%s: rank %d, expected %d", name, (int)t->rank, (int)p.dims.size()));
    bool none = false;
    for (int d = 0; d < t->rank; ++d) {
      if (t->sizes[d] < 0)
        return fail(FSL_ERROR_SIZE, format("%s: negative size %lld in dimension %d", name,
                                           (long long)t->sizes[d], d));
      none = none || t->sizes[d] == 0;
    }
    if (none)
      continue;
    if (p.strided) {
      // As the launcher's fsl_check_strided_tensor: the innermost stride 1, the others
      // positive multiples of the vectors' elements; strides of size-1 dimensions unused.
      int rank = t->rank;
      if (t->sizes[rank - 1] > 1 && t->strides[rank - 1] != 1)
        return fail(FSL_ERROR_LAYOUT,
                    format("%s: stride %lld in dimension %d, expected 1 (a strided tensor's "
                           "innermost dimension is contiguous)",
                           name, (long long)t->strides[rank - 1], rank - 1));
      int64_t vectorElements = std::max<int64_t>(1, p.alignment / p.elementBytes);
      int64_t last = 0, most = INT64_MAX / p.elementBytes - 1;
      for (int d = rank - 2; d >= 0; --d) {
        if (t->sizes[d] == 1)
          continue;
        if (t->strides[d] < 1)
          return fail(FSL_ERROR_LAYOUT,
                      format("%s: stride %lld in dimension %d, expected a positive stride", name,
                             (long long)t->strides[d], d));
        if (t->strides[d] % vectorElements != 0)
          return fail(FSL_ERROR_ALIGNMENT,
                      format("%s: stride %lld in dimension %d is not a multiple of %d elements "
                             "(the kernel reads %d-byte vectors of each row)",
                             name, (long long)t->strides[d], d, (int)vectorElements,
                             (int)(vectorElements * p.elementBytes)));
        if (t->strides[d] > (most - last) / (t->sizes[d] - 1))
          return fail(FSL_ERROR_SIZE,
                      format("%s: stride %lld in dimension %d makes more than 2^63 - 1 bytes", name,
                             (long long)t->strides[d], d));
        last += (t->sizes[d] - 1) * t->strides[d];
      }
      if (t->sizes[rank - 1] - 1 > most - last)
        return fail(FSL_ERROR_SIZE,
                    format("%s: size %lld in dimension %d makes more than 2^63 - 1 bytes", name,
                           (long long)t->sizes[rank - 1], rank - 1));
      continue;
    }
    int64_t elements = 1;
    for (int d = t->rank - 1; d >= 0; --d) {
      if (t->sizes[d] > 1 && t->strides[d] != elements)
        return fail(FSL_ERROR_LAYOUT,
                    format("%s: stride %lld in dimension %d, expected %lld (contiguous row-major)",
                           name, (long long)t->strides[d], d, (long long)elements));
      if (elements > INT64_MAX / p.elementBytes / t->sizes[d])
        return fail(FSL_ERROR_SIZE,
                    format("%s: size %lld in dimension %d makes more than 2^63 - 1 bytes", name,
                           (long long)t->sizes[d], d));
      elements *= t->sizes[d];
    }
  }
  // Sizes: the first tensor with a runtime dimension defines it; static ones must match.
  for (const auto &[dim, extent] : plan.dims) {
    bool defined = false;
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      for (size_t d = 0; d < plan.tensors[i].dims.size(); ++d) {
        if (plan.tensors[i].dims[d] != dim)
          continue;
        int64_t size = tensors[i]->sizes[d];
        if (!defined && !extent) {
          dims[dim] = size;
          defined = true;
          continue;
        }
        int64_t want = extent ? *extent : dims[dim];
        if (size != want)
          return fail(FSL_ERROR_SIZE,
                      format("%s: size %lld of dimension %s, expected %lld%s",
                             plan.tensors[i].name.c_str(), (long long)size, dim.c_str(),
                             (long long)want, extent ? " (static)" : ""));
      }
  }
  // An empty dimension leaves nothing to do, unless an output without it still has
  // elements, which cannot be computed (a reduction over it has none; the launcher's rule).
  for (const auto &[dim, value] : dims) {
    if (value != 0)
      continue;
    empty = true;
    for (const PlanTensor &t : plan.tensors) {
      if (!t.written || std::find(t.dims.begin(), t.dims.end(), dim) != t.dims.end())
        continue;
      bool hasElements = true;
      std::string shape;
      for (const std::string &kept : t.dims) {
        auto size = dims.find(kept);
        hasElements &= size == dims.end() || size->second != 0;
        shape += (shape.empty() ? "" : ", ") + kept;
      }
      if (hasElements)
        return fail(FSL_ERROR_SIZE,
                    dim + " is 0, but " + t.name + (shape.empty() ? "" : "[" + shape + "]") +
                        " has elements, which cannot be computed over an empty " + dim);
      break;
    }
  }
  if (empty || !checkData)
    return FSL_OK;
  return checkCallData(plan, tensors, error);
}

fsl_status checkCallData(const LaunchPlan &plan, const fsl_tensor *const *tensors,
                         std::string &error) {
  auto fail = [&](fsl_status status, std::string why) {
    error = std::move(why);
    return status;
  };
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlanTensor &p = plan.tensors[i];
    const fsl_tensor *t = tensors[i];
    const char *name = p.name.c_str();
    uintptr_t data = reinterpret_cast<uintptr_t>(t->data);
    if (!t->data)
      return fail(FSL_ERROR_NULL_POINTER, format("%s: null data pointer", name));
    if (data % p.elementBytes)
      return fail(FSL_ERROR_ALIGNMENT,
                  format("%s: data pointer %p is not aligned to its %d-byte elements", name,
                         t->data, p.elementBytes));
    if (data - 1 > UINTPTR_MAX - static_cast<uintptr_t>(bytesOf(t, p.elementBytes)))
      return fail(FSL_ERROR_SIZE, format("%s: %lld bytes at %p run past the end of the address "
                                         "space",
                                         name, (long long)bytesOf(t, p.elementBytes), t->data));
  }
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlanTensor &p = plan.tensors[i];
    if (p.alignment > p.elementBytes && reinterpret_cast<uintptr_t>(tensors[i]->data) % p.alignment)
      return fail(FSL_ERROR_ALIGNMENT,
                  format("%s: data pointer %p is not aligned to %lld bytes (the kernel reads "
                         "%lld-byte vectors)",
                         p.name.c_str(), tensors[i]->data, (long long)p.alignment,
                         (long long)p.alignment));
  }
  // An output and any other tensor, each pair once (an inout parameter is its own output).
  for (size_t i = 0; i < plan.tensors.size(); ++i)
    for (size_t j = 0; j < plan.tensors.size(); ++j)
      if (i != j && plan.tensors[i].written && !(plan.tensors[j].written && j < i) &&
          overlap(tensors[i], plan.tensors[i].elementBytes, tensors[j],
                  plan.tensors[j].elementBytes))
        return fail(FSL_ERROR_OVERLAP,
                    plan.tensors[i].name + " overlaps " + plan.tensors[j].name +
                        " in memory; only inout parameters are updated in place");
  return FSL_OK;
}

namespace {

/// One tensor map's arguments for a call, refused as the launcher's fsl_encode_tensor_map
/// refuses them (its messages), plus what cuTensorMapEncodeTiled would refuse later with
/// only a CUresult: an extent outside 1..2^32 or a stride of 2^40 bytes or more.
fsl_status planTensorMap(const PlanKernel &kernel, const PlanTensorMap &map,
                         const std::map<std::string, int64_t> &dims,
                         const fsl_tensor *const *tensors, bool checkData, PlannedTensorMap &out,
                         std::string &error) {
  const char *name = map.tensor.c_str();
  out.map = &map;
  out.rank = static_cast<int>(map.extents.size());
  // The data pointer only when the call's data is looked at (a call planned once serves
  // calls of other data: bindTensorMaps gives them theirs).
  out.data = checkData ? tensors[map.tensorIndex]->data : nullptr;
  // The IR lists extents and box innermost last; the driver wants them innermost first,
  // with the byte strides of every dimension but the innermost.
  uint64_t stride = static_cast<uint64_t>(map.elementBytes);
  for (int i = 0; i < out.rank; ++i) {
    const LaunchExpr &extent = map.extents[out.rank - 1 - i];
    int64_t size = 0;
    std::string why;
    if (!evaluate(extent, dims, size, why)) {
      error = kernel.name + ": " + map.name + ": " + why;
      return FSL_ERROR_SIZE;
    }
    if (size < 1 || size > (int64_t(1) << 32)) {
      error = format("%s: extent %lld of dimension %d (%s) is outside 1..2^32, what TMA copies "
                     "take",
                     name, (long long)size, out.rank - 1 - i, extent.text.c_str());
      return FSL_ERROR_SIZE;
    }
    out.sizes[i] = static_cast<uint64_t>(size);
    out.box[i] = static_cast<uint32_t>(map.box[out.rank - 1 - i]);
    if (i > 0)
      out.strides[i - 1] = stride;
    if (__builtin_mul_overflow(stride, out.sizes[i], &stride))
      stride = UINT64_MAX; // only a stride past 2^40 can come of it, refused below
  }
  if (checkData && reinterpret_cast<uintptr_t>(out.data) % 16 != 0) {
    error = format("%s: data pointer %p is not aligned to 16 bytes (TMA copies need 16-byte "
                   "aligned tensors)",
                   name, out.data);
    return FSL_ERROR_ALIGNMENT;
  }
  for (int i = 0; i + 1 < out.rank; ++i) {
    if (out.strides[i] % 16 != 0) {
      error = format("%s: rows of %llu bytes are not a multiple of 16 bytes (TMA copies need "
                     "16-byte row strides: pad the contiguous dimension)",
                     name, (unsigned long long)out.strides[i]);
      return FSL_ERROR_SIZE;
    }
    if (out.strides[i] >= (uint64_t(1) << 40)) {
      error = format("%s: a stride of %llu bytes is 2^40 or more, beyond what TMA copies take",
                     name, (unsigned long long)out.strides[i]);
      return FSL_ERROR_SIZE;
    }
  }
  return FSL_OK;
}

} // namespace

fsl_status planLaunches(const LaunchPlan &plan, const std::map<std::string, int64_t> &dims,
                        const fsl_tensor *const *tensors, bool checkData, PlannedCall &call,
                        std::string &error) {
  call = PlannedCall{};
  std::vector<PlannedLaunch> &launches = call.launches;
  const PlanVariant *chosen = nullptr;
  for (const PlanVariant &variant : plan.variants) {
    int64_t holds = 1;
    if (variant.guard && !evaluate(*variant.guard, dims, holds, error))
      return FSL_ERROR_SIZE;
    if (holds) {
      chosen = &variant;
      break;
    }
  }
  if (!chosen) {
    error = "no schedule of " + plan.fusion + " applies to these sizes";
    return FSL_ERROR_SIZE;
  }
  const char axes[] = {'x', 'y', 'z'};
  for (unsigned k : chosen->kernels) {
    const PlanKernel &kernel = plan.kernels[k];
    PlannedLaunch launch;
    launch.kernel = &kernel;
    std::string why;
    auto value = [&](const LaunchExpr &e, int64_t &out) {
      if (evaluate(e, dims, out, why))
        return true;
      error = kernel.name + ": " + why;
      return false;
    };
    for (int a = 0; a < 3; ++a) {
      if (!value(kernel.grid[a], launch.grid[a]) || !value(kernel.block[a], launch.block[a]) ||
          !value(kernel.cluster[a], launch.cluster[a]))
        return FSL_ERROR_SIZE;
      if (launch.grid[a] < 1 || launch.grid[a] > plan.maxGrid[a]) {
        error =
            format("%s: grid extent %lld along %c (%s) is outside 1..%lld on %s",
                   kernel.name.c_str(), (long long)launch.grid[a], axes[a],
                   kernel.grid[a].text.c_str(), (long long)plan.maxGrid[a], plan.target.c_str());
        return FSL_ERROR_SIZE;
      }
      if (launch.block[a] < 1 || launch.block[a] > plan.maxBlock[a]) {
        error =
            format("%s: block extent %lld along %c (%s) is outside 1..%lld on %s",
                   kernel.name.c_str(), (long long)launch.block[a], axes[a],
                   kernel.block[a].text.c_str(), (long long)plan.maxBlock[a], plan.target.c_str());
        return FSL_ERROR_SIZE;
      }
      if (launch.cluster[a] < 1 || launch.cluster[a] > plan.maxCluster) {
        error =
            format("%s: cluster extent %lld along %c (%s) is outside 1..%lld on %s",
                   kernel.name.c_str(), (long long)launch.cluster[a], axes[a],
                   kernel.cluster[a].text.c_str(), (long long)plan.maxCluster, plan.target.c_str());
        return FSL_ERROR_SIZE;
      }
      launch.clustered |= launch.cluster[a] != 1;
    }
    int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
    int64_t most =
        kernel.maxThreads ? std::min(kernel.maxThreads, plan.maxThreads) : plan.maxThreads;
    if (threads > most) {
      error = format("%s: %lld threads a block, more than %lld", kernel.name.c_str(),
                     (long long)threads, (long long)most);
      return FSL_ERROR_SIZE;
    }
    if (launch.clustered) {
      int64_t size = launch.cluster[0] * launch.cluster[1] * launch.cluster[2];
      if (size > plan.maxCluster) {
        error = format("%s: clusters of %lld blocks; %s allows at most %lld", kernel.name.c_str(),
                       (long long)size, plan.target.c_str(), (long long)plan.maxCluster);
        return FSL_ERROR_SIZE;
      }
      for (int a = 0; a < 3; ++a)
        if (launch.grid[a] % launch.cluster[a] != 0) {
          error = format("%s: the grid extent %lld along %c is not a multiple of the cluster "
                         "extent %lld",
                         kernel.name.c_str(), (long long)launch.grid[a], axes[a],
                         (long long)launch.cluster[a]);
          return FSL_ERROR_SIZE;
        }
    }
    if (!value(kernel.shared, launch.shared))
      return FSL_ERROR_SIZE;
    if (launch.shared < 0 || launch.shared > plan.maxShared) {
      error = format("%s: %lld bytes of dynamic shared memory (%s), the limit is %lld on %s",
                     kernel.name.c_str(), (long long)launch.shared, kernel.shared.text.c_str(),
                     (long long)plan.maxShared, plan.target.c_str());
      return FSL_ERROR_SIZE;
    }
    launches.push_back(std::move(launch));
  }
  // The workspaces the variant's kernels take, each once, in the program's order.
  for (const PlanWorkspace &workspace : plan.workspaces) {
    bool used = false;
    for (const PlannedLaunch &launch : launches)
      for (const PlanArg &arg : launch.kernel->args)
        used |= arg.kind == PlanArg::Kind::Workspace && arg.name == workspace.name;
    if (!used)
      continue;
    PlannedWorkspace planned;
    planned.workspace = &workspace;
    std::string why;
    if (!evaluate(workspace.bytes, dims, planned.bytes, why)) {
      error = "the size of workspace " + workspace.name + " does not fit in 64 bits (" + why + ")";
      return FSL_ERROR_SIZE;
    }
    if (planned.bytes < 0) {
      error = format("workspace %s: %lld bytes (%s)", workspace.name.c_str(),
                     (long long)planned.bytes, workspace.bytes.text.c_str());
      return FSL_ERROR_SIZE;
    }
    call.workspaces.push_back(planned);
  }
  // Every tensor map of every launch, so that a refused one launches nothing (the
  // launcher encodes each launch's before that launch).
  for (PlannedLaunch &launch : launches)
    for (const PlanTensorMap &map : launch.kernel->tensorMaps) {
      PlannedTensorMap planned;
      if (fsl_status status =
              planTensorMap(*launch.kernel, map, dims, tensors, checkData, planned, error);
          status != FSL_OK)
        return status;
      launch.tensorMaps.push_back(planned);
    }
  return FSL_OK;
}

fsl_status bindTensorMaps(const LaunchPlan &plan, const fsl_tensor *const *tensors,
                          PlannedCall &call, std::string &error) {
  for (PlannedLaunch &launch : call.launches)
    for (PlannedTensorMap &planned : launch.tensorMaps) {
      planned.data = tensors[planned.map->tensorIndex]->data;
      if (reinterpret_cast<uintptr_t>(planned.data) % 16 != 0) {
        error = format("%s: data pointer %p is not aligned to 16 bytes (TMA copies need 16-byte "
                       "aligned tensors)",
                       planned.map->tensor.c_str(), planned.data);
        return FSL_ERROR_ALIGNMENT;
      }
    }
  return FSL_OK;
}

bool usesProgrammaticLaunch(const LaunchPlan &plan, const PlanKernel &kernel, int64_t gridX) {
  return plan.pdl && !kernel.cooperative && !(kernel.fullGrid > 0 && gridX < kernel.fullGrid);
}

} // namespace fsl::jit
