// MainLoop.cpp — the operands' tensor maps, the stage ring and its barriers, the
// producer's loads and the consumers' wgmma K loop (MainLoop.h).
#include "lower/matmul/MainLoop.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;
using kir::StmtKind;

namespace {

Stmt mbarrierOp(StmtKind kind, const kir::BufferPtr &barrier, Expr index, Expr count,
                std::string comment = {}) {
  auto s = hopperNode(kind, std::move(comment));
  s->buffer = barrier;
  s->index = std::move(index);
  s->count = std::move(count);
  return s;
}

Stmt tmaLoad(const kir::TensorMapPtr &map, std::vector<Expr> coordinates,
             const kir::BufferPtr &tile, Expr offset, const kir::BufferPtr &barrier,
             Expr barrierIndex) {
  auto s = hopperNode(StmtKind::TmaLoad);
  s->tensorMap = map;
  s->coordinates = std::move(coordinates);
  s->buffer = tile;
  s->index = std::move(offset);
  s->barrier = barrier;
  s->barrierIndex = std::move(barrierIndex);
  return s;
}

Stmt wgmmaWait(int64_t pending, std::string comment) {
  auto s = hopperNode(StmtKind::WgmmaWait, std::move(comment));
  s->pending = pending;
  return s;
}

} // namespace

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
    map->box = {plan.tileK, 128 / static_cast<int64_t>(ir::dtypeBytes(operand.dtype))};
  else if (&operand == &plan.b && plan.multicast)
    // Each CTA of a cluster loads 1/C of the shared b tile.
    map->box = {plan.tileN / plan.clusterM, plan.tileK};
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
                              {s * plan.tileM * plan.tileK}, kir::Swizzle::Bytes128, 1024);
  storage.bTiles = makeBuffer(names.fresh("b_tiles"), plan.b.dtype, kir::MemorySpace::Shared,
                              {s * plan.tileN * plan.tileK}, kir::Swizzle::Bytes128, 1024);
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
                                 {s * plan.tileN * plan.tileK}, kir::Swizzle::Bytes128, 1024);
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
    auto s = hopperNode(StmtKind::MBarrierInit, comment);
    s->buffer = barrier;
    s->index = kir::var(stage);
    s->count = kir::index(arrivals);
    return kir::forLoop(stage, kir::index(plan.stages), kir::LoopKind::Unrolled, Stmt(s));
  };
  std::vector<Stmt> inits;
  inits.push_back(
      init(storage.full, names.var("stage"), 1, "one arrival (with the expected bytes) a phase"));
  if (plan.warpSpecialized)
    inits.push_back(init(storage.empty, names.var("stage"),
                         plan.warpgroupsPerTile() * (plan.multicast ? plan.clusterM : 1),
                         plan.multicast ? "one arrival a consumer warpgroup of the cluster a phase"
                         : plan.tileGroups > 1
                             ? "one arrival a warpgroup of the consumer group on the stage's tile"
                             : "one arrival a consumer warpgroup a phase"));
  if (plan.tileGroups > 1) {
    kir::VarPtr g = names.var("group");
    auto s = hopperNode(StmtKind::MBarrierInit, "one arrival a warpgroup of the other group");
    s->buffer = storage.turn;
    s->index = kir::var(g);
    s->count = kir::index(plan.warpgroupsPerTile());
    inits.push_back(kir::forLoop(g, kir::index(2), kir::LoopKind::Unrolled, Stmt(s)));
  }
  // The fence makes the initialized barriers visible to the asynchronous proxy, which
  // completes TMA transactions on them (CUDA programming guide, "Using TMA to transfer
  // multi-dimensional arrays").
  inits.push_back(hopperNode(StmtKind::FenceProxyAsync, "the barriers, for the TMA unit"));
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

/// The use number of k tile `kTile`: the k tile itself with one tile a CTA, else a
/// variable `it` defined in `body`.
Expr MainLoop::useNumber(const WorkTile &tile, std::vector<Stmt> &body, const kir::VarPtr &it,
                         const kir::VarPtr &kTile) const {
  if (!tile.useBase)
    return kir::var(kTile);
  body.push_back(kir::let(it, iteration(tile, kir::var(kTile)), "use number of the stage"));
  return kir::var(it);
}

/// Expect the stage's bytes, then load k tile `kTile` of both operands into `stage`.
Stmt MainLoop::loadStage(const WorkTile &tile, Expr kTile, Expr stage) const {
  Expr k = (tile.kBegin ? tile.kBegin + kTile : kTile) * kir::index(plan_.tileK);
  int64_t bytes = plan_.stageBytes();
  std::vector<Stmt> loads = {
      mbarrierOp(StmtKind::MBarrierArriveExpectTx, storage_.full, stage, kir::index(bytes),
                 "the whole boxes count, zero-filled parts too"),
      tmaLoad(storage_.mapA, {kir::var(tile.mTile) * kir::index(plan_.tileM), k}, storage_.aTiles,
              stage * kir::index(tileElements(plan_.tileM)), storage_.full, stage),
      loadB(tile, k, stage, storage_.mapB, storage_.bTiles),
  };
  if (plan_.product2)
    loads.push_back(loadB(tile, k, stage, storage_.mapB2, storage_.b2Tiles));
  return kir::block(std::move(loads));
}

/// The b tile of a stage: one box of BN rows when K is contiguous; with N contiguous
/// ([K, N]), BN / span boxes of 64 K rows by one 128-byte span of N, each a block of
/// 64 x 128 bytes, consecutive (the N-major wgmma operand's "leading" stride).
Stmt MainLoop::loadB(const WorkTile &tile, const Expr &k, const Expr &stage,
                     const kir::TensorMapPtr &map, const kir::BufferPtr &tiles) const {
  Expr base = stage * kir::index(tileElements(plan_.tileN));
  // With multicast, the CTA of rank r loads part r of C of the tile into every CTA of the
  // cluster (the same offset, each CTA's full barrier counting the bytes).
  int64_t c = plan_.multicast ? plan_.clusterM : 1;
  Expr mask = plan_.multicast ? kir::index((int64_t(1) << c) - 1) : nullptr;
  auto multicast = [&](Stmt load) {
    if (!mask)
      return load;
    auto s = std::make_shared<kir::StmtNode>(*load);
    s->multicastMask = mask;
    s->comment = "1/" + std::to_string(c) + " of the b tile, into every CTA of the cluster";
    s->origin = plan_.clusterOrigin;
    return Stmt(s);
  };
  if (plan_.b.kContiguous) {
    int64_t rows = plan_.tileN / c;
    Expr part = mask ? kir::var(threads_.clusterRank) * kir::index(rows) : kir::index(0);
    return multicast(tmaLoad(map, {kir::var(tile.nTile) * kir::index(plan_.tileN) + part, k}, tiles,
                             base + part * kir::index(plan_.tileK), storage_.full, stage));
  }
  int64_t span = 128 / operandBytes(), blocks = plan_.tileN / span;
  return names_.unrolled("block", blocks / c, [&](Expr jj) {
    Expr j = mask ? kir::var(threads_.clusterRank) * kir::index(blocks / c) + jj : jj;
    return multicast(
        tmaLoad(map, {k, kir::var(tile.nTile) * kir::index(plan_.tileN) + j * kir::index(span)},
                tiles, base + j * kir::index(plan_.tileK * span), storage_.full, stage));
  });
}

Stmt MainLoop::producerLoads(const WorkTile &tile) const {
  int64_t s = plan_.stages;
  kir::VarPtr kTile = names_.var("k_tile"), it = names_.var("it"), stage = names_.var("stage");
  std::vector<Stmt> body;
  Expr use = useNumber(tile, body, it, kTile);
  body.push_back(kir::let(stage, use % kir::index(s)));
  body.push_back(mbarrierOp(StmtKind::MBarrierWait, storage_.empty, kir::var(stage),
                            (use / kir::index(s) + kir::index(1)) % kir::index(2),
                            "the consumers released the stage's previous use"));
  body.push_back(loadStage(tile, kir::var(kTile), kir::var(stage)));
  return kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial, kir::block(std::move(body)),
                      plan_.pipelineOrigin);
}

/// Fence, the warpgroup's wgmma over the k steps of `stage`, commit. The first k step of
/// a tile's first k tile replaces the accumulators (scale-d 0), the others add to them.
Stmt MainLoop::mmaOnStage(const Expr &stage, const Expr &kTile) const {
  int64_t in = plan_.instructionN;
  Stmt mma = names_.unrolled("k_step", plan_.tileK / 16, [&](Expr ks) {
    return names_.unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
      return names_.unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
        auto w = hopperNode(StmtKind::Wgmma);
        w->shape = kir::WgmmaShape{64, static_cast<int>(in), 16};
        w->inputType = plan_.a.dtype;
        w->buffer = accumulators_.acc;
        w->accumulate = kir::binary(kir::BinaryOp::Or, kir::index(0) < kTile, kir::index(0) < ks);
        w->index = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
        w->operandA = storage_.aTiles;
        w->offsetA =
            stage * kir::index(tileElements(plan_.tileM)) +
            (threads_.warpgroupRow(plan_) + mi * kir::index(64)) * kir::index(plan_.tileK) +
            ks * kir::index(16);
        w->operandB = storage_.bTiles;
        if (plan_.b.kContiguous) {
          w->offsetB =
              stage * kir::index(tileElements(plan_.tileN)) +
              (threads_.warpgroupColumn(plan_) + ni * kir::index(in)) * kir::index(plan_.tileK) +
              ks * kir::index(16);
        } else {
          // N-major: the instruction's columns start in block (column / span); a k step is
          // 16 rows of the block down.
          int64_t span = 128 / operandBytes();
          w->transposeB = true;
          w->blockBytesB = plan_.tileK * 128;
          w->offsetB = stage * kir::index(tileElements(plan_.tileN)) +
                       (threads_.warpgroupColumn(plan_) + ni * kir::index(in)) / kir::index(span) *
                           kir::index(plan_.tileK * span) +
                       ks * kir::index(16 * span);
        }
        if (!plan_.product2)
          return Stmt(w);
        // The second product: the same a operand, b2's tile, its own accumulators.
        auto w2 = std::make_shared<kir::StmtNode>(*w);
        w2->buffer = accumulators_.acc2;
        w2->operandB = storage_.b2Tiles;
        return kir::block({Stmt(w), Stmt(w2)});
      });
    });
  });
  auto mmaNode = std::make_shared<kir::StmtNode>(*mma);
  mmaNode->origin = plan_.mmaOrigin;
  return kir::block({hopperNode(StmtKind::WgmmaFence, "the accumulators' earlier accesses first"),
                     mmaNode, hopperNode(StmtKind::WgmmaCommit)});
}

Stmt MainLoop::consumerLoop(const WorkTile &tile) const {
  Stmt loop = plan_.warpSpecialized ? warpSpecializedLoop(tile) : singleRoleLoop(tile);
  return threads_.group ? inTurn(tile, loop) : loop;
}

/// A consumer warpgroup's K loop with a producer: one wgmma group in flight, the stage
/// before it released (with one stage, each is released as soon as its group is done).
Stmt MainLoop::warpSpecializedLoop(const WorkTile &tile) const {
  int64_t s = plan_.stages;
  int64_t inFlight = s > 1 ? 1 : 0;
  kir::VarPtr kTile = names_.var("k_tile"), it = names_.var("it"), stage = names_.var("stage");
  Expr leader = threads_.warpgroupLeader();
  // With multicast, the stage is released in every CTA of the cluster: their producers
  // write into this CTA's stage too.
  auto release = [&](Expr use, const std::string &comment) {
    Expr at = use % kir::index(s);
    if (!plan_.multicast)
      return kir::ifThen(leader,
                         mbarrierOp(StmtKind::MBarrierArrive, storage_.empty, at, nullptr, comment),
                         nullptr, "one thread a warpgroup");
    Stmt arrivals = names_.unrolled("peer", plan_.clusterM, [&](Expr peer) {
      auto arrive = hopperNode(StmtKind::MBarrierArrive, comment + ", in each CTA of the cluster");
      arrive->buffer = storage_.empty;
      arrive->index = at;
      arrive->ctaRank = peer;
      return Stmt(arrive);
    });
    return kir::ifThen(leader, arrivals, nullptr, "one thread a warpgroup");
  };
  std::vector<Stmt> body;
  Expr use = useNumber(tile, body, it, kTile);
  body.push_back(kir::let(stage, use % kir::index(s)));
  body.push_back(mbarrierOp(StmtKind::MBarrierWait, storage_.full, kir::var(stage),
                            use / kir::index(s) % kir::index(2),
                            "the stage's tiles have landed (its use number's parity)"));
  body.push_back(mmaOnStage(kir::var(stage), kir::var(kTile)));
  if (inFlight) {
    body.push_back(wgmmaWait(1, "the previous stage's products are done; this one's run on"));
    body.push_back(kir::ifThen(kir::index(0) < kir::var(kTile),
                               release(use + kir::index(s - 1), "the previous stage is free")));
  } else {
    body.push_back(wgmmaWait(0, "this stage's products are done"));
    body.push_back(release(use, "the stage is free"));
  }
  std::vector<Stmt> loop;
  loop.push_back(kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial,
                              kir::block(std::move(body)), plan_.mmaOrigin));
  if (inFlight)
    loop.push_back(wgmmaWait(0, "the tile's last products are done"));
  loop.push_back(zeroIfNoProduct(tile));
  if (inFlight) {
    loop.push_back(kir::ifThen(
        kir::index(0) < tile.kCount,
        release(iteration(tile, tile.kCount) + kir::index(s - 1), "the last stage is free")));
  }
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
      mbarrierOp(StmtKind::MBarrierWait, storage_.turn, g, (r + g + kir::index(1)) % kir::index(2),
                 "the other group has issued the products of the item before");
  Stmt pass = kir::ifThen(threads_.warpgroupLeader(),
                          mbarrierOp(StmtKind::MBarrierArrive, storage_.turn, kir::index(1) - g,
                                     nullptr, "the other group's turn"),
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
    auto prologue = std::make_shared<kir::StmtNode>(
        *kir::ifThen(threads_.isThread(0),
                     kir::forLoop(first, kir::index(s - 1), kir::LoopKind::Unrolled, load)));
    prologue->comment = "the first " + std::to_string(s - 1) + " stages";
    prologue->origin = plan_.pipelineOrigin;
    out.push_back(prologue);
  }
  kir::VarPtr kTile = names_.var("k_tile");
  std::vector<Stmt> iterationBody;
  {
    // The load S - 1 tiles ahead goes into the stage the previous iteration read, which
    // the barrier that ended it has freed.
    kir::VarPtr next = names_.var("next_tile");
    Stmt issue = kir::block({
        kir::let(next, kir::var(kTile) + kir::index(s - 1)),
        kir::ifThen(
            kir::var(next) < tile.kCount,
            loadStage(tile, kir::var(next), iteration(tile, kir::var(next)) % kir::index(s))),
    });
    iterationBody.push_back(kir::ifThen(threads_.isThread(0), issue, nullptr,
                                        "k tile k_tile + " + std::to_string(s - 1) + ", " +
                                            std::to_string(s - 1) + " stages ahead"));
  }
  kir::VarPtr it = names_.var("it"), stage = names_.var("stage");
  Expr use = useNumber(tile, iterationBody, it, kTile);
  iterationBody.push_back(kir::let(stage, use % kir::index(s)));
  iterationBody.push_back(mbarrierOp(StmtKind::MBarrierWait, storage_.full, kir::var(stage),
                                     use / kir::index(s) % kir::index(2),
                                     "the stage's tiles have landed (its use number's parity)"));
  iterationBody.push_back(mmaOnStage(kir::var(stage), kir::var(kTile)));
  iterationBody.push_back(wgmmaWait(0, "this stage's products are done"));
  auto sync = std::make_shared<kir::StmtNode>(*kir::barrier());
  sync->comment = "every warpgroup is done with the stage before it is refilled";
  iterationBody.push_back(sync);
  out.push_back(kir::forLoop(kTile, tile.kCount, kir::LoopKind::Serial,
                             kir::block(std::move(iterationBody)), plan_.mmaOrigin));
  out.push_back(zeroIfNoProduct(tile));
  return kir::block(std::move(out));
}

/// With K = 0 no wgmma writes the accumulators: they are zeroed after the (empty) K loop,
/// where no product is in flight.
Stmt MainLoop::zeroIfNoProduct(const WorkTile &tile) const {
  kir::VarPtr i = names_.var("i");
  std::vector<Stmt> zero = {
      kir::store(accumulators_.acc, kir::var(i), kir::constant(0, ir::DType::F32))};
  if (accumulators_.acc2)
    zero.push_back(kir::store(accumulators_.acc2, kir::var(i), kir::constant(0, ir::DType::F32)));
  return kir::ifThen(kir::binary(kir::BinaryOp::Eq, tile.kCount, kir::index(0)),
                     kir::forLoop(i, kir::index(plan_.accumulators()), kir::LoopKind::Unrolled,
                                  kir::block(std::move(zero))),
                     nullptr, "K = 0: no product wrote the accumulators");
}

} // namespace fsl::lower
