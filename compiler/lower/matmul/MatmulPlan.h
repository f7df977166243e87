// MatmulPlan.h — what a matrix-product schedule asks of its kernel, before any statement.
//
// A fusion with a recognised matrix product (sema's Op::MatMul: sum(f32(a) * f32(b),
// over K)) is lowered by its own path, not by the plan and passes of the normalizations
// (Plan.h): the loops are the mma tiles, not the schedule's loop nests. This first step
// reads the fusion and the declarative schedule (ScheduleIR.h, MatmulSchedule) into the
// tile sizes, the pipeline depth, the warpgroups and the epilogue, and refuses with
// `lowering-unsupported` what the path does not lower yet, each at its own line:
//
//   lowered     mma over K: tile (BM, BN, 64), warp (WM, WN), instruction wgmma(64, IN, 16)
//                   [, swap_ab]              (the kernel computes (b a^T)^T: rows along N)
//               pipeline S stages via tma
//               warp_specialize producer(regs P), consumers(W, regs C)
//                                            (W the warp tiles of a tile, or twice that:
//                                            two groups taking alternate tiles)
//               tiles one_per_cta            (also the default)
//               tiles persistent [swizzle G]
//               epilogue via registers       (also the default)
//               epilogue via shared [tma_store]   (one output over [M, N], N contiguous)
//               epilogue via shared tma_store, tile (BM, C)   (the tile C columns at a time)
//               pdl                          (every sm_90 kernel has it)
//               fast_exp                     (the epilogue's f32 exps as __expf)
//               tiles split_k N              (two kernels: partial tiles, then their sum)
//               tiles stream_k [swizzle G]   (two kernels: whole tiles and pieces of K
//                                            spread evenly over the SMs, then the pieces
//                                            of the tiles split between CTAs added)
//               cluster (C, 1) [multicast]  (C = 2 or 4; multicast with warp_specialize)
//               cluster (1, C) [multicast]  (the same along N, with tiles persistent)
//               two products of one a (a @ b, a @ b2): a second b ring and accumulator set
//   refused     clusters with stream_k or split_k, clusters along N with one tile a CTA or
//               swap_ab, a pipeline not via TMA, and
//   the loop
//               directives of the other schedules (split, parallelize, persistent, ...)
//
// Operands: `a: bf16|f16[M, K]` (K contiguous) and `b: bf16|f16[N, K]` or `[K, N]` (N
// contiguous: TMA loads 64 x 64 boxes of it and wgmma reads it N-major), read through
// `f32(...)` casts (so each product is exact, as wgmma computes it). The
// epilogue is every value the outputs need after the product: pointwise, over dimensions
// of [M, N] only (bias [N], residual [M, N], scalars, casts).
#pragma once

#include "kir/IR.h"
#include "schedule/ScheduleIR.h"

#include <memory>
#include <vector>

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::lower {

/// One operand of the product: a tensor parameter staged through shared memory by TMA.
struct MatmulOperand {
  const ir::Value *input = nullptr; // the Input value the product reads (through a cast)
  unsigned param = 0;               // its fusion parameter
  ir::DType dtype = ir::DType::BF16;
  /// K is the tensor's contiguous dimension ([M, K], [N, K]); else the row dimension is
  /// ([K, N]: b only, read by wgmma as an N-major, "transposed", operand).
  bool kContiguous = true;
};

/// How CTAs take output tiles: one each (the grid is the tiles), persistent CTAs, one an
/// SM, walking the tiles in a grouped ("swizzled") order, or stream-K: persistent CTAs
/// taking whole tiles in that order while every CTA gets a whole wave of them, then equal
/// runs of k tiles of the tiles left (a tile split between CTAs is finished by the CTA whose
/// piece arrives last: PartialTiles.h).
enum class TileWalk { OnePerCta, Persistent, StreamK };

struct MatmulPlan {
  const sched::Schedule *schedule = nullptr;
  const ir::Fusion *fusion = nullptr;
  const ir::Value *product = nullptr;
  /// A second product of the same `a` with another `b2` over the same M, N and K (SwiGLU's
  /// gate and up projections): loaded in the same stages, multiplied into a second set of
  /// accumulators, both read by the epilogue. Null with one product.
  const ir::Value *product2 = nullptr;
  /// The kernel's rows (wgmma's M side) and columns: the product's M and N, or with
  /// `swapAB` its N and M (a and b below then hold the fusion's b and a).
  ir::DimId m = 0, n = 0, k = 0;
  MatmulOperand a, b, b2; // a: [M, K], b and b2: [N, K] or [K, N]
  /// `mma ..., swap_ab`: the product computed as (b a^T)^T, for few rows of a (they take
  /// wgmma's N side, down to 8, and N its 64-row side). The epilogue stores each element
  /// by dimension (so transposed), in registers only.
  bool swapAB = false;
  /// The CTA tile (tileK is one 128-byte swizzled row of the operand type), a
  /// warpgroup's tile, and the wgmma instruction's N (its M is 64 and its K 16).
  int64_t tileM = 0, tileN = 0, tileK = 0;
  int64_t warpM = 0, warpN = 0;
  int64_t instructionN = 0;
  int64_t stages = 1;
  /// Consumer warpgroups of a CTA: `tileGroups` groups of (tileM / warpM) x (tileN / warpN),
  /// row-major in a group.
  int64_t warpgroups = 1;
  /// Tiles the consumers work on at once: 1, or 2 when warp_specialize asks for twice the
  /// warpgroups of a tile ("ping-pong": the groups take alternate tiles of the CTA, so one
  /// group's epilogue runs while the other's products do).
  int64_t tileGroups = 1;
  /// warp_specialize: one producer warpgroup (warpgroup 0) issues the TMA loads, the
  /// `warpgroups` consumers (1 .. W) the wgmma; setmaxnreg moves registers between them.
  bool warpSpecialized = false;
  int64_t producerRegisters = 0, consumerRegisters = 0;
  TileWalk tileWalk = TileWalk::OnePerCta;
  /// Persistent tiles: M tiles of a group (consecutive tiles walk down a group of
  /// `tileGroup` M tiles, then across N); 1 walks along N first, row by row. With
  /// `hilbertOrder`, the side of the blocks of tiles walked along a Hilbert curve.
  int64_t tileGroup = 1;
  bool hilbertOrder = false;
  /// Persistent CTAs at most (the target's SMs).
  int64_t smCount = 132;
  sched::EpilogueKind epilogueVia = sched::EpilogueKind::Registers;
  /// `epilogue via shared tma_store, tile (BM, C)`: the output tile goes out in pieces of
  /// C columns through two shared pieces a consumer group, used in turn (TMA stores one
  /// while the consumers write the next); 0: the whole tile at once.
  int64_t epiloguePiece = 0;
  /// split_k N: K split over N CTAs a tile (grid z); each stores its f32 part of the tile to
  /// `partials`, and the CTA whose part arrives last adds them in order and applies the
  /// epilogue (PartialTiles.h). 1: no split.
  int64_t splitK = 1;
  /// cluster (C, 1) [multicast]: C CTAs of consecutive M tiles with the same N tile run as
  /// a cluster; with multicast each loads 1/C of the b tile they share and TMA writes it
  /// into all of them (their empty barriers then count the consumers of the cluster).
  /// cluster (1, C) [multicast] (persistent walks): C CTAs of consecutive N tiles with the
  /// same M tile, each loading 1/C of the a tile they share. One of the two is 1.
  int64_t clusterM = 1, clusterN = 1;
  bool multicast = false;
  kir::Origin clusterOrigin;
  /// Parts of tiles (workspaces set by the lowering where CTAs share a tile's K loop):
  /// `partials`, f32 slots of a tile's accumulators in fragment order (split_k: S a tile;
  /// stream_k: two a CTA, its run's first and last pieces), and `arrivals`, an i32 counter
  /// a tile that the launcher zeroes.
  kir::BufferPtr partials, arrivals;
  /// The values the epilogue computes per accumulator element, in fusion order
  /// (inputs, scalars and constants included; the product itself is the accumulator).
  std::vector<const ir::Value *> epilogue;
  /// The directives, for comments on the statements they produce (tiles and epilogue:
  /// the mma directive when they are not written, as they are its defaults).
  kir::Origin mmaOrigin, pipelineOrigin, tilesOrigin, epilogueOrigin, warpSpecializeOrigin;

  int64_t warpgroupsM() const { return tileM / warpM; }
  /// Consumer warpgroups on one tile.
  int64_t warpgroupsPerTile() const { return warpgroups / tileGroups; }
  int64_t warpgroupsN() const { return tileN / warpN; }
  /// wgmma instructions a warpgroup issues per k step, along M and along N.
  int64_t instructionsM() const { return warpM / 64; }
  int64_t instructionsN() const { return warpN / instructionN; }
  /// f32 accumulators a thread holds: its warpgroup's tile over 128 threads.
  int64_t accumulators() const { return warpM * warpN / 128; }
  /// Bytes one stage of operand tiles takes in shared memory.
  int64_t stageBytes() const;
  /// Rows of b a CTA loads a stage (with multicast its 1/C of the tile), and the TMA
  /// boxes they take: a box has at most 256 rows, so wider tiles (320 columns) load
  /// their b rows in equal boxes, consecutive in shared memory.
  int64_t bRowsLoaded() const { return tileN / (multicast ? clusterM : 1); }
  /// Rows of a a CTA loads a stage (with multicast along N its 1/C of the tile).
  int64_t aRowsLoaded() const { return tileM / (multicast ? clusterN : 1); }
  /// CTAs a cluster: clusterM x clusterN, one of them 1.
  int64_t clusterSize() const { return clusterM * clusterN; }
  int64_t bBoxes() const { return (bRowsLoaded() + kMaxBoxRows - 1) / kMaxBoxRows; }
  static constexpr int64_t kMaxBoxRows = 256;
  /// Threads of a CTA: the consumer warpgroups and the producer's.
  int64_t threads() const { return 128 * (warpgroups + (warpSpecialized ? 1 : 0)); }
  /// Whether CTAs share tiles' K loops (split_k, stream_k): parts of tiles go through the
  /// `partials` and `arrivals` workspaces.
  bool partialTiles() const { return splitK > 1 || tileWalk == TileWalk::StreamK; }
  /// Whether CTAs walk several tiles (persistent and stream-K).
  bool persistentCtas() const { return tileWalk != TileWalk::OnePerCta; }
  /// Whether the output tile goes through shared memory.
  bool sharedEpilogue() const { return epilogueVia != sched::EpilogueKind::Registers; }
};

/// Whether the fusion has a matrix product (and so takes the matmul path).
bool hasMatmul(const ir::Fusion &fusion);

/// The plan of one schedule of a fusion with a matrix product, or null after a
/// `lowering-unsupported` diagnostic at the directive (or fusion line) that cannot be
/// lowered yet.
std::unique_ptr<MatmulPlan> planMatmul(const sched::Schedule &schedule, int64_t smCount,
                                       DiagnosticEngine &diagnostics);

} // namespace fsl::lower
