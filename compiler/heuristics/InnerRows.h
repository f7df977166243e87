// InnerRows.h — what auto(reduction) and auto(inner_persistent) choose alike: rows
// reduced along their contiguous dimension, split into vectors, threads and a serial
// batch, with variants by row count (grid reductions, wider blocks) and, for a runtime
// row length, by length. Reduction.h and InnerPersistent.h are the families' entries.
#pragma once

#include "heuristics/Directives.h"
#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"
#include "support/Target.h"

#include <string>
#include <vector>

namespace fsl::heuristics {

/// Where a persistent buffer is kept, and why.
struct BufferPlacement {
  std::string name;
  sched::MemoryKind memory = sched::MemoryKind::Registers;
  std::string reason;       // the block's reason line for it; empty: none
  bool computeWith = false; // computed with its first consumer
};

/// One schedule block of the choice.
struct RowVariant {
  enum class Kind {
    Outer,           // an outer reduction: a column a thread
    Grid,            // few rows, each in pieces on blockIdx.y
    GridSync,        // the same, the pieces' blocks meeting at grid barriers (grid_sync)
    Wide,            // fewer rows than SMs (or a wave): wider blocks
    Recompute,       // long rows from a wave on: the buffers recomputed
    Normal,          // every other row count
    RuntimeMultiple, // a runtime row length that whole vectors divide, in a range
    RuntimeLoop,     // any runtime row length: threads loop over the row
  };
  Kind kind = Kind::Normal;
  /// The guard; `userGuard`: the `= auto` block's own (Knobs::when) instead.
  std::vector<sched::SizeGuard> when;
  bool userGuard = false;
  RowSplit split;
  int64_t pieces = 1; // Grid, GridSync: pieces a row
  /// Two passes where the schedule's others take one: few rows of a row output whose
  /// prefetched row fits the registers (cross-entropy at V = 32000, T < 132).
  bool twoPass = false;
  std::vector<std::string> reasons;
  std::vector<BufferPlacement> buffers;
};

struct RowParams {
  std::string declined; // why the fusion is not scheduled; then nothing else is set
  bool onePass = false; // reduce one_pass
  int64_t vector = 1;   // elements an access
  std::string vectorWhy;
  bool staticBdimx = true;
  /// The split of every row count, and of fewer rows than SMs (a wider block); 0 threads
  /// for a runtime row length or an outer reduction.
  RowSplit normal, wide;
  std::vector<RowVariant> variants; // in the order they are tried
  KnobVerdicts verdicts;
};

/// What auto(reduction) (`persistent` false) or auto(inner_persistent) chooses.
RowParams chooseRows(const FusionShape &shape, const Target &target, const Knobs &knobs,
                     bool persistent);

/// The schedule blocks of `params`.
std::vector<sched::ScheduleBlock> rowBlocks(const FusionShape &shape, const RowParams &params,
                                            const BlockContext &context);

} // namespace fsl::heuristics
