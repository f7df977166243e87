// KernelBuilder.cpp — the matmul kernel composed of its components (CUTLASS's kernel
// layer): the tile scheduler's walk, the main loop and the epilogue, in three passes
// (Matmul.h draws the kernel; MatmulKernel.h is what the passes hand each other).
//
//   matmul-tile-scheduler  parameters (the operands' tensor maps, the output's for TMA
//                          stores), the shared storage of the main loop and the epilogue
//                          and the barriers' initialization, the grid loops, the warp
//                          roles and in each the walk over work tiles, with markers where
//                          the main loop and the epilogue go; the launch shape
//   matmul-main-loop       the producer's loads and the consumers' K loop of each tile
//   matmul-epilogue        the epilogue of each tile, and the wait after the CTA's last
#include "lower/matmul/Markers.h"
#include "lower/matmul/Matmul.h"
#include "lower/matmul/MatmulKernel.h"
#include "lower/matmul/PartialTiles.h"

#include "support/Internal.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

Stmt MatmulKernelState::markTile(const char *label, std::string what, const WorkTile &tile) {
  Stmt s = marker(label, std::move(what));
  markedTiles[s.get()] = tile;
  return s;
}

const WorkTile &MatmulKernelState::tileOf(const Stmt &marker) const {
  auto found = markedTiles.find(marker.get());
  FSL_INTERNAL_ASSERT(found != markedTiles.end(), "a matmul marker without its work tile");
  return found->second;
}

namespace {

/// Warpgroup 0 with warp specialization: gives registers back, and one thread issues the
/// TMA loads of every stage of every tile, as soon as the consumers free the stage.
Stmt producerRole(const MatmulPlan &plan, MatmulKernelState &state) {
  Stmt lower = fromDirective(kir::setMaxNReg(plan.producerRegisters, /*increase=*/false),
                             plan.warpSpecializeOrigin,
                             "the producer needs few registers: the consumers take them");
  Stmt loads = kir::ifThen(state.threads.isThread(0),
                           state.scheduler->forEachWorkTile(
                               Role::Producer,
                               [&](const WorkTile &tile) {
                                 return state.markTile(labels::MatmulProducerLoads,
                                                       "the loads of the tile's k tiles", tile);
                               }),
                           nullptr, "one thread issues the loads");
  return kir::warpRole(
      "producer", kir::binary(kir::BinaryOp::Eq, kir::var(state.threads.warpgroup), kir::index(0)),
      {kir::block({lower, loads})});
}

/// The consumer warpgroups (all of the CTA's without warp specialization): the
/// accumulators, the K loop on each of their tiles, and the epilogue.
Stmt consumerRole(const MatmulPlan &plan, MatmulKernelState &state) {
  CtaThreads &threads = state.threads;
  const KernelNames &names = state.names;
  std::vector<Stmt> body;
  if (plan.warpSpecialized) {
    body.push_back(fromDirective(kir::setMaxNReg(plan.consumerRegisters, /*increase=*/true),
                                 plan.warpSpecializeOrigin, "the accumulators and the epilogue"));
    body.push_back(kir::let(threads.consumer, kir::var(threads.warpgroup) - kir::index(1)));
    if (plan.tileGroups > 1) {
      threads.group = names.var("consumer_group");
      threads.member = names.var("group_member");
      int64_t perTile = plan.warpgroupsPerTile();
      body.push_back(kir::let(threads.group, kir::var(threads.consumer) / kir::index(perTile),
                              "the consumer group: groups take alternate tiles"));
      body.push_back(kir::let(threads.member, kir::var(threads.consumer) % kir::index(perTile),
                              "the warpgroup in its group"));
    }
  }
  state.accumulators = allocateAccumulators(plan, names, body);
  if (kir::Expr kTiles = state.scheduler->hoistedZeroingKTiles())
    body.push_back(zeroAccumulatorsIfNoK(plan, names, state.accumulators, kTiles));
  body.push_back(state.scheduler->forEachWorkTile(Role::Consumers, [&](const WorkTile &tile) {
    Stmt mainLoop = state.markTile(labels::MatmulMainLoop, "the K loop of the tile", tile);
    Stmt epilogue = state.markTile(labels::MatmulEpilogue, "the epilogue of the tile", tile);
    return kir::block({mainLoop, state.scheduler->finishTile(tile, state.accumulators, epilogue)});
  }));
  body.push_back(marker(labels::MatmulEpilogueEnd, "after the CTA's last tile"));
  if (!plan.warpSpecialized)
    return kir::block(std::move(body));
  return kir::warpRole("consumers",
                       kir::binary(kir::BinaryOp::Ne, kir::var(threads.warpgroup), kir::index(0)),
                       {kir::block(std::move(body))});
}

MatmulKernelState &kernelState(LowerContext &cx) {
  FSL_INTERNAL_ASSERT(cx.matmul && cx.matmulKernel,
                      "a matmul pass before matmul-tile-scheduler built the kernel");
  return *cx.matmulKernel;
}

} // namespace

bool buildMatmulTileScheduler(LowerContext &cx) {
  const MatmulPlan &plan = *cx.matmul;
  cx.matmulKernel = std::make_shared<MatmulKernelState>(cx.fusion);
  MatmulKernelState &state = *cx.matmulKernel;
  const KernelNames &names = state.names;
  CtaThreads &threads = state.threads;
  MainLoopStorage &operands = state.mainLoop;
  // The product's operands are passed as TMA tensor maps.
  cx.addParameters([&](unsigned param, const kir::BufferPtr &buffer) -> kir::TensorMapPtr {
    if (!isMatmulOperand(plan, param))
      return nullptr;
    kir::TensorMapPtr &map = param == plan.a.param   ? operands.mapA
                             : param == plan.b.param ? operands.mapB
                                                     : operands.mapB2;
    return map = operandTensorMap(cx, plan, names, param, buffer);
  });
  if (plan.a.param == plan.b.param) // a @ a^T: one tensor map serves both
    operands.mapB = operands.mapA;
  if (plan.epilogueVia == sched::EpilogueKind::SharedTmaStore)
    addOutputTensorMap(cx, plan, names, state.epilogue);
  if (plan.partialTiles())
    for (const kir::BufferPtr &workspace : {plan.partials, plan.arrivals}) {
      kir::KernelParam kp;
      kp.kind = kir::KernelParam::Kind::Tensor;
      kp.buffer = workspace;
      cx.kernel.params.push_back(kp);
    }
  threads.producerWarpgroup = plan.warpSpecialized;
  state.scheduler = makeTileScheduler(cx, plan, names, threads);
  TileScheduler &scheduler = *state.scheduler;
  threads.tid = names.var("tid");
  threads.warpgroup = names.var("warpgroup");
  threads.consumer = plan.warpSpecialized ? names.var("consumer") : threads.warpgroup;

  std::vector<Stmt> body;
  if (plan.clusterSize() > 1) {
    threads.clusterRank = names.var("cta_rank");
    body.push_back(kir::let(threads.clusterRank,
                            kir::var(scheduler.cta()) % kir::index(plan.clusterSize()),
                            "the CTA's rank in its cluster (clusters run along x)"));
  }
  // Shared memory: the main loop's operand rings, the epilogue's output tile, the stages'
  // barriers.
  SharedLayout shared;
  allocateOperandRings(plan, names, operands, shared);
  if (plan.sharedEpilogue())
    allocateOutputTile(plan, names, state.epilogue, shared);
  allocateStageBarriers(plan, names, operands, shared);
  if (plan.partialTiles())
    scheduler.useArrivalWord(allocateArrivalWord(plan, names, shared));
  body.insert(body.end(), shared.allocations.begin(), shared.allocations.end());
  body.push_back(initStageBarriers(plan, names, threads, operands));
  body.push_back(kir::withComment(
      plan.clusterSize() > 1 ? kir::clusterBarrier() : kir::barrier(),
      plan.clusterSize() > 1 ? "the cluster's barriers are initialized before any thread uses them"
                             : "the barriers are initialized before any thread uses them"));
  scheduler.prologue(body);
  if (plan.warpSpecialized)
    body.push_back(producerRole(plan, state));
  body.push_back(consumerRole(plan, state));
  // No CTA of a cluster exits while a peer may still write its shared memory or arrive
  // on its barriers.
  if (plan.clusterSize() > 1)
    body.push_back(fromDirective(kir::clusterBarrier(), plan.clusterOrigin,
                                 "the cluster's CTAs are done with each other"));

  int64_t warpgroups = plan.warpgroups + (plan.warpSpecialized ? 1 : 0);
  Stmt nest = kir::block(std::move(body));
  std::string roles =
      plan.warpSpecialized
          ? "warpgroup 0 loads, 1 .. " + std::to_string(plan.warpgroups) + " multiply"
          : "consumer warpgroups: " + std::to_string(plan.warpgroupsM()) + " x " +
                std::to_string(plan.warpgroupsN()) + " of " + std::to_string(plan.warpM) + " x " +
                std::to_string(plan.warpN);
  nest = plan.warpSpecialized
             ? fromDirective(kir::parallelLoop(threads.warpgroup, kir::index(warpgroups),
                                               kir::Axis::Warpgroup, nest),
                             plan.warpSpecializeOrigin, roles)
             : kir::parallelLoop(threads.warpgroup, kir::index(warpgroups), kir::Axis::Warpgroup,
                                 nest, {roles, plan.mmaOrigin.range});
  nest = kir::parallelLoop(threads.tid, kir::index(128 * warpgroups), kir::Axis::TIDx, nest);
  nest = scheduler.gridLoops(nest);
  cx.kernel.body = kir::block(
      {kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents, nullptr), nest});

  kir::LaunchShape &launch = cx.kernel.launch;
  scheduler.launchGrid(launch);
  launch.block = {kir::index(plan.threads()), kir::index(1), kir::index(1)};
  if (plan.clusterSize() > 1)
    launch.cluster = {kir::index(plan.clusterSize()), kir::index(1), kir::index(1)};
  launch.sharedBytes = kir::index(shared.bytes);
  launch.maxThreads = plan.threads();
  // setmaxnreg redistributes the registers of one resident CTA an SM.
  if (plan.warpSpecialized)
    launch.minBlocksPerSm = 1;
  return true;
}

bool buildMatmulMainLoop(LowerContext &cx) {
  MatmulKernelState &state = kernelState(cx);
  MainLoop mainLoop(*cx.matmul, state.names, state.threads, state.mainLoop, state.accumulators);
  cx.kernel.body = fillMarkers(cx.kernel.body, labels::MatmulProducerLoads, [&](const Stmt &m) {
    return mainLoop.producerLoads(state.tileOf(m));
  });
  cx.kernel.body = fillMarkers(cx.kernel.body, labels::MatmulMainLoop, [&](const Stmt &m) {
    return mainLoop.consumerLoop(state.tileOf(m));
  });
  return true;
}

bool buildMatmulEpilogue(LowerContext &cx) {
  MatmulKernelState &state = kernelState(cx);
  Epilogue epilogue(cx, *cx.matmul, state.names, state.threads, state.epilogue, state.accumulators,
                    *state.scheduler);
  cx.kernel.body = fillMarkers(cx.kernel.body, labels::MatmulEpilogue,
                               [&](const Stmt &m) { return epilogue.tile(state.tileOf(m)); });
  cx.kernel.body = fillMarkers(cx.kernel.body, labels::MatmulEpilogueEnd,
                               [&](const Stmt &) { return epilogue.end(); });
  return true;
}

} // namespace fsl::lower
