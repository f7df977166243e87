// PinnedSizes.h — the runtime dimensions a schedule's guard fixes to one size (`when
// H == 4096`), and the fusion as that schedule sees it: those dimensions static.
//
// A schedule under `when H == 4096` only ever runs at H = 4096, so it is planned, built,
// checked and lowered against a copy of the fusion in which H is the static size 4096: the
// kernel is the one the fusion declared `<H = 4096>` gets (static loop bounds, whole
// vectors, an unrolled row), while the fusion itself keeps H a runtime size, so the
// launcher still takes H and picks the variant by it. The copy is the Fusion IR with the
// dimension's staticExtent set, as the JIT's specialization makes it (Specialize.h).
#pragma once

#include "ir/FusionIR.h"
#include "schedule/ScheduleBlock.h"

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace fsl::pipeline {

/// The runtime dimensions of `fusion` that `when` pins, with their sizes: a condition
/// `D == N` on the size itself (not `D % 8 == 0`), N >= 1, that the guard's other
/// conditions on D accept (`D == 4100 && D % 8 == 0` holds for no size at all).
std::map<ir::DimId, int64_t> pinnedSizes(const ir::Fusion &fusion,
                                         const std::vector<sched::SizeGuard> &when);

/// `fusion` with each dimension of `sizes` static at its size: a copy of its Fusion IR
/// (values, parameters, outputs) that refers to none of the original's values.
std::unique_ptr<ir::Fusion> withStaticSizes(const ir::Fusion &fusion,
                                            const std::map<ir::DimId, int64_t> &sizes);

/// The fusions schedules are planned and built against: the fusion itself, or for a
/// guard that pins runtime dimensions a copy with them static, made once a fusion and
/// set of sizes and kept as long as this object (schedules point into it).
class PinnedFusions {
public:
  const ir::Fusion &under(const ir::Fusion &fusion, const std::vector<sched::SizeGuard> &when);

private:
  std::map<std::pair<const ir::Fusion *, std::map<ir::DimId, int64_t>>, std::unique_ptr<ir::Fusion>>
      copies_;
};

} // namespace fsl::pipeline
