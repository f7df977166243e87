// Heuristics.h — schedules chosen by the compiler for `= auto` (or no schedule).
//
// The heuristics write schedule text, the same syntax users write, with comments that
// explain each choice; the driver parses it and checks it like any schedule, so
// `--emit=schedule` shows exactly what was chosen and it can be pasted and tuned.
//   pointwise         vectors of up to 16 bytes on the contiguous dimension, 128 threads,
//                     rows on blocks.
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
#pragma once

#include "ast/AST.h"
#include "ir/FusionIR.h"
#include "support/Target.h"

#include <optional>
#include <string>

namespace fsl::heuristics {

/// The knobs of `= auto(kind) { ... }` (ScheduleBuilder checks names and types).
struct Knobs {
  std::string kind; // empty: chosen from the fusion's shape
  bool staticBdimx = true;
  bool computeWith = true;
  std::optional<int64_t> vectorWidth;
  std::optional<int64_t> persistentBatch;
  std::optional<int64_t> rowsPerBlock;
  std::vector<ast::SizeCondition> when; // the auto block's own guard
};

Knobs knobsOf(const ast::ScheduleDecl &decl);

/// The heuristic for a fusion's shape: pointwise, reduction or inner_persistent.
std::string classify(const ir::Fusion &fusion);

struct Choice {
  std::string text; // schedule blocks, or empty when `why` says why not
  std::string why;
};

/// Schedules for `fusion` on `target`.
Choice chooseSchedules(const ir::Fusion &fusion, const Target &target, const Knobs &knobs);

} // namespace fsl::heuristics
