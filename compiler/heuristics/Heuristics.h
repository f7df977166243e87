// Heuristics.h — schedules chosen by the compiler for `= auto` (or no schedule): the
// entry point, which classifies the fusion and dispatches to its family's heuristic
// (Pointwise.h, Reduction.h, InnerPersistent.h, Matmul.h, InnerOuter.h).
//
// The heuristics return typed schedule blocks (schedule/ScheduleBlock.h), the same
// directives a user's schedule converts to, with the reasons for each choice; the driver
// builds and checks them like any schedule, and `--emit=schedule` prints them with the
// reasons as comments, so what was chosen can be pasted and tuned.
//   pointwise         vectors of up to 16 bytes on the contiguous dimension, 128 threads,
//                     rows on blocks; `unroll = N`: N accesses a thread, a block apart.
//   reduction         inner: the reduced row split into vectors, threads and a serial
//                     batch, one row per block; outer: kept columns on threads, the reduced
//                     dimension serial.
//   inner_persistent  RMSNorm, LayerNorm, Softmax: as nvFuser's inner persistent
//                     scheduler — static blockDim.x (the row split inner by the thread
//                     count) when the row length is static, a persistent batch sized to a
//                     register budget, several rows per block when rows are short, wider
//                     blocks when there are fewer rows than SMs (a `when` variant), the
//                     buffer computed with its first consumer, kept in registers, shared
//                     memory or recomputed by size.
//   matmul            the hand schedule of examples/linear_bias_gelu.fsl, the fastest
//                     measured: a producer warpgroup and two consumers, persistent tiles in
//                     groups of 8, the epilogue through shared memory (and TMA stores when
//                     N is static); 128 x 256 tiles, 128 x 128 below two waves of those
//                     (a `when M < ...` variant). No knobs yet.
//   inner_outer       a row reduction next to a column reduction (a norm's backward):
//                     rows walked serially by a few blocks an SM, the column sums in
//                     registers across them, then added across blocks (InnerOuter.h).
#pragma once

#include "heuristics/Family.h"
#include "heuristics/Knobs.h"
#include "ir/FusionIR.h"
#include "schedule/ScheduleBlock.h"
#include "support/Diagnostics.h"
#include "support/Target.h"

#include <string>
#include <vector>

namespace fsl::heuristics {

struct Choice {
  std::vector<sched::ScheduleBlock> blocks; // or none, when `why` says why not
  std::string why;
};

/// Schedules for `fusion` on `target`. A knob this fusion's heuristic cannot honour (a
/// vector width that does not divide the row, a batch over the block's threads...) is
/// reported at the knob as `auto-knob-unsupported` when `diagnostics` is given; either
/// way the choice is then empty and `why` names the knob.
Choice chooseSchedules(const ir::Fusion &fusion, const Target &target, const Knobs &knobs,
                       DiagnosticEngine *diagnostics = nullptr);

/// The heuristic plain `= auto` takes for `fusion`: matmul for a matrix product,
/// inner_outer for a row reduction next to a column reduction, else the family of its
/// shape (pointwise, reduction or inner_persistent).
Family plainAutoFamily(const ir::Fusion &fusion);

} // namespace fsl::heuristics
