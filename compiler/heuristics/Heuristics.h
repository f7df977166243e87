// Heuristics.h — schedules chosen by the compiler for `= auto` (or no schedule).
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
#pragma once

#include "ir/FusionIR.h"
#include "schedule/ScheduleBlock.h"
#include "support/Diagnostics.h"
#include "support/Target.h"

#include <map>
#include <optional>
#include <string>

namespace fsl::ast {
class ScheduleDecl;
}

namespace fsl::heuristics {

/// The knobs of `= auto(kind) { ... }`. sched::checkAutoSchedule (schedule/FromAst.h)
/// checks names and types and refuses the knobs no heuristic can honour (rfactor, any
/// knob of plain `auto`); the heuristics honour each knob set here
/// exactly or refuse it (never ignore it). Unset knobs are the heuristic's choice.
struct Knobs {
  std::string kind;                       // empty: chosen from the fusion's shape
  std::optional<bool> staticBdimx;        // default true
  std::optional<bool> computeWith;        // default true
  std::optional<int64_t> vectorWidth;     // elements an access
  std::optional<int64_t> unroll;          // pointwise: vectors a thread
  std::optional<int64_t> persistentBatch; // vectors of the row a thread keeps
  std::optional<int64_t> rowsPerBlock;    // rows on TIDy
  std::optional<bool> onePass;            // reduce one_pass (softmax, LayerNorm pairs)
  std::optional<bool> fastExp;            // fast_exp (approximate f32 exp)
  // auto(matmul):
  std::optional<int64_t> tileN;       // the CTA tile's N (128 or 256)
  std::optional<int64_t> stages;      // pipeline stages
  std::optional<int64_t> swizzle;     // persistent / stream-K groups of M tiles
  std::optional<int64_t> splitK;      // parts of K (1: no split)
  std::optional<bool> streamK;        // stream-K tiles, or never
  std::optional<int64_t> clusterM;    // cluster (C, 1) multicast
  std::optional<bool> pingpong;       // two consumer groups on alternate 64-row tiles
  std::vector<sched::SizeGuard> when; // the auto block's own guard
  /// The guards of the fusion's other guarded schedules: a variant the heuristic adds
  /// (`when T < sm_count`) must apply to none of their sizes.
  std::vector<std::vector<sched::SizeGuard>> otherGuards;
  std::map<std::string, llvm::SMRange> ranges; // knob name -> where it is written
  /// The `= auto` declaration and the fusion's name in it: the chosen blocks' directives
  /// point at the declaration (or at the knob that decided them), schedule-wide
  /// diagnostics at the name. Unset: at the fusion, which has no schedule.
  llvm::SMRange declRange, fusionRange;
};

/// The knobs of an `= auto` declaration whose header is `header` (from sched::headerOf).
Knobs knobsOf(const ast::ScheduleDecl &decl, const sched::ScheduleHeader &header);

/// The heuristic for a fusion's shape: pointwise, reduction or inner_persistent.
std::string classify(const ir::Fusion &fusion);

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

} // namespace fsl::heuristics
