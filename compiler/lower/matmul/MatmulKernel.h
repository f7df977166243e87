// MatmulKernel.h — what the matmul passes hand each other (LowerContext::matmulKernel):
// the kernel's names and threads, the tile scheduler, the main loop's and the epilogue's
// storage, the accumulators, and the work tile each marker stands in.
//
// `matmul-tile-scheduler` builds the kernel's frame (parameters, shared storage, warp
// roles, the walks over work tiles) and leaves markers (Markers.h) where the main loop and
// the epilogue go; `matmul-main-loop` and `matmul-epilogue` fill them from this state.
#pragma once

#include "lower/matmul/Epilogue.h"
#include "lower/matmul/MainLoop.h"
#include "lower/matmul/TileScheduler.h"

#include <map>

namespace fsl::lower {

struct MatmulKernelState {
  explicit MatmulKernelState(const ir::Fusion &fusion) : names(fusion) {}

  KernelNames names;
  CtaThreads threads;
  std::unique_ptr<TileScheduler> scheduler;
  MainLoopStorage mainLoop;
  EpilogueStorage epilogue;
  Accumulators accumulators;
  /// The work tile bound where each marker of a walk stands, by marker.
  std::map<const kir::StmtNode *, WorkTile> markedTiles;

  /// A marker for `label` in the walk's body over `tile`.
  kir::Stmt markTile(const char *label, std::string what, const WorkTile &tile);
  const WorkTile &tileOf(const kir::Stmt &marker) const;
};

} // namespace fsl::lower
