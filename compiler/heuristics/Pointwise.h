// Pointwise.h — auto(pointwise): vectors of up to 16 bytes on the contiguous dimension,
// 128 threads, rows on blocks; `unroll = N`: N accesses a thread, a block apart.
#pragma once

#include "heuristics/Directives.h"
#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"
#include "support/Target.h"

#include <string>
#include <vector>

namespace fsl::heuristics {

struct PointwiseParams {
  std::string declined; // why the fusion is not scheduled; then nothing else is set
  int64_t vector = 1;   // elements an access
  std::string vectorWhy;
  int64_t threads = 128; // a block
  int64_t unroll = 1;    // accesses a thread, a block's width apart
  KnobVerdicts verdicts;
};

/// What auto(pointwise) chooses for `shape` on `target`.
PointwiseParams choosePointwise(const FusionShape &shape, const Target &target, const Knobs &knobs);

/// The schedule block of `params`.
std::vector<sched::ScheduleBlock> pointwiseBlocks(const FusionShape &shape,
                                                  const PointwiseParams &params,
                                                  const BlockContext &context);

} // namespace fsl::heuristics
