// PinnedHeuristics.h — the heuristics asked for a schedule under a guard that pins runtime
// dimensions (`= auto` under `when H == 4096`, or a tuning database's `when H == 4096`
// entry): they plan the fusion with those dimensions static (PinnedSizes.h), so they
// choose what they choose for `<H = 4096>` and honour the knobs that need a static row.
#pragma once

#include "heuristics/Heuristics.h"
#include "pipeline/PinnedSizes.h"

namespace fsl::pipeline {

/// The heuristics' blocks for `fusion` with `knobs`. When `knobs.when` pins runtime
/// dimensions, they are asked for the fusion with those dimensions static, the guard's
/// other conditions (and the fusion's other guards) as they stand at the pinned sizes;
/// each block they give is put back under the whole guard, with its own conditions after
/// it, and the block for the remaining sizes (the heuristics' unguarded one) is cut around
/// their variants (`H == 4096 && T >= 132` beside `H == 4096 && T < 132`). A variant
/// for sizes the guard excludes (`T < 132` under `T == 16384`) is left out.
heuristics::Choice chooseUnderGuard(const ir::Fusion &fusion, const Target &target,
                                    const heuristics::Knobs &knobs, PinnedFusions &pinned,
                                    DiagnosticEngine *diagnostics);

} // namespace fsl::pipeline
