// BuildLoopNests.cpp — the first pass: the plan as statements.
//
// Parameters; the parallel loops (block and thread indices); then, per phase, the
// accumulators, one serial loop nest whose innermost body computes every value of the
// element in order (loads straight from global memory, persistent values saved and
// reloaded, accumulations, stores), and the block reductions that end the phase. No
// bounds checks, vector accesses or hoisted loads yet: later passes add them.
#include "kir/Mutator.h"
#include "kir/Simplify.h"
#include "lower/Passes.h"
#include "lower/Pointwise.h"

#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/Support/MathExtras.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

kir::Axis axisOf(sched::Parallel parallel) {
  switch (parallel) {
  case sched::Parallel::BIDx:
    return kir::Axis::BIDx;
  case sched::Parallel::BIDy:
    return kir::Axis::BIDy;
  case sched::Parallel::BIDz:
    return kir::Axis::BIDz;
  case sched::Parallel::TIDx:
    return kir::Axis::TIDx;
  case sched::Parallel::TIDy:
    return kir::Axis::TIDy;
  case sched::Parallel::TIDz:
    return kir::Axis::TIDz;
  case sched::Parallel::Serial:
    break;
  }
  FSL_UNREACHABLE("a serial loop has no axis");
}

kir::ReduceKind reduceKind(ir::Op op) {
  return op == ir::Op::ReduceMax      ? kir::ReduceKind::Max
         : op == ir::Op::ReduceMin    ? kir::ReduceKind::Min
         : op == ir::Op::ReduceArgMax ? kir::ReduceKind::ArgMax
         : op == ir::Op::ReduceArgMin ? kir::ReduceKind::ArgMin
                                      : kir::ReduceKind::Sum;
}

class Builder {
public:
  explicit Builder(LowerContext &cx) : cx_(cx), plan_(cx.plan), f_(cx.fusion) {}

  /// The kernel's first statement: wait for the previous kernel's writes (programmatic
  /// dependent launch), and let the next kernel start launching from the grid's last
  /// `smCount` blocks at their start, the others as they exit. The next kernel launches
  /// once every block has done one or the other: a grid of at most one block an SM lets
  /// it launch at once; a grid resident in one wave of several blocks an SM only as its
  /// first blocks finish, so the next kernel's blocks do not take the slots of this
  /// grid's (run L1, docs/performance.md: 1024 one-row blocks of rms_norm_add at H = 2048
  /// ran 16 % faster so); a grid of several waves once its last wave starts, as before.
  /// The test is a predicate on the trigger, not a branch: a branch would cut the kernel
  /// into blocks that ptxas schedules apart (run D: up to 4.5 % at T = 128).
  Stmt gridDependencyStart(const std::vector<std::pair<kir::Axis, Expr>> &blockAxes) const {
    Expr blocks = kir::index(1), linear = kir::index(0), stride = kir::index(1);
    for (const auto &[axis, extent] : blockAxes) {
      kir::Builtin index = axis == kir::Axis::BIDx   ? kir::Builtin::BlockIdxX
                           : axis == kir::Axis::BIDy ? kir::Builtin::BlockIdxY
                                                     : kir::Builtin::BlockIdxZ;
      linear = linear + kir::var(kir::makeVar("block_index", ir::DType::I64, index)) * stride;
      stride = stride * extent;
      blocks = blocks * extent;
    }
    Expr lastWave = blocks < linear + kir::index(cx_.options.smCount + 1);
    if (std::optional<int64_t> fits =
            kir::evaluateStatic(blocks < kir::index(cx_.options.smCount + 1));
        fits && *fits)
      return kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents, nullptr);
    return kir::block({kir::gridDependency(kir::GridDependencyOp::Wait, nullptr),
                       kir::gridDependency(kir::GridDependencyOp::LaunchDependents, lastWave)});
  }

  bool run() {
    cx_.addParameters();
    addGridPartialParameters();
    for (const PlannedLoop &loop : plan_.loops)
      cx_.loopVars.push_back(kir::makeVar(loop.name + "_i", ir::DType::I64));
    if (!makeRootIndices())
      return false;
    std::vector<Stmt> inner;
    makeBuffers(inner);
    if (plan_.innerOuter()) {
      makeColumnRows(inner);
      if (plan_.schedule->gridSync && !makeGridSyncColumns(inner))
        return false;
    } else {
      // A grid reduction's kernel ends with the blocks' partial results (phase 0); the
      // second kernel (runGridRows) does the rest. With `grid_sync` the blocks meet at a
      // grid barrier after each phase's partial results and go on (gridSyncRowResults).
      bool secondKernel = plan_.gridLoop >= 0 && !plan_.schedule->gridSync;
      if (plan_.gridLoop >= 0 && plan_.schedule->gridSync)
        cx_.kernel.launch.cooperative = true; // (launch-shape checks residency)
      size_t phases = secondKernel ? 1 : plan_.phases.size();
      for (size_t p = 0; p < phases; ++p)
        makePhase(static_cast<int>(p), inner);
    }
    Stmt body = kir::block(std::move(inner));
    std::vector<std::pair<kir::Axis, Expr>> blockAxes;
    for (int i = static_cast<int>(plan_.loops.size()) - 1; i >= 0; --i) {
      const PlannedLoop &loop = plan_.loops[i];
      if (loop.parallel == sched::Parallel::Serial)
        continue;
      Expr extent = cx_.extentOf(loop.extent);
      if (kir::isBlockAxis(axisOf(loop.parallel)))
        blockAxes.push_back({axisOf(loop.parallel), extent});
      body = kir::parallelLoop(cx_.loopVars[i], extent, axisOf(loop.parallel), body, loop.origin);
    }
    std::sort(blockAxes.begin(), blockAxes.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    cx_.kernel.body = kir::block({cx_.kernel.launch.cooperative
                                      ? kir::gridDependency(kir::GridDependencyOp::Wait, nullptr)
                                      : gridDependencyStart(blockAxes),
                                  body});
    return true;
  }

  /// The second kernel of a grid reduction: one thread a row combines the partial
  /// accumulators that the first kernel's blocks stored (in the grid loop's order, so a
  /// sum adds them the same way at every run), then computes and stores the row outputs.
  ///
  ///   for block parallel BIDx [ceil(rows / 128)], thread parallel TIDx [128]
  ///     row = block * 128 + thread; if row < rows:
  ///       the row's indices; acc = partials[row][0] (+) ... (+) partials[row][G - 1]
  ///       the values after the reductions; the row outputs' stores
  bool runGridRows() {
    if (plan_.innerOuter())
      return runColumnRows();
    cx_.addParameters();
    addGridPartialParameters();
    constexpr int64_t kThreads = 128;
    auto var = [](const char *name) { return kir::makeVar(name, ir::DType::I64); };
    kir::VarPtr block = var("block"), thread = var("thread"), row = var("row");
    Expr rows = kir::index(1);
    for (ir::DimId dim : plan_.gridRowDims)
      rows = rows * cx_.dimExtent(dim);
    std::vector<Stmt> body = gridRowIndices(row);
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    Expr pieces = cx_.extentOf(grid.extent);
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      // Row grid reductions: [row][piece]; column reductions: [piece][column], so that
      // both kernels' neighbouring threads touch neighbouring columns.
      auto at = [&](Expr p) {
        return plan_.innerOuter() ? p * rows + kir::var(row) : kir::var(row) * pieces + p;
      };
      combinePartials(partials, at, pieces, "", body);
    }
    // The row outputs: phase 1's values from the results (the column outputs: the values
    // computed from the column reductions alone).
    std::vector<const ir::Output *> outputs =
        plan_.innerOuter() ? plan_.columnOutputs : plan_.phases[1].stores;
    int after = plan_.innerOuter() ? static_cast<int>(plan_.phases.size()) : 1;
    std::vector<const ir::Value *> order = plan_.phases[1].values;
    if (plan_.innerOuter()) {
      order.clear();
      for (const auto &value : f_.values)
        order.push_back(value.get());
    }
    std::vector<const ir::Value *> roots;
    for (const ir::Output *output : outputs)
      roots.push_back(output->value);
    std::map<unsigned, Expr> values;
    computeValues(after, order, closure(roots, after, {}), {}, values, body);
    for (const ir::Output *output : outputs) {
      auto found = values.find(output->value->id);
      body.push_back(storeOutput(*output, found != values.end()
                                              ? found->second
                                              : kir::var(results_.at(output->value->id))));
    }
    Stmt nest = kir::block({
        kir::let(row, kir::var(block) * kir::index(kThreads) + kir::var(thread)),
        kir::ifThen(kir::var(row) < rows, kir::block(std::move(body)), nullptr,
                    "the threads past the last row do nothing"),
    });
    nest = kir::parallelLoop(thread, kir::index(kThreads), kir::Axis::TIDx, nest);
    Expr blocks = (rows + kir::index(kThreads - 1)) / kir::index(kThreads);
    kir::Origin origin{"the rows of the grid reduction over " + grid.name + ", " +
                           std::to_string(kThreads) + " a block",
                       grid.origin.range};
    nest = kir::parallelLoop(block, blocks, kir::Axis::BIDx, nest, origin);
    cx_.kernel.body = kir::block({gridDependencyStart({{kir::Axis::BIDx, blocks}}), nest});
    kir::LaunchShape &launch = cx_.kernel.launch;
    launch.grid = {blocks, kir::index(1), kir::index(1)};
    launch.block = {kir::index(kThreads), kir::index(1), kir::index(1)};
    launch.maxThreads = kThreads;
    return true;
  }

  /// A grid reduction's row result from the blocks' partial accumulators at `at(piece)`,
  /// combined in piece order (a sum adds them the same way at every run), declared in
  /// `body` with `suffix` after the blocks' accumulator names: the reduction's result (or
  /// the pair's two) for the values after it.
  void combinePartials(const Plan::GridPartials &partials, const std::function<Expr(Expr)> &at,
                       Expr pieces, const std::string &suffix, std::vector<Stmt> &body) {
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    auto var = [](const char *name) { return kir::makeVar(name, ir::DType::I64); };
    if (partials.pair) { // a one-pass pair: its tuple of accumulators
      const ir::OnePassPair &pair = *partials.pair;
      bool softmax = pair.kind == ir::OnePassKind::MaxExpSum;
      std::vector<ir::OnePassAccumulator> members = ir::onePassAccumulators(pair);
      std::vector<kir::VarPtr> acc;
      for (size_t i = 0; i < members.size(); ++i) {
        // Named as the blocks' accumulators (declareOnePass).
        acc.push_back(kir::makeVar(valueName(*members[i].owner) + members[i].suffix + suffix,
                                   pair.accumulator));
        std::string comment;
        if (i == 0)
          comment = std::string(softmax ? "online softmax" : "Welford") + " of " +
                    (pair.operand->name.empty() ? valueName(*pair.operand) : pair.operand->name) +
                    ": the " + grid.name + " blocks' partial results, combined in order";
        body.push_back(fromFusion(
            kir::declare(acc.back(), kir::load(partials.tuple[i], at(kir::index(0))), comment),
            i == 0 ? pair.first->range : pair.second->range));
      }
      kir::VarPtr piece = var("piece");
      std::vector<Expr> next;
      for (const kir::BufferPtr &buffer : partials.tuple)
        next.push_back(kir::load(buffer, at(kir::var(piece) + kir::index(1))));
      body.push_back(fromFusion(kir::forLoop(piece, pieces - kir::index(1), kir::LoopKind::Serial,
                                             combineOnePassPiece(pair, acc, next)),
                                pair.second->range));
      onePassResults(pair, acc, body);
      return;
    }
    const ir::Value &reduction = *partials.reduction;
    bool isArg = ir::isArgReduction(reduction.op);
    kir::VarPtr piece = var("piece");
    kir::VarPtr acc = kir::makeVar(valueName(reduction) + "_acc" + suffix, partials.values->dtype);
    body.push_back(fromFusion(
        kir::declare(acc, kir::load(partials.values, at(kir::index(0))),
                     ir::opName(reduction.op).str() + " of " +
                         (reduction.name.empty() ? valueName(reduction) : reduction.name) +
                         ": the partial results of the " + grid.name + " blocks, in order"),
        reduction.range));
    kir::VarPtr index;
    std::vector<Stmt> combine;
    Expr next = kir::var(piece) + kir::index(1); // from piece 1
    Expr x = kir::load(partials.values, at(next));
    if (isArg) {
      index = kir::makeVar(valueName(reduction) + "_at" + suffix, ir::DType::I64);
      body.push_back(
          kir::declare(index, kir::load(partials.indices, at(kir::index(0))), "and its index"));
      kir::VarPtr i = kir::makeVar(valueName(reduction) + "_piece_at", ir::DType::I64);
      kir::VarPtr take = kir::makeVar(valueName(reduction) + "_wins", ir::DType::Bool);
      kir::VarPtr v = kir::makeVar(valueName(reduction) + "_piece", acc->dtype);
      combine.push_back(kir::let(v, x));
      combine.push_back(kir::let(i, kir::load(partials.indices, at(next))));
      combine.push_back(kir::let(take, argWins(reduction, kir::var(v), kir::var(i), kir::var(acc),
                                               kir::var(index), false)));
      combine.push_back(kir::assign(acc, kir::select(kir::var(take), kir::var(v), kir::var(acc))));
      combine.push_back(
          kir::assign(index, kir::select(kir::var(take), kir::var(i), kir::var(index))));
    } else {
      combine.push_back(kir::assign(acc, kir::binary(combineOf(reduction.op), kir::var(acc), x)));
    }
    body.push_back(fromFusion(kir::forLoop(piece, pieces - kir::index(1), kir::LoopKind::Serial,
                                           kir::block(std::move(combine))),
                              reduction.range));
    body.push_back(finishReduction(reduction, acc, index));
  }

  /// The inner-outer form's second kernel: the first kernel's blocks each stored a partial
  /// row of every column reduction ([block][column]), one block a few blocks an SM, so
  /// there are hundreds of them. A block takes 32 neighbouring columns on L lanes of
  /// threads: lane l adds the pieces l, l + L, l + 2L, ... (loads of 32 neighbouring
  /// columns, 8 in flight a thread), then the L lanes' sums are added in lane order
  /// through shared memory (a fixed order: the same result at every run), and lane 0
  /// computes and stores the column outputs. L is 8 below 256 pieces and 32 from 256
  /// (kernelLanes): the columns give only about a block an SM (4096 columns: 128 blocks),
  /// so the loads in flight come from the lanes; 8 lanes read the 8.6 MB of 264 pieces of
  /// 4096 x 2 columns at 1 TB/s (profile B3), 32 put four times the bytes in flight.
  ///
  ///   for block parallel BIDx [ceil(columns / 32)], thread parallel TIDx [32 L]
  ///     row = block * 32 + thread % 32; lane = thread / 32
  ///     acc = identity; if row < columns: acc (+)= partials[lane + L p][row], p = 0, 1, ...
  ///     scratch[thread] = acc; barrier
  ///     if lane == 0 and row < columns: total = scratch[row] (+) ... (+) scratch[(L - 1) 32 + row]
  ///       and the column outputs
  bool runColumnRows() {
    cx_.addParameters();
    addGridPartialParameters();
    constexpr int64_t kColumns = 32;
    auto var = [](const char *name) { return kir::makeVar(name, ir::DType::I64); };
    kir::VarPtr block = var("block"), thread = var("thread"), row = var("row"), lane = var("lane"),
                column = var("column");
    Expr rows = kir::index(1);
    for (ir::DimId dim : plan_.gridRowDims)
      rows = rows * cx_.dimExtent(dim);
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    Expr pieces = cx_.extentOf(grid.extent);
    int64_t laneBytes = 0; // a thread's lane sums, one a column reduction
    for (const Plan::GridPartials &partials : plan_.gridPartials)
      laneBytes += ir::dtypeBytes(partials.values->dtype);
    const int64_t kLanes = kernelLanes(pieces, laneBytes), kThreads = kColumns * kLanes;
    std::vector<Stmt> body;
    body.push_back(
        kir::let(column, kir::var(thread) % kir::index(kColumns), "of the block's 32 columns"));
    body.push_back(
        kir::let(lane, kir::var(thread) / kir::index(kColumns),
                 "which of every " + std::to_string(kLanes) + " pieces this thread adds"));
    body.push_back(kir::let(row, kir::var(block) * kir::index(kColumns) + kir::var(column)));
    std::vector<Stmt> last = gridRowIndices(row);
    Expr sharedOffset = kir::index(0);
    int64_t sharedBytes = 0;
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      const ir::Value &reduction = *partials.reduction;
      LaneSums sums = laneSums(partials, valueName(reduction),
                               reduction.name.empty() ? valueName(reduction) : reduction.name, row,
                               lane, kir::var(thread), kir::var(column), kLanes, kColumns, pieces,
                               rows, sharedOffset);
      body.push_back(sums.declare);
      body.push_back(sums.add);
      body.push_back(sums.allocate);
      body.push_back(sums.store);
      sharedOffset = sharedOffset + kir::index(kThreads * ir::dtypeBytes(partials.values->dtype));
      sharedBytes += kThreads * ir::dtypeBytes(partials.values->dtype);
      for (Stmt &s : sums.total)
        last.push_back(std::move(s));
    }
    body.push_back(kir::withComment(kir::barrier(), "every lane's sums are written"));
    storeColumnOutputs(last);
    body.push_back(kir::ifThen(
        kir::binary(kir::BinaryOp::Eq, kir::var(lane), kir::index(0)) && kir::var(row) < rows,
        kir::block(std::move(last)), nullptr, "lane 0 of each column in bounds"));
    Stmt nest = kir::parallelLoop(thread, kir::index(kThreads), kir::Axis::TIDx,
                                  kir::block(std::move(body)));
    Expr blocks = (rows + kir::index(kColumns - 1)) / kir::index(kColumns);
    kir::Origin origin{"the columns of the grid reduction over " + grid.name + ", 32 a block on " +
                           std::to_string(kLanes) + " lanes of threads",
                       grid.origin.range};
    nest = kir::parallelLoop(block, blocks, kir::Axis::BIDx, nest, origin);
    cx_.kernel.body = kir::block({gridDependencyStart({{kir::Axis::BIDx, blocks}}), nest});
    kir::LaunchShape &launch = cx_.kernel.launch;
    launch.grid = {blocks, kir::index(1), kir::index(1)};
    launch.block = {kir::index(kThreads), kir::index(1), kir::index(1)};
    launch.maxThreads = kThreads;
    launch.sharedBytes = kir::index(sharedBytes);
    return true;
  }

private:
  /// `grid_sync`: the inner-outer form's column sums finished in the first kernel. Every
  /// block has stored its partial row of each column reduction (makeColumnTotals); after a
  /// grid barrier (a cooperative launch keeps all blocks resident) the grid's threads add
  /// them as the second kernel would (runColumnRows), the block's threads split into L
  /// lanes of C = threads / L neighbouring columns: lane l adds the pieces l, l + L, ...
  /// of its column, the lanes' sums meet in shared memory in lane order (the same result
  /// at every run), and lane 0 computes and stores the column outputs. L (a power of two,
  /// at most 32 and the pieces) is the largest that still gives every column a lane of
  /// the grid's threads; groups of C columns beyond the grid's blocks take further rounds.
  ///
  ///   grid barrier; then the next kernel may launch (programmatic dependent launch)
  ///   for round: group = block + round * blocks (while group < groups)
  ///     column = group * C + thread % C; lane = thread / C
  ///     acc = identity; if column < columns: acc (+)= partials[lane + L p][column]
  ///     barrier; scratch[thread] = acc; barrier
  ///     if lane == 0 and column < columns: total = scratch[thread] (+) ... ; outputs
  bool makeGridSyncColumns(std::vector<Stmt> &out) {
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    const int64_t blocks = *grid.extent.value, threads = *plan_.staticThreads();
    // (launch-shape checks that every block can be resident at once.)
    kir::LaunchShape &launch = cx_.kernel.launch;
    launch.cooperative = true;
    Expr columns = kir::index(1);
    for (ir::DimId dim : plan_.gridRowDims)
      columns = columns * cx_.dimExtent(dim);
    std::optional<int64_t> staticColumns = kir::evaluateStatic(columns);
    int64_t lanes = 1;
    while (lanes * 2 <= 32 && lanes * 2 <= blocks && threads % (lanes * 2) == 0 &&
           (!staticColumns || lanes * 2 * *staticColumns <= blocks * threads))
      lanes *= 2;
    const int64_t group = threads / lanes; // columns a block takes a round
    auto var = [](const char *name) { return kir::makeVar(name, ir::DType::I64); };
    kir::VarPtr round = var("round"), first = var("group"), column = var("column"),
                lane = var("lane"), thread = var("thread");
    Expr block = kir::var(cx_.loopVars[plan_.gridLoop]);
    out.push_back(kir::withComment(kir::gridBarrier(),
                                   "grid_sync: every block's partial columns are stored"));
    out.push_back(
        kir::withComment(kir::gridDependency(kir::GridDependencyOp::LaunchDependents, nullptr),
                         "every block is resident: the next kernel may start launching"));
    std::vector<Stmt> body;
    body.push_back(kir::let(first, block + kir::var(round) * kir::index(blocks)));
    body.push_back(kir::let(thread, threadId(), "the thread's index in its block"));
    body.push_back(
        kir::let(column, kir::var(first) * kir::index(group) + kir::var(thread) % kir::index(group),
                 "of the group's " + std::to_string(group) + " columns"));
    body.push_back(
        kir::let(lane, kir::var(thread) / kir::index(group),
                 "which of every " + std::to_string(lanes) + " pieces this thread adds"));
    std::vector<kir::Expr> savedRoots = cx_.rootIndex;
    std::vector<Stmt> last = gridRowIndices(column);
    std::vector<Stmt> shares;
    // After the per-thread scratch and persistent buffers, before the cached inputs: the
    // simulator refuses two buffers on the same bytes, even where one is dead.
    Expr base = alignTo16(kir::index(threads * plan_.sharedBytesPerThread()));
    int64_t laneBytes = 0; // each reduction's lane sums, 16-byte aligned
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      std::string who = columnName(*partials.reduction);
      LaneSums sums =
          laneSums(partials, who, who, column, lane, kir::var(thread), kir::var(thread), lanes,
                   group, kir::index(blocks), columns, base + kir::index(laneBytes));
      body.push_back(sums.declare);
      body.push_back(sums.add);
      shares.push_back(sums.allocate);
      shares.push_back(sums.store);
      laneBytes += (threads * ir::dtypeBytes(partials.values->dtype) + 15) / 16 * 16;
      for (Stmt &s : sums.total)
        last.push_back(std::move(s));
    }
    body.push_back(kir::withComment(kir::barrier(), "the block's scratch is free"));
    for (Stmt &s : shares)
      body.push_back(std::move(s));
    body.push_back(kir::withComment(kir::barrier(), "every lane's sums are written"));
    storeColumnOutputs(last);
    cx_.rootIndex = savedRoots;
    body.push_back(kir::ifThen(
        kir::binary(kir::BinaryOp::Eq, kir::var(lane), kir::index(0)) && kir::var(column) < columns,
        kir::block(std::move(last)), nullptr, "lane 0 of each column in bounds"));
    Expr groups = (columns + kir::index(group - 1)) / kir::index(group);
    Expr rounds = (groups - block + kir::index(blocks - 1)) / kir::index(blocks);
    out.push_back(kir::withComment(
        kir::forLoop(round, rounds, kir::LoopKind::Serial, kir::block(std::move(body)),
                     {"the column reductions over " + grid.name +
                          " finished after the grid barrier: " + std::to_string(group) +
                          " columns a block and round on " + std::to_string(lanes) + " lanes",
                      plan_.schedule->gridSync->range}),
        "grid_sync: the partial columns added"));
    cx_.gridSyncSharedBytes = laneBytes;
    return true;
  }

  /// One column reduction's lane sums, as the inner-outer form's second kernel and
  /// grid_sync's rounds add the blocks' partial rows: `lanes` lanes of `stride` columns,
  /// lane l adding the pieces l, l + lanes, ... of `column` (8 loads in flight), its sum
  /// stored at `thread` in shared memory at `offset`, and lane 0 adding the lanes in order
  /// (`own`: its own slot) and finishing the reduction. `name` names the registers and the
  /// buffer, `who` the reduction in comments.
  struct LaneSums {
    Stmt declare, add, allocate, store;
    std::vector<Stmt> total;
  };
  static constexpr int64_t kLoadsInFlight = 8; // a lane's partial-row loads
  LaneSums laneSums(const Plan::GridPartials &partials, const std::string &name,
                    const std::string &who, const kir::VarPtr &column, const kir::VarPtr &lane,
                    Expr thread, Expr own, int64_t lanes, int64_t stride, Expr pieces, Expr columns,
                    Expr offset) {
    const ir::Value &reduction = *partials.reduction;
    FSL_INTERNAL_ASSERT(!ir::isArgReduction(reduction.op),
                        "an arg reduction over the rows reached the inner-outer form");
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    ir::DType type = partials.values->dtype;
    kir::BinaryOp op = combineOf(reduction.op);
    kir::VarPtr acc = kir::makeVar(name + "_acc", type),
                piece = kir::makeVar("piece", ir::DType::I64);
    LaneSums sums;
    sums.declare =
        fromFusion(kir::declare(acc, kir::constant(initialValue(reduction.op, type), type),
                                ir::opName(reduction.op).str() + " of " + who +
                                    ": this lane's pieces of the " + grid.name + " blocks"),
                   reduction.range);
    Expr at = (kir::var(lane) + kir::var(piece) * kir::index(lanes)) * columns + kir::var(column);
    Stmt add = kir::forLoop(
        piece, (pieces - kir::var(lane) + kir::index(lanes - 1)) / kir::index(lanes),
        kir::LoopKind::Unrolled,
        kir::block(
            {kir::assign(acc, kir::binary(op, kir::var(acc), kir::load(partials.values, at)))}),
        {}, kLoadsInFlight);
    sums.add = fromFusion(
        kir::ifThen(kir::var(column) < columns, add, nullptr, "columns past the last add nothing"),
        reduction.range);
    auto scratch = std::make_shared<kir::Buffer>();
    scratch->name = name + "_lanes";
    scratch->dtype = type;
    scratch->space = kir::MemorySpace::Shared;
    sums.allocate = kir::withComment(kir::allocateStmt(scratch, offset, kir::index(lanes * stride)),
                                     "the lanes' sums of " + who);
    sums.store = kir::store(scratch, thread, kir::var(acc));
    kir::VarPtr total = kir::makeVar(name + "_total", type),
                other = kir::makeVar("other", ir::DType::I64);
    sums.total.push_back(fromFusion(
        kir::declare(total, kir::load(scratch, own), "the lanes added in order"), reduction.range));
    if (lanes > 1)
      sums.total.push_back(kir::forLoop(
          other, kir::index(lanes - 1), kir::LoopKind::Unrolled,
          kir::block(
              {kir::assign(total, kir::binary(op, kir::var(total),
                                              kir::load(scratch, (kir::var(other) + kir::index(1)) *
                                                                         kir::index(stride) +
                                                                     own)))})));
    sums.total.push_back(finishReduction(reduction, total, nullptr));
    return sums;
  }

  /// The column outputs' values (computed from the column reductions alone), their
  /// statements appended to `out`: the last step of adding the blocks' partial columns.
  std::vector<std::pair<const ir::Output *, Expr>> columnOutputValues(std::vector<Stmt> &out) {
    std::vector<const ir::Value *> order, roots;
    for (const auto &value : f_.values)
      order.push_back(value.get());
    for (const ir::Output *output : plan_.columnOutputs)
      roots.push_back(output->value);
    int after = static_cast<int>(plan_.phases.size());
    std::map<unsigned, Expr> values;
    computeValues(after, order, closure(roots, after, {}), {}, values, out);
    std::vector<std::pair<const ir::Output *, Expr>> result;
    for (const ir::Output *output : plan_.columnOutputs) {
      auto found = values.find(output->value->id);
      result.push_back({output, found != values.end() ? found->second
                                                      : kir::var(results_.at(output->value->id))});
    }
    return result;
  }

  /// The column outputs stored at the root indices (runColumnRows, makeGridSyncColumns).
  void storeColumnOutputs(std::vector<Stmt> &out) {
    for (const auto &[output, value] : columnOutputValues(out))
      out.push_back(storeOutput(*output, value));
  }

  /// The lanes of the inner-outer form's second kernel for `pieces` partial rows, whose
  /// threads each keep `laneBytes` of lane sums in shared memory: 32 from 256 pieces, 8
  /// below, where the count is known only at run time (unmeasured: the form of before) and
  /// where 32 lanes' sums would pass the 48 KB every target gives a block without opting
  /// in (more than 12 f32 column reductions; 8 lanes need a quarter). Measured on an H100
  /// (run T2, the three backward norms): 32 lanes 1.01-1.13x faster than 8 at 264 and 528
  /// pieces, 0.89-0.98x at 128 and 132 (a second kernel of a few µs, where 1024-thread
  /// blocks and lane 0's 31 additions cost more than the loads in flight gain).
  static int64_t kernelLanes(const Expr &pieces, int64_t laneBytes) {
    constexpr int64_t kDefaultSharedBytes = 48 * 1024;
    std::optional<int64_t> count = kir::evaluateStatic(pieces);
    bool many = count && *count >= 256;
    return many && 32 * 32 * laneBytes <= kDefaultSharedBytes ? 32 : 8;
  }

  /// The lets of a grid reduction's row (a column in the inner-outer form) along each
  /// dimension it keeps (row-major) from its flat index `row`; they become the root
  /// indices, the other dimensions' 0.
  std::vector<Stmt> gridRowIndices(const kir::VarPtr &row) {
    cx_.rootIndex.assign(f_.dims.size(), kir::index(0));
    std::vector<Stmt> lets;
    Expr rest = kir::var(row);
    for (size_t k = plan_.gridRowDims.size(); k-- > 0;) {
      ir::DimId dim = plan_.gridRowDims[k];
      kir::VarPtr index = kir::makeVar(f_.dims[dim].name + "_i", ir::DType::I64);
      Expr value = k == 0 ? rest : rest % cx_.dimExtent(dim);
      lets.push_back(kir::let(index, value));
      cx_.rootIndex[dim] = kir::var(index);
      rest = rest / cx_.dimExtent(dim);
    }
    std::reverse(lets.begin(), lets.end());
    return lets;
  }

  /// The grid reduction's workspaces, parameters of both kernels.
  void addGridPartialParameters() {
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      std::vector<kir::BufferPtr> buffers = partials.tuple;
      buffers.push_back(partials.values);
      buffers.push_back(partials.indices);
      for (const kir::BufferPtr &buffer : buffers)
        if (buffer) {
          kir::KernelParam kp;
          kp.kind = kir::KernelParam::Kind::Tensor;
          kp.buffer = buffer;
          cx_.kernel.params.push_back(kp);
        }
    }
  }

  /// Each dimension's index from the loop variables: the transforms walked backwards.
  bool makeRootIndices() {
    std::map<std::string, Expr> index;
    for (size_t i = 0; i < plan_.loops.size(); ++i)
      index[plan_.loops[i].name] = kir::var(cx_.loopVars[i]);
    for (auto t = plan_.transforms.rbegin(); t != plan_.transforms.rend(); ++t) {
      Expr inner = cx_.extentOf(t->innerExtent);
      if (t->kind == sched::LoopTransform::Kind::Split) {
        if (index.count(t->outer) && index.count(t->inner))
          index[t->input] = index[t->outer] * inner + index[t->inner];
      } else if (index.count(t->result)) {
        index[t->input] = index[t->result] / inner;
        index[t->secondInput] = index[t->result] % inner;
      }
    }
    // The dimensions some computed value walks; the others are read only along a select,
    // gather or window (Plan.cpp gives them no loop), whose own index is the position.
    std::set<ir::DimId> walked;
    for (const sched::TensorSchedule &tensor : plan_.schedule->tensors)
      if (!tensor.isInput)
        for (const sched::Loop &loop : tensor.loops)
          walked.insert(loop.roots.begin(), loop.roots.end());
    for (ir::DimId d = 0; d < f_.dims.size(); ++d) {
      auto found = index.find(f_.dims[d].name);
      if (found == index.end() && !walked.count(d)) {
        cx_.rootIndex.push_back(kir::index(0)); // no element is at a position along it
        continue;
      }
      if (found == index.end()) {
        cx_.diagnostics.report(DiagId::LoweringUnsupported, plan_.schedule->header.fusionRange,
                               "no loop of the kernel walks dimension " + f_.dims[d].name);
        return false;
      }
      cx_.rootIndex.push_back(found->second);
    }
    return true;
  }

  Expr threads() const { return blockThreads(); }
  Expr threadId() const { return linearThreadId(); }

  /// Scratch for block reductions (the first 8 bytes a thread of the dynamic shared
  /// memory), then persistent buffers: in shared memory interleaved by thread, so
  /// neighbouring threads use neighbouring banks; in registers, an array a thread.
  void makeBuffers(std::vector<Stmt> &out) {
    std::set<ir::DType> scratchTypes;
    bool pairs = false, tuples = false;
    std::set<unsigned> paired;
    for (const PlannedPhase &phase : plan_.phases)
      for (const ir::OnePassPair &pair : phase.combined) {
        paired.insert({pair.first->id, pair.second->id});
        tuples |= plan_.blockReduced.count(pair.first->id) != 0;
      }
    for (unsigned id : plan_.blockReduced) {
      if (ir::isArgReduction(f_.values[id]->op))
        pairs = true;
      else if (!paired.count(id))
        scratchTypes.insert(accumulatorType(f_.values[id]->dtype));
    }
    int64_t scratchBytes = ir::reductionScratchBytesPerThread(f_, plan_.onePass());
    if (pairs || tuples) {
      // (value, index) pairs, 16 bytes each (device.cuh's FslArgPair), and one-pass
      // tuples (FslMaxExpSum, FslWelford): the device helpers cast.
      auto scratch = std::make_shared<kir::Buffer>();
      scratch->name = pairs ? "fsl_scratch_pairs" : "fsl_scratch_tuples";
      scratch->dtype = ir::DType::I64;
      scratch->space = kir::MemorySpace::Shared;
      out.push_back(kir::withComment(
          kir::allocateStmt(scratch, kir::index(0), threads() * kir::index(scratchBytes / 8)),
          pairs ? "block reduction scratch: a (value, index) pair a thread"
                : "block reduction scratch: " + std::to_string(scratchBytes) +
                      " bytes a thread (one-pass tuples)"));
      pairScratch_ = scratch;
      // The other block reductions use the same bytes (one buffer: shared buffers do not
      // overlap); the printer casts it to their type.
      for (ir::DType type : scratchTypes)
        scratch_[type] = scratch;
      scratchTypes.clear();
    }
    if (!scratchTypes.empty()) {
      // One buffer: reductions of several accumulator types (f32 and f64, i32 and i64)
      // reuse the same bytes, cast by the printer, as shared buffers may not overlap.
      bool oneType = scratchTypes.size() == 1;
      ir::DType type = oneType ? *scratchTypes.begin() : ir::DType::I64;
      auto scratch = std::make_shared<kir::Buffer>();
      scratch->name = oneType ? "fsl_scratch_" + ir::dtypeName(type).str() : "fsl_scratch";
      scratch->dtype = type;
      scratch->space = kir::MemorySpace::Shared;
      out.push_back(kir::withComment(
          kir::allocateStmt(scratch, kir::index(0),
                            threads() * kir::index(scratchBytes / ir::dtypeBytes(type))),
          "block reduction scratch: " + std::to_string(scratchBytes) + " bytes a thread"));
      for (ir::DType reduced : scratchTypes)
        scratch_[reduced] = scratch;
    }
    Expr sharedOffset = threads() * kir::index(scratchBytes);
    for (unsigned id : plan_.persistent) {
      const ir::Value &value = *f_.values[id];
      auto buffer = std::make_shared<kir::Buffer>();
      buffer->name = valueName(value) + "_buffer";
      buffer->dtype = registerType(value.dtype);
      std::string who = value.name.empty() ? valueName(value) : value.name;
      if (plan_.persistentShared.count(id)) {
        buffer->space = kir::MemorySpace::Shared;
        out.push_back(kir::withComment(
            kir::allocateStmt(buffer, sharedOffset, threads() * kir::index(plan_.bufferElements)),
            "persistent " + who + " in shared memory: " + std::to_string(plan_.bufferElements) +
                " per thread"));
        sharedOffset = sharedOffset +
                       threads() * kir::index(plan_.bufferElements * ir::dtypeBytes(buffer->dtype));
      } else {
        buffer->space = kir::MemorySpace::Local;
        buffer->shape = {plan_.bufferElements};
        out.push_back(kir::allocate(buffer, "persistent " + who + " in registers"));
      }
      persistentBuffers_[id] = buffer;
    }
  }

  static ir::DType accumulatorType(ir::DType type) { return registerType(type); }

  /// The persistent buffer's element for the current serial iteration (row-major).
  Expr bufferIndex(unsigned id) const {
    Expr linear;
    for (int loop : plan_.serialLoops()) {
      Expr v = kir::var(cx_.loopVars[loop]);
      linear = linear ? linear * cx_.extentOf(plan_.loops[loop].extent) + v : v;
    }
    if (!linear)
      linear = kir::index(0);
    if (plan_.persistentShared.count(id))
      return linear * threads() + threadId();
    return linear;
  }

  /// The serial loops of the plan around `body`, innermost first.
  Stmt serialNest(Stmt body) const {
    std::vector<int> serial = plan_.serialLoops();
    for (auto it = serial.rbegin(); it != serial.rend(); ++it) {
      const PlannedLoop &loop = plan_.loops[*it];
      kir::LoopKind kind = loop.vectorized ? kir::LoopKind::Vectorized
                           : loop.unrolled ? kir::LoopKind::Unrolled
                                           : kir::LoopKind::Serial;
      body = kir::forLoop(cx_.loopVars[*it], cx_.extentOf(loop.extent), kind, body, loop.origin,
                          loop.unrolled && !loop.vectorized ? loop.unrollFactor : std::nullopt);
    }
    return body;
  }

  /// The lets of an element body: each value of `order` that `needed` holds, computed
  /// from its operands (an inlined value is an expression substituted into its users);
  /// `fromBuffer` values are read back from their persistent buffer.
  void computeValues(int p, const std::vector<const ir::Value *> &order,
                     const std::set<unsigned> &needed, const std::set<unsigned> &fromBuffer,
                     std::map<unsigned, Expr> &values, std::vector<Stmt> &element) {
    auto valueOf = [&](const ir::Value *value) -> Expr {
      auto found = values.find(value->id);
      if (found != values.end())
        return found->second;
      auto result = results_.find(value->id);
      FSL_INTERNAL_ASSERT(result != results_.end(), "a value used before it is computed");
      return kir::var(result->second);
    };
    for (const ir::Value *value : order) {
      if (!needed.count(value->id))
        continue;
      int computedIn = plan_.phaseOf.at(value->id);
      if (ir::isReduction(value->op) && computedIn < p)
        continue; // the reduction's result is a variable of the thread already
      Expr expr;
      ir::DType type = value->dtype;
      if (fromBuffer.count(value->id)) {
        expr = kir::load(persistentBuffers_.at(value->id), bufferIndex(value->id));
        type = expr->dtype;
      } else if (value->op == ir::Op::Input) {
        const kir::BufferPtr &buffer = cx_.paramBuffers[value->paramIndex];
        expr = kir::load(buffer, cx_.paramOffset(value->paramIndex));
      } else if (ir::isIndexing(value->op)) {
        expr = indexedLoad(*value, valueOf(value->operands[1]));
      } else if (value->op == ir::Op::DimSize) {
        expr = cx_.dimExtent(value->indexed[0]);
      } else if (value->op == ir::Op::DimIndex) {
        expr = cx_.rootIndex[value->indexed[0]];
      } else if (value->op == ir::Op::Scalar) {
        expr = kir::var(cx_.scalarVars[value->paramIndex]);
      } else if (value->op == ir::Op::Constant) {
        expr = kir::constant(value->constant, value->dtype);
      } else {
        std::vector<Expr> operands;
        for (const ir::Value *operand : value->operands)
          operands.push_back(valueOf(operand));
        expr = pointwiseOperation(*value, operands,
                                  {plan_.schedule->fastExp.has_value(),
                                   plan_.schedule->fastTanh.has_value(),
                                   plan_.schedule->fastDiv.has_value()});
      }
      if (plan_.inlined.count(value->id) && !fromBuffer.count(value->id)) {
        values[value->id] = expr; // `inline`: the expression itself at every use
        continue;
      }
      kir::VarPtr v = kir::makeVar(valueName(*value), type);
      element.push_back(fromFusion(kir::let(v, expr, value->name), value->range));
      values[value->id] = kir::var(v);
    }
  }

  /// A parameter read elsewhere than at the current element (Gather, Window): along the
  /// indexed dimension, at the window's offset plus the window's index, or at the gathered
  /// index. A gathered index outside [0, extent) gives 0: the load is clamped into the
  /// dimension (no memory outside the tensor is read) and its value not used.
  Expr indexedLoad(const ir::Value &value, Expr position) const {
    const ir::Value &input = *value.operands[0];
    const ir::Param &param = f_.params[input.paramIndex];
    ir::DimId along = value.indexed[0];
    Expr extent = cx_.dimExtent(along);
    Expr at = value.op == ir::Op::Window
                  ? cx_.rootIndex[value.indexed[1]] + position
                  : kir::binary(kir::BinaryOp::Min,
                                kir::binary(kir::BinaryOp::Max, position, kir::index(0)),
                                extent - kir::index(1));
    std::vector<Expr> index;
    for (ir::DimId dim : param.dims)
      index.push_back(dim == along ? at : cx_.rootIndex[dim]);
    Expr load =
        kir::load(cx_.paramBuffers[input.paramIndex], cx_.paramOffset(input.paramIndex, index));
    if (value.op == ir::Op::Window)
      return load;
    Expr inside =
        kir::binary(kir::BinaryOp::And, kir::binary(kir::BinaryOp::Ge, position, kir::index(0)),
                    kir::binary(kir::BinaryOp::Lt, position, extent));
    return kir::select(inside, load, kir::constant(0, load->dtype));
  }

  /// The values `roots` need, through operands, stopping at `available` values (read
  /// from a buffer or finished reductions of earlier phases).
  std::set<unsigned> closure(const std::vector<const ir::Value *> &roots, int p,
                             const std::set<unsigned> &available) const {
    std::set<unsigned> needed;
    std::function<void(const ir::Value *)> need = [&](const ir::Value *value) {
      if (!needed.insert(value->id).second)
        return;
      bool earlier = ir::isReduction(value->op) && plan_.phaseOf.at(value->id) < p;
      if (available.count(value->id) || earlier)
        return;
      // An indexed parameter is read by the indexing value itself, at its own index.
      for (size_t i = ir::isIndexing(value->op) ? 1 : 0; i < value->operands.size(); ++i)
        need(value->operands[i]);
    };
    for (const ir::Value *root : roots)
      need(root);
    return needed;
  }

  void makePhase(int p, std::vector<Stmt> &out) {
    const PlannedPhase &phase = plan_.phases[p];
    out.push_back(kir::comment(p == 0 ? "Phase 0"
                                      : "Phase " + std::to_string(p) +
                                            ": after the block reductions of phase " +
                                            std::to_string(p - 1)));
    std::map<unsigned, kir::VarPtr> accumulators, indices;
    std::vector<std::vector<kir::VarPtr>> tuples; // of phase.combined, in order
    for (const ir::OnePassPair &pair : phase.combined)
      tuples.push_back(declareOnePass(pair, out));
    for (const ir::Value *reduction : phase.reductions) {
      if (plan_.columnReduced.count(reduction->id))
        continue; // a register array across the rows (makeColumnRows)
      if (ir::isArgReduction(reduction->op)) {
        declareArgAccumulators(*reduction, accumulators, indices, out);
        continue;
      }
      ir::DType type = accumulatorType(reduction->dtype);
      double init = reduction->op == ir::Op::ReduceMax   ? -INFINITY
                    : reduction->op == ir::Op::ReduceMin ? INFINITY
                                                         : 0;
      // An integer max or min starts at its type's lowest or highest value (an integer has
      // no infinity; the printer spells 2^63 - 1 and -2^63, which a double holds as +-2^63).
      if (ir::isInteger(type) && std::isinf(init))
        init = type == ir::DType::I32 ? (init < 0 ? -2147483648.0 : 2147483647.0)
                                      : std::copysign(9223372036854775808.0, init);
      kir::VarPtr acc = kir::makeVar(valueName(*reduction) + "_acc", type);
      accumulators[reduction->id] = acc;
      out.push_back(fromFusion(
          kir::declare(acc, kir::constant(init, type),
                       ir::opName(reduction->op).str() + " of " +
                           (reduction->name.empty() ? valueName(*reduction) : reduction->name)),
          reduction->range));
    }
    // Values kept for later phases that the schedule does not compute with their first
    // consumer get a loop nest of their own first; the phase then reads them back.
    std::set<unsigned> fromBuffer;
    for (const auto &value : f_.values)
      if (plan_.persistent.count(value->id) && plan_.phaseOf.at(value->id) < p)
        fromBuffer.insert(value->id);
    std::vector<const ir::Value *> ownNest, saves;
    for (const ir::Value *saved : phase.saves)
      (plan_.computedWith.count(saved->id) ? saves : ownNest).push_back(saved);
    std::set<unsigned> nestNeeds; // what this phase's nests read, for the inout barrier
    if (!ownNest.empty()) {
      std::vector<Stmt> producer;
      std::map<unsigned, Expr> values;
      nestNeeds = closure(ownNest, p, fromBuffer);
      computeValues(p, phase.values, nestNeeds, fromBuffer, values, producer);
      for (const ir::Value *saved : ownNest)
        producer.push_back(fromFusion(kir::store(persistentBuffers_.at(saved->id),
                                                 bufferIndex(saved->id), values.at(saved->id)),
                                      saved->range));
      Stmt nest = kir::withLabel(kir::block({serialNest(kir::block(std::move(producer)))}),
                                 labels::PhaseNest);
      out.push_back(kir::withComment(
          nest, "persistent values without compute_with: a loop nest of their own"));
      for (const ir::Value *saved : ownNest)
        fromBuffer.insert(saved->id);
    }
    // The element body of the phase.
    std::vector<const ir::Value *> roots = saves;
    for (const ir::Value *reduction : phase.reductions)
      roots.push_back(reduction->operands[0]);
    for (const ir::OnePassPair &pair : phase.combined)
      roots.push_back(pair.operand);
    std::vector<const ir::Output *> elementStores, rowStores;
    for (const ir::Output *output : phase.stores)
      (isRowStore(*output, p, fromBuffer) ? rowStores : elementStores).push_back(output);
    for (const ir::Output *output : elementStores)
      roots.push_back(output->value);
    std::vector<Stmt> element;
    std::map<unsigned, Expr> values;
    std::set<unsigned> elementNeeds = closure(roots, p, fromBuffer);
    computeValues(p, phase.values, elementNeeds, fromBuffer, values, element);
    nestNeeds.insert(elementNeeds.begin(), elementNeeds.end());
    auto valueOf = [&](const ir::Value *value) -> Expr {
      auto found = values.find(value->id);
      if (found != values.end())
        return found->second;
      return kir::var(results_.at(value->id));
    };
    for (const ir::Value *saved : saves)
      element.push_back(fromFusion(
          kir::store(persistentBuffers_.at(saved->id), bufferIndex(saved->id), valueOf(saved)),
          saved->range));
    for (const ir::Value *reduction : phase.reductions) {
      const kir::VarPtr &acc = accumulators[reduction->id];
      Expr operand = valueOf(reduction->operands[0]);
      if (plan_.columnReduced.count(reduction->id)) {
        const kir::BufferPtr &partial = columnPartials_.at(reduction->id);
        Expr at = bufferIndex(reduction->id);
        element.push_back(fromFusion(
            kir::store(partial, at,
                       kir::binary(combineOf(reduction->op), kir::load(partial, at), operand)),
            reduction->range));
        continue;
      }
      if (ir::isArgReduction(reduction->op)) {
        accumulateArg(*reduction, acc, indices.at(reduction->id), operand, element);
        continue;
      }
      kir::BinaryOp combine = combineOf(reduction->op);
      element.push_back(fromFusion(kir::assign(acc, kir::binary(combine, kir::var(acc), operand)),
                                   reduction->range));
    }
    for (size_t i = 0; i < phase.combined.size(); ++i)
      accumulateOnePass(phase.combined[i], tuples[i], valueOf(phase.combined[i].operand), element);
    for (const ir::Output *output : elementStores)
      element.push_back(storeOutput(*output, valueOf(output->value)));
    if (!element.empty()) // a phase of row stores alone has no element work
      out.push_back(kir::withLabel(kir::block({serialNest(kir::block(std::move(element)))}),
                                   labels::PhaseNest));
    if (!rowStores.empty()) {
      // An inout row written back where the nest also reads it (`y = x * (s + total);
      // s = s + total;`): every thread reads the old row before one thread replaces it.
      bool readByNest = false;
      for (const ir::Output *output : rowStores)
        readByNest |=
            output->isInout && nestNeeds.count(f_.params[output->paramIndex].value->id) != 0;
      if (readByNest) {
        out.push_back(kir::withComment(
            kir::barrier(), "every thread has read the inout row before it is written back"));
      }
      out.push_back(makeRowStores(p, rowStores, fromBuffer));
    }
    // The block reductions that end the phase, and their results (a grid reduction's
    // blocks store their partial accumulators instead).
    bool gridRows = plan_.gridLoop >= 0 && !plan_.innerOuter();
    std::vector<Stmt> partialStores; // a grid reduction's
    for (size_t i = 0; i < phase.combined.size(); ++i) {
      combineOnePassInBlock(phase.combined[i], tuples[i], out);
      if (gridRows)
        storePairPartials(phase.combined[i], tuples[i], partialStores);
      else
        onePassResults(phase.combined[i], tuples[i], out);
    }
    std::map<unsigned, const ir::Value *> partners = sumPartners(phase, accumulators);
    std::set<unsigned> reducedWithPartner;
    for (const ir::Value *reduction : phase.reductions) {
      if (plan_.columnReduced.count(reduction->id))
        continue;
      const kir::VarPtr &acc = accumulators[reduction->id];
      bool isArg = ir::isArgReduction(reduction->op);
      if (plan_.blockReduced.count(reduction->id) && !reducedWithPartner.count(reduction->id)) {
        auto partner = partners.find(reduction->id);
        Stmt r;
        std::string what = "over threadIdx.x";
        if (partner != partners.end()) {
          // Two sums of the phase in one pass: one barrier where two reductions take two.
          const kir::VarPtr &second = accumulators.at(partner->second->id);
          r = kir::reduceTuple({acc, second}, kir::ReduceKind::SumPair, kir::ReduceScope::BlockX,
                               scratch_.at(acc->dtype), nextSlot());
          what += ", with " + second->name + ": two sums in one pass";
          reducedWithPartner.insert(partner->second->id);
        } else {
          r = isArg ? kir::reduceTuple({acc, indices.at(reduction->id)}, reduceKind(reduction->op),
                                       kir::ReduceScope::BlockX, pairScratch_, nextSlot())
                    : kir::reduce(acc, reduceKind(reduction->op), kir::ReduceScope::BlockX,
                                  scratch_.at(acc->dtype), nextSlot());
        }
        out.push_back(fromFusion(kir::withComment(r, what), reduction->range));
      }
      if (gridRows) {
        storePartials(*reduction, acc, isArg ? indices.at(reduction->id) : nullptr, partialStores);
        continue;
      }
      out.push_back(finishReduction(*reduction, acc, isArg ? indices.at(reduction->id) : nullptr));
    }
    if (!partialStores.empty()) {
      Stmt stores = kir::block(std::move(partialStores));
      // Rows past the end of a row dimension that is checked rather than clamped (merged
      // rows) store nothing: their slots are past the workspace's end.
      Expr inBounds;
      for (ir::DimId dim : plan_.gridRowDims)
        if (plan_.inexactRoots.count(dim))
          inBounds = inBounds && (cx_.rootIndex[dim] < cx_.dimExtent(dim));
      if (inBounds)
        stores = kir::ifThen(inBounds, stores, nullptr, "this thread's row is in bounds");
      if (Expr first =
              rowLeader([&](ir::DimId dim) { return llvm::is_contained(plan_.gridRowDims, dim); }))
        stores = kir::ifThen(first, stores, nullptr, "one thread stores the row's partial results");
      out.push_back(stores);
      if (plan_.schedule->gridSync)
        gridSyncRowResults(phase, out);
    }
  }

  /// `grid_sync` on a row reduction: after a phase's blocks have stored their partial
  /// results, they meet at a grid barrier (a cooperative launch keeps them all resident),
  /// and every thread combines its row's pieces in order, so each block goes on with the
  /// row's results (and its piece of the row still in its buffers).
  ///
  ///   partials[row][piece] = the block's result; grid barrier
  ///   acc = partials[row][0] (+) ... (+) partials[row][G - 1]; the next phase
  void gridSyncRowResults(const PlannedPhase &phase, std::vector<Stmt> &out) {
    const PlannedLoop &grid = plan_.loops[plan_.gridLoop];
    out.push_back(kir::withComment(
        kir::gridBarrier(), "grid_sync: every block's partial results of the row are stored"));
    if (!dependentsLaunched_) {
      out.push_back(
          kir::withComment(kir::gridDependency(kir::GridDependencyOp::LaunchDependents, nullptr),
                           "every block is resident: the next kernel may start launching"));
      dependentsLaunched_ = true;
    }
    Expr pieces = cx_.extentOf(grid.extent);
    // A row past the end of a dimension that is checked rather than clamped (merged rows)
    // stored nothing: it reads the last row's slots instead, and its values go unused.
    std::vector<Expr> savedRoots = cx_.rootIndex;
    for (ir::DimId dim : plan_.gridRowDims)
      if (plan_.inexactRoots.count(dim))
        cx_.rootIndex[dim] =
            kir::binary(kir::BinaryOp::Min, cx_.rootIndex[dim], cx_.dimExtent(dim) - kir::index(1));
    Expr row = cx_.offsetOf(plan_.gridRowDims);
    cx_.rootIndex = savedRoots;
    auto at = [&](Expr p) { return row * pieces + p; };
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      bool ofPhase = partials.pair ? llvm::any_of(phase.combined,
                                                  [&](const ir::OnePassPair &pair) {
                                                    return pair.first == partials.pair->first;
                                                  })
                                   : llvm::is_contained(phase.reductions, partials.reduction);
      if (ofPhase)
        combinePartials(partials, at, pieces, "_row", out);
    }
  }

  static kir::BinaryOp combineOf(ir::Op op) {
    return op == ir::Op::ReduceMax   ? kir::BinaryOp::Max
           : op == ir::Op::ReduceMin ? kir::BinaryOp::Min
                                     : kir::BinaryOp::Add;
  }

  /// A reduction's starting value in its accumulator type: -inf for max, +inf for min (an
  /// integer's lowest and highest value), 0 for sums and means.
  static double initialValue(ir::Op op, ir::DType type) {
    double init = op == ir::Op::ReduceMax ? -INFINITY : op == ir::Op::ReduceMin ? INFINITY : 0;
    if (ir::isInteger(type) && std::isinf(init))
      init = type == ir::DType::I32 ? (init < 0 ? -2147483648.0 : 2147483647.0)
                                    : std::copysign(9223372036854775808.0, init);
    return init;
  }

  /// The inner-outer form (Plan::columnReduced): the column reductions' partial sums, a
  /// register array a thread (one element an iteration of the phases' serial loops), set
  /// to the starting value; the row loops around every phase, each row accumulating into
  /// them; then makeColumnTotals.
  ///
  ///   dweight_partial[E] = {0...}
  ///   for Ts: phase 0 (row reductions, dweight_partial[e] += ..), block reductions, phase 1
  ///   per element e: the rows of threadIdx.y added through shared memory, then the
  ///   block's partial row to the workspace (or the outputs, without a grid loop)
  /// A column reduction's name in the kernel: an output's name where it is stored as one
  /// (`dweight = sum(.., over T)`), else its value's.
  std::string columnName(const ir::Value &column) const {
    if (column.name.empty())
      for (const ir::Output *output : plan_.columnOutputs)
        if (output->value == &column)
          return output->name;
    return valueName(column);
  }

  void makeColumnRows(std::vector<Stmt> &out) {
    kir::VarPtr e = kir::makeVar("e", ir::DType::I64);
    for (const auto &value : f_.values) {
      if (!plan_.columnReduced.count(value->id))
        continue;
      auto buffer = std::make_shared<kir::Buffer>();
      buffer->name = columnName(*value) + "_partial";
      buffer->dtype = accumulatorType(value->dtype);
      buffer->space = kir::MemorySpace::Local;
      buffer->shape = {plan_.bufferElements};
      std::string who = columnName(*value);
      out.push_back(fromFusion(kir::allocate(buffer, ir::opName(value->op).str() + " of " + who +
                                                         ": this thread's partial columns, "
                                                         "across the rows of the block"),
                               value->range));
      out.push_back(kir::forLoop(
          e, kir::index(plan_.bufferElements), kir::LoopKind::Unrolled,
          kir::block(
              {kir::store(buffer, kir::var(e),
                          kir::constant(initialValue(value->op, buffer->dtype), buffer->dtype))})));
      columnPartials_[value->id] = buffer;
    }
    std::vector<Stmt> rows;
    const int reductionsBefore = blockReductions_;
    for (size_t p = 0; p < plan_.phases.size(); ++p) {
      const PlannedPhase &phase = plan_.phases[p];
      // The phase after the column reductions alone has nothing to do in the rows.
      if (p > 0 && phase.values.empty() && phase.reductions.empty() && phase.stores.empty() &&
          phase.combined.empty() && phase.saves.empty())
        continue;
      makePhase(static_cast<int>(p), rows);
    }
    Stmt nest = kir::block(std::move(rows));
    if ((blockReductions_ - reductionsBefore) % 2 != 0)
      nest = alternateSlotsByRow(nest);
    for (auto it = plan_.rowLoops.rbegin(); it != plan_.rowLoops.rend(); ++it) {
      const PlannedLoop &loop = plan_.loops[*it];
      nest = kir::forLoop(cx_.loopVars[*it], cx_.extentOf(loop.extent),
                          loop.unrolled ? kir::LoopKind::Unrolled : kir::LoopKind::Serial,
                          kir::block({nest}), loop.origin,
                          loop.unrolled ? loop.unrollFactor : std::nullopt);
    }
    out.push_back(kir::withComment(nest, "the rows of this block, each through every phase"));
    makeColumnTotals(out);
  }

  /// A block reduction needs no barrier after it because the next one writes the other
  /// half of the scratch (device.cuh). A row body with an odd number of them would start
  /// the next row in the half the last one is still being read from, with no barrier in
  /// between: there each reduction's half alternates with the row, `(slot + row) % 2`, the
  /// row counted over the block's row loops (innermost fastest). The rows' threads all run
  /// the same iterations, so every thread picks the same half.
  Stmt alternateSlotsByRow(const Stmt &rows) {
    Expr row;
    for (int loop : plan_.rowLoops)
      row = row ? row * cx_.extentOf(plan_.loops[loop].extent) + kir::var(cx_.loopVars[loop])
                : kir::var(cx_.loopVars[loop]);
    if (!row)
      return rows;
    class Alternate : public kir::Mutator {
    public:
      explicit Alternate(Expr row) : row_(std::move(row)) {}
      using Mutator::mutate;
      Stmt mutate(const Stmt &s) override {
        Stmt out = mutateChildren(s);
        if (out->kind != kir::StmtKind::Reduce || out->scope != kir::ReduceScope::BlockX)
          return out;
        auto copy = std::make_shared<kir::StmtNode>(*out);
        copy->slot = (out->slot + row_) % kir::index(2);
        return copy;
      }

    private:
      Expr row_;
    };
    return Alternate(row).mutate(rows);
  }

  /// The block sums of a phase paired for one pass each (kir::ReduceKind::SumPair), in
  /// order: each sum or mean of a 4-byte accumulator with the next such one of the phase
  /// (two of them fit the block reduction scratch's 8 bytes a thread). The phase's block
  /// reductions all come after its element nest, so no sum's operand depends on another's
  /// result: any two of them can be combined together.
  std::map<unsigned, const ir::Value *>
  sumPartners(const PlannedPhase &phase, const std::map<unsigned, kir::VarPtr> &accumulators) {
    std::map<unsigned, const ir::Value *> partners;
    const ir::Value *waiting = nullptr;
    for (const ir::Value *reduction : phase.reductions) {
      if (plan_.columnReduced.count(reduction->id) || !plan_.blockReduced.count(reduction->id) ||
          reduceKind(reduction->op) != kir::ReduceKind::Sum)
        continue;
      const kir::VarPtr &acc = accumulators.at(reduction->id);
      if (ir::dtypeBytes(acc->dtype) > 4)
        continue;
      if (waiting && accumulators.at(waiting->id)->dtype == acc->dtype) {
        partners[waiting->id] = reduction;
        waiting = nullptr;
      } else {
        waiting = reduction;
      }
    }
    return partners;
  }

  /// The scratch half of the next block reduction: the two halves in turn (device.cuh's
  /// fsl_block_reduce_x needs no barrier after a reduction that way).
  Expr nextSlot() { return kir::index(blockReductions_++ % 2); }

  /// After the row loops, per element of a thread's partial columns: the rows of
  /// threadIdx.y added in order through the block reduction scratch (every thread writes
  /// its partial, then reads its column's, between barriers, so no thread diverges at a
  /// barrier), then, by the threads of row 0 whose column is in bounds, the block's total
  /// to the grid reduction's workspace ([block of the grid loop][column]) or, without a
  /// grid loop, the column outputs. The loops are the phases' serial loops again, with
  /// variables of their own (the bounds and vectorize passes leave them alone).
  void makeColumnTotals(std::vector<Stmt> &out) {
    std::vector<int> serial = plan_.serialLoops();
    std::map<const kir::Var *, kir::VarPtr> fresh;
    for (int loop : serial)
      fresh[cx_.loopVars[loop].get()] = kir::makeVar(cx_.loopVars[loop]->name, ir::DType::I64);
    auto renamed = [&](const Expr &expr) {
      return kir::substitute(expr, [&](const kir::VarPtr &v) -> Expr {
        auto found = fresh.find(v.get());
        return found == fresh.end() ? nullptr : kir::var(found->second);
      });
    };
    using kir::Builtin;
    auto builtin = [](const char *name, Builtin b) {
      return kir::var(kir::makeVar(name, ir::DType::I64, b));
    };
    Expr tx = builtin("threadIdx.x", Builtin::ThreadIdxX);
    Expr bdx = builtin("blockDim.x", Builtin::BlockDimX);
    bool threadRows = plan_.columnThreadLoop >= 0;
    kir::BufferPtr scratch;
    if (threadRows)
      out.push_back(kir::withComment(kir::barrier(),
                                     "the block reductions' scratch is free for the columns"));
    std::vector<Stmt> body;
    std::vector<const ir::Value *> columns;
    for (const auto &value : f_.values)
      if (plan_.columnReduced.count(value->id))
        columns.push_back(value.get());
    for (const ir::Value *column : columns) {
      const kir::BufferPtr &partial = columnPartials_.at(column->id);
      Expr mine = kir::load(partial, renamed(bufferIndex(column->id)));
      kir::VarPtr total = kir::makeVar(columnName(*column) + "_total", partial->dtype);
      std::string who = columnName(*column);
      if (!threadRows) {
        body.push_back(
            fromFusion(kir::let(total, mine, who + ": this block's column"), column->range));
      } else {
        scratch = columnScratch(partial->dtype, out);
        const PlannedLoop &ty = plan_.loops[plan_.columnThreadLoop];
        body.push_back(kir::store(scratch, threadId(), mine));
        body.push_back(kir::withComment(kir::barrier(), "every row's partial is written"));
        body.push_back(fromFusion(
            kir::declare(total, kir::load(scratch, tx),
                         who + ": the rows of threadIdx.y added in order (" + ty.name + ")"),
            column->range));
        kir::VarPtr y = kir::makeVar("y", ir::DType::I64);
        Expr next = kir::var(y) + kir::index(1);
        body.push_back(kir::forLoop(
            y, cx_.extentOf(ty.extent) - kir::index(1), kir::LoopKind::Serial,
            kir::block({kir::assign(total, kir::binary(combineOf(column->op), kir::var(total),
                                                       kir::load(scratch, next * bdx + tx)))})));
        body.push_back(kir::withComment(kir::barrier(), "every thread has read the scratch"));
      }
      totals_[column->id] = total;
    }
    std::vector<Stmt> stores;
    // The vector loop is the innermost serial one (Plan): its lanes are consecutive
    // columns of a tensor whose innermost dimension is the vector loop's.
    ir::DimId vectorRoot = plan_.vectorLoop >= 0 ? plan_.loops[plan_.vectorLoop].roots[0] : ~0u;
    std::set<const kir::StmtNode *> laneStores;
    if (plan_.gridLoop >= 0) {
      Expr rows = kir::index(1);
      for (ir::DimId dim : plan_.gridRowDims)
        rows = rows * cx_.dimExtent(dim);
      Expr at =
          kir::var(cx_.loopVars[plan_.gridLoop]) * rows + renamed(cx_.offsetOf(plan_.gridRowDims));
      for (const Plan::GridPartials &partials : plan_.gridPartials) {
        stores.push_back(fromFusion(
            kir::store(partials.values, at, kir::var(totals_.at(partials.reduction->id))),
            partials.reduction->range));
        if (!plan_.gridRowDims.empty() && plan_.gridRowDims.back() == vectorRoot)
          laneStores.insert(stores.back().get());
      }
    } else {
      for (const ir::Value *column : columns)
        stores.push_back(finishReduction(*column, totals_.at(column->id), nullptr));
      for (const auto &[output, value] : columnOutputValues(stores)) {
        unsigned o = static_cast<unsigned>(output - f_.outputs.data());
        stores.push_back(
            fromFusion(kir::store(cx_.outputBuffers[o], renamed(cx_.offsetOf(output->dims)), value),
                       output->value->range));
        if (!output->dims.empty() && output->dims.back() == vectorRoot)
          laneStores.insert(stores.back().get());
      }
    }
    // Each lane's column to a local array, stored after the vector loop as vectors of up
    // to 16 bytes: a warp's scalar stores a lane apart touch four times the sectors they
    // fill (docs/performance.md, "The column totals stored as vectors").
    std::vector<Stmt> laneArrays, vectorStores;
    kir::VarPtr lane =
        plan_.vectorLoop >= 0 ? fresh.at(cx_.loopVars[plan_.vectorLoop].get()) : nullptr;
    auto laneZero = [&](const Expr &e) {
      return kir::substitute(
          e, [&](const kir::VarPtr &v) { return v == lane ? kir::index(0) : nullptr; });
    };
    if (!laneStores.empty() && *plan_.loops[plan_.vectorLoop].extent.value > 1) {
      int64_t width = *plan_.loops[plan_.vectorLoop].extent.value;
      for (Stmt &store : stores) {
        if (!laneStores.count(store.get()))
          continue;
        // Vectors of 16 bytes at most, each of a size one access moves (not a 1-byte bool).
        int64_t chunk = std::min<int64_t>(width, 16 / ir::dtypeBytes(store->buffer->dtype));
        if (width % chunk != 0 || !kir::isVectorAccessSize(chunk, store->buffer->dtype))
          continue;
        auto local = std::make_shared<kir::Buffer>();
        local->name = store->buffer->name + "_lanes";
        local->dtype = store->buffer->dtype;
        local->space = kir::MemorySpace::Local;
        local->shape = {width};
        laneArrays.push_back(kir::allocate(local, "the vector loop's columns of " +
                                                      store->buffer->name + ", stored as vectors"));
        for (int64_t first = 0; first < width; first += chunk)
          vectorStores.push_back(kir::withOrigin(
              kir::vectorCopy(store->buffer, laneZero(store->index) + kir::index(first), local,
                              kir::index(first), chunk),
              store->origin));
        store = kir::withOrigin(kir::store(local, kir::var(lane), store->value), store->origin);
      }
    }
    Expr guard;
    if (threadRows)
      guard = kir::binary(kir::BinaryOp::Eq, kir::var(cx_.loopVars[plan_.columnThreadLoop]),
                          kir::index(0));
    for (ir::DimId dim : plan_.gridRowDims)
      if (plan_.inexactRoots.count(dim))
        guard = guard && (renamed(cx_.rootIndex[dim]) < cx_.dimExtent(dim));
    Stmt stored = kir::block(std::move(stores));
    std::string guardWhy =
        threadRows ? "row 0 of threadIdx.y stores the block's column" : "the column is in bounds";
    if (guard)
      stored = kir::ifThen(guard, stored, nullptr, guardWhy);
    body.push_back(stored);
    Stmt nest = kir::block(std::move(body));
    for (auto it = serial.rbegin(); it != serial.rend(); ++it) {
      const PlannedLoop &loop = plan_.loops[*it];
      const kir::VarPtr &var = fresh.at(cx_.loopVars[*it].get());
      nest =
          kir::forLoop(var, cx_.extentOf(loop.extent), kir::LoopKind::Unrolled, kir::block({nest}),
                       {"the column totals over " + loop.name +
                            ", unrolled: the partials "
                            "are registers",
                        loop.origin.range});
      if (*it != plan_.vectorLoop || vectorStores.empty())
        continue;
      // The lanes' columns out as vectors, under the stores' guard at lane 0: the vector
      // divides its dimension's extent (Plan), so lane 0 in bounds is every lane in bounds.
      Stmt out = kir::block(std::move(vectorStores));
      if (guard)
        out = kir::ifThen(laneZero(guard), out, nullptr, guardWhy);
      laneArrays.push_back(nest);
      laneArrays.push_back(out);
      nest = kir::block(std::move(laneArrays));
    }
    out.push_back(kir::withComment(
        nest, plan_.gridLoop >= 0 ? "the block's partial columns, for the grid reduction over " +
                                        plan_.loops[plan_.gridLoop].name
                                  : "the column outputs"));
  }

  /// The block reduction scratch in `type` (makeBuffers made it when a row reduction has a
  /// block reduction; else it is allocated here, at the start of the dynamic shared memory
  /// that every reduction's scratch has).
  kir::BufferPtr columnScratch(ir::DType type, std::vector<Stmt> &out) {
    auto found = scratch_.find(type);
    if (found != scratch_.end())
      return found->second;
    FSL_INTERNAL_ASSERT(scratch_.empty() && !pairScratch_,
                        "column scratch next to another type's scratch");
    auto scratch = std::make_shared<kir::Buffer>();
    scratch->name = "fsl_scratch_" + ir::dtypeName(type).str();
    scratch->dtype = type;
    scratch->space = kir::MemorySpace::Shared;
    int64_t bytes = ir::reductionScratchBytesPerThread(f_, plan_.onePass());
    out.push_back(
        kir::withComment(kir::allocateStmt(scratch, kir::index(0),
                                           threads() * kir::index(bytes / ir::dtypeBytes(type))),
                         "column reduction scratch: " + std::to_string(bytes) + " bytes a thread"));
    scratch_[type] = scratch;
    return scratch;
  }

  /// A grid reduction's workspace slot of this block's row: [row][block of the grid loop].
  Expr gridSlot() const {
    return cx_.offsetOf(plan_.gridRowDims) * cx_.extentOf(plan_.loops[plan_.gridLoop].extent) +
           kir::var(cx_.loopVars[plan_.gridLoop]);
  }

  /// A grid reduction's block result (outside a one-pass pair), to its workspace slot.
  void storePartials(const ir::Value &reduction, const kir::VarPtr &acc, const kir::VarPtr &index,
                     std::vector<Stmt> &out) const {
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      if (partials.reduction != &reduction || partials.pair)
        continue;
      Expr at = gridSlot();
      out.push_back(fromFusion(kir::store(partials.values, at, kir::var(acc)), reduction.range));
      if (index)
        out.push_back(
            fromFusion(kir::store(partials.indices, at, kir::var(index)), reduction.range));
    }
  }

  /// The reduction's result from its accumulator (a mean divided by the count, argmax's
  /// index), in the reduction's type.
  Stmt finishReduction(const ir::Value &reduction, const kir::VarPtr &acc,
                       const kir::VarPtr &index) {
    Expr total = kir::var(index ? index : acc);
    if (reduction.op == ir::Op::ReduceMean) {
      Expr count = kir::index(1);
      for (ir::DimId dim : reduction.reduced)
        count = count * cx_.dimExtent(dim);
      total = kir::binary(kir::BinaryOp::Div, total, kir::cast(acc->dtype, count));
    }
    if (reduction.dtype != total->dtype)
      total = kir::cast(reduction.dtype, total);
    kir::VarPtr result = kir::makeVar(valueName(reduction), reduction.dtype);
    results_[reduction.id] = result;
    return fromFusion(kir::let(result, total, reduction.name), reduction.range);
  }

  /// `thread index == 0` along every thread loop whose dimensions `kept` rejects: the one
  /// thread of the values a row has once; null when every thread loop is kept.
  Expr rowLeader(const std::function<bool(ir::DimId)> &kept) const {
    Expr first;
    for (size_t loop = 0; loop < plan_.loops.size(); ++loop) {
      if (!sched::isThreadIndex(plan_.loops[loop].parallel))
        continue;
      if (llvm::any_of(plan_.loops[loop].roots, kept))
        continue;
      Expr zero = kir::binary(kir::BinaryOp::Eq, kir::var(cx_.loopVars[loop]), kir::index(0));
      first = first ? kir::binary(kir::BinaryOp::And, first, zero) : zero;
    }
    return first;
  }

  /// An output's store. An inout write-back's range is its assignment; an output's is its
  /// declaration in the signature, so its store names the assigned expression instead.
  Stmt storeOutput(const ir::Output &output, Expr value) const {
    unsigned o = static_cast<unsigned>(&output - f_.outputs.data());
    return fromFusion(kir::store(cx_.outputBuffers[o], cx_.offsetOf(output.dims), value),
                      output.isInout ? output.range : output.value->range);
  }

  /// Whether no serial loop walks a dimension of the output (argmax's token[T], a row's
  /// statistic): each thread has the one value of its row after the block reductions.
  /// Not when the value reads a persistent buffer: its element is indexed by the serial
  /// loops, which only the nest has.
  bool isRowStore(const ir::Output &output, int p, const std::set<unsigned> &fromBuffer) const {
    for (int loop : plan_.serialLoops())
      for (ir::DimId root : plan_.loops[loop].roots)
        if (llvm::is_contained(output.dims, root))
          return false;
    for (unsigned id : closure({output.value}, p, fromBuffer))
      if (plan_.persistent.count(id))
        return false;
    return true;
  }

  /// Row stores after the phase's nest, once: by the threads whose index along every
  /// thread loop the output does not have is 0 (the others hold the same value). In the
  /// nest they would be stored in each of its iterations, by every thread.
  Stmt makeRowStores(int p, const std::vector<const ir::Output *> &stores,
                     const std::set<unsigned> &fromBuffer) {
    std::vector<const ir::Value *> roots;
    for (const ir::Output *output : stores)
      roots.push_back(output->value);
    std::vector<Stmt> body;
    std::map<unsigned, Expr> values;
    computeValues(p, plan_.phases[p].values, closure(roots, p, fromBuffer), fromBuffer, values,
                  body);
    for (const ir::Output *output : stores) {
      auto found = values.find(output->value->id);
      body.push_back(storeOutput(*output, found != values.end()
                                              ? found->second
                                              : kir::var(results_.at(output->value->id))));
    }
    Expr first = rowLeader([&](ir::DimId dim) {
      return llvm::any_of(
          stores, [&](const ir::Output *output) { return llvm::is_contained(output->dims, dim); });
    });
    // With `grid_sync` every block of a row's pieces has the row's values: the first stores.
    if (plan_.gridLoop >= 0 && plan_.schedule->gridSync && !plan_.innerOuter()) {
      Expr firstPiece =
          kir::binary(kir::BinaryOp::Eq, kir::var(cx_.loopVars[plan_.gridLoop]), kir::index(0));
      first = first ? kir::binary(kir::BinaryOp::And, firstPiece, first) : firstPiece;
    }
    Stmt stores_ = kir::block(std::move(body));
    if (first)
      stores_ = kir::ifThen(first, stores_, nullptr, "one thread stores the row's values");
    return kir::withLabel(kir::block({stores_}), labels::PhaseNest);
  }

  /// `reduce one_pass`: the accumulators of a pair. Online softmax: the running maximum
  /// (-inf) and the sum of exp(a - maximum) (0). Welford: the count, the mean and M2 (all 0).
  std::vector<kir::VarPtr> declareOnePass(const ir::OnePassPair &pair, std::vector<Stmt> &out) {
    ir::DType type = pair.accumulator;
    std::string first = pair.first->name.empty() ? valueName(*pair.first) : pair.first->name;
    std::string second = pair.second->name.empty() ? valueName(*pair.second) : pair.second->name;
    std::string of = pair.operand->name.empty() ? valueName(*pair.operand) : pair.operand->name;
    std::vector<ir::OnePassAccumulator> members = ir::onePassAccumulators(pair);
    auto var = [&](size_t i) {
      return kir::makeVar(valueName(*members[i].owner) + members[i].suffix, type);
    };
    std::vector<std::pair<kir::VarPtr, std::string>> vars;
    if (pair.kind == ir::OnePassKind::MaxExpSum) {
      vars = {{var(0), "online softmax of " + of + ": the maximum so far (" + first + ")"},
              {var(1), "and the sum of exp(" + of + " - maximum) (" + second + ")"}};
    } else {
      vars = {{var(0), "Welford over " + of + ": the count so far"},
              {var(1), "the mean (" + first + ")"},
              {var(2), "the sum of squared differences from the mean (" + second + " x count)"}};
    }
    std::vector<kir::VarPtr> result;
    for (size_t i = 0; i < vars.size(); ++i) {
      double init = pair.kind == ir::OnePassKind::MaxExpSum && i == 0 ? -INFINITY : 0;
      out.push_back(
          fromFusion(kir::declare(vars[i].first, kir::constant(init, type), vars[i].second),
                     i == 0 ? pair.first->range : pair.second->range));
      result.push_back(vars[i].first);
    }
    return result;
  }

  /// One element `a` into the pair's accumulators.
  ///
  /// Online softmax, one exp an element: with the new maximum M = max(m, a), the smaller
  /// of the two gives scale = exp(min(m, a) - M); a larger `a` rescales the sum (s * scale
  /// + 1), any other adds its term (s + scale). An `a` of -inf adds nothing (a row of -inf
  /// alone would give exp(-inf - -inf), NaN, now rather than at the end: finishOnePass
  /// makes that sum NaN, as the two-pass form's). NaN propagates through max and exp.
  ///
  /// Welford: count + 1, delta = a - mean, mean + delta / count, M2 + delta * (a - mean').
  /// An infinite mean stays mean + a (inf, or NaN with the other infinity or a NaN) as the
  /// two-pass sum would, where mean + delta / count would be inf - inf; M2 is then NaN, as
  /// the two-pass variance of a row holding an infinity.
  void accumulateOnePass(const ir::OnePassPair &pair, const std::vector<kir::VarPtr> &acc, Expr a,
                         std::vector<Stmt> &element) {
    ir::DType type = pair.accumulator;
    if (a->dtype != type)
      a = kir::cast(type, a);
    auto c = [&](double v) { return kir::constant(v, type); };
    using kir::BinaryOp;
    llvm::SMRange at = pair.second->range;
    if (pair.kind == ir::OnePassKind::MaxExpSum) {
      Expr m = kir::var(acc[0]), s = kir::var(acc[1]);
      kir::VarPtr top = kir::makeVar(valueName(*pair.first) + "_top", type);
      kir::VarPtr scale = kir::makeVar(valueName(*pair.second) + "_scale", type);
      element.push_back(fromFusion(kir::let(top, kir::binary(BinaryOp::Max, m, a)), at));
      element.push_back(fromFusion(
          kir::let(scale, kir::unary(plan_.schedule->fastExp && type == ir::DType::F32
                                         ? kir::UnaryOp::FastExp
                                         : kir::UnaryOp::Exp,
                                     kir::binary(BinaryOp::Sub, kir::binary(BinaryOp::Min, m, a),
                                                 kir::var(top)))),
          at));
      Expr grows = kir::binary(BinaryOp::Gt, a, m);
      Expr rescaled =
          kir::binary(BinaryOp::Add, kir::binary(BinaryOp::Mul, s, kir::var(scale)), c(1));
      Expr added = kir::select(kir::binary(BinaryOp::Eq, a, c(-INFINITY)), s,
                               kir::binary(BinaryOp::Add, s, kir::var(scale)));
      element.push_back(fromFusion(kir::assign(acc[1], kir::select(grows, rescaled, added)), at));
      element.push_back(fromFusion(kir::assign(acc[0], kir::var(top)), at));
      return;
    }
    Expr n = kir::var(acc[0]), mean = kir::var(acc[1]), m2 = kir::var(acc[2]);
    kir::VarPtr delta = kir::makeVar(valueName(*pair.first) + "_delta", type);
    element.push_back(fromFusion(kir::assign(acc[0], kir::binary(BinaryOp::Add, n, c(1))), at));
    element.push_back(fromFusion(kir::let(delta, kir::binary(BinaryOp::Sub, a, mean)), at));
    Expr infinite = kir::binary(BinaryOp::Eq, kir::unary(kir::UnaryOp::Abs, mean), c(INFINITY));
    element.push_back(fromFusion(
        kir::assign(acc[1],
                    kir::select(infinite, kir::binary(BinaryOp::Add, mean, a),
                                kir::binary(BinaryOp::Add, mean,
                                            kir::binary(BinaryOp::Div, kir::var(delta), n)))),
        at));
    element.push_back(fromFusion(
        kir::assign(acc[2],
                    kir::binary(BinaryOp::Add, m2,
                                kir::binary(BinaryOp::Mul, kir::var(delta),
                                            kir::binary(BinaryOp::Sub, a, kir::var(acc[1]))))),
        at));
  }

  /// The pair's block reduction: one combine of the tuple.
  void combineOnePassInBlock(const ir::OnePassPair &pair, const std::vector<kir::VarPtr> &acc,
                             std::vector<Stmt> &out) {
    if (!plan_.blockReduced.count(pair.first->id))
      return;
    bool softmax = pair.kind == ir::OnePassKind::MaxExpSum;
    Stmt r = kir::reduceTuple(acc, softmax ? kir::ReduceKind::MaxExpSum : kir::ReduceKind::Welford,
                              kir::ReduceScope::BlockX, pairScratch_, nextSlot());
    const char *what = softmax ? "over threadIdx.x: (max, sum) rescaled to the block's maximum"
                               : "over threadIdx.x: (count, mean, M2) by Chan's combine";
    out.push_back(fromFusion(kir::withComment(r, what), pair.second->range));
  }

  /// A grid reduction's block: the pair's accumulators to its workspaces, at the row's
  /// slot of this block.
  void storePairPartials(const ir::OnePassPair &pair, const std::vector<kir::VarPtr> &acc,
                         std::vector<Stmt> &out) const {
    for (const Plan::GridPartials &partials : plan_.gridPartials) {
      if (!partials.pair || partials.pair->first != pair.first)
        continue;
      Expr at = gridSlot();
      for (size_t i = 0; i < acc.size(); ++i)
        out.push_back(
            fromFusion(kir::store(partials.tuple[i], at, kir::var(acc[i])), pair.second->range));
    }
  }

  /// Chan's combine (Welford) or the rescaled sums (online softmax) of the partial tuple
  /// `piece` into `acc`, as device.cuh's FslWelfordCombine and FslMaxExpSumCombine do:
  /// the grid reduction's second kernel adds the blocks' pairs in order with it.
  Stmt combineOnePassPiece(const ir::OnePassPair &pair, const std::vector<kir::VarPtr> &acc,
                           const std::vector<Expr> &piece) {
    using kir::BinaryOp;
    ir::DType type = pair.accumulator;
    auto c = [&](double v) { return kir::constant(v, type); };
    std::string name = valueName(*pair.first);
    std::vector<Stmt> body;
    if (pair.kind == ir::OnePassKind::MaxExpSum) {
      // m = max(m, pm); both sums rescaled to it (two rows of -inf alone: m = -inf, the
      // sums 0, no exp(-inf - -inf)).
      kir::VarPtr pm = kir::makeVar(name + "_piece_max", type);
      kir::VarPtr ps = kir::makeVar(name + "_piece_sum", type);
      kir::VarPtr top = kir::makeVar(name + "_top", type);
      body.push_back(kir::let(pm, piece[0]));
      body.push_back(kir::let(ps, piece[1]));
      body.push_back(kir::let(top, kir::binary(BinaryOp::Max, kir::var(acc[0]), kir::var(pm))));
      auto rescaled = [&](Expr sum, Expr max) {
        return kir::binary(
            BinaryOp::Mul, sum,
            kir::unary(kir::UnaryOp::Exp, kir::binary(BinaryOp::Sub, max, kir::var(top))));
      };
      Expr noMaximum = kir::binary(BinaryOp::Eq, kir::var(top), c(-INFINITY));
      body.push_back(kir::withComment(
          kir::assign(
              acc[1],
              kir::select(noMaximum, kir::binary(BinaryOp::Add, kir::var(acc[1]), kir::var(ps)),
                          kir::binary(BinaryOp::Add, rescaled(kir::var(acc[1]), kir::var(acc[0])),
                                      rescaled(kir::var(ps), kir::var(pm))))),
          "both sums at the larger maximum (two of -inf: no exp(-inf - -inf))"));
      body.push_back(kir::assign(acc[0], kir::var(top)));
      return kir::block(std::move(body));
    }
    // Welford: an empty piece changes nothing; an empty total takes the piece; else
    // count = n + pn, delta = pmean - mean, mean + delta * pn / count (an infinite mean:
    // the sum of the means), M2 + pM2 + delta^2 * n * pn / count.
    kir::VarPtr pn = kir::makeVar(name + "_piece_count", type);
    kir::VarPtr pmean = kir::makeVar(name + "_piece_mean", type);
    kir::VarPtr pm2 = kir::makeVar(name + "_piece_m2", type);
    body.push_back(kir::let(pn, piece[0]));
    body.push_back(kir::let(pmean, piece[1]));
    body.push_back(kir::let(pm2, piece[2]));
    kir::VarPtr count = kir::makeVar(name + "_count_new", type);
    kir::VarPtr share = kir::makeVar(name + "_share", type);
    kir::VarPtr delta = kir::makeVar(name + "_delta", type);
    Expr n = kir::var(acc[0]), mean = kir::var(acc[1]), m2 = kir::var(acc[2]);
    Expr infinite = kir::binary(
        BinaryOp::Or, kir::binary(BinaryOp::Eq, kir::unary(kir::UnaryOp::Abs, mean), c(INFINITY)),
        kir::binary(BinaryOp::Eq, kir::unary(kir::UnaryOp::Abs, kir::var(pmean)), c(INFINITY)));
    Stmt both = kir::block({
        kir::let(count, kir::binary(BinaryOp::Add, n, kir::var(pn))),
        kir::let(share, kir::binary(BinaryOp::Div, kir::var(pn), kir::var(count))),
        kir::let(delta, kir::binary(BinaryOp::Sub, kir::var(pmean), mean)),
        kir::assign(acc[2],
                    kir::binary(BinaryOp::Add, kir::binary(BinaryOp::Add, m2, kir::var(pm2)),
                                kir::binary(BinaryOp::Mul,
                                            kir::binary(BinaryOp::Mul,
                                                        kir::binary(BinaryOp::Mul, kir::var(delta),
                                                                    kir::var(delta)),
                                                        n),
                                            kir::var(share)))),
        kir::assign(acc[1], kir::select(infinite, kir::binary(BinaryOp::Add, mean, kir::var(pmean)),
                                        kir::binary(BinaryOp::Add, mean,
                                                    kir::binary(BinaryOp::Mul, kir::var(delta),
                                                                kir::var(share))))),
        kir::assign(acc[0], kir::var(count)),
    });
    Stmt takePiece =
        kir::block({kir::assign(acc[0], kir::var(pn)), kir::assign(acc[1], kir::var(pmean)),
                    kir::assign(acc[2], kir::var(pm2))});
    body.push_back(kir::ifThen(kir::binary(BinaryOp::Ne, kir::var(pn), c(0)),
                               kir::ifThen(kir::binary(BinaryOp::Eq, n, c(0)), takePiece, both),
                               nullptr, "an empty piece changes nothing"));
    return kir::block(std::move(body));
  }

  /// Both results of a pair from its (combined) accumulators.
  void onePassResults(const ir::OnePassPair &pair, const std::vector<kir::VarPtr> &acc,
                      std::vector<Stmt> &out) {
    using kir::BinaryOp;
    ir::DType type = pair.accumulator;
    auto c = [&](double v) { return kir::constant(v, type); };
    bool softmax = pair.kind == ir::OnePassKind::MaxExpSum;
    Expr count = kir::index(1);
    bool staticCount = true;
    for (ir::DimId dim : pair.second->reduced) {
      count = count * cx_.dimExtent(dim);
      staticCount &= f_.dims[dim].staticExtent.has_value();
    }
    Expr first = kir::var(acc[softmax ? 0 : 1]), second;
    if (softmax) {
      // The two-pass sum is NaN when the maximum is infinite (exp(inf - inf) or
      // exp(-inf - -inf) for the elements equal to it) in a row that has elements.
      Expr infinite = kir::binary(BinaryOp::Eq, kir::unary(kir::UnaryOp::Abs, first), c(INFINITY));
      if (!staticCount)
        infinite =
            kir::binary(BinaryOp::And, infinite, kir::binary(BinaryOp::Gt, count, kir::index(0)));
      second = kir::select(infinite, c(NAN), kir::var(acc[1]));
      if (pair.second->op == ir::Op::ReduceMean)
        second = kir::binary(BinaryOp::Div, second, kir::cast(type, count));
    } else {
      second = kir::var(acc[2]);
      if (pair.second->op == ir::Op::ReduceMean)
        second = kir::binary(BinaryOp::Div, second, kir::var(acc[0]));
    }
    for (auto [value, total] : {std::pair{pair.first, first}, std::pair{pair.second, second}}) {
      if (value->dtype != total->dtype)
        total = kir::cast(value->dtype, total);
      kir::VarPtr result = kir::makeVar(valueName(*value), value->dtype);
      results_[value->id] = result;
      out.push_back(fromFusion(kir::let(result, total, value->name), value->range));
    }
  }

  /// argmax/argmin: the best value so far (the operand's register type) and its index
  /// along the reduced dimension (i64), starting at (the worst value, index 0).
  void declareArgAccumulators(const ir::Value &reduction, std::map<unsigned, kir::VarPtr> &values,
                              std::map<unsigned, kir::VarPtr> &indices, std::vector<Stmt> &out) {
    ir::DType type = accumulatorType(reduction.operands[0]->dtype);
    bool isMax = reduction.op == ir::Op::ReduceArgMax;
    // The pair starts at (the worst value, index 0), not at "none": it loses to every
    // element but one equal to that value, and a row whose elements all equal it answers
    // index 0 anyway. So no element asks whether the pair holds one yet.
    double start = isMax ? -INFINITY : INFINITY;
    if (!ir::isFloat(type))
      start = type == ir::DType::I32 ? (isMax ? -2147483648.0 : 2147483647.0)
                                     : std::copysign(9223372036854775808.0, start);
    std::string who = reduction.name.empty() ? valueName(reduction) : reduction.name;
    kir::VarPtr value = kir::makeVar(valueName(reduction) + "_best", type);
    kir::VarPtr index = kir::makeVar(valueName(reduction) + "_at", ir::DType::I64);
    values[reduction.id] = value;
    indices[reduction.id] = index;
    out.push_back(fromFusion(
        kir::declare(value, kir::constant(start, type),
                     ir::opName(reduction.op).str() + " of " + who + ": the best value so far"),
        reduction.range));
    out.push_back(fromFusion(kir::declare(index, kir::index(0), "and its index"), reduction.range));
  }

  /// Whether each thread's serial loops visit `root`'s indices in increasing order: its
  /// index is affine in the loop variables with static strides, and each serial loop's
  /// stride exceeds the span of the serial loops inside it (`split V by 8` then by the
  /// thread count, unreordered). Anything else (a runtime stride, `reorder (Vv, Vp)`, a
  /// serial loop of another dimension) answers false.
  bool threadVisitsInIndexOrder(ir::DimId root) const {
    const Expr &index = cx_.rootIndex[root];
    auto indexWith = [&](int hot) -> std::optional<int64_t> {
      Expr e = kir::substitute(index, [&](const kir::VarPtr &v) -> Expr {
        for (size_t loop = 0; loop < cx_.loopVars.size(); ++loop)
          if (cx_.loopVars[loop] == v)
            return kir::index(static_cast<int>(loop) == hot ? 1 : 0);
        return nullptr;
      });
      return kir::asConstant(kir::simplify(e));
    };
    std::optional<int64_t> base = indexWith(-1);
    if (!base)
      return false;
    std::vector<int> serial = plan_.serialLoops();
    int64_t span = 0; // of the loops inside the current one
    for (auto it = serial.rbegin(); it != serial.rend(); ++it) {
      std::optional<int64_t> at = indexWith(*it);
      if (!at || *at - *base <= span || *at - *base > (int64_t(1) << 31))
        return false;
      if (std::next(it) == serial.rend())
        break; // the outermost loop's extent bounds no stride (it may be a runtime one)
      std::optional<int64_t> extent = kir::asConstant(cx_.extentOf(plan_.loops[*it].extent));
      if (!extent || *extent > (int64_t(1) << 31))
        return false;
      // Strides and extents are below 2^31, so the product fits; the sum is checked.
      if (llvm::AddOverflow(span, (*at - *base) * (*extent - 1), span))
        return false;
    }
    return true;
  }

  /// The pair (best, at) takes (x, i) when x is better: greater (argmax) or smaller
  /// (argmin), equal at a lower index, or a NaN where the best is not a NaN at a lower
  /// index. The order is total, so the elements may come in any order (device.cuh's
  /// fsl_arg_better is the same rule for the warp and block combines). In index order the
  /// rule is a strict comparison: x greater, or unordered (a NaN), while best is no NaN.
  void accumulateArg(const ir::Value &reduction, const kir::VarPtr &best, const kir::VarPtr &at,
                     Expr x, std::vector<Stmt> &element) {
    Expr i = cx_.rootIndex[reduction.reduced.front()];
    if (x->dtype != best->dtype)
      x = kir::cast(best->dtype, x);
    Expr wins = argWins(reduction, x, i, kir::var(best), kir::var(at),
                        threadVisitsInIndexOrder(reduction.reduced.front()));
    kir::VarPtr take = kir::makeVar(valueName(reduction) + "_wins", ir::DType::Bool);
    element.push_back(fromFusion(kir::let(take, wins), reduction.range));
    element.push_back(fromFusion(kir::assign(best, kir::select(kir::var(take), x, kir::var(best))),
                                 reduction.range));
    element.push_back(
        fromFusion(kir::assign(at, kir::select(kir::var(take), i, kir::var(at))), reduction.range));
  }

  /// Whether (x, i) replaces the pair (b, a) (accumulateArg's rule); `inOrder`: the pairs
  /// come in increasing index order, so a strict comparison decides.
  static Expr argWins(const ir::Value &reduction, Expr x, Expr i, Expr b, Expr a, bool inOrder) {
    bool isMax = reduction.op == ir::Op::ReduceArgMax;
    using kir::BinaryOp;
    auto isNan = [](Expr e) { return kir::binary(BinaryOp::Ne, e, e); };
    Expr better = kir::binary(isMax ? BinaryOp::Gt : BinaryOp::Lt, x, b);
    if (inOrder) {
      // The first of equal values and the first NaN are already held when a later one
      // comes: x wins when greater, or unordered (a NaN), while b is no NaN.
      if (!ir::isFloat(b->dtype))
        return better;
      return kir::binary(
          BinaryOp::And,
          kir::unary(kir::UnaryOp::Not, kir::binary(isMax ? BinaryOp::Le : BinaryOp::Ge, x, b)),
          kir::binary(BinaryOp::Eq, b, b));
    }
    Expr wins = kir::binary(BinaryOp::Or, better,
                            kir::binary(BinaryOp::And, kir::binary(BinaryOp::Eq, x, b),
                                        kir::binary(BinaryOp::Lt, i, a)));
    if (!ir::isFloat(b->dtype))
      return wins;
    Expr nanWins = kir::unary(
        kir::UnaryOp::Not, kir::binary(BinaryOp::And, isNan(b), kir::binary(BinaryOp::Lt, a, i)));
    return kir::select(isNan(x), nanWins, wins);
  }

  LowerContext &cx_;
  const Plan &plan_;
  const ir::Fusion &f_;
  std::map<unsigned, kir::BufferPtr> persistentBuffers_;
  std::map<ir::DType, kir::BufferPtr> scratch_;
  kir::BufferPtr pairScratch_; // argmax/argmin block reductions
  std::map<unsigned, kir::VarPtr> results_;
  std::map<unsigned, kir::BufferPtr> columnPartials_; // the inner-outer form's
  std::map<unsigned, kir::VarPtr> totals_;            // a block's column, per element
  int blockReductions_ = 0;
  bool dependentsLaunched_ = false; // grid_sync's first barrier has let the next kernel in
};

} // namespace

bool buildLoopNests(LowerContext &context) { return Builder(context).run(); }

bool buildGridRows(LowerContext &context) { return Builder(context).runGridRows(); }

} // namespace fsl::lower
