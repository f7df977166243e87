// MainLoop.cpp — the operands' tensor maps, the stage ring and its barriers, the
// producer's loads and the consumers' wgmma K loop (MainLoop.h).
#include "lower/matmul/MainLoop.h"

#include "kir/Layout.h"
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;
using kir::withComment;

// --- Tensor maps and storage ---------------------------------------------------------------

bool isMatmulOperand(const MatmulPlan &plan, unsigned param) {
  return param == plan.a.param || param == plan.b.param ||
         (plan.product2 && param == plan.b2.param);
}

kir::TensorMapPtr operandTensorMap(const LowerContext &cx, const MatmulPlan &plan,
                                   const KernelNames &names, unsigned paramIndex,
                                   const kir::BufferPtr &buffer) {
  const ir::Param &param = cx.fusion.params[paramIndex];
  auto map = std::make_shared<kir::TensorMap>();
  map->name = names.fresh(param.name + "_map");
  map->global = buffer;
  for (ir::DimId dim : param.dims)
    map->extents.push_back(cx.dimExtent(dim));
  const MatmulOperand &operand = paramIndex == plan.a.param   ? plan.a
                                 : paramIndex == plan.b.param ? plan.b
                                                              : plan.b2;
  if (!operand.kContiguous)
    // [K, N]: 64 K rows of one 128-byte span of N; a stage takes BN / span boxes.
    map->box = {plan.tileK, kir::swizzleSpanBytes(kir::Swizzle::Bytes128) /
                                static_cast<int64_t>(ir::dtypeBytes(operand.dtype))};
  else if (&operand == &plan.b || &operand == &plan.b2)
    // Each CTA of a cluster loads 1/C of the shared b tile with multicast; in boxes of at
    // most 256 rows.
    map->box = {plan.bRowsLoaded() / plan.bBoxes(), plan.tileK};
  else if (&operand == &plan.a)
    // Each CTA of a cluster along N loads 1/C of the shared a tile with multicast.
    map->box = {plan.aRowsLoaded(), plan.tileK};
  else
    map->box = {param.dims[0] == plan.m ? plan.tileM : plan.tileN, plan.tileK};
  map->swizzle = kir::Swizzle::Bytes128;
  return map;
}

void allocateOperandRings(const MatmulPlan &plan, const KernelNames &names,
                          MainLoopStorage &storage, SharedLayout &layout) {
  const ir::Fusion &f = *plan.fusion;
  int64_t s = plan.stages;
  int64_t bytes = ir::dtypeBytes(plan.a.dtype);
  int64_t aBytes = s * plan.tileM * plan.tileK * bytes;
  int64_t bBytes = s * plan.tileN * plan.tileK * bytes;
  storage.aTiles = makeBuffer(names.fresh("a_tiles"), plan.a.dtype, kir::MemorySpace::Shared,
                              {s * plan.tileM * plan.tileK}, kir::Swizzle::Bytes128,
                              kir::swizzleRepeatBytes(kir::Swizzle::Bytes128));
  storage.bTiles = makeBuffer(names.fresh("b_tiles"), plan.b.dtype, kir::MemorySpace::Shared,
                              {s * plan.tileN * plan.tileK}, kir::Swizzle::Bytes128,
                              kir::swizzleRepeatBytes(kir::Swizzle::Bytes128));
  auto stagesOf = [&](const ir::Param &param, int64_t rows) {
    return std::to_string(s) + " stages of the " + std::to_string(rows) + " x " +
           std::to_string(plan.tileK) + " tile of " + param.name + " (128-byte swizzle)";
  };
  layout.allocations.push_back(sharedAllocation(storage.aTiles, layout.bytes,
                                                stagesOf(f.params[plan.a.param], plan.tileM),
                                                plan.pipelineOrigin));
  layout.bytes += aBytes;
  layout.allocations.push_back(
      sharedAllocation(storage.bTiles, layout.bytes, stagesOf(f.params[plan.b.param], plan.tileN)));
  layout.bytes += bBytes;
  if (plan.product2) {
    storage.b2Tiles = makeBuffer(names.fresh("b2_tiles"), plan.b2.dtype, kir::MemorySpace::Shared,
                                 {s * plan.tileN * plan.tileK}, kir::Swizzle::Bytes128,
                                 kir::swizzleRepeatBytes(kir::Swizzle::Bytes128));
    layout.allocations.push_back(sharedAllocation(storage.b2Tiles, layout.bytes,
                                                  stagesOf(f.params[plan.b2.param], plan.tileN) +
                                                      ", for the second product"));
    layout.bytes += bBytes;
  }
}

void allocateStageBarriers(const MatmulPlan &plan, const KernelNames &names,
                           MainLoopStorage &storage, SharedLayout &layout) {
  int64_t s = plan.stages;
  storage.full = makeBuffer(names.fresh("full"), ir::DType::I64, kir::MemorySpace::Shared, {s},
                            kir::Swizzle::None, 8);
  layout.allocations.push_back(
      sharedAllocation(storage.full, layout.bytes, "full barriers: a stage's tiles have landed"));
  layout.bytes += 8 * s;
  if (plan.warpSpecialized) {
    storage.empty = makeBuffer(names.fresh("empty"), ir::DType::I64, kir::MemorySpace::Shared, {s},
                               kir::Swizzle::None, 8);
    layout.allocations.push_back(sharedAllocation(
        storage.empty, layout.bytes, "empty barriers: the consumers are done with a stage"));
    layout.bytes += 8 * s;
  }
  if (plan.tileGroups > 1) {
    storage.turn = makeBuffer(names.fresh("turn"), ir::DType::I64, kir::MemorySpace::Shared, {2},
                              kir::Swizzle::None, 8);
    layout.allocations.push_back(
        sharedAllocation(storage.turn, layout.bytes,
                         "turn barriers: a consumer group's products may start once "
                         "the other group's previous ones are issued"));
    layout.bytes += 16;
  }
}

Stmt initStageBarriers(const MatmulPlan &plan, const KernelNames &names, const CtaThreads &threads,
                       const MainLoopStorage &storage) {
  auto init = [&](const kir::BufferPtr &barrier, kir::VarPtr stage, int64_t arrivals,
                  const std::string &comment) {
    return kir::forLoop(
        stage, kir::index(plan.stages), kir::LoopKind::Unrolled,
        withComment(kir::mbarrierInit(barrier, kir::var(stage), kir::index(arrivals)), comment));
  };
  std::vector<Stmt> inits;
  inits.push_back(
      init(storage.full, names.var("stage"), 1, "one arrival (with the expected bytes) a phase"));
  if (plan.warpSpecialized)
    inits.push_back(init(storage.empty, names.var("stage"),
                         plan.warpgroupsPerTile() * (plan.multicast ? plan.clusterSize() : 1),
                         plan.multicast ? "one arrival a consumer warpgroup of the cluster a phase"
                         : plan.tileGroups > 1
                             ? "one arrival a warpgroup of the consumer group on the stage's tile"
                             : "one arrival a consumer warpgroup a phase"));
  if (plan.tileGroups > 1) {
    kir::VarPtr g = names.var("group");
    Stmt init = withComment(
        kir::mbarrierInit(storage.turn, kir::var(g), kir::index(plan.warpgroupsPerTile())),
        "one arrival a warpgroup of the other group");
    inits.push_back(kir::forLoop(g, kir::index(2), kir::LoopKind::Unrolled, init));
  }
  // The fence makes the initialized barriers visible to the asynchronous proxy, which
  // completes TMA transactions on them (CUDA programming guide, "Using TMA to transfer
  // multi-dimensional arrays").
  inits.push_back(withComment(kir::fenceProxyAsync(), "the barriers, for the TMA unit"));
  return kir::ifThen(threads.isThread(0), kir::block(std::move(inits)), nullptr,
                     "one thread initializes the barriers");
}

Accumulators allocateAccumulators(const MatmulPlan &plan, const KernelNames &names,
                                  std::vector<Stmt> &out) {
  Accumulators accumulators;
  accumulators.acc = makeBuffer(names.fresh("acc"), ir::DType::F32, kir::MemorySpace::Local,
                                {plan.accumulators()});
  out.push_back(kir::allocate(accumulators.acc, "f32 accumulators: the thread's fragments of " +
                                                    std::to_string(plan.warpM) + " x " +
                                                    std::to_string(plan.warpN)));
  if (plan.product2) {
    accumulators.acc2 = makeBuffer(names.fresh("acc2"), ir::DType::F32, kir::MemorySpace::Local,
                                   {plan.accumulators()});
    out.push_back(kir::allocate(accumulators.acc2, "the second product's, in the same fragments"));
  }
  return accumulators;
}

// --- The K loop ------------------------------------------------------------------------------

Expr MainLoop::iteration(const WorkTile &tile, Expr kTile) const {
  if (!tile.useBase)
    return kTile;
  return tile.useBase + kTile;
}

/// The ring position of the tile's first k tile, declared in `out`: one division by S a
/// tile rather than one a k tile.
StageCounter MainLoop::startCounter(const WorkTile &tile, std::vector<Stmt> &out) const {
  StageCounter counter{names_.var("stage"), names_.var("phase")};
  int64_t s = plan_.stages;
  Expr base = iteration(tile, kir::index(0));
  out.push_back(kir::declare(counter.stage, base % kir::index(s),
                             "the ring position of the tile's first k tile"));
  out.push_back(kir::declare(counter.phase, base / kir::index(s) % kir::index(2),
                             "the parity of its use of the stage"));
  return counter;
}

/// The next k tile's stage: one further round the ring, the parity flipping where it
/// wraps to stage 0. Selects rather than a branch: nothing in the K loop's body but its
/// products and their barriers branches.
Stmt MainLoop::advance(const StageCounter &counter) const {
  int64_t s = plan_.stages;
  Expr stage = kir::var(counter.stage), phase = kir::var(counter.phase);
  return kir::block({
      kir::assign(counter.stage,
                  kir::select(kir::binary(kir::BinaryOp::Eq, stage, kir::index(s - 1)),
                              kir::index(0), stage + kir::index(1))),
      kir::assign(counter.phase, kir::select(kir::binary(kir::BinaryOp::Eq, stage, kir::index(0)),
                                             kir::index(1) - phase, phase)),
  });
}

/// The stage `back` k tiles before the counter's (back <= S: with one stage, itself).
Expr MainLoop::stageBefore(const StageCounter &counter, int64_t back) const {
  Expr stage = kir::var(counter.stage);
  return kir::select(stage < kir::index(back), stage + kir::index(plan_.stages - back),
                     stage - kir::index(back));
}

/// Expect the stage's bytes, then load k tile `kTile` of both operands into `stage`.
Stmt MainLoop::loadStage(const WorkTile &tile, Expr kTile, Expr stage) const {
  Expr k = (tile.kBegin ? tile.kBegin + kTile : kTile) * kir::index(plan_.tileK);
  int64_t bytes = plan_.stageBytes();
  std::vector<Stmt> loads = {
      withComment(kir::mbarrierArriveExpectTx(storage_.full, stage, kir::index(bytes)),
                  "the whole boxes count, zero-filled parts too"),
      loadA(tile, k, stage),
      loadB(tile, k, stage, storage_.mapB, storage_.bTiles),
  };
  if (plan_.product2)
    loads.push_back(loadB(tile, k, stage, storage_.mapB2, storage_.b2Tiles));
  return kir::block(std::move(loads));
}

/// The a tile of a stage: one box of BM rows; in a cluster along N with multicast, the CTA
/// of rank r loads rows [r BM / C, (r + 1) BM / C) into every CTA of the cluster.
Stmt MainLoop::loadA(const WorkTile &tile, const Expr &k, const Expr &stage) const {
  Expr base = stage * kir::index(tileElements(plan_.tileM));
  Expr row = kir::var(tile.mTile) * kir::index(plan_.tileM);
  if (!(plan_.multicast && plan_.clusterN > 1))
    return kir::tmaLoad(storage_.mapA, {row, k}, storage_.aTiles, base, storage_.full, stage,
                        /*multicastMask=*/nullptr);
  int64_t c = plan_.clusterN, rows = plan_.aRowsLoaded();
  Expr part = kir::var(threads_.clusterRank) * kir::index(rows);
  return fromDirective(kir::tmaLoad(storage_.mapA, {row + part, k}, storage_.aTiles,
                                    base + part * kir::index(plan_.tileK), storage_.full, stage,
                                    kir::index((int64_t(1) << c) - 1)),
                       plan_.clusterOrigin,
                       "1/" + std::to_string(c) + " of the a tile, into every CTA of the cluster");
}

/// The b tile of a stage: one box of BN rows when K is contiguous; with N contiguous
/// ([K, N]), BN / span boxes of 64 K rows by one 128-byte span of N, each a block of
/// 64 x 128 bytes, consecutive (the N-major wgmma operand's "leading" stride).
Stmt MainLoop::loadB(const WorkTile &tile, const Expr &k, const Expr &stage,
                     const kir::TensorMapPtr &map, const kir::BufferPtr &tiles) const {
  Expr base = stage * kir::index(tileElements(plan_.tileN));
  // With multicast, the CTA of rank r loads part r of C of the tile into every CTA of the
  // cluster (the same offset, each CTA's full barrier counting the bytes).
  bool shared = plan_.multicast && plan_.clusterM > 1;
  int64_t c = shared ? plan_.clusterM : 1;
  Expr mask = shared ? kir::index((int64_t(1) << c) - 1) : nullptr;
  auto load = [&](std::vector<Expr> coordinates, Expr offset) {
    Stmt s = kir::tmaLoad(map, std::move(coordinates), tiles, std::move(offset), storage_.full,
                          stage, mask);
    if (!mask)
      return s;
    return fromDirective(s, plan_.clusterOrigin,
                         "1/" + std::to_string(c) +
                             " of the b tile, into every CTA of the cluster");
  };
  if (plan_.b.kContiguous) {
    int64_t rows = plan_.bRowsLoaded(), boxes = plan_.bBoxes(), boxRows = rows / boxes;
    Expr part = mask ? kir::var(threads_.clusterRank) * kir::index(rows) : kir::index(0);
    if (boxes == 1)
      return load({kir::var(tile.nTile) * kir::index(plan_.tileN) + part, k},
                  base + part * kir::index(plan_.tileK));
    return names_.unrolled("box", boxes, [&](Expr box) {
      Expr row = part + box * kir::index(boxRows);
      return withComment(load({kir::var(tile.nTile) * kir::index(plan_.tileN) + row, k},
                              base + row * kir::index(plan_.tileK)),
                         "a TMA box has at most 256 rows: the b tile in " + std::to_string(boxes) +
                             " boxes of " + std::to_string(boxRows));
    });
  }
  int64_t span = kir::swizzleSpanBytes(kir::Swizzle::Bytes128) / operandBytes(),
          blocks = plan_.tileN / span;
  return names_.unrolled("block", blocks / c, [&](Expr jj) {
    Expr j = mask ? kir::var(threads_.clusterRank) * kir::index(blocks / c) + jj : jj;
    return load({k, kir::var(tile.nTile) * kir::index(plan_.tileN) + j * kir::index(span)},
                base + j * kir::index(plan_.tileK * span));
  });
}

Stmt MainLoop::producerLoads(const WorkTile &tile) const {
  kir::VarPtr kTile = names_.var("k_tile");
  std::vector<Stmt> out;
  StageCounter at = startCounter(tile, out);
  Stmt body = kir::block({
      withComment(
          kir::mbarrierWait(storage_.empty, kir::var(at.stage), kir::index(1) - kir::var(at.phase)),
          "the consumers released the stage's previous use"),
      loadStage(tile, kir::var(kTile), kir::var(at.stage)),
      advance(at),
  });
  out.push_back(kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial, std::move(body),
                             plan_.pipelineOrigin));
  return kir::block(std::move(out));
}

/// Fence, the warpgroup's wgmma over the k steps of `stage`, commit. The first k step of
/// a tile's first k tile replaces the accumulators (scale-d 0), the others add to them.
Stmt MainLoop::mmaOnStage(const Expr &stage, const Expr &kTile) const {
  int64_t in = plan_.instructionN;
  Stmt mma = names_.unrolled("k_step", plan_.tileK / 16, [&](Expr ks) {
    return names_.unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
      return names_.unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
        Expr accumulate = kir::binary(kir::BinaryOp::Or, kir::index(0) < kTile, kir::index(0) < ks);
        Expr at = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
        Expr offsetA =
            stage * kir::index(tileElements(plan_.tileM)) +
            (threads_.warpgroupRow(plan_) + mi * kir::index(64)) * kir::index(plan_.tileK) +
            ks * kir::index(16);
        Expr offsetB;
        bool transposeB = false;
        int64_t blockBytesB = 0;
        if (plan_.b.kContiguous) {
          offsetB =
              stage * kir::index(tileElements(plan_.tileN)) +
              (threads_.warpgroupColumn(plan_) + ni * kir::index(in)) * kir::index(plan_.tileK) +
              ks * kir::index(16);
        } else {
          // N-major: the instruction's columns start in block (column / span); a k step is
          // 16 rows of the block down.
          int64_t spanBytes = kir::swizzleSpanBytes(kir::Swizzle::Bytes128);
          int64_t span = spanBytes / operandBytes();
          transposeB = true;
          blockBytesB = plan_.tileK * spanBytes;
          offsetB = stage * kir::index(tileElements(plan_.tileN)) +
                    (threads_.warpgroupColumn(plan_) + ni * kir::index(in)) / kir::index(span) *
                        kir::index(plan_.tileK * span) +
                    ks * kir::index(16 * span);
        }
        auto product = [&](const kir::BufferPtr &accumulator, const kir::BufferPtr &b) {
          return kir::wgmma(kir::WgmmaShape{64, static_cast<int>(in), 16}, plan_.a.dtype,
                            accumulator, at, storage_.aTiles, offsetA, /*transposeA=*/false,
                            /*blockBytesA=*/0, b, offsetB, transposeB, blockBytesB, accumulate);
        };
        if (!plan_.product2)
          return product(accumulators_.acc, storage_.bTiles);
        // The second product: the same a operand, b2's tile, its own accumulators.
        return kir::block({product(accumulators_.acc, storage_.bTiles),
                           product(accumulators_.acc2, storage_.b2Tiles)});
      });
    });
  });
  return kir::block({withComment(kir::wgmmaFence(), "the accumulators' earlier accesses first"),
                     kir::withOrigin(mma, plan_.mmaOrigin), kir::wgmmaCommit()});
}

Stmt MainLoop::consumerLoop(const WorkTile &tile) const {
  Stmt loop = plan_.warpSpecialized ? warpSpecializedLoop(tile) : singleRoleLoop(tile);
  return threads_.group ? inTurn(tile, loop) : loop;
}

/// A consumer warpgroup's K loop with a producer: one wgmma group in flight, the stage
/// before it released (with one stage, each is released as soon as its group is done).
Stmt MainLoop::warpSpecializedLoop(const WorkTile &tile) const {
  int64_t s = plan_.stages;
  bool inFlight = s > 1;
  kir::VarPtr kTile = names_.var("k_tile");
  Expr leader = threads_.warpgroupLeader();
  // With multicast, the stage is released in every CTA of the cluster: their producers
  // write into this CTA's stage too.
  auto release = [&](Expr at, const std::string &comment) {
    if (!plan_.multicast)
      return kir::ifThen(leader,
                         withComment(kir::mbarrierArrive(storage_.empty, at, nullptr), comment),
                         nullptr, "one thread a warpgroup");
    Stmt arrivals = names_.unrolled("peer", plan_.clusterSize(), [&](Expr peer) {
      return withComment(kir::mbarrierArrive(storage_.empty, at, peer),
                         comment + ", in each CTA of the cluster");
    });
    return kir::ifThen(leader, arrivals, nullptr, "one thread a warpgroup");
  };
  std::vector<Stmt> loop;
  StageCounter at = startCounter(tile, loop);
  std::vector<Stmt> body;
  body.push_back(
      withComment(kir::mbarrierWait(storage_.full, kir::var(at.stage), kir::var(at.phase)),
                  "the stage's tiles have landed (the parity of its use)"));
  body.push_back(mmaOnStage(kir::var(at.stage), kir::var(kTile)));
  if (inFlight) {
    body.push_back(withComment(kir::wgmmaWait(1),
                               "the previous stage's products are done; this one's run on"));
    body.push_back(kir::ifThen(kir::index(0) < kir::var(kTile),
                               release(stageBefore(at, 1), "the previous stage is free")));
  } else {
    body.push_back(withComment(kir::wgmmaWait(0), "this stage's products are done"));
    body.push_back(release(kir::var(at.stage), "the stage is free"));
  }
  body.push_back(advance(at));
  loop.push_back(kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial,
                              kir::block(std::move(body)), plan_.mmaOrigin));
  if (inFlight)
    loop.push_back(withComment(kir::wgmmaWait(0), "the tile's last products are done"));
  loop.push_back(zeroIfNoProduct(tile));
  // The counter is one past the last k tile's stage.
  if (inFlight)
    loop.push_back(kir::ifThen(kir::index(0) < tile.kCount,
                               release(stageBefore(at, 1), "the last stage is free")));
  return kir::block(std::move(loop));
}

/// With two consumer groups, the groups' products take turns, in the CTA's order of
/// items (group 0's round r, group 1's round r, group 0's round r + 1, ...): a group waits
/// until the other has issued the products of the item before its own, and then lets the
/// other go. Besides keeping the tensor cores to one group at a time, this keeps each
/// group at most one phase ahead of the `full` barriers of the stages it skips (the other
/// group's), which a parity wait needs.
Stmt MainLoop::inTurn(const WorkTile &tile, Stmt loop) const {
  Expr g = kir::var(threads_.group), r = kir::var(tile.round);
  Expr first = kir::binary(kir::BinaryOp::Eq, r + g, kir::index(0));
  Stmt wait =
      withComment(kir::mbarrierWait(storage_.turn, g, (r + g + kir::index(1)) % kir::index(2)),
                  "the other group has issued the products of the item before");
  Stmt pass =
      kir::ifThen(threads_.warpgroupLeader(),
                  withComment(kir::mbarrierArrive(storage_.turn, kir::index(1) - g, nullptr),
                              "the other group's turn"),
                  nullptr, "one thread a warpgroup");
  return kir::block({kir::ifThen(kir::unary(kir::UnaryOp::Not, first), wait, nullptr,
                                 "group 0's first item goes first"),
                     loop, pass});
}

/// The K loop without a producer: thread 0 loads S - 1 stages ahead; every warpgroup
/// waits for its products and a block barrier frees the stage.
Stmt MainLoop::singleRoleLoop(const WorkTile &tile) const {
  int64_t s = plan_.stages;
  std::vector<Stmt> out;
  // The prologue: k tiles 0 .. S - 2, each in its own stage.
  if (s > 1) {
    kir::VarPtr first = names_.var("k_tile");
    Stmt load = kir::ifThen(
        kir::var(first) < tile.kCount,
        loadStage(tile, kir::var(first), iteration(tile, kir::var(first)) % kir::index(s)));
    out.push_back(fromDirective(
        kir::ifThen(threads_.isThread(0),
                    kir::forLoop(first, kir::index(s - 1), kir::LoopKind::Unrolled, load)),
        plan_.pipelineOrigin, "the first " + std::to_string(s - 1) + " stages"));
  }
  kir::VarPtr kTile = names_.var("k_tile");
  StageCounter at = startCounter(tile, out);
  std::vector<Stmt> iterationBody;
  {
    // The load S - 1 tiles ahead goes into the stage the previous iteration read, which
    // the barrier that ended it has freed.
    kir::VarPtr next = names_.var("next_tile"), into = names_.var("next_stage");
    Stmt issue = kir::block({
        kir::let(next, kir::var(kTile) + kir::index(s - 1)),
        kir::ifThen(kir::var(next) < tile.kCount,
                    kir::block({kir::let(into, stageBefore(at, 1), "the previous k tile's"),
                                loadStage(tile, kir::var(next), kir::var(into))})),
    });
    iterationBody.push_back(kir::ifThen(threads_.isThread(0), issue, nullptr,
                                        "k tile k_tile + " + std::to_string(s - 1) + ", " +
                                            std::to_string(s - 1) + " stages ahead"));
  }
  iterationBody.push_back(
      withComment(kir::mbarrierWait(storage_.full, kir::var(at.stage), kir::var(at.phase)),
                  "the stage's tiles have landed (the parity of its use)"));
  iterationBody.push_back(mmaOnStage(kir::var(at.stage), kir::var(kTile)));
  iterationBody.push_back(withComment(kir::wgmmaWait(0), "this stage's products are done"));
  iterationBody.push_back(
      withComment(kir::barrier(), "every warpgroup is done with the stage before it is refilled"));
  iterationBody.push_back(advance(at));
  out.push_back(kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial,
                             kir::block(std::move(iterationBody)), plan_.mmaOrigin));
  out.push_back(zeroIfNoProduct(tile));
  return kir::block(std::move(out));
}

Stmt zeroAccumulatorsIfNoK(const MatmulPlan &plan, const KernelNames &names,
                           const Accumulators &accumulators, Expr kCount) {
  kir::VarPtr i = names.var("i");
  std::vector<Stmt> zero = {
      kir::store(accumulators.acc, kir::var(i), kir::constant(0, ir::DType::F32))};
  if (accumulators.acc2)
    zero.push_back(kir::store(accumulators.acc2, kir::var(i), kir::constant(0, ir::DType::F32)));
  return kir::ifThen(kir::binary(kir::BinaryOp::Eq, std::move(kCount), kir::index(0)),
                     kir::forLoop(i, kir::index(plan.accumulators()), kir::LoopKind::Unrolled,
                                  kir::block(std::move(zero))),
                     nullptr, "K = 0: no product writes the accumulators");
}

/// The accumulators are zeroed after an (empty) K loop, where no product is in flight (a
/// part of a split-K or stream-K tile may have no k tile where K has some); persistent
/// walks zero them once before the CTA's tiles instead (TileScheduler.h: hoistsZeroing).
Stmt MainLoop::zeroIfNoProduct(const WorkTile &tile) const {
  if (hoistsZeroing(plan_))
    return kir::block({});
  return zeroAccumulatorsIfNoK(plan_, names_, accumulators_, tile.kCount);
}

} // namespace fsl::lower
