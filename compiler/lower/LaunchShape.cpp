// LaunchShape.cpp — the `launch-shape` pass: grid, block, shared memory, launch bounds.
//
// The grid and block are the extents of the parallel loops; dynamic shared memory is
// the block reduction scratch (8 or 16 bytes a thread) and the shared persistent buffers,
// then the inputs staged in shared memory (`cache t in shared`).
// `launch_bounds N` and `maxrregcount R` become __launch_bounds__(N, blocks an SM that
// R registers a thread allow) — which makes ptxas keep each thread within about R
// registers — or __maxnreg__(R) when the thread count is not static.
#include "lower/Passes.h"

#include "kir/Mutator.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

namespace fsl::lower {

namespace {

/// A cooperative launch (`grid_sync`) needs every block of its grid resident at once: the
/// blocks an SM that its threads, the SM's block slots and its shared memory allow, times
/// the SMs, must hold the grid (the driver refuses the launch otherwise). Then ptxas keeps
/// the registers within what that many blocks an SM allow (__launch_bounds__'s second
/// argument), so no register count can make the launch fail.
/// The largest size of each runtime dimension that the schedule's `when` guards allow
/// (`T < 16`: 15); a dimension without such a bound has none.
std::map<ir::DimId, int64_t> guardedMaxima(const sched::Schedule &schedule) {
  std::map<ir::DimId, int64_t> maxima;
  for (const sched::SizeGuard &guard : schedule.header.when) {
    if (guard.modulus > 0)
      continue;
    std::optional<int64_t> most;
    switch (guard.comparison) {
    case sched::Comparison::Lt:
      most = guard.bound - 1;
      break;
    case sched::Comparison::Le:
    case sched::Comparison::Eq:
      most = guard.bound;
      break;
    default:
      break;
    }
    if (!most)
      continue;
    auto [it, fresh] = maxima.emplace(guard.dim, *most);
    if (!fresh)
      it->second = std::min(it->second, *most);
  }
  return maxima;
}

/// The shared memory the driver keeps for itself in every block (1 KB on sm_80 and later),
/// which counts against an SM's shared memory beside the block's own.
constexpr int64_t kSharedReservedPerBlock = 1024;

bool checkResidency(LowerContext &context) {
  kir::LaunchShape &launch = context.kernel.launch;
  const LowerOptions &options = context.options;
  const sched::Schedule &schedule = *context.plan.schedule;
  // A schedule whose guards exclude a static size is never launched: nothing to hold.
  for (const sched::SizeGuard &guard : schedule.header.when)
    if (std::optional<int64_t> size = schedule.fusion->dims[guard.dim].staticExtent)
      if (!guard.holds(*size))
        return true;
  // A grid of runtime rows (grid_sync on a row reduction), and shared memory sized by a
  // runtime dimension, are counted at the most its guards let it have: both only grow
  // with a dimension's size.
  std::map<ir::DimId, int64_t> maxima = guardedMaxima(schedule);
  std::string unbounded;
  auto atMost = [&](const kir::Expr &e) {
    return kir::substitute(e, [&](const kir::VarPtr &v) -> kir::Expr {
      for (ir::DimId dim = 0; dim < context.dimVars.size(); ++dim)
        if (context.dimVars[dim] == v) {
          auto found = maxima.find(dim);
          if (found != maxima.end())
            return kir::index(std::max<int64_t>(found->second, 0));
          unbounded = schedule.fusion->dims[dim].name;
        }
      return nullptr;
    });
  };
  kir::Expr grid = atMost(launch.grid[0] * launch.grid[1] * launch.grid[2]);
  kir::Expr sharedBytes = atMost(launch.sharedBytes);
  if (!unbounded.empty()) {
    context.diagnostics.report(
        DiagId::GridSyncUnsupported, schedule.gridSync->range,
        "the grid's blocks or their shared memory grow with " + unbounded +
            " at run time, and every block of a grid barrier must be resident at once; bound it "
            "with a guard (`when " +
            unbounded + " < N`) or give it a static size");
    return false;
  }
  std::optional<int64_t> blocks = kir::evaluateStatic(grid);
  std::optional<int64_t> threads =
      kir::evaluateStatic(launch.block[0] * launch.block[1] * launch.block[2]);
  std::optional<int64_t> shared = kir::evaluateStatic(sharedBytes);
  FSL_INTERNAL_ASSERT(blocks && threads && shared && launch.maxThreads,
                      "a cooperative launch of a runtime shape reached launch-shape");
  int64_t perSm = options.maxThreadsPerSm / *launch.maxThreads;
  std::string limit = "threads";
  if (options.maxBlocksPerSm < perSm) {
    perSm = options.maxBlocksPerSm;
    limit = "block slots";
  }
  if (*shared > 0 && options.sharedMemoryPerSm / (*shared + kSharedReservedPerBlock) < perSm) {
    perSm = options.sharedMemoryPerSm / (*shared + kSharedReservedPerBlock);
    limit = "shared memory";
  }
  if (*blocks > perSm * options.smCount) {
    context.diagnostics.report(
        DiagId::GridSyncUnsupported, schedule.gridSync->range,
        llvm::formatv("the grid reduction's {0} blocks of {1} threads and {2} bytes of shared "
                      "memory cannot all be resident on the {3} SMs of the target ({4} an SM: "
                      "its {5})",
                      *blocks, *threads, *shared, options.smCount, perSm, limit)
            .str());
    return false;
  }
  launch.minBlocksPerSm = std::max<int64_t>(launch.minBlocksPerSm.value_or(1),
                                            (*blocks + options.smCount - 1) / options.smCount);
  return true;
}

} // namespace

bool computeLaunchShape(LowerContext &context) {
  kir::LaunchShape &launch = context.kernel.launch;
  for (int i = 0; i < 3; ++i)
    launch.grid[i] = launch.block[i] = kir::index(1);
  kir::forEachStmt(context.kernel.body, [&](const kir::Stmt &s) {
    if (s->kind != kir::StmtKind::For || s->loopKind != kir::LoopKind::Parallel)
      return;
    switch (s->axis) {
    case kir::Axis::BIDx:
    case kir::Axis::BIDy:
    case kir::Axis::BIDz:
      launch.grid[static_cast<int>(s->axis) - static_cast<int>(kir::Axis::BIDx)] = s->extent;
      return;
    case kir::Axis::TIDx:
    case kir::Axis::TIDy:
    case kir::Axis::TIDz:
      launch.block[static_cast<int>(s->axis) - static_cast<int>(kir::Axis::TIDx)] = s->extent;
      return;
    case kir::Axis::Warpgroup:
      return;
    }
  });
  const Plan &plan = context.plan;
  launch.sharedBytes =
      launch.block[0] * launch.block[1] * launch.block[2] * kir::index(plan.sharedBytesPerThread());
  // `grid_sync`'s lane sums follow, 16-byte aligned (BuildLoopNests.cpp), then the inputs
  // staged in shared memory (CacheInputs.cpp).
  if (context.gridSyncSharedBytes)
    launch.sharedBytes = alignTo16(launch.sharedBytes) + kir::index(context.gridSyncSharedBytes);
  if (context.cachedInputBytes)
    launch.sharedBytes = alignTo16(launch.sharedBytes) + context.cachedInputBytes;
  const sched::Schedule &schedule = *plan.schedule;
  std::optional<int64_t> threads = plan.staticThreads();
  std::optional<int64_t> registers;
  if (schedule.maxRRegCount) {
    registers = schedule.maxRRegCount->registers.value;
    launch.registerNote = "maxrregcount " + std::to_string(*registers);
  }
  // `launch_bounds N` bounds the block whatever its size; without it a static block is
  // its own bound. A runtime block larger than the bound fails at launch, and the
  // simulator refuses it the same way.
  if (schedule.launchBounds)
    launch.maxThreads = schedule.launchBounds->threads.value;
  else if (threads)
    launch.maxThreads = *threads;
  if (registers) {
    if (launch.maxThreads)
      launch.minBlocksPerSm =
          std::max<int64_t>(1, context.options.registersPerSm / (*registers * *launch.maxThreads));
    else
      launch.maxRegisters = registers;
  }
  if (launch.cooperative && !checkResidency(context))
    return false;
  return true;
}

} // namespace fsl::lower
