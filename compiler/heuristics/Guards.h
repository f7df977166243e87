// Guards.h — whether a variant's `when` guard meets another schedule's.
#pragma once

#include "schedule/ScheduleBlock.h"

#include <vector>

namespace fsl::heuristics {

/// Whether some sizes satisfy both guards.
bool guardsOverlap(const std::vector<sched::SizeGuard> &a, const std::vector<sched::SizeGuard> &b);

/// Whether `guard` meets one of `others` (the fusion's other guarded schedules): a variant
/// the heuristic adds must not.
bool overlapsAny(const std::vector<sched::SizeGuard> &guard,
                 const std::vector<std::vector<sched::SizeGuard>> &others);

} // namespace fsl::heuristics
