// GuardCarving.h — the sizes of a guarded schedule less the sizes of other guards, as
// disjoint guards: how a tuning database's runtime ranges are cut out of the heuristics'
// launch-time variants, which must not overlap them.
//
// A guard is a conjunction of conditions on one dimension each, so removing `E = e1 && ...
// && en` from `G` leaves the disjoint pieces `G && e1 && ... && e(i-1) && !ei`; every
// condition has a negation the grammar can write (`<` and `>=`, `==` and `!=`,
// `% m == 0` and `% m != 0`).
#pragma once

#include "schedule/ScheduleBlock.h"

#include <vector>

namespace fsl::tuning {

/// Both guards' conditions: the sizes that satisfy `first` and `second`.
std::vector<sched::SizeGuard> conjunction(std::vector<sched::SizeGuard> first,
                                          const std::vector<sched::SizeGuard> &second);

/// Whether some sizes satisfy every condition of `guard`.
bool satisfiable(const std::vector<sched::SizeGuard> &guard);

/// `guard`'s sizes less those of each of `removed`, as disjoint satisfiable guards (just
/// `guard` when it overlaps none of them; none when they cover it).
std::vector<std::vector<sched::SizeGuard>>
carve(const std::vector<sched::SizeGuard> &guard,
      const std::vector<std::vector<sched::SizeGuard>> &removed);

} // namespace fsl::tuning
