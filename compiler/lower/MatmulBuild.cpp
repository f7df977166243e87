// MatmulBuild.cpp — the `build-matmul` pass: parameters, shared storage, the walk over
// output tiles, the warp roles and the launch shape (the kernel's shape is drawn in
// Matmul.h; MatmulBuilder.h lists the builder's parts).
#include "lower/MatmulBuilder.h"
#include "lower/Pointwise.h"

#include "support/Internal.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;
using kir::StmtKind;

namespace {

Stmt sharedAllocation(const kir::BufferPtr &buffer, int64_t byteOffset, std::string comment,
                      kir::Origin origin = {}) {
  auto s = std::make_shared<kir::StmtNode>(*kir::allocate(buffer, std::move(comment)));
  s->index = kir::index(byteOffset);
  s->origin = std::move(origin);
  return s;
}

kir::BufferPtr makeBuffer(std::string name, ir::DType dtype, kir::MemorySpace space,
                          std::vector<int64_t> shape, kir::Swizzle swizzle = kir::Swizzle::None,
                          int64_t alignment = 16) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = space;
  b->shape = std::move(shape);
  b->swizzle = swizzle;
  b->alignment = alignment;
  return b;
}

} // namespace

bool MatmulBuilder::run() {
  reserveNames();
  // The product's operands are passed as TMA tensor maps.
  cx_.addParameters([&](unsigned param, const kir::BufferPtr &buffer) -> kir::TensorMapPtr {
    if (!isOperand(param))
      return nullptr;
    kir::TensorMapPtr &map = param == plan_.a.param   ? mapA_
                             : param == plan_.b.param ? mapB_
                                                      : mapB2_;
    return map = operandMap(f_.params[param], buffer);
  });
  if (plan_.a.param == plan_.b.param) // a @ a^T: one tensor map serves both
    mapB_ = mapA_;
  if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore)
    addOutputMap();
  if (plan_.twoKernels()) {
    kir::KernelParam kp;
    kp.kind = kir::KernelParam::Kind::Tensor;
    kp.buffer = plan_.partials;
    cx_.kernel.params.push_back(kp);
  }
  if (plan_.splitK > 1)
    split_ = var("split");
  cta_ = var(plan_.persistentCtas() ? "cta" : "m_tile");
  ctaY_ = var("n_tile");
  tid_ = var("tid");
  warpgroup_ = var("warpgroup");
  consumer_ = plan_.warpSpecialized ? var("consumer") : warpgroup_;

  std::vector<Stmt> body;
  if (plan_.clusterM > 1) {
    clusterRank_ = var("cta_rank");
    body.push_back(kir::let(clusterRank_, kir::var(cta_) % kir::index(plan_.clusterM),
                            "the CTA's rank in its cluster (clusters run along x)"));
  }
  makeStorage(body);
  Expr k = cx_.dimExtent(plan_.k);
  kTiles_ = var("k_tiles");
  Expr allTiles = (k + kir::index(plan_.tileK - 1)) / kir::index(plan_.tileK);
  if (plan_.splitK > 1) {
    // Part `split` of K: k tiles [k_first, k_first + k_per), clipped to K (possibly none:
    // its partial tile is zeros).
    kir::VarPtr all = var("all_k_tiles"), per = var("k_per_split");
    kFirst_ = var("k_first");
    body.push_back(
        kir::let(all, allTiles, "k tiles; the last one's columns past K are zero-filled"));
    body.push_back(
        kir::let(per, (kir::var(all) + kir::index(plan_.splitK - 1)) / kir::index(plan_.splitK)));
    body.push_back(kir::let(kFirst_, kir::var(split_) * kir::var(per)));
    body.push_back(kir::let(kTiles_,
                            kir::foldedBinary(kir::BinaryOp::Max, kir::index(0),
                                              kir::foldedBinary(kir::BinaryOp::Min, kir::var(per),
                                                                kir::var(all) - kir::var(kFirst_))),
                            "this split's k tiles"));
  } else {
    body.push_back(
        kir::let(kTiles_, allTiles, "k tiles; the last one's columns past K are zero-filled"));
  }
  if (plan_.tileWalk == TileWalk::Persistent) {
    tileCount_ = var("tiles");
    ctaCount_ = var("ctas");
    body.push_back(
        kir::let(tileCount_, tileCount(),
                 plan_.clusterM > 1 ? "units of the cluster's M tiles" : "output tiles"));
    body.push_back(kir::let(
        ctaCount_, kir::var(kir::makeVar("gridDim.x", ir::DType::I64, kir::Builtin::GridDimX)),
        "the grid: at most one CTA an SM, fewer when the device holds fewer "
        "clusters at once"));
    if (plan_.clusterM > 1) {
      clusterIndex_ = var("cluster");
      body.push_back(kir::let(clusterIndex_, kir::var(cta_) / kir::index(plan_.clusterM)));
    }
  }
  if (plan_.tileWalk == TileWalk::StreamK)
    streamKShape(body);
  if (plan_.warpSpecialized) {
    body.push_back(producerRole());
    body.push_back(consumerRole());
  } else {
    body.push_back(consumerRole());
  }
  // No CTA of a cluster exits while a peer may still write its shared memory or arrive
  // on its barriers.
  if (plan_.clusterM > 1)
    body.push_back(withOrigin(kir::clusterBarrier(), plan_.clusterOrigin,
                              "the cluster's CTAs are done with each other"));

  int64_t warpgroups = plan_.warpgroups + (plan_.warpSpecialized ? 1 : 0);
  Stmt nest = kir::block(std::move(body));
  std::string roles =
      plan_.warpSpecialized
          ? "warpgroup 0 loads, 1 .. " + std::to_string(plan_.warpgroups) + " multiply"
          : "consumer warpgroups: " + std::to_string(plan_.warpgroupsM()) + " x " +
                std::to_string(plan_.warpgroupsN()) + " of " + std::to_string(plan_.warpM) + " x " +
                std::to_string(plan_.warpN);
  nest = plan_.warpSpecialized
             ? withOrigin(kir::parallelLoop(warpgroup_, kir::index(warpgroups),
                                            kir::Axis::Warpgroup, nest),
                          plan_.warpSpecializeOrigin, roles)
             : kir::parallelLoop(warpgroup_, kir::index(warpgroups), kir::Axis::Warpgroup, nest,
                                 {roles, plan_.mmaOrigin.range});
  nest = kir::parallelLoop(tid_, kir::index(128 * warpgroups), kir::Axis::TIDx, nest);
  if (plan_.tileWalk == TileWalk::Persistent) {
    nest = withOrigin(kir::parallelLoop(cta_, ctaCount(), kir::Axis::BIDx, nest), plan_.tilesOrigin,
                      "persistent CTAs: one an SM, at most " + std::to_string(plan_.smCount));
  } else if (plan_.tileWalk == TileWalk::StreamK) {
    nest =
        withOrigin(kir::parallelLoop(cta_, streamKCtas(), kir::Axis::BIDx, nest), plan_.tilesOrigin,
                   "stream-K CTAs: one an SM, at most " + std::to_string(plan_.smCount) +
                       ", and no more than the k tiles");
  } else {
    if (plan_.splitK > 1)
      nest = withOrigin(kir::parallelLoop(split_, kir::index(plan_.splitK), kir::Axis::BIDz, nest),
                        plan_.tilesOrigin, "parts of K");
    nest = kir::parallelLoop(ctaY_, tiles(plan_.n, plan_.tileN), kir::Axis::BIDy, nest,
                             {"tiles one_per_cta: " + std::to_string(plan_.tileN) + " columns",
                              plan_.tilesOrigin.range});
    nest = kir::parallelLoop(
        cta_, tiles(plan_.m, plan_.tileM * plan_.clusterM) * kir::index(plan_.clusterM),
        kir::Axis::BIDx, nest,
        {"tiles one_per_cta: " + std::to_string(plan_.tileM) + " rows", plan_.tilesOrigin.range});
  }
  cx_.kernel.body =
      kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents), nest});
  makeLaunchShape();
  return true;
}

// --- Names and parameters ------------------------------------------------------------

/// The names the fusion gives to parameters, outputs, dimensions and values (the
/// kernel's parameters and lets): the kernel's own variables and buffers stay clear of
/// them. Its own names are distinct or in disjoint scopes by construction.
void MatmulBuilder::reserveNames() {
  for (const ir::Param &param : f_.params)
    reserved_.insert(param.name);
  for (const ir::Output &output : f_.outputs)
    reserved_.insert(output.name);
  for (const ir::Dim &dim : f_.dims)
    reserved_.insert(dim.name);
  for (const auto &value : f_.values)
    reserved_.insert(valueName(*value));
}

std::string MatmulBuilder::fresh(std::string name) const {
  while (reserved_.count(name))
    name += "_";
  return name;
}

kir::VarPtr MatmulBuilder::var(const std::string &name) const {
  return kir::makeVar(fresh(name), ir::DType::I64);
}

bool MatmulBuilder::isOperand(unsigned param) const {
  return param == plan_.a.param || param == plan_.b.param ||
         (plan_.product2 && param == plan_.b2.param);
}

/// An operand's tensor map: boxes of (tile rows) x (one 128-byte row of K), swizzled.
kir::TensorMapPtr MatmulBuilder::operandMap(const ir::Param &param, const kir::BufferPtr &buffer) {
  auto map = std::make_shared<kir::TensorMap>();
  map->name = fresh(param.name + "_map");
  map->global = buffer;
  for (ir::DimId dim : param.dims)
    map->extents.push_back(cx_.dimExtent(dim));
  const MatmulOperand &operand = &param == &f_.params[plan_.a.param]   ? plan_.a
                                 : &param == &f_.params[plan_.b.param] ? plan_.b
                                                                       : plan_.b2;
  if (!operand.kContiguous)
    // [K, N]: 64 K rows of one 128-byte span of N; a stage takes BN / span boxes.
    map->box = {plan_.tileK, 128 / static_cast<int64_t>(ir::dtypeBytes(operand.dtype))};
  else if (&operand == &plan_.b && plan_.multicast)
    // Each CTA of a cluster loads 1/C of the shared b tile.
    map->box = {plan_.tileN / plan_.clusterM, plan_.tileK};
  else
    map->box = {param.dims[0] == plan_.m ? plan_.tileM : plan_.tileN, plan_.tileK};
  map->swizzle = kir::Swizzle::Bytes128;
  return map;
}

/// The output's tensor map for TMA stores: boxes of BM rows x one 128-byte span of N,
/// swizzled as the shared output tile is written. The pointer parameter stays (the
/// launcher checks the tensor through it).
void MatmulBuilder::addOutputMap() {
  const ir::Output &output = f_.outputs.at(0);
  auto map = std::make_shared<kir::TensorMap>();
  map->name = fresh(output.name + "_map");
  map->global = cx_.outputBuffers.at(0);
  for (ir::DimId dim : output.dims)
    map->extents.push_back(cx_.dimExtent(dim));
  map->box = {plan_.tileM, 128 / static_cast<int64_t>(ir::dtypeBytes(output.dtype))};
  map->swizzle = kir::Swizzle::Bytes128;
  mapOut_ = map;
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::TensorMap;
  kp.tensorMap = map;
  kp.fusionParam = 0;
  kp.isOutput = true;
  cx_.kernel.params.push_back(kp);
}

Expr MatmulBuilder::tiles(ir::DimId dim, int64_t tile) const {
  return (cx_.dimExtent(dim) + kir::index(tile - 1)) / kir::index(tile);
}

/// Units of work a persistent CTA (or cluster) takes: output tiles, or with clusters of C
/// CTAs, groups of C consecutive M tiles.
Expr MatmulBuilder::tileCount() const {
  return tiles(plan_.m, plan_.tileM * plan_.clusterM) * tiles(plan_.n, plan_.tileN);
}

/// Persistent CTAs: one an SM, fewer when there are fewer tiles.
Expr MatmulBuilder::ctaCount() const {
  int64_t c = plan_.clusterM;
  return kir::foldedBinary(kir::BinaryOp::Min, tileCount(),
                           kir::index(std::max<int64_t>(plan_.smCount / c, 1))) *
         kir::index(c);
}

// --- Storage ----------------------------------------------------------------------------

/// The shared operand ring (each stage's tiles 1024-byte aligned, as the 128-byte
/// swizzle's pattern repeats every 1024 bytes), the output tile of a shared epilogue, and
/// the barriers after them: `full` (a stage's tiles have landed) and, with a producer
/// warpgroup, `empty` (the consumers are done with a stage).
void MatmulBuilder::makeStorage(std::vector<Stmt> &out) {
  int64_t s = plan_.stages;
  int64_t aBytes = s * tileElements(plan_.tileM) * operandBytes();
  int64_t bBytes = s * tileElements(plan_.tileN) * operandBytes();
  aTiles_ = makeBuffer(fresh("a_tiles"), plan_.a.dtype, kir::MemorySpace::Shared,
                       {s * tileElements(plan_.tileM)}, kir::Swizzle::Bytes128, 1024);
  bTiles_ = makeBuffer(fresh("b_tiles"), plan_.b.dtype, kir::MemorySpace::Shared,
                       {s * tileElements(plan_.tileN)}, kir::Swizzle::Bytes128, 1024);
  auto stagesOf = [&](const ir::Param &param, int64_t rows) {
    return std::to_string(s) + " stages of the " + std::to_string(rows) + " x " +
           std::to_string(plan_.tileK) + " tile of " + param.name + " (128-byte swizzle)";
  };
  out.push_back(sharedAllocation(aTiles_, 0, stagesOf(f_.params[plan_.a.param], plan_.tileM),
                                 plan_.pipelineOrigin));
  out.push_back(sharedAllocation(bTiles_, aBytes, stagesOf(f_.params[plan_.b.param], plan_.tileN)));
  int64_t offset = aBytes + bBytes;
  if (plan_.product2) {
    b2Tiles_ = makeBuffer(fresh("b2_tiles"), plan_.b2.dtype, kir::MemorySpace::Shared,
                          {s * tileElements(plan_.tileN)}, kir::Swizzle::Bytes128, 1024);
    out.push_back(sharedAllocation(b2Tiles_, offset,
                                   stagesOf(f_.params[plan_.b2.param], plan_.tileN) +
                                       ", for the second product"));
    offset += bBytes;
  }
  if (plan_.sharedEpilogue()) {
    const ir::Output &output = f_.outputs.at(0);
    int64_t span = 128 / ir::dtypeBytes(output.dtype);
    int64_t groups = plan_.tileGroups;
    outTile_ = makeBuffer(fresh(output.name + "_tile"), output.dtype, kir::MemorySpace::Shared,
                          {groups * plan_.tileM * plan_.tileN}, kir::Swizzle::Bytes128, 1024);
    out.push_back(sharedAllocation(
        outTile_, offset,
        std::string(groups > 1 ? "an output tile a consumer group: " : "the output tile: ") +
            std::to_string(plan_.tileN / span) + " column blocks of " +
            std::to_string(plan_.tileM) + " x " + std::to_string(span) + " (128-byte swizzle)",
        plan_.epilogueOrigin));
    offset += groups * plan_.tileM * plan_.tileN * ir::dtypeBytes(output.dtype);
  }
  full_ = makeBuffer(fresh("full"), ir::DType::I64, kir::MemorySpace::Shared, {s},
                     kir::Swizzle::None, 8);
  out.push_back(sharedAllocation(full_, offset, "full barriers: a stage's tiles have landed"));
  offset += 8 * s;
  if (plan_.warpSpecialized) {
    empty_ = makeBuffer(fresh("empty"), ir::DType::I64, kir::MemorySpace::Shared, {s},
                        kir::Swizzle::None, 8);
    out.push_back(
        sharedAllocation(empty_, offset, "empty barriers: the consumers are done with a stage"));
    offset += 8 * s;
  }
  if (plan_.tileGroups > 1) {
    turn_ = makeBuffer(fresh("turn"), ir::DType::I64, kir::MemorySpace::Shared, {2},
                       kir::Swizzle::None, 8);
    out.push_back(sharedAllocation(turn_, offset,
                                   "turn barriers: a consumer group's products may start once "
                                   "the other group's previous ones are issued"));
    offset += 16;
  }
  sharedBytes_ = offset;
  out.push_back(initBarriers());
  out.push_back(withOrigin(
      plan_.clusterM > 1 ? kir::clusterBarrier() : kir::barrier(), {},
      plan_.clusterM > 1 ? "the cluster's barriers are initialized before any thread uses them"
                         : "the barriers are initialized before any thread uses them"));
}

Stmt MatmulBuilder::initBarriers() {
  auto init = [&](const kir::BufferPtr &barrier, kir::VarPtr stage, int64_t arrivals,
                  const std::string &comment) {
    auto s = hopperNode(StmtKind::MBarrierInit, comment);
    s->buffer = barrier;
    s->index = kir::var(stage);
    s->count = kir::index(arrivals);
    return kir::forLoop(stage, kir::index(plan_.stages), kir::LoopKind::Unrolled, Stmt(s));
  };
  std::vector<Stmt> inits;
  inits.push_back(init(full_, var("stage"), 1, "one arrival (with the expected bytes) a phase"));
  if (plan_.warpSpecialized)
    inits.push_back(init(
        empty_, var("stage"), plan_.warpgroupsPerTile() * (plan_.multicast ? plan_.clusterM : 1),
        plan_.multicast        ? "one arrival a consumer warpgroup of the cluster a phase"
        : plan_.tileGroups > 1 ? "one arrival a warpgroup of the consumer group on the stage's tile"
                               : "one arrival a consumer warpgroup a phase"));
  if (plan_.tileGroups > 1) {
    kir::VarPtr g = var("group");
    auto s = hopperNode(StmtKind::MBarrierInit, "one arrival a warpgroup of the other group");
    s->buffer = turn_;
    s->index = kir::var(g);
    s->count = kir::index(plan_.warpgroupsPerTile());
    inits.push_back(kir::forLoop(g, kir::index(2), kir::LoopKind::Unrolled, Stmt(s)));
  }
  // The fence makes the initialized barriers visible to the asynchronous proxy, which
  // completes TMA transactions on them (CUDA programming guide, "Using TMA to transfer
  // multi-dimensional arrays").
  inits.push_back(hopperNode(StmtKind::FenceProxyAsync, "the barriers, for the TMA unit"));
  return kir::ifThen(isThread(0), kir::block(std::move(inits)), nullptr,
                     "one thread initializes the barriers");
}

// --- Output tiles ------------------------------------------------------------------------

/// One tile a CTA: the block indices are the tile. Persistent: CTA `cta` takes tiles
/// cta, cta + C, cta + 2C, ... of the grouped order: tile t is in group t / (G * TN),
/// which covers M tiles [G g, G g + G) (fewer in the last group) across all TN tiles of
/// N, walking down the group's M tiles first; CTAs running together then share the
/// operand tiles of a G-row band of A and of a few column tiles of B in L2.
Stmt MatmulBuilder::forEachTile(const std::function<Stmt()> &body, const std::string &comment,
                                Role role) {
  int64_t c = plan_.clusterM;
  if (plan_.tileWalk == TileWalk::OnePerCta) {
    mTile_ = cta_;
    nTile_ = ctaY_;
    tileIter_ = nullptr;
    kBegin_ = kFirst_ ? kir::var(kFirst_) : nullptr;
    kCount_ = kir::var(kTiles_);
    useBase_ = nullptr;
    return body();
  }
  if (plan_.tileWalk == TileWalk::StreamK)
    return streamKWalk(body, comment, role);
  // With clusters of C CTAs, the walk is over units of C consecutive M tiles (one a CTA
  // of the cluster, by rank), clusters taking the place of CTAs.
  tileIter_ = var("tile_iter");
  Expr walker = kir::var(c > 1 ? clusterIndex_ : cta_);
  Expr walkers = c > 1 ? kir::var(ctaCount_) / kir::index(c) : kir::var(ctaCount_);
  kir::VarPtr tile = var(c > 1 ? "unit" : "tile");
  std::vector<Stmt> walk;
  // With two consumer groups, group g takes the CTA's tiles g, g + 2, ... (the producer
  // all of them, in order).
  kir::VarPtr round = grouped(role) ? var("round") : nullptr;
  round_ = round;
  if (round)
    walk.push_back(kir::let(tileIter_,
                            kir::var(round) * kir::index(plan_.tileGroups) + kir::var(group_),
                            "the group's tiles: every other one of the CTA's"));
  walk.push_back(kir::let(tile, walker + kir::var(tileIter_) * walkers));
  tileCoordinates(walk, kir::var(tile));
  kBegin_ = nullptr;
  kCount_ = kir::var(kTiles_);
  useBase_ = kir::var(tileIter_) * kir::var(kTiles_);
  walk.push_back(body());
  Expr count = (kir::var(tileCount_) - walker + walkers - kir::index(1)) / walkers;
  if (round)
    return withOrigin(
        kir::forLoop(round, groupRounds(count), kir::LoopKind::Serial, kir::block(std::move(walk))),
        plan_.tilesOrigin, comment);
  return withOrigin(
      kir::forLoop(tileIter_, count, kir::LoopKind::Serial, kir::block(std::move(walk))),
      plan_.tilesOrigin, comment);
}

/// Tile (with clusters: unit) number `tile` of the grouped order: group tile / (G * TN)
/// covers M tiles [G g, G g + G) (fewer in the last group) across all TN tiles of N,
/// walking down the group's M tiles first.
void MatmulBuilder::tileCoordinates(std::vector<Stmt> &walk, Expr tile) {
  int64_t c = plan_.clusterM;
  mTile_ = var("m_tile");
  nTile_ = var("n_tile");
  kir::VarPtr group = var("group"), firstRow = var("first_m"), groupRows = var("group_rows"),
              inGroup = var("in_group"), row = c > 1 ? var("m_unit") : mTile_;
  Expr rowsM = tiles(plan_.m, plan_.tileM * c), tilesN = tiles(plan_.n, plan_.tileN);
  int64_t groupUnits = std::max<int64_t>(1, plan_.tileGroup / c);
  Expr g = kir::index(groupUnits);
  if (groupUnits == 1) {
    walk.push_back(kir::let(row, tile / tilesN, "row by row"));
    walk.push_back(kir::let(nTile_, tile % tilesN));
  } else {
    walk.push_back(kir::let(group, tile / (g * tilesN),
                            "groups of " + std::to_string(plan_.tileGroup) + " M tiles"));
    walk.push_back(kir::let(firstRow, kir::var(group) * g));
    walk.push_back(
        kir::let(groupRows, kir::foldedBinary(kir::BinaryOp::Min, rowsM - kir::var(firstRow), g)));
    walk.push_back(kir::let(inGroup, tile % (g * tilesN)));
    walk.push_back(kir::let(row, kir::var(firstRow) + kir::var(inGroup) % kir::var(groupRows),
                            "down the group first"));
    walk.push_back(kir::let(nTile_, kir::var(inGroup) / kir::var(groupRows)));
  }
  if (c > 1)
    walk.push_back(kir::let(mTile_, kir::var(row) * kir::index(c) + kir::var(clusterRank_),
                            "the cluster's M tiles, one a CTA"));
}

// --- Warp roles --------------------------------------------------------------------------

/// Warpgroup 0 with warp specialization: gives registers back, and one thread issues the
/// TMA loads of every stage of every tile, as soon as the consumers free the stage.
Stmt MatmulBuilder::producerRole() {
  auto lower = hopperNode(StmtKind::SetMaxNReg);
  lower->registers = plan_.producerRegisters;
  lower->increase = false;
  lower->origin = plan_.warpSpecializeOrigin;
  lower->comment = "the producer needs few registers: the consumers take them";
  Stmt loads = kir::ifThen(
      isThread(0), forEachTile([&] { return producerLoads(); }, "its tiles", Role::Producer),
      nullptr, "one thread issues the loads");
  auto role = hopperNode(StmtKind::WarpRole);
  role->role = "producer";
  role->condition = kir::binary(kir::BinaryOp::Eq, kir::var(warpgroup_), kir::index(0));
  role->body = {kir::block({Stmt(lower), loads})};
  return role;
}

/// The consumer warpgroups (all of the CTA's without warp specialization): the
/// accumulators, the K loop on each of their tiles, and the epilogue.
Stmt MatmulBuilder::consumerRole() {
  std::vector<Stmt> body;
  if (plan_.warpSpecialized) {
    auto raise = hopperNode(StmtKind::SetMaxNReg);
    raise->registers = plan_.consumerRegisters;
    raise->increase = true;
    raise->origin = plan_.warpSpecializeOrigin;
    raise->comment = "the accumulators and the epilogue";
    body.push_back(raise);
    body.push_back(kir::let(consumer_, kir::var(warpgroup_) - kir::index(1)));
    if (plan_.tileGroups > 1) {
      group_ = var("consumer_group");
      member_ = var("group_member");
      int64_t perTile = plan_.warpgroupsPerTile();
      body.push_back(kir::let(group_, kir::var(consumer_) / kir::index(perTile),
                              "the consumer group: groups take alternate tiles"));
      body.push_back(kir::let(member_, kir::var(consumer_) % kir::index(perTile),
                              "the warpgroup in its group"));
    }
  }
  acc_ = makeBuffer(fresh("acc"), ir::DType::F32, kir::MemorySpace::Local, {plan_.accumulators()});
  body.push_back(kir::allocate(acc_, "f32 accumulators: the thread's fragments of " +
                                         std::to_string(plan_.warpM) + " x " +
                                         std::to_string(plan_.warpN)));
  if (plan_.product2) {
    acc2_ =
        makeBuffer(fresh("acc2"), ir::DType::F32, kir::MemorySpace::Local, {plan_.accumulators()});
    body.push_back(kir::allocate(acc2_, "the second product's, in the same fragments"));
  }
  body.push_back(forEachTile(
      [&] {
        Stmt loop = plan_.warpSpecialized ? consumerLoop() : singleRoleLoop();
        if (group_)
          loop = inTurn(loop);
        if (plan_.tileWalk != TileWalk::StreamK)
          return kir::block({loop, epilogue()});
        // A piece of a tile goes to the workspace; the fix-up kernel adds the pieces.
        return kir::block(
            {loop, kir::ifThen(kir::binary(kir::BinaryOp::Eq, kCount_, kir::var(kTiles_)),
                               epilogue(), storePiece(), "a whole tile, or a piece of one")});
      },
      plan_.tileWalk == TileWalk::StreamK ? "this CTA's whole tiles, then its run of k tiles"
                                          : "this CTA's tiles",
      Role::Consumers));
  if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore)
    body.push_back(waitOutputTileRead("the last TMA store has read the output tile before the "
                                      "CTA's shared memory goes"));
  if (!plan_.warpSpecialized)
    return kir::block(std::move(body));
  auto role = hopperNode(StmtKind::WarpRole);
  role->role = "consumers";
  role->condition = kir::binary(kir::BinaryOp::Ne, kir::var(warpgroup_), kir::index(0));
  role->body = {kir::block(std::move(body))};
  return role;
}

/// With K = 0 no wgmma writes the accumulators: they are zeroed after the (empty) K loop,
/// where no product is in flight.
Stmt MatmulBuilder::zeroIfNoProduct() {
  kir::VarPtr i = var("i");
  std::vector<Stmt> zero = {kir::store(acc_, kir::var(i), kir::constant(0, ir::DType::F32))};
  if (acc2_)
    zero.push_back(kir::store(acc2_, kir::var(i), kir::constant(0, ir::DType::F32)));
  return kir::ifThen(kir::binary(kir::BinaryOp::Eq, kCount_, kir::index(0)),
                     kir::forLoop(i, kir::index(plan_.accumulators()), kir::LoopKind::Unrolled,
                                  kir::block(std::move(zero))),
                     nullptr, "K = 0: no product wrote the accumulators");
}

// --- Shared helpers ------------------------------------------------------------------------

bool MatmulBuilder::grouped(Role role) const {
  return role == Role::Consumers && group_ != nullptr;
}

/// The rounds of the group's walk over `count` items: items group, group + G, ...
Expr MatmulBuilder::groupRounds(Expr count) const {
  Expr g = kir::index(plan_.tileGroups);
  return kir::max(count - kir::var(group_) + g - kir::index(1), kir::index(0)) / g;
}

Expr MatmulBuilder::isThread(int64_t thread) const {
  return kir::binary(kir::BinaryOp::Eq, kir::var(tid_), kir::index(thread));
}

Expr MatmulBuilder::firstConsumerThread() const {
  return kir::binary(kir::BinaryOp::Eq, kir::var(tid_), firstThreadOfGroup());
}

Expr MatmulBuilder::firstThreadOfGroup() const {
  if (group_)
    return kir::index(128) + kir::var(group_) * kir::index(128 * plan_.warpgroupsPerTile());
  return kir::index(producerWarpgroup_ ? 128 : 0);
}

Expr MatmulBuilder::outTileBase() const {
  if (group_)
    return kir::var(group_) * kir::index(plan_.tileM * plan_.tileN);
  return kir::index(0);
}

Stmt MatmulBuilder::consumerBarrier(const std::string &comment) const {
  if (!producerWarpgroup_)
    return withOrigin(kir::barrier(), {}, comment);
  auto named = [&](int id) {
    auto s = std::make_shared<kir::StmtNode>(*kir::barrier());
    s->barrierKind = kir::BarrierKind::Named;
    s->barrierId = id;
    s->threads = kir::index(128 * plan_.warpgroupsPerTile());
    s->comment = comment;
    return Stmt(s);
  };
  if (!group_)
    return named(1);
  // Named barrier 1 + group: the group's warpgroups only (ids are immediates in the IR).
  return kir::ifThen(kir::binary(kir::BinaryOp::Eq, kir::var(group_), kir::index(0)), named(1),
                     named(2), "the group's own named barrier");
}

/// `body(index)` in an unrolled loop, or `body(0)` alone for one iteration.
Stmt MatmulBuilder::unrolled(const std::string &name, int64_t extent,
                             const std::function<Stmt(Expr)> &body) {
  if (extent == 1)
    return body(kir::index(0));
  kir::VarPtr v = var(name);
  return kir::forLoop(v, kir::index(extent), kir::LoopKind::Unrolled, body(kir::var(v)));
}

/// The consumer warpgroup's position in the CTA tile: row-major over (BM / WM) x (BN / WN).
Expr MatmulBuilder::warpgroupRow() const {
  return kir::var(member_ ? member_ : consumer_) / kir::index(plan_.warpgroupsN()) *
         kir::index(plan_.warpM);
}
Expr MatmulBuilder::warpgroupColumn() const {
  return kir::var(member_ ? member_ : consumer_) % kir::index(plan_.warpgroupsN()) *
         kir::index(plan_.warpN);
}

// --- Launch ------------------------------------------------------------------------------

void MatmulBuilder::makeLaunchShape() {
  kir::LaunchShape &launch = cx_.kernel.launch;
  if (plan_.tileWalk == TileWalk::Persistent) {
    launch.grid = {ctaCount(), kir::index(1), kir::index(1)};
    launch.gridFromOccupancy = plan_.clusterM > 1;
  } else if (plan_.tileWalk == TileWalk::StreamK) {
    launch.grid = {streamKCtas(), kir::index(1), kir::index(1)};
  } else
    launch.grid = {tiles(plan_.m, plan_.tileM * plan_.clusterM) * kir::index(plan_.clusterM),
                   tiles(plan_.n, plan_.tileN), kir::index(plan_.splitK)};
  launch.block = {kir::index(plan_.threads()), kir::index(1), kir::index(1)};
  if (plan_.clusterM > 1)
    launch.cluster = {kir::index(plan_.clusterM), kir::index(1), kir::index(1)};
  launch.sharedBytes = kir::index(sharedBytes_);
  launch.maxThreads = plan_.threads();
  // setmaxnreg redistributes the registers of one resident CTA an SM.
  if (plan_.warpSpecialized)
    launch.minBlocksPerSm = 1;
}

bool buildMatmul(LowerContext &context, const MatmulPlan &plan) {
  return MatmulBuilder(context, plan).run();
}

} // namespace fsl::lower
