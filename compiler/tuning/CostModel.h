// CostModel.h — a matrix product's time estimated from its schedule, so that `fslc tune`
// need not build and time a candidate that cannot win (docs/tuning.md).
//
// The estimate is coarse on purpose: the tensor pipes' time (the tiles' waves over the SMs
// at each tile shape's measured rate, TunedConstants.h) or the memory's (every operand
// read once, the output written), whichever is longer, then the f32 partial sums that
// split-K's parts and stream-K's split tiles write and read back (after a piece's main
// loop, so not hidden behind it). Of the tile orders it counts split-K's parts, and
// stream-K's pieces as its lowering cuts them (balanced over the CTAs); of the pipeline,
// whether its stages hide the loads' latency (a k step at most every (latency + step) /
// stages). It knows nothing of clusters, swizzles or the epilogue's form, so it never
// tells two candidates apart by those: they are left to the timing. Only a candidate estimated far
// slower than the heuristics' own choice is pruned (kPruneAbove), so the estimate's error
// (4-10 % where it was checked, more where an unseen knob matters) does not prune a winner.
#pragma once

#include "schedule/ScheduleIR.h"
#include "support/Target.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fsl::tuning {

/// What the model estimates for one schedule of a product of M x N x K.
struct ProductEstimate {
  double micros = 0;        // the longer of the next two, the partial sums and launches
  double tensorMicros = 0;  // the tiles' waves at their rate
  double memoryMicros = 0;  // the operands and the output at the memory's bandwidth
  double partialMicros = 0; // split-K's or stream-K's f32 partial sums, written and read
  int64_t workUnits = 0;    // tiles, times split-K's parts
  double waveShare = 1;     // the share of their waves the work units fill
  double stageFactor = 1;   // how much slower a k step runs for want of stages (>= 1)
  std::string summary;      // "128 x 256 tiles: 448 units fill 85 % of 4 waves; ..."
};

/// A candidate estimated more than this many times the heuristics' time is pruned.
inline constexpr double kPruneAbove = 1.5;

/// The estimate for `schedule` (an mma, its tiles) at static sizes M, N and K (`products`:
/// 2 for SwiGLU's two products of one a), with 16-bit operands and `outputBytes` per
/// output element; none when the schedule has no mma or a size is not positive, or the
/// target gives no tensor rate (its file leaves out `tensor_tflops_16bit`).
std::optional<ProductEstimate> estimateProduct(const sched::MatmulSchedule &schedule, int64_t m,
                                               int64_t n, int64_t k, int products,
                                               int64_t outputBytes, const Target &target);

} // namespace fsl::tuning
