// Evaluate.cpp — argument parsing, reproducible random inputs, output summaries.
#include "driver/Evaluate.h"

#include "eval/Evaluator.h"
#include "ir/Printer.h"
#include "support/Diagnostics.h"
#include "support/Suggestions.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <map>

namespace fsl {
namespace {

/// splitmix64: tiny, fast and identical everywhere (std distributions are not).
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  double uniform() { // [-1, 1)
    return static_cast<double>(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  }

private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

/// 3 GiB, 512 MiB, 12 KiB: a byte count as people read it.
std::string humanBytes(uint64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format(unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

std::string number(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.6g", value);
  return text;
}

/// "T", "T and H", "T, H and W".
std::string spokenList(const std::vector<std::string> &names) {
  if (names.size() < 2)
    return llvm::join(names, "");
  return llvm::join(llvm::ArrayRef(names).drop_back(), ", ") + " and " + names.back();
}

/// What to give: "give the sizes of runtime dimensions T and H, and a value for scalar
/// eps, as in T=4,H=4,eps=1".
std::string askFor(const std::vector<std::string> &dims, const std::vector<std::string> &scalars) {
  std::vector<std::string> what, example;
  if (!dims.empty())
    what.push_back(
        (dims.size() == 1 ? "the size of runtime dimension " : "the sizes of runtime dimensions ") +
        spokenList(dims));
  if (!scalars.empty())
    what.push_back((scalars.size() == 1 ? "a value for scalar " : "values for scalars ") +
                   spokenList(scalars));
  for (const std::string &dim : dims)
    example.push_back(dim + "=4");
  for (const std::string &scalar : scalars)
    example.push_back(scalar + "=1");
  return "give " + llvm::join(what, ", and ") + ", as in " + llvm::join(example, ",");
}

} // namespace

bool makeEvaluationRequest(const ir::Fusion &fusion, const std::string &assignments, uint64_t seed,
                           const std::vector<const ir::Fusion *> &otherFusions,
                           DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                           eval::EvalRequest &request, RunMode mode, InputValues values) {
  auto belongsToOther = [&](const std::string &name) {
    for (const ir::Fusion *other : otherFusions) {
      if (other->findDim(name))
        return true;
      for (const ir::Param &param : other->params)
        if (param.name == name && param.dims.empty())
          return true;
    }
    return false;
  };
  auto fail = [&](const std::string &message) {
    diagnostics.report(mode == RunMode::Simulate ? DiagId::InvalidSimulateArgument
                                                 : DiagId::InvalidEvaluateArgument,
                       llvm::SMRange(), message);
    return false;
  };
  request = eval::EvalRequest();
  std::map<std::string, double> scalars;
  llvm::SmallVector<llvm::StringRef, 8> items;
  llvm::StringRef(assignments).split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [name, valueText] = item.trim().split('=');
    std::string key = name.trim().str();
    valueText = valueText.trim();
    if (fusion.findDim(key)) {
      int64_t size;
      if (valueText.getAsInteger(10, size))
        return fail("size of " + key + " must be an integer, not '" + valueText.str() + "'");
      request.sizes[key] = size;
      continue;
    }
    bool isScalar = false;
    for (const ir::Param &param : fusion.params)
      isScalar |= param.name == key && param.dims.empty();
    if (!isScalar && belongsToOther(key))
      continue;
    if (!isScalar) {
      std::vector<std::string> names;
      for (const ir::Dim &dim : fusion.dims)
        names.push_back(dim.name);
      for (const ir::Param &param : fusion.params)
        if (param.dims.empty())
          names.push_back(param.name);
      return fail("'" + key + "' is neither a dimension nor a scalar parameter of " + fusion.name +
                  didYouMean(key, names));
    }
    double value;
    if (valueText.getAsDouble(value))
      return fail("value of " + key + " must be a number, not '" + valueText.str() + "'");
    scalars[key] = value;
  }

  // Extents first, to size the random inputs; evaluate() checks them again.
  std::vector<int64_t> extents;
  std::vector<std::string> missingDims; // every size not given, named in one message
  for (const ir::Dim &dim : fusion.dims) {
    if (dim.staticExtent) {
      extents.push_back(*dim.staticExtent);
    } else if (auto it = request.sizes.find(dim.name);
               it != request.sizes.end() && it->second > 0) {
      extents.push_back(it->second);
    } else if (it != request.sizes.end()) {
      return fail("size of " + dim.name + " must be positive");
    } else {
      missingDims.push_back(dim.name);
    }
  }
  // Scalars without a default need a value too: asked for with the sizes, all at once.
  std::vector<std::string> missingScalars;
  for (const ir::Param &param : fusion.params)
    if (param.dims.empty() && !param.defaultValue && !scalars.count(param.name))
      missingScalars.push_back(param.name);
  if (!missingDims.empty() || !missingScalars.empty())
    return fail(askFor(missingDims, missingScalars));
  // Refused before any input is made: a size past the budget would otherwise end in
  // an allocation failure.
  std::optional<uint64_t> bytes = eval::evaluationBytes(fusion, extents);
  if (!bytes || *bytes > eval::kMemoryBudgetBytes) {
    std::vector<std::string> sizes;
    for (size_t i = 0; i < fusion.dims.size(); ++i)
      if (!fusion.dims[i].staticExtent)
        sizes.push_back(fusion.dims[i].name + "=" + std::to_string(extents[i]));
    diagnostics.report(DiagId::SizesOverBudget, llvm::SMRange(),
                       mode == RunMode::Simulate ? "--simulate" : "--evaluate",
                       sizes.empty() ? std::string("its static sizes") : llvm::join(sizes, ","),
                       fusion.name,
                       bytes ? humanBytes(*bytes) : std::string("more than 2^63 bytes"));
    return false;
  }
  out << "evaluate " << fusion.name << ":";
  if (fusion.dims.empty())
    out << " no dimensions";
  for (size_t i = 0; i < fusion.dims.size(); ++i)
    out << (i ? ", " : " ") << fusion.dims[i].name << "=" << extents[i]
        << (fusion.dims[i].staticExtent ? " (static)" : "");
  out << "; seed " << seed << "\n";

  Random random(seed);
  for (const ir::Param &param : fusion.params) {
    std::string type = ir::typeString(fusion, param.dtype, param.dims);
    if (param.dims.empty()) {
      if (auto it = scalars.find(param.name); it != scalars.end())
        request.params.push_back({it->second});
      else
        request.params.push_back({*param.defaultValue}); // else asked for above
      out << "  input " << param.name << ": " << type << " = " << number(request.params.back()[0])
          << "\n";
      continue;
    }
    std::vector<double> data(eval::elementCount(param.dims, extents));
    // Floats uniform in [-1, 1); integers in [-8, 8); bools half true.
    bool special = values == InputValues::Special && ir::isFloat(param.dtype);
    const char *distribution = special ? "in rows of ties, NaNs, infinities and -inf"
                               : ir::isFloat(param.dtype)   ? "uniform in [-1, 1)"
                               : ir::isInteger(param.dtype) ? "integers in [-8, 8)"
                                                            : "true or false";
    int64_t rowLength = extents[param.dims.back()];
    for (size_t k = 0; k < data.size(); ++k) {
      double u = random.uniform();
      data[k] = ir::isFloat(param.dtype)     ? eval::roundTo(u, param.dtype)
                : ir::isInteger(param.dtype) ? std::floor(u * 8)
                                             : (u >= 0 ? 1 : 0);
      if (!special)
        continue;
      // The rows (runs of the innermost dimension) take turns: values from {-1, -0.5, 0,
      // 0.5, 1}, so maxima and minima tie; 1 in 8 NaN; 1 in 8 +inf and 1 in 8 -inf; all
      // -inf. Rows, so that each kind meets a reduction over the innermost dimension alone.
      double v = random.uniform();
      switch ((static_cast<int64_t>(k) / rowLength) % 4) {
      case 0:
        data[k] = std::floor(u * 2.5 + 0.5) / 2;
        break;
      case 1:
        if (v < -0.75)
          data[k] = NAN;
        break;
      case 2:
        if (v < -0.75)
          data[k] = INFINITY;
        else if (v < -0.5)
          data[k] = -INFINITY;
        break;
      default:
        data[k] = -INFINITY;
        break;
      }
    }
    out << "  input " << param.name << ": " << type << ", " << data.size() << " values "
        << distribution << "\n";
    request.params.push_back(std::move(data));
  }
  return true;
}

RunResult evaluateAndSummarize(const ir::Fusion &fusion, const std::string &assignments,
                               uint64_t seed, const std::vector<const ir::Fusion *> &otherFusions,
                               DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                               InputValues values) {
  auto fail = [&](const std::string &message) {
    diagnostics.report(DiagId::InvalidEvaluateArgument, llvm::SMRange(), message);
    return RunResult::Refused;
  };
  eval::EvalRequest request;
  if (!makeEvaluationRequest(fusion, assignments, seed, otherFusions, diagnostics, out, request,
                             RunMode::Evaluate, values))
    return RunResult::Refused;

  llvm::Expected<eval::EvalResult> result = eval::evaluate(fusion, request);
  if (!result)
    return fail(llvm::toString(result.takeError()));
  for (size_t i = 0; i < fusion.outputs.size(); ++i) {
    const ir::Output &output = fusion.outputs[i];
    const std::vector<double> &data = result->outputs[i];
    double low = INFINITY, high = -INFINITY, sum = 0;
    size_t nonFinite = 0;
    for (double element : data) {
      if (!std::isfinite(element)) {
        ++nonFinite;
        continue;
      }
      low = std::min(low, element);
      high = std::max(high, element);
      sum += element;
    }
    size_t finite = data.size() - nonFinite;
    out << "  output " << output.name << ": " << ir::typeString(fusion, output.dtype, output.dims)
        << (output.isInout ? " (inout)" : "") << "\n    min " << number(finite ? low : NAN)
        << "  max " << number(finite ? high : NAN) << "  mean "
        << number(finite ? sum / finite : NAN);
    if (nonFinite)
      out << "  non-finite " << nonFinite;
    out << "\n    first";
    for (size_t k = 0; k < std::min<size_t>(6, data.size()); ++k)
      out << ' ' << number(data[k]);
    out << "\n";
  }
  return RunResult::Ok;
}

} // namespace fsl
