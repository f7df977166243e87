// Matmul.h — auto(matmul): the hand schedule of examples/linear_bias_gelu.fsl, the fastest
// measured: a producer warpgroup and two consumers, persistent tiles in groups of 8, the
// epilogue through shared memory (and TMA stores where N's rows allow); 128 x 256 tiles,
// 128 x 128 below two waves of those (a `when M < ...` variant), 224 or 192 columns where
// they fill the waves better (static sizes), and for at most 64 rows 64-row tiles of one
// consumer warpgroup with a deep pipeline.
#pragma once

#include "heuristics/Directives.h"
#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"
#include "support/Target.h"

#include <optional>
#include <string>
#include <vector>

namespace fsl::heuristics {

/// One matmul schedule: a CTA tile of (tileM, tileN), consumer warpgroups of (64, tileN)
/// and a producer warpgroup, and the tile order.
struct MatmulTile {
  int64_t tileM = 128, tileN = 256, stages = 3;
  /// The rows of a consumer warpgroup's tile: 64, or 128 (two wgmma rows of instructions)
  /// for 256-row tiles of two consumers (tile_m = 256).
  int64_t warpM = 64;
  /// Consumer groups: 2 takes alternate tiles of 64 x tileN (ping-pong).
  int64_t groups = 1;
  sched::TileOrder order = sched::TileOrder::Persistent;
  int64_t orderParameter = 8; // the swizzle's group of M tiles, or split_k's parts
  int64_t clusterM = 1;
  /// cluster (1, C) multicast: C N tiles sharing the a tile (cluster_n).
  int64_t clusterN = 1;
  sched::EpilogueKind epilogue = sched::EpilogueKind::Registers;
  /// The output tile stored this many columns at a time through two shared pieces
  /// (`epilogue via shared tma_store, tile (tileM, C)`); 0: the whole tile at once.
  int64_t epiloguePiece = 0;
  /// swap_ab: (tileM, tileN) is still the output tile, but the instruction's 64 rows run
  /// along N (one consumer warpgroup a 64 columns of N) and its N side is tileM.
  bool swapAB = false;
};

/// The choice for one range of M, [low, high) (none: unbounded).
struct MatmulVariant {
  std::optional<int64_t> low, high;
  /// A runtime N: whether this variant is for rows of the output that are 16-byte
  /// multiples (`when N % 8 == 0` for bf16: the output tile leaves by TMA stores) or for
  /// the others (copied out by the threads); none: no guard on N.
  std::optional<bool> rowsAligned;
  int64_t rowAlignment = 0; // elements: 16 bytes of the output type
  bool userGuard = false;   // under the `= auto` block's own guard
  MatmulTile tile;
  std::vector<std::string> reasons;
};

struct MatmulParams {
  std::string declined; // why the fusion is not scheduled; then nothing else is set
  std::vector<MatmulVariant> variants;
  KnobVerdicts verdicts;
};

/// What auto(matmul) chooses for `shape` (with a matmul) on `target`.
MatmulParams chooseMatmul(const FusionShape &shape, const Target &target, const Knobs &knobs);

/// The schedule blocks of `params`, each with its guard on M.
std::vector<sched::ScheduleBlock> matmulBlocks(const FusionShape &shape, const MatmulParams &params,
                                               const BlockContext &context);

} // namespace fsl::heuristics
