// Guards.cpp — guard overlap by trying the sizes at and around the bounds.
#include "heuristics/Guards.h"

#include <llvm/ADT/STLExtras.h>

#include <functional>
#include <map>
#include <string>

namespace fsl::heuristics {

bool guardsOverlap(const std::vector<sched::SizeGuard> &a, const std::vector<sched::SizeGuard> &b) {
  // Between the bounds (and their neighbours) nothing changes, so those sizes are the
  // only ones to try.
  std::map<std::string, std::vector<int64_t>> candidates = sched::sizeCandidates({&a, &b});
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims(candidates.begin(),
                                                                 candidates.end());
  std::map<std::string, int64_t> point;
  std::function<bool(size_t)> search = [&](size_t i) {
    if (i == dims.size()) {
      for (const auto *guards : {&a, &b})
        for (const sched::SizeGuard &guard : *guards)
          if (!guard.holds(point.at(guard.dimName)))
            return false;
      return true;
    }
    for (int64_t value : dims[i].second) {
      point[dims[i].first] = value;
      if (search(i + 1))
        return true;
    }
    return false;
  };
  return search(0);
}

bool overlapsAny(const std::vector<sched::SizeGuard> &guard,
                 const std::vector<std::vector<sched::SizeGuard>> &others) {
  return llvm::any_of(others, [&](const std::vector<sched::SizeGuard> &other) {
    return guardsOverlap(guard, other);
  });
}

} // namespace fsl::heuristics
