// InnerOuter.h — auto(inner_outer): a row reduction and a column reduction in one kernel
// (RMSNorm's and LayerNorm's backward: dx from a reduction over H a row, dweight and dbias
// from reductions over T), as nvFuser's inner-outer persistent scheduler.
//
// Each block walks its share of the rows (a serial loop, several rows at once on
// threadIdx.y); a row's reductions are block reductions over threadIdx.x; the column
// reductions' partial sums stay in registers a thread across the rows (the batch loop is
// unrolled so that they are registers); after the rows the rows of threadIdx.y are added
// through shared memory and each block stores one partial row, which the grid reduction's
// second kernel adds (lower/Plan.h, Plan::columnReduced).
#pragma once

#include "heuristics/Directives.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"
#include "ir/FusionIR.h"
#include "support/Target.h"

#include <string>
#include <vector>

namespace fsl::heuristics {

struct InnerOuterParams {
  std::string declined;      // why the fusion is not scheduled; then nothing else is set
  std::string rows, columns; // the row dimension (T) and the reduced row's (H)
  int64_t vector = 1;        // elements an access along `columns`
  int64_t threads = 128;     // threadIdx.x, along `columns`
  int64_t batch = 1;         // vectors a thread along `columns` (a static, unrolled loop)
  int64_t rowsPerBlock = 4;  // threadIdx.y
  int64_t blocks = 132;      // blockIdx.x, over the rows
  int64_t columnReductions = 0;
  bool prefetchRows = false; // `prefetch Ts`: the next row's vectors loaded during this row
  bool gridSync = false;     // `grid_sync`: the column sums finished in the first kernel
  std::vector<std::string> reasons;
  KnobVerdicts verdicts;
};

/// Why `fusion` is not a row reduction next to a column reduction over one [rows,
/// columns] layout (empty when it is: plain `= auto` then takes auto(inner_outer)).
std::string innerOuterMismatch(const ir::Fusion &fusion);

/// What auto(inner_outer) chooses for `fusion` on `target`.
InnerOuterParams chooseInnerOuter(const ir::Fusion &fusion, const Target &target,
                                  const Knobs &knobs);

/// The schedule block of `params`.
std::vector<sched::ScheduleBlock> innerOuterBlocks(const InnerOuterParams &params,
                                                   const BlockContext &context);

} // namespace fsl::heuristics
