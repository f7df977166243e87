// InnerOuter.cpp — auto(inner_outer): the shape it takes, the choice, then its directives.
#include "heuristics/InnerOuter.h"

#include "heuristics/SizeMath.h"
#include "ir/Describe.h"
#include "ir/RegisterPressure.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FormatVariadic.h>

namespace fsl::heuristics {
namespace {

/// Values a thread keeps across its row, unless a knob says otherwise: each batch element
/// of every [rows, columns] input (read once, held while the row's reductions finish) and
/// each partial column sum. 48 gives the old rule's batches (16 partial columns) for
/// RMSNorm's backward (x and dy kept, one column sum: 16 elements x 3 = 48) and LayerNorm's
/// (two column sums: 8 x 4 = 32, the next power of two 64 being over), where ptxas gives
/// 50-64 registers; add + RMSNorm's backward (h, dy and dh kept) ran 1.04-1.55x faster with
/// half its old batch (H = 2048 to 8192, T = 1024 and 16384: docs/performance.md, run U5),
/// where the rule now lands.
constexpr int64_t kKeptValues = 48;
/// The most a `persistent_batch` knob may give them (beyond it, they spill).
constexpr int64_t kBatchRegisters = 128;
/// Bytes of a vector access along the columns, unless a knob says otherwise.
constexpr int64_t kVectorBytes = 8;
/// Threads of a block the rows on threadIdx.y fill up to.
constexpr int64_t kBlockThreads = 256;
/// Blocks of two or more column sums fill up to 1024 threads (kFullBlockThreads) when a row
/// takes at most kFullBlockRowThreads, T is static and at most kFullBlockMaxRows, and the
/// fuller blocks still number kFullBlockMinBlocks (128 gained on the H200's 132 SMs, 64
/// lost; no knob sizes the grid or the block).
/// Each block stores a partial row of every column sum, 8 bytes a column for LayerNorm's
/// two against the 4 it reads a row: more rows a block store fewer partials. On the H200
/// (docs/performance.md, run F1) LayerNorm's backward ran 1.13x faster at H = 2048 (4 rows
/// of 256 threads) for T = 512 and 1024, 1.05x at H = 1024 (8 rows of 128), T = 1024; it
/// lost where fewer blocks were left (0.66x at 32 blocks, 0.92x at 64) and at H = 4096 (2
/// rows of 512: 0.92-0.95x). From a few thousand rows the partials are a small share (the
/// tuner kept a row a block at T = 16384).
constexpr int64_t kFullBlockRowThreads = 256;
constexpr int64_t kFullBlockMaxRows = 1024;
constexpr int64_t kFullBlockMinBlocks = 128;
constexpr int64_t kFullBlockThreads = 1024;
/// Threads an SM keeps resident at 64 registers a thread: the blocks an SM.
constexpr int64_t kResidentThreads = 1024;
/// Blocks an SM a `blocks_per_sm` knob may ask for: each block stores a partial row of
/// every column reduction, and the second kernel adds them.
constexpr int64_t kMaxBlocksPerSm = 8;

struct Layout {
  std::string why; // empty: the fusion has the shape
  ir::DimId rows = 0, columns = 0;
  int64_t columnReductions = 0;
  int64_t rowTensors = 0; // inputs over the rows and the columns: [T, H]
};

Layout layoutOf(const ir::Fusion &fusion) {
  Layout layout;
  // The reference: an output over two dimensions, columns innermost.
  const ir::Output *reference = nullptr;
  for (const ir::Output &output : fusion.outputs)
    if (output.dims.size() == 2 && !ir::isReduction(output.value->op)) {
      reference = &output;
      break;
    }
  if (!reference) {
    layout.why = "auto(inner_outer) needs an output over [rows, columns] (dx)";
    return layout;
  }
  layout.rows = reference->dims[0];
  layout.columns = reference->dims[1];
  const std::string rows = fusion.dims[layout.rows].name;
  const std::string columns = fusion.dims[layout.columns].name;
  int64_t rowReductions = 0;
  for (const auto &value : fusion.values) {
    if (!ir::isReduction(value->op))
      continue;
    bool row = value->reduced == std::vector<ir::DimId>{layout.columns} &&
               value->dims == std::vector<ir::DimId>{layout.rows};
    bool column = value->reduced == std::vector<ir::DimId>{layout.rows} &&
                  value->dims == std::vector<ir::DimId>{layout.columns};
    if (ir::isArgReduction(value->op) || (!row && !column)) {
      layout.why = "auto(inner_outer) takes reductions over " + columns + " keeping " + rows +
                   " and sums, means, maxima or minima over " + rows + " keeping " + columns +
                   "; '" + ir::userName(fusion, *value) + "' is neither";
      return layout;
    }
    rowReductions += row;
    layout.columnReductions += column;
  }
  for (const ir::Param &param : fusion.params)
    layout.rowTensors += llvm::is_contained(param.dims, layout.rows) &&
                         llvm::is_contained(param.dims, layout.columns);
  if (rowReductions == 0 || layout.columnReductions == 0)
    layout.why = "auto(inner_outer) needs a reduction over " + columns + " and one over " + rows;
  return layout;
}

} // namespace

std::string innerOuterMismatch(const ir::Fusion &fusion) { return layoutOf(fusion).why; }

InnerOuterParams chooseInnerOuter(const ir::Fusion &fusion, const Target &target,
                                  const Knobs &knobs) {
  InnerOuterParams params;
  Layout layout = layoutOf(fusion);
  if (!layout.why.empty()) {
    params.declined = layout.why;
    return params;
  }
  const ir::Dim &rows = fusion.dims[layout.rows];
  const ir::Dim &columns = fusion.dims[layout.columns];
  params.rows = rows.name;
  params.columns = columns.name;
  params.columnReductions = layout.columnReductions;
  if (!columns.staticExtent) {
    params.declined = "auto(inner_outer) keeps each thread's partial columns in registers, a "
                      "static number of them, so " +
                      columns.name + " needs a static size (`<" + columns.name +
                      " = 4096>`); a runtime " + columns.name + " is not scheduled yet";
    return params;
  }
  int64_t extent = *columns.staticExtent;
  // Vectors of up to 8 bytes of the widest input or element output along the columns, a
  // width that divides them (the column outputs are stored an element at a time). Not 16:
  // on the H200 8-byte vectors ran RMSNorm's and LayerNorm's backward 10-45 % faster for
  // T = 1024 to 4096 and 4-6 % slower only for RMSNorm at T = 16384 (docs/performance.md,
  // run B3); each thread's partial columns are then stored 16 bytes apart, not 32.
  int64_t widest = 1;
  for (const ir::Param &param : fusion.params)
    if (!param.dims.empty() && param.dims.back() == layout.columns)
      widest = std::max<int64_t>(widest, ir::dtypeBytes(param.dtype));
  for (const ir::Output &output : fusion.outputs)
    if (!ir::isReduction(output.value->op) && !output.dims.empty() &&
        output.dims.back() == layout.columns)
      widest = std::max<int64_t>(widest, ir::dtypeBytes(output.dtype));
  params.vector = std::max<int64_t>(1, kVectorBytes / widest);
  if (knobs.vectorWidth) {
    int64_t asked = *knobs.vectorWidth;
    if (asked * widest > 16)
      params.verdicts.refuse(
          "vector_width", llvm::formatv("{0} elements of {1} bytes are {2} bytes an access, over "
                                        "the 16 of one load; use vector_width = {3} or less",
                                        asked, widest, asked * widest, 16 / widest)
                              .str());
    else if (extent % asked != 0)
      params.verdicts.refuse(
          "vector_width",
          llvm::formatv("{0} = {1} is not a multiple of {2}", columns.name, extent, asked).str());
    else {
      params.verdicts.honour("vector_width");
      params.vector = asked;
    }
  }
  if (!knobs.vectorWidth || params.vector != *knobs.vectorWidth)
    while (params.vector > 1 && extent % params.vector != 0)
      params.vector /= 2;
  int64_t vectors = extent / params.vector;
  // The largest power-of-two batch whose kept values stay within kKeptValues a thread
  // (ptxas then needs 50-64 registers, so several blocks share an SM), on at most 1024
  // threads a row.
  int64_t keptPerElement = (layout.rowTensors + params.columnReductions) * params.vector;
  params.batch = 1;
  while (2 * params.batch * keptPerElement <= kKeptValues)
    params.batch *= 2;
  if (ceilDiv(vectors, params.batch) > 1024)
    params.batch = ceilDiv(vectors, 1024);
  if (knobs.persistentBatch) {
    int64_t asked = *knobs.persistentBatch;
    int64_t threads = ceilDiv(vectors, asked);
    if (threads > 1024)
      params.verdicts.refuse(
          "persistent_batch",
          llvm::formatv("{0} vectors of {1} in batches of {2} need {3} threads a row, over "
                        "1024; use persistent_batch = {4} or more",
                        vectors, columns.name, asked, threads, ceilDiv(vectors, 1024))
              .str());
    else if (params.columnReductions * asked * params.vector > kBatchRegisters)
      params.verdicts.refuse(
          "persistent_batch",
          llvm::formatv("a batch of {0} vectors of {1} gives each thread {2} partial columns "
                        "for {3} column reduction(s), over the {4} registers the knob may take "
                        "for them",
                        asked, params.vector, params.columnReductions * asked * params.vector,
                        params.columnReductions, kBatchRegisters)
              .str());
    else if (ceilDiv(vectors, ceilDiv(vectors, asked)) != asked)
      params.verdicts.refuse("persistent_batch",
                             llvm::formatv("{0} threads cover the {1} vectors with {2} a thread; "
                                           "use persistent_batch = {2}",
                                           ceilDiv(vectors, asked), vectors,
                                           ceilDiv(vectors, ceilDiv(vectors, asked)))
                                 .str());
    else {
      params.verdicts.honour("persistent_batch");
      params.batch = asked;
    }
  }
  // No idle warps: the threads the batch needs, whole warps.
  params.threads = std::max<int64_t>(32, ceilDiv(ceilDiv(vectors, params.batch), 32) * 32);
  if (params.columnReductions * params.batch * params.vector > kBatchRegisters) {
    params.declined =
        llvm::formatv("{0} = {1} gives each of 1024 threads {2} partial columns of each of {3} "
                      "column reduction(s), {5} in all, over the {4} registers "
                      "auto(inner_outer) keeps for them; compute the row outputs and the "
                      "column reductions in two fusions",
                      columns.name, extent, params.batch * params.vector, params.columnReductions,
                      kBatchRegisters, params.batch * params.vector * params.columnReductions)
            .str();
    return params;
  }
  // Rows on threadIdx.y fill the block to kBlockThreads threads, then several blocks an SM
  // (each walks its rows serially, a block reduction a row: other blocks' loads fill the
  // wait), as many as kResidentThreads allow; fewer for few static rows.
  params.rowsPerBlock = std::max<int64_t>(1, kBlockThreads / params.threads);
  // Not when a knob sizes the grid or the block: the rule's block count is its condition.
  bool fullBlocks =
      params.columnReductions >= 2 && params.threads <= kFullBlockRowThreads && rows.staticExtent &&
      *rows.staticExtent <= kFullBlockMaxRows &&
      ceilDiv(*rows.staticExtent, kFullBlockThreads / params.threads) >= kFullBlockMinBlocks &&
      !knobs.rowsPerBlock && !knobs.rowBlocks && !knobs.blocksPerSm;
  if (fullBlocks)
    params.rowsPerBlock = kFullBlockThreads / params.threads; // at least 4 rows
  // Never more rows a block than a static T has: a row of threads past T would idle and
  // still cost the column sums' combine across threadIdx.y.
  if (rows.staticExtent && *rows.staticExtent >= 1)
    params.rowsPerBlock = std::min(params.rowsPerBlock, *rows.staticExtent);
  if (knobs.rowsPerBlock) {
    int64_t asked = *knobs.rowsPerBlock;
    if (asked > 1024 / params.threads)
      params.verdicts.refuse("rows_per_block",
                             llvm::formatv("{0} rows of {1} threads are over the 1024 threads "
                                           "of a block; use rows_per_block = {2} or less",
                                           asked, params.threads, 1024 / params.threads)
                                 .str());
    else {
      params.verdicts.honour("rows_per_block");
      params.rowsPerBlock = asked;
    }
  }
  int64_t blocksPerSm = std::clamp<int64_t>(
      kResidentThreads / (params.threads * params.rowsPerBlock), 1, kMaxBlocksPerSm);
  if (knobs.blocksPerSm) {
    int64_t asked = *knobs.blocksPerSm;
    if (asked > kMaxBlocksPerSm)
      params.verdicts.refuse("blocks_per_sm",
                             llvm::formatv("{0} blocks an SM: the partial columns' workspace "
                                           "grows with the blocks; use blocks_per_sm = {1} or "
                                           "less",
                                           asked, kMaxBlocksPerSm)
                                 .str());
    else {
      params.verdicts.honour("blocks_per_sm");
      blocksPerSm = asked;
    }
  }
  params.blocks = target.smCount * blocksPerSm;
  if (rows.staticExtent)
    params.blocks =
        std::clamp<int64_t>(ceilDiv(*rows.staticExtent, params.rowsPerBlock), 1, params.blocks);
  if (knobs.rowBlocks) {
    int64_t asked = *knobs.rowBlocks;
    if (knobs.blocksPerSm)
      params.verdicts.refuse("row_blocks",
                             "blocks_per_sm sizes the grid as well; give one of the two");
    else if (rows.staticExtent && asked > ceilDiv(*rows.staticExtent, params.rowsPerBlock))
      params.verdicts.refuse(
          "row_blocks",
          llvm::formatv("{0} = {1} in {2} row{3} a block needs {4} block{5} at most; use "
                        "row_blocks = {4} or less",
                        rows.name, *rows.staticExtent, params.rowsPerBlock,
                        params.rowsPerBlock == 1 ? "" : "s",
                        ceilDiv(*rows.staticExtent, params.rowsPerBlock),
                        ceilDiv(*rows.staticExtent, params.rowsPerBlock) == 1 ? "" : "s")
              .str());
    else {
      params.verdicts.honour("row_blocks");
      params.blocks = asked;
    }
  }
  // One block of a static T holds the whole column sums: the kernel stores the column
  // outputs itself (the lowering makes no second kernel for a grid of one block).
  bool oneKernel = rows.staticExtent && params.blocks == 1;
  // grid_sync: off unless asked (a knob for the tuner and hand schedules until measured).
  if (knobs.gridSync) {
    // Every block must be resident at once: the target's threads an SM bound the blocks
    // (the lowering checks block slots and shared memory too, LaunchShape.cpp).
    int64_t threadsPerSm = target.maxThreadsPerSm > 0 ? target.maxThreadsPerSm : 2048;
    int64_t resident = threadsPerSm / (params.threads * params.rowsPerBlock) * target.smCount;
    if (*knobs.gridSync && params.blocks == 1)
      params.verdicts.refuse("grid_sync", "one block holds the whole column sums already: the "
                                          "kernel stores them with no second kernel to save");
    else if (*knobs.gridSync && params.blocks > resident)
      params.verdicts.refuse(
          "grid_sync",
          llvm::formatv("{0} blocks of {1} threads cannot all be resident on the {2} SMs ({3} at "
                        "most): ask for fewer with blocks_per_sm or row_blocks",
                        params.blocks, params.threads * params.rowsPerBlock, target.smCount,
                        resident)
              .str());
    else {
      params.verdicts.honour("grid_sync");
      params.gridSync = *knobs.gridSync;
    }
  }
  params.reasons.push_back(llvm::formatv(
      "auto(inner_outer): {0} in vectors of {1}, {2} threads x {3} vector{8} a thread (unrolled: "
      "the {4} partial column{5} a thread of the {6} column reduction{7} stay in registers)",
      columns.name, params.vector, params.threads, params.batch,
      params.columnReductions * params.batch * params.vector,
      params.columnReductions * params.batch * params.vector == 1 ? "" : "s",
      params.columnReductions, params.columnReductions == 1 ? "" : "s",
      params.batch == 1 ? "" : "s"));
  std::string grid = blocksPerSm == 1 ? "one an SM" : llvm::formatv("{0} an SM", blocksPerSm).str();
  std::string rowsText =
      params.rowsPerBlock == 1
          ? "one row of " + rows.name + " a block"
          : llvm::formatv("{0} rows of {1} a block on threadIdx.y", params.rowsPerBlock, rows.name)
                .str();
  params.reasons.push_back(llvm::formatv(
      "{0}, {1} block{2}{3}, {4} its rows serially; the row reductions over threadIdx.x, "
      "the column sums {5}{6}.",
      rowsText, params.blocks, params.blocks == 1 ? "" : "s",
      rows.staticExtent || knobs.rowBlocks ? ""
                                           : " (" + grid + ": " + rows.name + " is a runtime size)",
      params.blocks == 1 ? "walking" : "each walking",
      params.rowsPerBlock == 1 ? ""
                               : (oneKernel ? "over threadIdx.y, " : "over threadIdx.y, then "),
      oneKernel         ? "stored by this kernel (one block: no second kernel)"
      : params.gridSync ? "across the blocks after a grid barrier (grid_sync)"
                        : "across the blocks by a second kernel"));
  if (fullBlocks)
    params.reasons.push_back(llvm::formatv(
        "{0} = {1} rows: blocks of {2} threads, so fewer blocks store partial rows of the {3} "
        "column reductions.",
        rows.name, *rows.staticExtent, params.threads * params.rowsPerBlock,
        params.columnReductions));
  // The row walk prefetched by default where a thread's row fits the arrays: on the H200
  // it ran the backward norms 1.03-1.27x faster at 24 of 27 shapes (H = 2048-8192, T =
  // 1024-16384, docs/performance.md, run P1) and 0.90-0.94x at three of RMSNorm's, where
  // its registers left room for fewer blocks than the grid has: there the tuning database
  // halves the blocks an SM or the batch (run P3), or turns it off.
  // The arrays need vector accesses (an unvectorized row has no static batch of vectors).
  // Not where, with the next row's raw vectors (a register for 4 bytes of every [T, H]
  // input) beside the values held across the row reductions (the inputs they read and
  // the partial columns, a register each) and 8 of index math, a thread needs more
  // registers than the block leaves it: at 1024 threads (64 registers) from H = 12288
  // (LayerNorm) and 16384 (the RMSNorms) ptxas spilled 36-856 bytes a thread with the
  // prefetch and none without it up to 20480-24576 (sm_90a; not timed). Never where the
  // checker's lower bound (ir/RegisterPressure.h) would warn.
  const ir::RowWalkInputs rowInputs = ir::rowWalkInputs(fusion, layout.rows, layout.columns);
  const int64_t threadColumns = params.batch * params.vector;
  const int64_t threadRegisters =
      target.registersPerThreadOfBlock(params.threads * params.rowsPerBlock);
  const int64_t prefetchNeeds =
      std::max(ir::persistentRegistersNeeded(
                   (rowInputs.heldTensors + params.columnReductions) * threadColumns, 1, 0) +
                   ceilDiv(rowInputs.rowTensorBytes * threadColumns, 4),
               ir::columnPartialsRegistersNeeded(threadColumns, params.columnReductions,
                                                 rowInputs.heldBytes));
  const bool prefetchFits = prefetchNeeds <= threadRegisters;
  params.prefetchRows =
      params.vector > 1 && params.batch <= sched::kMaxPrefetchVectors && prefetchFits;
  if (knobs.prefetchRows) {
    if (*knobs.prefetchRows && params.vector == 1)
      params.verdicts.refuse(
          "prefetch_rows",
          knobs.vectorWidth
              ? llvm::formatv("{0} is read an element at a time (vector_width = 1), so a row is "
                              "no array of vectors; use a vector_width over 1",
                              columns.name)
                    .str()
              : llvm::formatv("{0} = {1} is read an element at a time (no vector width divides "
                              "it), so a row is no array of vectors",
                              columns.name, extent)
                    .str());
    else if (*knobs.prefetchRows && params.batch > sched::kMaxPrefetchVectors)
      params.verdicts.refuse(
          "prefetch_rows",
          llvm::formatv("each thread's row takes {0} vectors of each input, over the {1} a "
                        "prefetch keeps in registers; use persistent_batch = {1} or less",
                        params.batch, sched::kMaxPrefetchVectors)
              .str());
    else {
      params.verdicts.honour("prefetch_rows");
      params.prefetchRows = *knobs.prefetchRows;
    }
  }
  if (!prefetchFits && !knobs.prefetchRows && params.vector > 1 &&
      params.batch <= sched::kMaxPrefetchVectors)
    params.reasons.push_back(llvm::formatv("no prefetch of {0}: with the next row's vectors a "
                                           "thread would need about {1} registers, over the {2} "
                                           "a thread of {3} has.",
                                           rows.name, prefetchNeeds, threadRegisters,
                                           params.threads * params.rowsPerBlock));
  if (params.prefetchRows)
    params.reasons.push_back(llvm::formatv(
        "prefetch {0}s: each next row's vectors loaded while this row is reduced and stored, "
        "and read from registers by every phase of the row.",
        rows.name));
  if (params.gridSync)
    params.reasons.push_back(llvm::formatv(
        "grid_sync: the {0} blocks meet at a grid barrier (a cooperative launch) and add the "
        "partial columns in the same kernel, with no second kernel.",
        params.blocks));
  return params;
}

std::vector<sched::ScheduleBlock> innerOuterBlocks(const InnerOuterParams &params,
                                                   const BlockContext &context) {
  llvm::SMRange at = context.decl();
  const std::string &h = params.columns, &t = params.rows;
  Block block;
  block.reasons = params.reasons;
  std::string base = h;
  if (params.vector > 1) {
    block.split(h, params.vector, h + "o", h + "v", at);
    base = h + "o";
  }
  block.split(base, params.threads, h + "p", h + "x", at);
  // One row a block: no threadIdx.y (the column sums then need no exchange in the block).
  if (params.rowsPerBlock > 1) {
    block.split(t, params.rowsPerBlock, t + "o", t + "y", at);
    block.split(t + "o", params.blocks, t + "b", t + "s", at, /*factorIsOuter=*/true);
    block.parallelize({{t + "b", sched::Parallel::BIDx},
                       {t + "y", sched::Parallel::TIDy},
                       {h + "x", sched::Parallel::TIDx}},
                      at);
  } else {
    block.split(t, params.blocks, t + "b", t + "s", at, /*factorIsOuter=*/true);
    block.parallelize({{t + "b", sched::Parallel::BIDx}, {h + "x", sched::Parallel::TIDx}}, at);
  }
  if (params.vector > 1)
    block.vectorize(h + "v", at);
  if (params.batch > 1)
    block.unroll(h + "p", at);
  if (params.prefetchRows)
    block.prefetch(t + "s", at);
  if (params.gridSync)
    block.add(sched::GridSync{}, context.at("grid_sync"));
  return {context.finish(std::move(block), context.knobs->when)};
}

} // namespace fsl::heuristics
