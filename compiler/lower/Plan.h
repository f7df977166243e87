// Plan.h — what the schedule asks of the kernel, before any statement exists.
//
// The first step of lowering reads the Schedule IR and the Fusion IR into a plan: the
// kernel's loop nest (the output's loops, with the loops only reductions have), the
// transforms that index each dimension from those loops, the phases a reduction cuts
// the work into, the values kept across phases, and which dimensions may run past
// their extent. Passes (Passes.h) turn the plan into Kernel IR statements and rewrite
// them; the plan itself never reaches codegen or the simulator.
#pragma once

#include "ir/OnePass.h"
#include "kir/IR.h"
#include "schedule/ScheduleIR.h"

#include <map>
#include <optional>
#include <set>

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::lower {

struct PlannedLoop {
  std::string name;
  sched::Extent extent;
  sched::Parallel parallel = sched::Parallel::Serial;
  bool vectorized = false;
  bool unrolled = false;
  std::optional<int64_t> unrollFactor;
  bool unswitched = false;
  /// `prefetch L` (the range of the directive): the row walk loads the next row ahead.
  std::optional<llvm::SMRange> prefetchedBy;
  std::vector<ir::DimId> roots;
  bool exact = true;
  kir::Origin origin; // the directive that gave the loop its kind
};

struct PlannedPhase {
  std::vector<const ir::Value *> values;     // computed per element, operands first
  std::vector<const ir::Value *> reductions; // accumulated per thread in this phase
  /// Reduction pairs computed together in this phase (`reduce one_pass`): online
  /// softmax's (max, sum of exp), Welford's (mean, variance); not in `reductions`.
  std::vector<ir::OnePassPair> combined;
  std::vector<const ir::Output *> stores;
  std::vector<const ir::Value *> saves; // kept for later phases
};

struct Plan {
  const sched::Schedule *schedule = nullptr;
  const ir::Fusion *fusion = nullptr;
  std::vector<PlannedLoop> loops; // outermost first
  std::vector<sched::LoopTransform> transforms;
  std::vector<PlannedPhase> phases;
  std::map<unsigned, int> phaseOf;
  std::set<unsigned> blockReduced;
  std::set<unsigned> persistent, persistentShared;
  /// Persistent values computed in their first consumer's loop (`compute_with`); the
  /// others get a loop nest of their own before it.
  std::set<unsigned> computedWith;
  /// Values substituted into every use instead of bound once an element (`inline`).
  std::set<unsigned> inlined;
  /// Input tensor parameters staged in shared memory once a block (`cache t in shared`,
  /// lower/CacheInputs.cpp), in the schedule's order: the parameter and the directive.
  struct CachedInput {
    unsigned param = 0;
    kir::Origin origin;
  };
  std::vector<CachedInput> cachedInputs;
  /// `reduce one_pass`: the pairs of ir::findOnePassPairs are computed together.
  bool onePassForm = false;
  bool onePass() const { return onePassForm; }
  int64_t bufferElements = 1;
  int vectorLoop = -1;
  bool vectorAccessesExact = false;
  std::set<ir::DimId> inexactRoots, clampedRoots;
  /// A loop over a reduced dimension on a block index (`parallelize Vg -> BIDy`): a grid
  /// reduction. Each block stores its partial accumulators (one a row and block of that
  /// loop) to a workspace; a second kernel combines them in the loop's order and computes
  /// the row outputs (BuildLoopNests.cpp, `buildGridRows`). -1 without one.
  int gridLoop = -1;
  /// The reductions' kept dimensions: a grid reduction's rows, numbered row-major.
  std::vector<ir::DimId> gridRowDims;
  struct GridPartials {
    const ir::Value *reduction = nullptr; // a one-pass pair's: its first reduction
    kir::BufferPtr values;                // the accumulators ([rows, blocks of the grid loop])
    kir::BufferPtr indices;               // argmax / argmin: the accumulators' indices
    /// `reduce one_pass`: the pair, and a workspace for each of its accumulators
    /// ((max, sum) or (count, mean, M2)) instead of `values`.
    std::optional<ir::OnePassPair> pair;
    std::vector<kir::BufferPtr> tuple;
  };
  /// Set by the lowering (Lower.cpp) before the passes run: the workspaces.
  std::vector<GridPartials> gridPartials;
  /// The reductions whose partial results go to the workspaces, in the fusion's order:
  /// every reduction of a row grid reduction outside a one-pass pair, the column
  /// reductions of the inner-outer form.
  std::vector<const ir::Value *> gridReduced;
  /// A row grid reduction's one-pass pairs (`reduce one_pass`), whose accumulators go to
  /// the workspaces together.
  std::vector<ir::OnePassPair> gridPairs;

  /// The inner-outer form (a row reduction and a column reduction in one kernel: RMSNorm's
  /// and LayerNorm's backward). A column reduction keeps a dimension that a serial loop of
  /// the phases walks (`dweight = sum(.., over T)` keeping H on `Hp` and `Hv`) or reduces
  /// over threadIdx.y. Its partial sums stay in a register array a thread, one element an
  /// iteration of the phases' serial loops, across the rows the block handles (`rowLoops`,
  /// serial loops over the reduced dimensions, around every phase); after them the rows of
  /// threadIdx.y are added through shared memory and the block's partial row goes to a
  /// workspace for the grid reduction's second kernel (a reduced loop on a block index),
  /// or, without one, the outputs are stored at once.
  std::set<unsigned> columnReduced;
  /// Serial loops over the column reductions' reduced dimensions, outermost first: each
  /// iteration is a row (or rows) of every phase. Not in serialLoops().
  std::vector<int> rowLoops;
  /// The loop on threadIdx.y that the column reductions reduce over (-1 without one).
  int columnThreadLoop = -1;
  /// The outputs computed from the column reductions (stored after them, not by a phase).
  std::vector<const ir::Output *> columnOutputs;
  bool innerOuter() const { return !columnReduced.empty(); }

  /// The serial loops of a phase's loop nest, outermost first (the row loops of the
  /// inner-outer form are around the phases, not in them).
  std::vector<int> serialLoops() const;
  std::optional<int64_t> staticThreads() const;
  /// Dynamic shared memory a thread of the block takes: the block reduction scratch and
  /// the persistent buffers in shared memory (values at their register width, 4 or 8 bytes).
  int64_t sharedBytesPerThread() const;
};

/// Reports `lowering-unsupported` with `why` at `at`, or at the schedule's fusion name when
/// `at` is empty; returns false, for `return unsupported(...)`.
bool reportUnsupported(DiagnosticEngine &diagnostics, const sched::Schedule &schedule,
                       const std::string &why, llvm::SMRange at = {});

/// The registers a thread may have (the target's), which bound the arrays a thread keeps
/// in registers across its serial loops (persistent buffers, partial column sums).
struct PlanLimits {
  int64_t maxRegistersPerThread = 255;
  std::string targetName = "the target";
};

/// The plan of one schedule, or null after a `lowering-unsupported` diagnostic at the
/// directive (or schedule) that asks for what cannot be lowered.
std::unique_ptr<Plan> planKernel(const sched::Schedule &schedule, DiagnosticEngine &diagnostics,
                                 const PlanLimits &limits = {});

} // namespace fsl::lower
