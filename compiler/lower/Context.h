// Context.h — what the lowering passes share: the plan, the kernel being built, and
// the names the first pass gave to loops, buffers and dimensions.
//
// Passes find what they rewrite by these handles (a loop by its index variable, a
// tensor by its buffer) and by statement labels (Labels below), never by position.
#pragma once

#include "kir/IR.h"
#include "lower/Plan.h"
#include "lower/matmul/MatmulPlan.h"

#include <functional>
#include <map>
#include <memory>

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::lower {

/// Labels on statements that later passes look for (StmtNode::comment is for people).
namespace labels {
inline constexpr const char *PhaseNest = "phase-nest";       // a phase's serial loop nest
inline constexpr const char *RowGuard = "row-guard";         // bounds check once a thread
inline constexpr const char *BoundsCheck = "bounds-check";   // bounds check each iteration
inline constexpr const char *ClampedStore = "clamped-store"; // a store past a clamped row
// The matmul path's markers (matmul/Markers.h): where a later pass puts its part.
inline constexpr const char *MatmulProducerLoads = "matmul-producer-loads"; // a tile's loads
inline constexpr const char *MatmulMainLoop = "matmul-main-loop";           // a tile's K loop
inline constexpr const char *MatmulEpilogue = "matmul-epilogue";            // a tile's epilogue
inline constexpr const char *MatmulEpilogueEnd = "matmul-epilogue-end";     // after the last tile
} // namespace labels

struct LowerOptions {
  /// The register file of an SM: `maxrregcount N` becomes a minimum of blocks an SM.
  int64_t registersPerSm = 65536;
  /// SMs of the target: persistent matmul CTAs, one each; a row kernel lets the next
  /// kernel launch early only where its grid has at most one block an SM.
  int64_t smCount = 132;
  /// What an SM holds at once (the target's): a cooperative launch (`grid_sync`) needs
  /// every block of its grid resident.
  int64_t maxThreadsPerSm = 2048;
  int64_t maxBlocksPerSm = 32;
  int64_t sharedMemoryPerSm = 233472;
  /// A thread's registers and the target's name, which bound what the plan keeps in
  /// registers (Plan.h).
  PlanLimits plan;
};

struct MatmulKernelState;

struct LowerContext {
  /// The loop-nest plan (Plan.h); empty on the matmul path, which has `matmul` instead.
  const Plan &plan;
  /// The matmul path's plan (MatmulPlan.h), or null.
  const MatmulPlan *matmul = nullptr;
  const ir::Fusion &fusion;
  const LowerOptions &options;
  DiagnosticEngine &diagnostics;
  kir::Kernel kernel;

  /// Per plan loop: its index variable.
  std::vector<kir::VarPtr> loopVars;
  /// Per fusion dimension: its runtime-size variable (null when static).
  std::vector<kir::VarPtr> dimVars;
  /// Per fusion parameter: its buffer (tensors) or variable (scalars); per output that is
  /// not an inout parameter: its buffer.
  std::vector<kir::BufferPtr> paramBuffers;
  std::vector<kir::VarPtr> scalarVars;
  /// Per fusion parameter declared `strided`: the runtime stride variable of each axis but
  /// the innermost (stride 1), outermost first; empty for every other parameter.
  std::vector<std::vector<kir::VarPtr>> strideVars;
  std::vector<kir::BufferPtr> outputBuffers;
  /// The dimensions of each global buffer, in memory order.
  std::map<const kir::Buffer *, std::vector<ir::DimId>> bufferDims;
  /// The index of each dimension in terms of the loop variables (one shared expression
  /// per dimension, so a pass can recognise it inside an address).
  std::vector<kir::Expr> rootIndex;

  /// Bytes of the inputs staged in shared memory (`cache t in shared`), after the per-thread
  /// shared memory (Plan::sharedBytesPerThread, 16-byte aligned): set by cache-inputs, read
  /// by launch-shape; null without any.
  kir::Expr cachedInputBytes;
  /// `grid_sync`: the shared memory the lane sums take after the grid barrier, 16-byte
  /// aligned, after the per-thread shared memory and before the cached inputs: set by
  /// build-loop-nests, read by cache-inputs and launch-shape; 0 without.
  int64_t gridSyncSharedBytes = 0;

  /// The matmul path: what its passes hand each other (matmul/MatmulKernel.h).
  std::shared_ptr<MatmulKernelState> matmulKernel;

  LowerContext(const Plan &plan, const LowerOptions &options, DiagnosticEngine &diagnostics)
      : plan(plan), fusion(*plan.fusion), options(options), diagnostics(diagnostics) {}
  /// A kernel of the matmul path.
  LowerContext(const MatmulPlan &matmul, const LowerOptions &options,
               DiagnosticEngine &diagnostics);

  /// The kernel's parameters, in the order every kernel of a fusion has them: the
  /// fusion's parameters (tensors as global buffers, scalars as variables; a tensor that
  /// `tensorMapOf` maps is passed as a TMA tensor map instead), the outputs that are not
  /// inout parameters, the runtime dimensions, then the strides of the `strided` inputs
  /// (each outer axis, outermost first). Fills the handles below.
  void addParameters(const std::function<kir::TensorMapPtr(unsigned param, const kir::BufferPtr &)>
                         &tensorMapOf = {});

  kir::Expr dimExtent(ir::DimId dim) const;
  kir::Expr extentOf(const sched::Extent &extent) const;
  kir::Expr extentOf(const sched::SizeExpr &size) const;
  /// Row-major element offset of the current element in a tensor with `dims`.
  kir::Expr offsetOf(const std::vector<ir::DimId> &dims) const;
  /// The element offset of fusion parameter `param` at `index` (one expression per axis,
  /// outermost first): row-major over its extents, or at its runtime strides when it is
  /// declared `strided`.
  kir::Expr paramOffset(unsigned param, const std::vector<kir::Expr> &index) const;
  /// paramOffset at the current element.
  kir::Expr paramOffset(unsigned param) const;
  /// The variable of the vector loop (null without one).
  kir::VarPtr vectorVar() const;
};

std::string labelOf(const kir::Stmt &s);

/// The threads of the block (blockDim.x * blockDim.y * blockDim.z).
kir::Expr blockThreads();
/// The thread's index in its block, x fastest: consecutive threads of a warp are consecutive.
kir::Expr linearThreadId();
/// `bytes` rounded up to a multiple of 16 (a 16-byte vector's alignment); folded when static.
kir::Expr alignTo16(kir::Expr bytes);

} // namespace fsl::lower
