// ScheduleBlock.cpp — `when` guards.
#include "schedule/ScheduleBlock.h"

#include "support/Internal.h"

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

bool SizeGuard::holds(int64_t value) const {
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

std::string guardText(const std::vector<SizeGuard> &when) {
  std::vector<std::string> parts;
  for (const SizeGuard &guard : when)
    parts.push_back(guard.dimName + " " + comparisonSpelling(guard.comparison).str() + " " +
                    std::to_string(guard.bound));
  return llvm::join(parts, " && ");
}

} // namespace fsl::sched
