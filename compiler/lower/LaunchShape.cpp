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

namespace fsl::lower {

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
  // A cooperative launch (grid_sync) needs every block resident at once: ptxas keeps the
  // registers within what that many blocks an SM allow (__launch_bounds__'s second
  // argument), so no register count can make the launch fail.
  if (launch.cooperative && launch.maxThreads) {
    std::optional<int64_t> blocks =
        kir::evaluateStatic(launch.grid[0] * launch.grid[1] * launch.grid[2]);
    if (blocks)
      launch.minBlocksPerSm =
          std::max<int64_t>(launch.minBlocksPerSm.value_or(1),
                            (*blocks + context.options.smCount - 1) / context.options.smCount);
  }
  return true;
}

} // namespace fsl::lower
