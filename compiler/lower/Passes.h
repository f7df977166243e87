// Passes.h — the lowering passes, in the order Lower.cpp runs them.
//
// Each pass reads the LowerContext and rewrites `context.kernel`; the verifier
// (kir/Verifier.h) runs after each, and `--print-after=NAME` prints the kernel then.
// A pass returns false after reporting a diagnostic the user can act on.
//
//   build-loop-nests    parameters, parallel loops, one serial nest per phase with the
//                       element body (loads, values, saves, accumulations, stores),
//                       block reductions and their results
//   bounds              predicates for split remainders (once a thread or per iteration)
//                       and clamped rows (loads read the last row, stores are skipped)
//   reciprocal-division a / b -> a * (1 / b) for a divisor that is the same for a row
//   store-rounding      a store of bf16(x) stores x (the store rounds once)
//   vectorize           element loads and stores of the vector loop become vector copies
//   cache-inputs        `cache t in shared`: t copied into shared memory once a block, its
//                       reads redirected to the copy
//   next-row            `prefetch L`: the row walk loads each next row's vectors during
//                       the current row, and its later phases read them from registers
//   early-loads         inputs first read after a reduction are loaded before phase 0
//   prefetch            a short unrolled batch loads all its vectors before using any
//   unswitch            a copy of the nest without predicates for threads in bounds
//   launch-shape        grid, block, shared memory and launch bounds
//   simplify            index arithmetic folded with the loops' ranges
//
// A grid reduction's second kernel: build-grid-rows, simplify.
//
// The matmul path (matmul/Matmul.h draws the kernel), planned by MatmulPlan.h:
//
//   matmul-tile-scheduler  parameters, shared storage and barriers, the grid, the warp
//                          roles and their walks over work tiles (TileScheduler.h); it
//                          leaves markers (matmul/Markers.h: a Block labelled
//                          labels::Matmul*, holding a comment, valid Kernel IR) where each
//                          tile's loads, K loop and epilogue go, and after the last tile
//   matmul-main-loop       fills the loads and K loop markers: the producer's TMA loads,
//                          the consumers' wgmma loop (MainLoop.h)
//   matmul-epilogue        fills the epilogue markers: the fused epilogue and the stores
//                          (Epilogue.h)
//   simplify
//
// A split-K product's second kernel: build-split-k-sum, simplify; a stream-K product's:
// build-stream-k-fixup, simplify.
#pragma once

#include "lower/Context.h"

namespace fsl::lower {

/// The second kernel of a grid reduction (Plan::gridLoop): the blocks' partial results
/// combined a row, then the row outputs.
bool buildGridRows(LowerContext &context);
bool buildLoopNests(LowerContext &context);
bool insertBounds(LowerContext &context);
bool reciprocalDivision(LowerContext &context);
bool storeRounding(LowerContext &context);
bool vectorizeAccesses(LowerContext &context);
bool cacheInputs(LowerContext &context);
bool prefetchNextRow(LowerContext &context);
bool earlyLoads(LowerContext &context);
bool prefetchBatches(LowerContext &context);
bool unswitchNests(LowerContext &context);
bool computeLaunchShape(LowerContext &context);
bool simplifyIndices(LowerContext &context);

struct PassInfo {
  const char *name;
  bool (*run)(LowerContext &);
};

/// Every pass, in order.
const std::vector<PassInfo> &passList();
/// The passes of a grid reduction's second kernel.
const std::vector<PassInfo> &gridRowsPassList();

} // namespace fsl::lower
