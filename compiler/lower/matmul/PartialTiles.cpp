// PartialTiles.cpp — parts of an output tile stored, counted in, and added by the CTA that
// arrives last (PartialTiles.h).
#include "lower/matmul/PartialTiles.h"

#include "lower/matmul/Build.h"
#include "lower/matmul/Matmul.h"
#include "support/Internal.h"

#include <numeric>

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

/// Accumulators the last part's CTA adds at a time (see finishPartialTile).
constexpr int64_t kCombineChunk = 8;

Expr outputTiles(const MatmulPlan &plan, const std::function<Expr(ir::DimId)> &extent) {
  auto along = [&](ir::DimId dim, int64_t tile) {
    return (extent(dim) + kir::index(tile - 1)) / kir::index(tile);
  };
  return along(plan.m, plan.tileM) * along(plan.n, plan.tileN);
}

int64_t partialSlotElements(const MatmulPlan &plan) {
  return plan.accumulators() * 128 * plan.warpgroupsPerTile();
}

kir::BufferPtr allocateArrivalWord(const MatmulPlan &plan, const KernelNames &names,
                                   SharedLayout &layout) {
  kir::BufferPtr word =
      makeBuffer(names.fresh("last_part"), ir::DType::I32, kir::MemorySpace::Shared,
                 {plan.tileGroups}, kir::Swizzle::None, 4);
  layout.allocations.push_back(sharedAllocation(
      word, layout.bytes,
      plan.tileGroups > 1 ? "the parts of its tile that arrived before a consumer group's"
                          : "the parts of the tile that arrived before this CTA's",
      plan.tilesOrigin));
  layout.bytes += 4 * plan.tileGroups;
  return word;
}

Stmt finishPartialTile(const MatmulPlan &plan, const KernelNames &names, const CtaThreads &threads,
                       const Accumulators &accumulators, const kir::BufferPtr &lastPart,
                       const PartialTile &part, Expr whole, Stmt epilogue) {
  FSL_INTERNAL_ASSERT(plan.partials && plan.arrivals && !accumulators.acc2,
                      "a partial tile without its workspaces, or of two products");
  const int64_t count = plan.accumulators(), threadsOfGroup = 128 * plan.warpgroupsPerTile();
  Expr t = kir::var(threads.tid) - threads.firstThreadOfGroup(plan);
  Expr group = threads.group ? kir::var(threads.group) : kir::index(0);
  auto at = [&](Expr slot, Expr i) {
    return (slot * kir::index(count) + i) * kir::index(threadsOfGroup) + t;
  };
  kir::VarPtr i = names.var("i"), p = names.var("p"), slot = names.var("part_slot");

  kir::VarPtr finish = kir::makeVar(names.fresh("finish"), ir::DType::Bool);

  // Store this CTA's part and count it in.
  std::vector<Stmt> store;
  store.push_back(fromDirective(kir::forLoop(i, kir::index(count), kir::LoopKind::Unrolled,
                                             kir::store(plan.partials, at(part.slot, kir::var(i)),
                                                        kir::load(accumulators.acc, kir::var(i)))),
                                plan.tilesOrigin,
                                "this CTA's part of the tile: its accumulators, a thread's apart"));
  store.push_back(threads.consumerBarrier(plan, "the group's part is stored"));
  store.push_back(kir::ifThen(
      kir::binary(kir::BinaryOp::Eq, kir::var(threads.tid), threads.firstThreadOfGroup(plan)),
      kir::atomicAdd(lastPart, group, plan.arrivals, part.counter, kir::index(1)), nullptr,
      "count the part in (release: the group's stores; acquire: the earlier parts)"));
  store.push_back(threads.consumerBarrier(plan, "the count reaches the group"));
  PartialTile::Parts counted = part.locate(store);
  store.push_back(kir::assign(
      finish, kir::binary(kir::BinaryOp::Eq, kir::load(lastPart, group), counted.laterParts)));

  // The last part's CTA adds them all in K order: the same sum whoever arrives last.
  // kCombineChunk accumulators at a time, every part of them before the next chunk: the
  // loads in flight take that many registers beside the accumulators (all of a thread's
  // at once spilled within the consumers' registers).
  // Whole chunks: a thread's accumulators are a multiple of 4 (m64nN: N / 2 a thread).
  const int64_t chunk = std::gcd(kCombineChunk, count);
  kir::VarPtr c = names.var("chunk"), j = names.var("j");
  Expr element = kir::var(c) * kir::index(chunk) + kir::var(j);
  std::vector<Stmt> combine;
  PartialTile::Parts parts = part.locate(combine);
  std::vector<Stmt> perChunk;
  perChunk.push_back(
      kir::forLoop(j, kir::index(chunk), kir::LoopKind::Unrolled,
                   kir::store(accumulators.acc, element,
                              kir::load(plan.partials, at(parts.firstSlot, element)))));
  perChunk.push_back(fromDirective(
      kir::forLoop(
          p, parts.laterParts, kir::LoopKind::Serial,
          kir::block(
              {kir::let(slot, parts.laterSlot(kir::var(p) + kir::index(1))),
               kir::forLoop(
                   j, kir::index(chunk), kir::LoopKind::Unrolled,
                   kir::store(
                       accumulators.acc, element,
                       kir::binary(kir::BinaryOp::Add, kir::load(accumulators.acc, element),
                                   kir::load(plan.partials, at(kir::var(slot), element)))))})),
      plan.tilesOrigin, "the later parts, in K order"));
  combine.push_back(
      fromDirective(kir::forLoop(c, kir::index(count / chunk), kir::LoopKind::Unrolled,
                                 kir::block(std::move(perChunk))),
                    plan.tilesOrigin,
                    "the last part: the tile's parts added, part 0 first, " +
                        std::to_string(chunk) + " accumulators at a time"));

  std::vector<Stmt> out;
  Expr isWhole = whole ? whole : kir::constant(0, ir::DType::Bool);
  out.push_back(kir::declare(finish, isWhole,
                             whole ? "a whole tile finishes here; a part, if it arrives last"
                                   : "a part finishes the tile if it arrives last"));
  Stmt stored = kir::block(std::move(store));
  Stmt combined = kir::block(std::move(combine));
  out.push_back(whole ? kir::ifThen(kir::unary(kir::UnaryOp::Not, whole), stored) : stored);
  out.push_back(kir::ifThen(
      kir::var(finish),
      kir::block({whole ? kir::ifThen(kir::unary(kir::UnaryOp::Not, whole), combined) : combined,
                  std::move(epilogue)})));
  return kir::block(std::move(out));
}

/// Threads of a CTA of the counters' zeroing kernel.
constexpr int64_t kZeroThreads = 256;

bool buildArrivalsZero(LowerContext &cx) {
  const MatmulPlan &plan = *cx.matmul;
  KernelNames names(cx.fusion);
  cx.addParameters(nullptr);
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::Tensor;
  kp.buffer = plan.arrivals;
  cx.kernel.params.push_back(kp);
  Expr tiles = outputTiles(plan, [&](ir::DimId dim) { return cx.dimExtent(dim); });
  kir::VarPtr block = names.var("block"), thread = names.var("thread"), tile = names.var("tile");
  Stmt nest = kir::block({
      kir::let(tile, kir::var(block) * kir::index(kZeroThreads) + kir::var(thread)),
      kir::ifThen(kir::var(tile) < tiles,
                  kir::store(plan.arrivals, kir::var(tile), kir::constant(0, ir::DType::I32)),
                  nullptr, "a counter a tile"),
  });
  nest = kir::parallelLoop(thread, kir::index(kZeroThreads), kir::Axis::TIDx, nest);
  Expr blocks = (tiles + kir::index(kZeroThreads - 1)) / kir::index(kZeroThreads);
  nest = fromDirective(kir::parallelLoop(block, blocks, kir::Axis::BIDx, nest), plan.tilesOrigin,
                       "the tiles' arrival counters, zeroed for the product's kernel");
  // Programmatic dependent launch: the product's kernel starts while this one runs, and
  // waits for its counters at its grid dependency wait.
  cx.kernel.body =
      kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents, nullptr), nest});
  kir::LaunchShape &launch = cx.kernel.launch;
  launch.grid = {blocks, kir::index(1), kir::index(1)};
  launch.block = {kir::index(kZeroThreads), kir::index(1), kir::index(1)};
  launch.maxThreads = kZeroThreads;
  return true;
}

} // namespace fsl::lower
