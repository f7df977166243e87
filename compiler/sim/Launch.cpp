// Launch.cpp — a kernel launch set up and run: the parameters checked, the grid, block and
// cluster shapes from the launch expressions and the target's limits, a slot for every
// variable, and each cluster's CTAs started (their variables, memory and warps) before
// the warp scheduler runs them.
#include "sim/Interpreter.h"

#include "kir/Mutator.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::sim {

void Interpreter::run() {
  if (!kernel_.body)
    fail("the kernel has no body");
  checkParameters();
  configureLaunch();
  configureCluster();
  assignSlots();
  // Cluster by cluster (block by block without one), in the grid's x-fastest order.
  for (int64_t z = 0; z < grid_[2]; z += cluster_[2])
    for (int64_t y = 0; y < grid_[1]; y += cluster_[1])
      for (int64_t x = 0; x < grid_[0]; x += cluster_[0])
        runCluster({x, y, z});
}

void Interpreter::checkParameters() {
  for (const kir::KernelParam &param : kernel_.params) {
    switch (param.kind) {
    case kir::KernelParam::Kind::Tensor:
      if (!param.buffer)
        fail("a tensor parameter without a buffer");
      globalData(*param.buffer);
      break;
    case kir::KernelParam::Kind::Scalar:
    case kir::KernelParam::Kind::Dim:
    case kir::KernelParam::Kind::Stride:
      if (!param.var)
        fail("a scalar parameter without a variable");
      if (!memory_.scalars.count(param.var.get()))
        fail("no value for the kernel parameter " + param.var->name);
      break;
    case kir::KernelParam::Kind::TensorMap:
      if (!param.tensorMap || !param.tensorMap->global)
        fail("a tensor-map parameter without a tensor");
      globalData(*param.tensorMap->global);
      break;
    }
  }
}

int64_t Interpreter::launchValue(const kir::Expr &e, const char *what) {
  if (!e)
    return 1;
  LaunchScope scope(memory_.scalars);
  return exactInteger(evaluate(*e, scope), what);
}

void Interpreter::configureLaunch() {
  static const char *axes = "xyz";
  const kir::LaunchShape &launch = kernel_.launch;
  int64_t threads = 1, clusterBlocks = 1;
  for (int d = 0; d < 3; ++d) {
    grid_[d] = launchValue(launch.grid[d], "a grid extent");
    block_[d] = launchValue(launch.block[d], "a block extent");
    int64_t cluster = launchValue(launch.cluster[d], "a cluster extent");
    if (grid_[d] < 1 || grid_[d] > limits_.maxGridDim[d])
      fail(llvm::formatv("grid extent {0} along {1} is outside 1..{2}", grid_[d], axes[d],
                         limits_.maxGridDim[d]));
    if (block_[d] < 1 || block_[d] > limits_.maxBlockDim[d])
      fail(llvm::formatv("block extent {0} along {1} is outside 1..{2}", block_[d], axes[d],
                         limits_.maxBlockDim[d]));
    if (cluster < 1 || grid_[d] % cluster != 0)
      fail(llvm::formatv("grid extent {0} along {1} is not a multiple of the cluster extent {2}",
                         grid_[d], axes[d], cluster));
    threads *= block_[d];
    clusterBlocks *= cluster;
  }
  if (clusterBlocks > limits_.maxClusterSize)
    fail(llvm::formatv("clusters of {0} blocks; the target allows {1}", clusterBlocks,
                       limits_.maxClusterSize));
  if (threads > limits_.maxThreadsPerBlock)
    fail(llvm::formatv("{0} threads per block; the target allows {1}", threads,
                       limits_.maxThreadsPerBlock));
  if (launch.maxThreads && threads > *launch.maxThreads)
    fail(llvm::formatv("{0} threads per block exceed the kernel's __launch_bounds__ of {1}",
                       threads, *launch.maxThreads));
  threads_ = static_cast<int>(threads);
  // Registers per thread at launch, which setmaxnreg.dec gives up and .inc takes: the
  // kernel's __maxnreg__, else the most that lets the blocks __launch_bounds__ asks to be
  // resident (one without it) share the register file (the compiler's count is not known
  // here).
  int64_t warps = (threads + 31) / 32;
  residentBlocks_ =
      launch.maxRegisters ? 1 : std::max<int64_t>(1, launch.minBlocksPerSm.value_or(1));
  initialRegisters_ =
      launch.maxRegisters
          ? (*launch.maxRegisters + 7) / 8 * 8
          : std::min<int64_t>(256, limits_.registersPerSm / (32 * warps * residentBlocks_) / 8 * 8);
  dynamicShared_ = launch.sharedBytes ? launchValue(launch.sharedBytes, "the shared bytes") : 0;
  if (dynamicShared_ < 0 || dynamicShared_ > limits_.maxSharedBytesPerBlock)
    fail(llvm::formatv("{0} bytes of dynamic shared memory; the target allows {1} per block",
                       dynamicShared_, limits_.maxSharedBytesPerBlock));
}

/// Numbers every variable the body reads or writes: each thread keeps its values in
/// one row of `cta_->values`. Launch scalars get a slot too, filled in every thread.
void Interpreter::assignSlots() {
  auto add = [&](const Var *v) {
    if (v && v->builtin == kir::Builtin::None)
      slotOf_.emplace(v, static_cast<int>(slotOf_.size()));
  };
  for (const auto &[v, value] : memory_.scalars)
    add(v);
  kir::forEachStmt(kernel_.body, [&](const kir::Stmt &s) {
    add(s->var.get());
    if (s->kind == StmtKind::Let && s->mutableVar)
      mutable_.insert(s->var.get());
  });
  kir::forEachExpr(kernel_.body, [&](const kir::Expr &e) {
    if (e->kind == ExprKind::Var)
      add(e->var.get());
  });
  slots_ = static_cast<int>(slotOf_.size());
  slotTable_.build(slotOf_);
}

/// The cluster the launch groups its blocks in, (1, 1, 1) without one (configureLaunch
/// has checked that it divides the grid and its size). Its CTAs run together
/// (runCluster).
void Interpreter::configureCluster() {
  int64_t size = 1;
  for (int d = 0; d < 3; ++d) {
    // A cooperative launch's blocks may meet at a grid barrier: they all run together, as
    // one cluster of the whole grid.
    cluster_[d] = kernel_.launch.cooperative
                      ? grid_[d]
                      : launchValue(kernel_.launch.cluster[d], "a cluster extent");
    size *= cluster_[d];
  }
  ctas_.resize(static_cast<size_t>(size));
}

/// Runs the CTAs of the cluster whose first block is `origin` together: each has its own
/// variables, local and shared memory, mbarriers and warps, and the warps of all of them
/// are scheduled round robin (CTA by CTA in rank order, each CTA's by warp id).
void Interpreter::runCluster(std::array<int64_t, 3> origin) {
  barrierById_.clear();
  epoch_ = 0;
  for (size_t r = 0; r < ctas_.size(); ++r) {
    int64_t rank = static_cast<int64_t>(r);
    enterCta(ctas_[r]);
    startCta(static_cast<int>(r),
             {origin[0] + rank % cluster_[0], origin[1] + rank / cluster_[0] % cluster_[1],
              origin[2] + rank / (cluster_[0] * cluster_[1])});
  }
  schedule();
}

/// Makes `cta` the CTA whose warp runs.
void Interpreter::enterCta(Cta &cta) {
  cta_ = &cta;
  values_ = cta.values.data();
  bound_ = cta.bound.data();
}

/// Sets up `cta_` as block `blockIdx`, rank `rank` of its cluster, before any warp runs.
void Interpreter::startCta(int rank, std::array<int64_t, 3> blockIdx) {
  Cta &cta = *cta_;
  cta.rank = rank;
  cta.blockIdx = blockIdx;
  cta.values.assign(static_cast<size_t>(threads_) * slots_, 0.0);
  cta.bound.assign(cta.values.size(), 0);
  enterCta(cta); // the new storage
  for (const auto &[v, value] : memory_.scalars)
    for (int t = 0; t < threads_; ++t)
      setVariable(t, *v, value);
  cta.locals.clear();
  cta.shared.clear();
  cta.mbarriers.clear();
  // The previous block's wgmma groups point into the shared storage just freed (its
  // exit faulted on any with reads left; committed empty groups may remain).
  cta.openWgmmaReads.clear();
  cta.wgmmaGroups.clear();
  cta.openWgmmaWrites.clear();
  cta.wgmmaWriteGroups.clear();
  cta.staticSharedEnd = 0;
  int count = (threads_ + 31) / 32;
  cta.warps.resize(count);
  for (int w = 0; w < count; ++w) {
    Warp &warp = cta.warps[w];
    int lanes = std::min(32, threads_ - 32 * w);
    warp.id = w;
    warp.cta = rank;
    warp.first = 32 * w;
    warp.lanes = lanes == 32 ? ~LaneMask(0) : (LaneMask(1) << lanes) - 1;
    warp.stack.clear();
    warp.started = warp.done = false;
    warp.wait = Wait::None;
    warp.at = nullptr;
    warp.waiting = 0;
    warp.conditions.clear();
    warp.registers = initialRegisters_;
    warp.registersKnown = kernel_.launch.maxRegisters.has_value();
    warp.clock.clear();
    startEpochs(warp);
  }
  cta.registerPool = 0;
  cta.finished = false;
  cta.unseen.clear();
  cta.lastReductionSlot = -1;
  cta.lastReduced = nullptr;
}

} // namespace fsl::sim
