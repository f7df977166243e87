// InnerOuter.cpp — auto(inner_outer): the shape it takes, the choice, then its directives.
#include "heuristics/InnerOuter.h"

#include "heuristics/SizeMath.h"
#include "ir/Describe.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FormatVariadic.h>

namespace fsl::heuristics {
namespace {

/// Partial column sums a thread keeps in registers, at most (each column reduction's
/// batch x vector elements): a budget like the inner-persistent heuristic's buffers.
constexpr int64_t kPartialRegisters = 64;
/// Threads of a block, at most (threadIdx.x x threadIdx.y).
constexpr int64_t kBlockThreads = 512;

struct Layout {
  std::string why; // empty: the fusion has the shape
  ir::DimId rows = 0, columns = 0;
  int64_t columnReductions = 0;
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
  if (rowReductions == 0 || layout.columnReductions == 0)
    layout.why = "auto(inner_outer) needs a reduction over " + columns + " and one over " + rows;
  return layout;
}

} // namespace

std::string innerOuterMismatch(const ir::Fusion &fusion) { return layoutOf(fusion).why; }

InnerOuterParams chooseInnerOuter(const ir::Fusion &fusion, const Target &target, const Knobs &) {
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
  // Vectors of up to 16 bytes of the widest input or element output along the columns,
  // a width that divides them (the column outputs are stored an element at a time).
  int64_t widest = 1;
  for (const ir::Param &param : fusion.params)
    if (!param.dims.empty() && param.dims.back() == layout.columns)
      widest = std::max<int64_t>(widest, ir::dtypeBytes(param.dtype));
  for (const ir::Output &output : fusion.outputs)
    if (!ir::isReduction(output.value->op) && !output.dims.empty() &&
        output.dims.back() == layout.columns)
      widest = std::max<int64_t>(widest, ir::dtypeBytes(output.dtype));
  params.vector = 16 / widest;
  while (params.vector > 1 && extent % params.vector != 0)
    params.vector /= 2;
  int64_t vectors = extent / params.vector;
  // The fewest threads, from 128, whose batch keeps the partial columns within budget.
  params.threads = 128;
  for (;;) {
    params.batch = ceilDiv(vectors, params.threads);
    if (params.columnReductions * params.batch * params.vector <= kPartialRegisters ||
        params.threads >= 1024)
      break;
    params.threads *= 2;
  }
  // No idle warps: the threads the batch needs, whole warps.
  params.threads = std::max<int64_t>(32, ceilDiv(ceilDiv(vectors, params.batch), 32) * 32);
  if (params.columnReductions * params.batch * params.vector > kPartialRegisters) {
    params.declined = llvm::formatv("{0} = {1} gives each of 1024 threads {2} partial columns "
                                    "for {3} column reduction(s), over the {4} registers "
                                    "auto(inner_outer) keeps for them",
                                    columns.name, extent, params.batch * params.vector,
                                    params.columnReductions, kPartialRegisters)
                          .str();
    return params;
  }
  // Rows on threadIdx.y fill the block to 512 threads (at least 2: the columns are then
  // added across threadIdx.y), then the blocks: one an SM, fewer for few static rows.
  params.rowsPerBlock = std::clamp<int64_t>(kBlockThreads / params.threads, 2, 8);
  if (params.rowsPerBlock * params.threads > 1024)
    params.rowsPerBlock = 1024 / params.threads;
  params.blocks = target.smCount;
  if (rows.staticExtent)
    params.blocks =
        std::clamp<int64_t>(ceilDiv(*rows.staticExtent, params.rowsPerBlock), 1, target.smCount);
  params.reasons.push_back(llvm::formatv(
      "auto(inner_outer): {0} in vectors of {1}, {2} threads x {3} vector{8} a thread (unrolled: "
      "the {4} partial column{5} a thread of the {6} column reduction{7} stay in registers)",
      columns.name, params.vector, params.threads, params.batch,
      params.columnReductions * params.batch * params.vector,
      params.columnReductions * params.batch * params.vector == 1 ? "" : "s",
      params.columnReductions, params.columnReductions == 1 ? "" : "s",
      params.batch == 1 ? "" : "s"));
  params.reasons.push_back(llvm::formatv(
      "{0} rows of {1} a block on threadIdx.y, {2} blocks{3}, each walking its rows serially; "
      "the row reductions over threadIdx.x, the column sums over threadIdx.y, then across the "
      "blocks by a second kernel.",
      params.rowsPerBlock, rows.name, params.blocks,
      rows.staticExtent ? "" : " (one an SM: " + rows.name + " is a runtime size)"));
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
  block.split(t, params.rowsPerBlock, t + "o", t + "y", at);
  block.split(t + "o", params.blocks, t + "b", t + "s", at, /*factorIsOuter=*/true);
  block.parallelize({{t + "b", sched::Parallel::BIDx},
                     {t + "y", sched::Parallel::TIDy},
                     {h + "x", sched::Parallel::TIDx}},
                    at);
  if (params.vector > 1)
    block.vectorize(h + "v", at);
  if (params.batch > 1)
    block.unroll(h + "p", at);
  return {context.finish(std::move(block), context.knobs->when)};
}

} // namespace fsl::heuristics
