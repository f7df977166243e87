// ScheduleBlock.cpp — `when` guards.
#include "schedule/ScheduleBlock.h"

#include "support/Internal.h"

#include <algorithm>
#include <set>

#include <llvm/Support/CheckedArithmetic.h>

#include <llvm/ADT/StringExtras.h>

namespace fsl::sched {

llvm::StringRef comparisonSpelling(Comparison comparison) {
  switch (comparison) {
  case Comparison::Lt:
    return "<";
  case Comparison::Le:
    return "<=";
  case Comparison::Gt:
    return ">";
  case Comparison::Ge:
    return ">=";
  case Comparison::Eq:
    return "==";
  case Comparison::Ne:
    return "!=";
  }
  FSL_UNREACHABLE("a comparison");
}

bool SizeGuard::holds(int64_t size) const {
  int64_t value = modulus > 0 ? size % modulus : size;
  switch (comparison) {
  case Comparison::Lt:
    return value < bound;
  case Comparison::Le:
    return value <= bound;
  case Comparison::Gt:
    return value > bound;
  case Comparison::Ge:
    return value >= bound;
  case Comparison::Eq:
    return value == bound;
  case Comparison::Ne:
    return value != bound;
  }
  FSL_UNREACHABLE("a comparison");
}

std::map<std::string, std::vector<int64_t>>
sizeCandidates(const std::vector<const std::vector<SizeGuard> *> &guards) {
  // 1 and every bound with its neighbours (those that exist in 64 bits: a bound may be
  // INT64_MAX); between them no comparison changes its answer.
  std::map<std::string, std::vector<int64_t>> candidates;
  std::map<std::string, std::set<int64_t>> moduli;
  for (const std::vector<SizeGuard> *when : guards)
    for (const SizeGuard &guard : *when) {
      std::vector<int64_t> &values = candidates[guard.dimName];
      values.push_back(1);
      for (int64_t step : {-1, 0, 1})
        if (std::optional<int64_t> v = llvm::checkedAdd(guard.bound, step))
          values.push_back(*v);
      if (guard.modulus > 0)
        moduli[guard.dimName].insert(guard.modulus);
    }
  // A divisibility condition (by a power of two) splits each interval between bounds by
  // how many factors of two a size has: near each candidate, add the nearest multiples of
  // each modulus on either side and the multiples one modulus further (of two consecutive
  // multiples of 2^k, one is an odd multiple), and the candidate's neighbours (one of two
  // consecutive sizes is odd). Every class the guards tell apart then has a point in each
  // interval where it occurs.
  for (const auto &[dim, mods] : moduli) {
    std::vector<int64_t> &values = candidates[dim];
    std::vector<int64_t> added;
    for (int64_t v : values) {
      for (int64_t step : {-1, 1})
        if (std::optional<int64_t> n = llvm::checkedAdd(v, step))
          added.push_back(*n);
      for (int64_t m : mods)
        for (int64_t k : {-1, 0, 1, 2})
          if (std::optional<int64_t> offset = llvm::checkedMul(k, m))
            if (std::optional<int64_t> n = llvm::checkedAdd(v - v % m, *offset))
              added.push_back(*n);
    }
    values.insert(values.end(), added.begin(), added.end());
  }
  for (auto &[dim, values] : candidates) {
    llvm::erase_if(values, [](int64_t v) { return v < 1; });
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  }
  return candidates;
}

int64_t guaranteedDivisor(const std::vector<SizeGuard> &when, ir::DimId dim) {
  int64_t divisor = 1;
  for (const SizeGuard &guard : when)
    if (guard.dim == dim && guard.modulus > 0 && guard.comparison == Comparison::Eq &&
        guard.bound == 0)
      divisor = std::max(divisor, guard.modulus);
  return divisor;
}

std::string guardText(const std::vector<SizeGuard> &when) {
  std::vector<std::string> parts;
  for (const SizeGuard &guard : when)
    parts.push_back(guard.dimName +
                    (guard.modulus > 0 ? " % " + std::to_string(guard.modulus) : "") + " " +
                    comparisonSpelling(guard.comparison).str() + " " + std::to_string(guard.bound));
  return llvm::join(parts, " && ");
}

} // namespace fsl::sched
