// MainLoop.h — the matmul kernel's main loop (CUTLASS's collective main loop): TMA loads
// of both operands' k tiles into a shared ring of S stages, and the consumers' wgmma on
// each stage once its `full` barrier says it landed, into the thread's accumulators.
//
// Stages are numbered by use across the CTA's tiles: k tile `k` of a work tile is use
// `it = useBase + k`, in stage `it % S`, completing phase `it / S` of the stage's barriers
// (so waits test parity `(it / S) % 2`). Each role computes that once a tile and then
// counts: the stage steps round the ring, the parity flipping at each wrap.
//
// With a producer warpgroup (warp_specialize), its thread 0 waits until the consumers have
// released a stage (`empty`, parity of the previous use: the first pass through the ring
// waits on parity 1 of fresh barriers, which passes at once), then loads; each consumer
// warpgroup keeps one wgmma group in flight (wait 1) and releases the stage before.
// Without one, consumer thread 0 loads S - 1 stages ahead and a block barrier at the end of
// each k tile frees the stage for the next load.
//
// The layouts follow the simulator's reading of the Hopper nodes (sim/Simulator.h) and
// the hardware's: a stage's a tile is BM rows of 64 bf16 (128 bytes, K contiguous), written
// by one TMA box with the 128-byte swizzle at a 1024-byte aligned offset; wgmma reads rows
// of M (or N) one swizzle span apart, so the operand of k step `ks` starts `ks * 16`
// elements into the row and that of instruction row `mi` `mi * 64` rows down.
#pragma once

#include "lower/Context.h"
#include "lower/matmul/Fragments.h"
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

/// What the main loop reads and synchronizes on: the operands' tensor maps, the shared
/// operand rings and the stages' barriers.
struct MainLoopStorage {
  kir::TensorMapPtr mapA, mapB, mapB2;
  /// S stages of the a tile and the b tile (and b2's, with two products).
  kir::BufferPtr aTiles, bTiles, b2Tiles;
  /// full: a stage's tiles have landed; empty (with a producer): the consumers are done
  /// with it; turn (two consumer groups): a group's products may start.
  kir::BufferPtr full, empty, turn;
};

/// The dynamic shared memory, laid out in order: each buffer at the next offset.
struct SharedLayout {
  std::vector<kir::Stmt> allocations;
  int64_t bytes = 0;
};

/// Whether fusion parameter `param` is an operand of the product (passed as a tensor map).
bool isMatmulOperand(const MatmulPlan &plan, unsigned param);
/// An operand's tensor map: boxes of (tile rows) x (one 128-byte row of K), swizzled.
kir::TensorMapPtr operandTensorMap(const LowerContext &cx, const MatmulPlan &plan,
                                   const KernelNames &names, unsigned param,
                                   const kir::BufferPtr &buffer);
/// The shared operand rings (each stage's tiles 1024-byte aligned, as the 128-byte
/// swizzle's pattern repeats every 1024 bytes).
void allocateOperandRings(const MatmulPlan &plan, const KernelNames &names,
                          MainLoopStorage &storage, SharedLayout &layout);
/// The barriers: full, empty with a producer warpgroup, turn with two consumer groups.
void allocateStageBarriers(const MatmulPlan &plan, const KernelNames &names,
                           MainLoopStorage &storage, SharedLayout &layout);
/// One thread initializes the barriers (and fences them for the TMA unit).
kir::Stmt initStageBarriers(const MatmulPlan &plan, const KernelNames &names,
                            const CtaThreads &threads, const MainLoopStorage &storage);
/// The consumers' f32 accumulators, allocated in `out`.
Accumulators allocateAccumulators(const MatmulPlan &plan, const KernelNames &names,
                                  std::vector<kir::Stmt> &out);

/// With K = 0 no wgmma writes the accumulators: they are zeroed where `kCount` is 0.
kir::Stmt zeroAccumulatorsIfNoK(const MatmulPlan &plan, const KernelNames &names,
                                const Accumulators &accumulators, kir::Expr kCount);

/// A position in the ring of stages, kept in two mutable registers: the stage and the
/// parity of its use. Advanced once a k tile, it replaces `use % S` and `use / S % 2`,
/// 64-bit divisions by the stage count between one stage's products and the next.
struct StageCounter {
  kir::VarPtr stage, phase;
};

/// The K loops of work tiles.
class MainLoop {
public:
  MainLoop(const MatmulPlan &plan, const KernelNames &names, const CtaThreads &threads,
           const MainLoopStorage &storage, const Accumulators &accumulators)
      : plan_(plan), names_(names), threads_(threads), storage_(storage),
        accumulators_(accumulators) {}

  /// The producer's loads of the tile: each stage once the consumers released its
  /// previous use.
  kir::Stmt producerLoads(const WorkTile &tile) const;
  /// The consumers' K loop of the tile (with the loads, without a producer), taking turns
  /// with the other group (two consumer groups); the accumulators hold the tile after it.
  kir::Stmt consumerLoop(const WorkTile &tile) const;

private:
  kir::Expr iteration(const WorkTile &tile, kir::Expr kTile) const;
  StageCounter startCounter(const WorkTile &tile, std::vector<kir::Stmt> &out) const;
  kir::Stmt advance(const StageCounter &counter) const;
  kir::Expr stageBefore(const StageCounter &counter, int64_t back) const;
  kir::Stmt loadStage(const WorkTile &tile, kir::Expr kTile, kir::Expr stage) const;
  kir::Stmt loadA(const WorkTile &tile, const kir::Expr &k, const kir::Expr &stage) const;
  kir::Stmt loadB(const WorkTile &tile, const kir::Expr &k, const kir::Expr &stage,
                  const kir::TensorMapPtr &map, const kir::BufferPtr &tiles) const;
  kir::Stmt warpSpecializedLoop(const WorkTile &tile) const;
  kir::Stmt singleRoleLoop(const WorkTile &tile) const;
  kir::Stmt inTurn(const WorkTile &tile, kir::Stmt loop) const;
  kir::Stmt mmaOnStage(const kir::Expr &stage, const kir::Expr &kTile) const;
  kir::Stmt zeroIfNoProduct(const WorkTile &tile) const;
  int64_t tileElements(int64_t rows) const { return rows * plan_.tileK; }
  int64_t operandBytes() const { return ir::dtypeBytes(plan_.a.dtype); }

  const MatmulPlan &plan_;
  const KernelNames &names_;
  const CtaThreads &threads_;
  const MainLoopStorage &storage_;
  const Accumulators &accumulators_;
};

} // namespace fsl::lower
