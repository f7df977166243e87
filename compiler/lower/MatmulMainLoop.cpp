// MatmulMainLoop.cpp — the K loop of a matmul kernel: TMA loads of both operands' k tiles
// into a ring of S stages, and wgmma on each stage once its `full` barrier says it landed.
//
// Stages are numbered by use across the CTA's tiles: k tile `k` of the CTA's `i`-th tile is
// use `it = i * k_tiles + k`, in stage `it % S`, completing phase `it / S` of the stage's
// barriers (so waits test parity `(it / S) % 2`).
//
// With a producer warpgroup (warp_specialize), its thread 0 waits until the consumers have
// released a stage (`empty`, parity of the previous use: the first pass through the ring
// waits on parity 1 of fresh barriers, which passes at once), then loads; each consumer
// warpgroup keeps one wgmma group in flight (wait 1) and releases the stage before.
// Without one, consumer thread 0 loads S - 1 stages ahead and a block barrier at the end of
// each k tile frees the stage for the next load.
#include "lower/MatmulBuilder.h"

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

Expr MatmulBuilder::iteration(Expr kTile) const {
  if (!useBase_)
    return kTile;
  return useBase_ + kTile;
}

/// The use number of k tile `kTile`: the k tile itself with one tile a CTA, else a
/// variable `it` defined in `body`.
Expr MatmulBuilder::useNumber(std::vector<Stmt> &body, const kir::VarPtr &it,
                              const kir::VarPtr &kTile) const {
  if (!useBase_)
    return kir::var(kTile);
  body.push_back(kir::let(it, iteration(kir::var(kTile)), "use number of the stage"));
  return kir::var(it);
}

/// Expect the stage's bytes, then load k tile `kTile` of both operands into `stage`.
Stmt MatmulBuilder::loadStage(Expr kTile, Expr stage) {
  Expr k = (kBegin_ ? kBegin_ + kTile : kTile) * kir::index(plan_.tileK);
  int64_t bytes = plan_.stageBytes();
  std::vector<Stmt> loads = {
      mbarrierOp(StmtKind::MBarrierArriveExpectTx, full_, stage, kir::index(bytes),
                 "the whole boxes count, zero-filled parts too"),
      tmaLoad(mapA_, {kir::var(mTile_) * kir::index(plan_.tileM), k}, aTiles_,
              stage * kir::index(tileElements(plan_.tileM)), full_, stage),
      loadB(k, stage, mapB_, bTiles_),
  };
  if (plan_.product2)
    loads.push_back(loadB(k, stage, mapB2_, b2Tiles_));
  return kir::block(std::move(loads));
}

/// The b tile of a stage: one box of BN rows when K is contiguous; with N contiguous
/// ([K, N]), BN / span boxes of 64 K rows by one 128-byte span of N, each a block of
/// 64 x 128 bytes, consecutive (the N-major wgmma operand's "leading" stride).
Stmt MatmulBuilder::loadB(const Expr &k, const Expr &stage, const kir::TensorMapPtr &map,
                          const kir::BufferPtr &tiles) {
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
    Expr part = mask ? kir::var(clusterRank_) * kir::index(rows) : kir::index(0);
    return multicast(tmaLoad(map, {kir::var(nTile_) * kir::index(plan_.tileN) + part, k}, tiles,
                             base + part * kir::index(plan_.tileK), full_, stage));
  }
  int64_t span = 128 / operandBytes(), blocks = plan_.tileN / span;
  return unrolled("block", blocks / c, [&](Expr jj) {
    Expr j = mask ? kir::var(clusterRank_) * kir::index(blocks / c) + jj : jj;
    return multicast(tmaLoad(map,
                             {k, kir::var(nTile_) * kir::index(plan_.tileN) + j * kir::index(span)},
                             tiles, base + j * kir::index(plan_.tileK * span), full_, stage));
  });
}

/// The producer's loads of one tile: each stage once the consumers released its
/// previous use.
Stmt MatmulBuilder::producerLoads() {
  int64_t s = plan_.stages;
  kir::VarPtr kTile = var("k_tile"), it = var("it"), stage = var("stage");
  std::vector<Stmt> body;
  Expr use = useNumber(body, it, kTile);
  body.push_back(kir::let(stage, use % kir::index(s)));
  body.push_back(mbarrierOp(StmtKind::MBarrierWait, empty_, kir::var(stage),
                            (use / kir::index(s) + kir::index(1)) % kir::index(2),
                            "the consumers released the stage's previous use"));
  body.push_back(loadStage(kir::var(kTile), kir::var(stage)));
  return kir::forLoop(kTile, kCount_, kir::LoopKind::Serial, kir::block(std::move(body)),
                      plan_.pipelineOrigin);
}

/// Fence, the warpgroup's wgmma over the k steps of `stage`, commit. The first k step of
/// a tile's first k tile replaces the accumulators (scale-d 0), the others add to them.
Stmt MatmulBuilder::mmaOnStage(const Expr &stage, const Expr &kTile) {
  int64_t in = plan_.instructionN;
  Stmt mma = unrolled("k_step", plan_.tileK / 16, [&](Expr ks) {
    return unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
      return unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
        auto w = hopperNode(StmtKind::Wgmma);
        w->shape = kir::WgmmaShape{64, static_cast<int>(in), 16};
        w->inputType = plan_.a.dtype;
        w->buffer = acc_;
        w->accumulate = kir::binary(kir::BinaryOp::Or, kir::index(0) < kTile, kir::index(0) < ks);
        w->index = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
        w->operandA = aTiles_;
        w->offsetA = stage * kir::index(tileElements(plan_.tileM)) +
                     (warpgroupRow() + mi * kir::index(64)) * kir::index(plan_.tileK) +
                     ks * kir::index(16);
        w->operandB = bTiles_;
        if (plan_.b.kContiguous) {
          w->offsetB = stage * kir::index(tileElements(plan_.tileN)) +
                       (warpgroupColumn() + ni * kir::index(in)) * kir::index(plan_.tileK) +
                       ks * kir::index(16);
        } else {
          // N-major: the instruction's columns start in block (column / span); a k step is
          // 16 rows of the block down.
          int64_t span = 128 / operandBytes();
          w->transposeB = true;
          w->blockBytesB = plan_.tileK * 128;
          w->offsetB = stage * kir::index(tileElements(plan_.tileN)) +
                       (warpgroupColumn() + ni * kir::index(in)) / kir::index(span) *
                           kir::index(plan_.tileK * span) +
                       ks * kir::index(16 * span);
        }
        if (!plan_.product2)
          return Stmt(w);
        // The second product: the same a operand, b2's tile, its own accumulators.
        auto w2 = std::make_shared<kir::StmtNode>(*w);
        w2->buffer = acc2_;
        w2->operandB = b2Tiles_;
        return kir::block({Stmt(w), Stmt(w2)});
      });
    });
  });
  auto mmaNode = std::make_shared<kir::StmtNode>(*mma);
  mmaNode->origin = plan_.mmaOrigin;
  return kir::block({hopperNode(StmtKind::WgmmaFence, "the accumulators' earlier accesses first"),
                     mmaNode, hopperNode(StmtKind::WgmmaCommit)});
}

/// A consumer warpgroup's K loop with a producer: one wgmma group in flight, the stage
/// before it released (with one stage, each is released as soon as its group is done).
Stmt MatmulBuilder::consumerLoop() {
  int64_t s = plan_.stages;
  int64_t inFlight = s > 1 ? 1 : 0;
  kir::VarPtr kTile = var("k_tile"), it = var("it"), stage = var("stage");
  Expr leader = kir::binary(kir::BinaryOp::Eq, kir::var(tid_) % kir::index(128), kir::index(0));
  // With multicast, the stage is released in every CTA of the cluster: their producers
  // write into this CTA's stage too.
  auto release = [&](Expr use, const std::string &comment) {
    Expr at = use % kir::index(s);
    if (!plan_.multicast)
      return kir::ifThen(leader, mbarrierOp(StmtKind::MBarrierArrive, empty_, at, nullptr, comment),
                         nullptr, "one thread a warpgroup");
    Stmt arrivals = unrolled("peer", plan_.clusterM, [&](Expr peer) {
      auto arrive = hopperNode(StmtKind::MBarrierArrive, comment + ", in each CTA of the cluster");
      arrive->buffer = empty_;
      arrive->index = at;
      arrive->ctaRank = peer;
      return Stmt(arrive);
    });
    return kir::ifThen(leader, arrivals, nullptr, "one thread a warpgroup");
  };
  std::vector<Stmt> body;
  Expr use = useNumber(body, it, kTile);
  body.push_back(kir::let(stage, use % kir::index(s)));
  body.push_back(mbarrierOp(StmtKind::MBarrierWait, full_, kir::var(stage),
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
  loop.push_back(kir::forLoop(kTile, kCount_, kir::LoopKind::Serial, kir::block(std::move(body)),
                              plan_.mmaOrigin));
  if (inFlight)
    loop.push_back(wgmmaWait(0, "the tile's last products are done"));
  loop.push_back(zeroIfNoProduct());
  if (inFlight) {
    loop.push_back(
        kir::ifThen(kir::index(0) < kCount_,
                    release(iteration(kCount_) + kir::index(s - 1), "the last stage is free")));
  }
  return kir::block(std::move(loop));
}

/// With two consumer groups, the groups' products take turns, in the CTA's order of
/// items (group 0's round r, group 1's round r, group 0's round r + 1, ...): a group waits
/// until the other has issued the products of the item before its own, and then lets the
/// other go. Besides keeping the tensor cores to one group at a time, this keeps each
/// group at most one phase ahead of the `full` barriers of the stages it skips (the other
/// group's), which a parity wait needs.
Stmt MatmulBuilder::inTurn(Stmt loop) {
  Expr g = kir::var(group_), r = kir::var(round_);
  Expr first = kir::binary(kir::BinaryOp::Eq, r + g, kir::index(0));
  Stmt wait = mbarrierOp(StmtKind::MBarrierWait, turn_, g, (r + g + kir::index(1)) % kir::index(2),
                         "the other group has issued the products of the item before");
  Expr leader = kir::binary(kir::BinaryOp::Eq, kir::var(tid_) % kir::index(128), kir::index(0));
  Stmt pass = kir::ifThen(leader,
                          mbarrierOp(StmtKind::MBarrierArrive, turn_, kir::index(1) - g, nullptr,
                                     "the other group's turn"),
                          nullptr, "one thread a warpgroup");
  return kir::block({kir::ifThen(kir::unary(kir::UnaryOp::Not, first), wait, nullptr,
                                 "group 0's first item goes first"),
                     loop, pass});
}

/// The K loop without a producer: thread 0 loads S - 1 stages ahead; every warpgroup
/// waits for its products and a block barrier frees the stage.
Stmt MatmulBuilder::singleRoleLoop() {
  int64_t s = plan_.stages;
  std::vector<Stmt> out;
  // The prologue: k tiles 0 .. S - 2, each in its own stage.
  if (s > 1) {
    kir::VarPtr first = var("k_tile");
    Stmt load = kir::ifThen(kir::var(first) < kCount_,
                            loadStage(kir::var(first), iteration(kir::var(first)) % kir::index(s)));
    auto prologue = std::make_shared<kir::StmtNode>(*kir::ifThen(
        isThread(0), kir::forLoop(first, kir::index(s - 1), kir::LoopKind::Unrolled, load)));
    prologue->comment = "the first " + std::to_string(s - 1) + " stages";
    prologue->origin = plan_.pipelineOrigin;
    out.push_back(prologue);
  }
  kir::VarPtr kTile = var("k_tile");
  std::vector<Stmt> iterationBody;
  {
    // The load S - 1 tiles ahead goes into the stage the previous iteration read, which
    // the barrier that ended it has freed.
    kir::VarPtr next = var("next_tile");
    Stmt issue = kir::block({
        kir::let(next, kir::var(kTile) + kir::index(s - 1)),
        kir::ifThen(kir::var(next) < kCount_,
                    loadStage(kir::var(next), iteration(kir::var(next)) % kir::index(s))),
    });
    iterationBody.push_back(kir::ifThen(isThread(0), issue, nullptr,
                                        "k tile k_tile + " + std::to_string(s - 1) + ", " +
                                            std::to_string(s - 1) + " stages ahead"));
  }
  kir::VarPtr it = var("it"), stage = var("stage");
  Expr use = useNumber(iterationBody, it, kTile);
  iterationBody.push_back(kir::let(stage, use % kir::index(s)));
  iterationBody.push_back(mbarrierOp(StmtKind::MBarrierWait, full_, kir::var(stage),
                                     use / kir::index(s) % kir::index(2),
                                     "the stage's tiles have landed (its use number's parity)"));
  iterationBody.push_back(mmaOnStage(kir::var(stage), kir::var(kTile)));
  iterationBody.push_back(wgmmaWait(0, "this stage's products are done"));
  auto sync = std::make_shared<kir::StmtNode>(*kir::barrier());
  sync->comment = "every warpgroup is done with the stage before it is refilled";
  iterationBody.push_back(sync);
  out.push_back(kir::forLoop(kTile, kCount_, kir::LoopKind::Serial,
                             kir::block(std::move(iterationBody)), plan_.mmaOrigin));
  out.push_back(zeroIfNoProduct());
  return kir::block(std::move(out));
}

} // namespace fsl::lower
