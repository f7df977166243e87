// TunedConstants.h — the heuristics' measured constants, each with the measurement that
// set it. Constants that shape one choice only stay beside it, with theirs.
#pragma once

#include <cstdint>

namespace fsl::heuristics::tuned {

// --- auto(pointwise) ------------------------------------------------------------------

/// Threads a pointwise block: vectors of up to 16 bytes, rows on blocks.
inline constexpr int64_t kPointwiseThreads = 128;
/// The most accesses a thread `unroll = N` may ask for: what the prefetch pass loads
/// ahead (lower/EarlyLoads.cpp).
inline constexpr int64_t kMaxUnroll = 32;

// --- auto(reduction), auto(inner_persistent) ------------------------------------------

/// Whether auto(reduction) and auto(inner_persistent) compute softmax's and LayerNorm's
/// reduction pairs in one pass (`reduce one_pass`) without the `one_pass` knob. Off until
/// measured on the H200 (tests/bench: the `onepass_<H>` variants): one pass saves a
/// block reduction (a barrier and the shuffles) and a read of the row, or of its buffer,
/// per pair, but its serial update costs more (an exp and selects an element for softmax,
/// a division for Welford).
inline constexpr bool kOnePassByDefault = false;
/// One pass where every output is a row's (no element of the row is written) and
/// auto(inner_persistent) would keep the row for its reductions alone: the online form
/// reads it once and keeps nothing. Measured on the H200 (docs/performance.md, run U2:
/// `fslc tune` of std/losses.fsl's cross_entropy_train, forward alone): 2.3-2.5x the kept
/// row at V = 128256 (T = 1024 and 4096: 379 -> 163 us, 1440 -> 585 us; the kept row
/// spilled), 1.19-1.38x at V = 32000 (T = 1024 and 16384).
inline constexpr bool kOnePassForRowOutputs = true;

/// Register budget for buffers: 64 f32 values a thread keeps occupancy near 50%.
inline constexpr int64_t kRegisterBudget = 64;
/// A recomputed row's blocks of more threads than this get the registers that let two of
/// them share an SM (`maxrregcount`): LayerNorm's one pass over rows of 49152 at 768
/// threads, 0.90-0.91x the time of one block an SM (H100, docs/performance.md run S40C).
inline constexpr int64_t kTwoBlocksMinThreads = 512;
/// The batch is at most 4 vectors a thread: measured on the H200 (docs/performance.md,
/// change 5), 256 threads x 4 beat 128 x 8 at H = 8192 and 512 x 4 beat 256 x 8 at
/// H = 16384 (the larger batch's registers halve the warps an SM holds).
inline constexpr int64_t kBatchTarget = 4;
/// Rows of 2048 vectors or more (H = 16384 bf16) take 8 a thread, 256 threads: once the
/// block reductions were given their static width (issue 17), 256 x 8 beat 512 x 4 at
/// H = 16384 for softmax by 4-9 % and RMSNorm by 0-2 %, LayerNorm within 2 % either way
/// (softmax's second buffer reuses the first's registers: 80 registers, not 128). With
/// three buffers or more, the register budget decides as for shorter rows.
inline constexpr int64_t kLongRowVectors = 2048;
inline constexpr int64_t kLongRowBatch = 8;
/// The batch limit of a reduction without persistent buffers.
inline constexpr int64_t kReductionBatchLimit = 16;

/// Rows read once (a reduction without persistent buffers: argmax over a vocabulary) of
/// more than 4 vectors a thread at 256 threads: 256 threads and a serial loop unrolled by
/// 4, not up to 1024 threads each loading its whole batch ahead. Measured on the H200
/// (docs/performance.md, issue 17), argmax at T = 4096: V = 32000 74 us against 118,
/// V = 50304 108 against 235, V = 128256 256 against 822 (96 % of the copy ceiling): more
/// blocks an SM stream the row, each with 4 vectors in flight a thread.
inline constexpr int64_t kStreamedRowThreads = 256;
inline constexpr int64_t kStreamedRowUnroll = 4;
/// A batch of 3 or 4 vectors whose inputs are read again after a reduction and do not fit
/// the registers (the backward norms' wider blocks from H = 20480): unrolled by 2, so the
/// loop is not unrolled whole and ptxas does not hold the first phase's loads (unrolled
/// by 3 at 3 vectors spilled 176 bytes a thread). Checked by ptxas only, not timed.
inline constexpr int64_t kReadAgainUnroll = 2;
/// Rows too long to keep (every buffer recomputed, each phase reading the row again):
/// 8 vectors a thread on at least 256 threads, up to a block's 1024, the loop unrolled by
/// 4, and reduction pairs (softmax's, LayerNorm's) in one pass where the rows fill the SMs.
/// Measured on the H100 (docs/performance.md, run S38A, T = 4096): 1024 threads against
/// 256 0.93-0.98x for RMSNorm, 0.75-0.98x for LayerNorm and softmax at H = 65536 and
/// 131072; one pass 0.76x two passes (one read of the row fewer); at T = 1 one pass was
/// 1.13-1.84x slower, so fewer rows than SMs keep two.
inline constexpr int64_t kRecomputedRowBatch = 8;
inline constexpr int64_t kRecomputedRowMinThreads = 256;

/// Fewer rows than SMs: a batch of 2, up to 512 threads a row (at least 128). Measured
/// (change 5): 512 x 2 beat 1024 x 1 at H = 8192 by 5-16 %, 256 x 2 beat 512 x 1 at
/// H = 4096 by 1-6 %: half the threads wait at each barrier for the same loads.
inline constexpr int64_t kWideBatch = 2;
inline constexpr int64_t kWideMinThreads = 128;
inline constexpr int64_t kWideMaxThreads = 512;

/// Where the normal split keeps more than 32 values a thread in registers (softmax's xf
/// and e at H = 4096: 64) and the wider blocks have at most 256 threads, they serve every
/// row count that is one wave of them. Measured on the H200 (docs/performance.md, issue
/// 17): softmax at H = 4096, T = 1024, 256 x 2 against 128 x 4, 6.24 against 6.81 us; for
/// RMSNorm and LayerNorm (32 values) and for 512-thread wider blocks (H = 8192, 16384)
/// one wave of them was as fast or up to 19 % slower, so those keep the SM count.
inline constexpr int64_t kWideWaveKeptValues = 32;
inline constexpr int64_t kWideWaveMaxThreads = 256;

/// Rows of 2048 vectors or more, from one wave to 2048 rows: the buffers (casts of one
/// input) recomputed rather than kept. Measured on the H200 (docs/performance.md, issue
/// 17, run G1 and the run after it): LayerNorm 16384 x 512 13.09 -> 12.47 us, x 1024
/// 22.81 -> 21.67 (Inductor's static kernel 12.71 and 25.38); RMSNorm x 512 11.80 ->
/// 11.22, x 1024 even; at T = 128 and from T = 4096 on, keeping them was as fast or faster.
inline constexpr int64_t kRecomputeMinVectors = 2048;
inline constexpr int64_t kRecomputeBelowRows = 2048;

/// Grid reductions of few rows (argmax over a vocabulary). Measured on the H200
/// (docs/performance.md, issue 17, argmax): at T = 1 about 1024 vectors a piece (256
/// threads x 4) was the fastest, V = 32000 3.55 -> 2.70 us, 50304 4.49 -> 2.96, 128256
/// 13.10 -> 3.67; at T = 128 only the longest rows gain (V = 128256, 8 pieces: 30.07 ->
/// 14.80 us; V = 32000 and 50304 were 4-15 % slower with any number of pieces), and from
/// T = 1024 on every split was slower (the blocks' fixed costs, then the second kernel).
inline constexpr int64_t kGridThreads = 256;
inline constexpr int64_t kGridFewRows = 16;          // rows below: pieces of ...
inline constexpr int64_t kGridPieceVectors = 1024;   // ... about this many vectors,
inline constexpr int64_t kGridMinVectors = 2048;     // for rows of at least this many
inline constexpr int64_t kGridLongRowVectors = 8192; // below the SM count: rows this long
inline constexpr int64_t kGridLongRowPieces = 8;     // in this many pieces
inline constexpr int64_t kGridUnroll = 4;            // the serial loop unrolled by
/// The same grid reductions for one-pass pairs (cross-entropy's online softmax): only for
/// rows of at least this many vectors, where one block's exponentials are the time (a
/// row of V = 128256 is about 4 us of one SM's special-function units at 16 a clock;
/// V = 32000's 1 us is below the second kernel's cost). Cross-entropy at V = 128256,
/// T = 1 took 16.1 us forward and backward, 0.62x torch.compile (docs/performance.md,
/// run TR2). Run CE1 (H100, the forward alone, against one block of 1024 threads a row):
/// 2.76x at T = 1, 2.00x at 16 rows, 1.34x at 64, 0.925x at 128 (8 pieces a row are 1024
/// blocks there); between them 1.24x at 72, 1.08x at 96, 1.007x at 104, 1.000x at 112,
/// 0.93x at 120: the 8 pieces serve fewer than 104 rows.
inline constexpr int64_t kGridOnePassMinVectors = 8192;
/// Few rows (kGridFewRows) of rows of at least kGridSyncMinVectors vectors in
/// auto(inner_persistent): pieces of about kGridPieceVectors (2 to 32 a row) on 256
/// threads, kept in registers, whose blocks meet at grid barriers (grid_sync), two passes.
/// Run S39A (H100, docs/performance.md; T = 1 and 8 at H = 65536 and 131072, softmax at
/// 128256 T = 1 and 15): 0.21-0.78x the time of one block a row, and 0.56-0.95x
/// torch.compile's (which splits the row over blocks and a second kernel); one pass
/// (online softmax, Welford) 1.0-1.1x and 1.2-1.5x the two passes' time. Run S39C (H100,
/// T = 1, 8, 15): at 49152 (6144 vectors) 0.51-0.89x one block a row; at 32768 (4096)
/// 0.84-1.31x, 1.13-1.29x but for add + RMSNorm; at 16384 (2048) 1.39-1.81x. Rows from
/// kGridSyncKnobMinVectors take it where `grid_sync = true` asks.
inline constexpr int64_t kGridSyncMinVectors = 6144;
inline constexpr int64_t kGridSyncMaxPieces = 32;  // pieces a row at most
inline constexpr int64_t kGridSyncBlocksPerSm = 2; // resident blocks an SM at most (as timed)
inline constexpr int64_t kGridSyncKnobMinVectors = 2048;
inline constexpr int64_t kGridOnePassRowsBelow = 104;

/// A runtime row length: 256 threads loop over the row.
inline constexpr int64_t kRuntimeRowThreads = 256;

// --- auto(matmul) ---------------------------------------------------------------------

/// At most 64 rows ("few rows": the product is bound by reading b): 64-row tiles, one
/// consumer warpgroup, as wide as fills one wave of CTAs (a static N) or 128, and a deep
/// pipeline of small stages. Measured on the H200 (docs/performance.md, run T1) against
/// split_k's 128 x 256 tiles: 217 against 170 TFLOP/s at M = 64, N = 14336, K = 5120; 53
/// against 44 at M = 16 (64 x 128 tiles, 8 stages).
inline constexpr int64_t kFewRowsBelow = 65;
inline constexpr int64_t kFewRowsStages = 8;
/// From this many rows (a static M, or a range of a runtime M starting there) those tiles'
/// output leaves through shared memory and TMA stores where the stages still fit beside it:
/// runs S28A, S28B and S28L on an H100, 1.026-1.052x (plain) and 1.030-1.061x (bias + GELU)
/// the 4-byte stores from registers at 40, 48 and 64 rows (64 x 112, 128 and 144 tiles).
/// Not measured at fewer rows.
inline constexpr int64_t kStoredFewRowsFrom = 33;
/// Few rows whose 64 x 64 tiles would leave more than half the SMs idle still split K
/// (at most 8 parts, each of 4 k tiles or more).
inline constexpr int64_t kSplitKMaxParts = 8;
/// Few rows with the operands swapped (swap_ab): static M up to this many rows take tiles
/// of M rounded up to 8 by 64 columns of N (wgmma m64nMk16 on w's rows), so that one stage
/// is (M + 64) x 64 elements and the pipeline holds up to kSwapStages of them beside the
/// other CTAs of an SM. 0: never (the knob still asks). Measured on the H200
/// (docs/performance.md, run S1).
inline constexpr int64_t kSwapRowsAtMost = 32;
inline constexpr int64_t kSwapStages = 16;

/// The output tile stored this many columns at a time through two shared pieces, where
/// that buys the pipeline a stage (auto(matmul), one consumer group), for 256-row tiles, a
/// fused epilogue, or static sizes of at most kEpiloguePieceWaves waves of tiles. Measured
/// on the H200 (docs/performance.md, runs E1-E3): 256 x 128 tiles with 4 stages in pieces
/// of 32 ran 1.02-1.13x the whole tile with 3 at seven shapes; pieces of 32 on 128 x 256
/// and 128 x 224 tiles (4 stages instead of 3) against the whole tile, by the tuner: bias +
/// GELU 1.02-1.10x at seven shapes (1.01-1.13x confirmed), the plain product 1.08-1.13x at
/// 256 and 1024 rows of N = 14336 (one and four waves; 1.05-1.08x confirmed) but
/// 0.99-1.03x at the large shapes, where the old and new kernels alternated (run E3) put
/// the plain product at 0.97-1.02x (the fused at 0.97-1.03x, median 1.01). Pieces of 64
/// ran level with 32 or slower. 128 x 128 tiles keep their 5 stages whole (pieces there
/// buy no stage and ran 1.4 % slower).
inline constexpr int64_t kEpiloguePieceColumns = 32;
inline constexpr int64_t kEpiloguePieceWaves = 4;
inline constexpr int64_t kSplitKMinKTiles = 4;
/// The rate of 128-row tiles of each width against 128 x 256 ones when both fill their
/// waves. 128: measured on the H200 (docs/performance.md, run M2), the same schedule with
/// the two widths at 4096 x 14336 x 5120, 4096 x 5120 x 14336, 8192^3 and
/// 8192 x 28672 x 8192: 0.88, 0.89, 0.91, 0.90. 192: runs T1 and T2, 8192^3: 0.98, 1.00.
/// 224: run T2 (TMA stores), 4096 x 14336 x 5120 and 8192^3: 1.07 and 0.99 (1.0 kept: a
/// tie goes to the wider tile). 112: run W7, 128 x 14336 x 5120, where its 128 tiles fill
/// 97 % of one wave and 128 x 128's 112 tiles 85 %: 459 against 441 TFLOP/s (fused 448
/// against 430), a rate of 0.81 of 128 x 256's by this estimate (0.89 x 0.85 x 1.04 / 0.97);
/// at 1024 rows, 4096^3 and 8192^3 it ran 0.87-0.93x 128 x 128.
struct TileRate {
  int64_t tileN;
  double rate;
};
inline constexpr TileRate kTileRates[] = {
    {256, 1.0}, {224, 1.0}, {192, 0.98}, {128, 0.89}, {112, 0.81}};
/// 64 x 128 tiles (one consumer warpgroup, 8 stages) against 128 x 256 ones, by the share
/// of their waves each fills, below two waves of 128 x 256 tiles: run S26D (an H100, the
/// plain product against the heuristics' 128 x 112 tiles, docs/performance.md) had them
/// 1.36x at 128 x 4096 x 4096 and 128 x 4096 x 14336 (64 tiles against 37) and 1.15-1.18x
/// at 256 rows of the same (128 against 74): rates of 0.53-0.64 by this estimate; the lowest
/// but one is kept. Where 128-row tiles filled 84-97 % of a wave (384 and 512 rows) they
/// ran 0.88-0.89x, which the estimate gives too.
inline constexpr double kHalfTileRate = 0.55;
/// Another width replaces a range's own (256 above two waves, 128 below) only when it is
/// estimated this much faster: the rates above are good to a few per cent (192's measured
/// 0.97-1.00 in runs T1 and T2), and at 4000 x 14000 x 5000, estimated 1 % faster, 192
/// columns ran at 0.93x 256 (runs T2 and M4).
inline constexpr double kTileWidthMargin = 0.03;
/// 192 x 192 tiles against 128 x 256 ones, both filling their waves, where the operand
/// rows are not whole 128-byte lines apart: run T3, 4000 x 14000 x 5000 (K rows 10000
/// bytes apart), 568 against 522 TFLOP/s (the fused product 557 against 506). Where they
/// are, 192 x 192 ran at 0.92-0.97x (4096 x 14336 x 5120, 8192^3, 4096 x 5120 x 14336) and
/// is not a candidate.
inline constexpr double kTall192RateUnaligned = 1.09;
/// 256 x 160 tiles (two consumer warpgroups of 128 x 160, 160 accumulators a thread, the
/// output in pieces of 32 columns, 3 stages) against 128 x 256 ones, by the share of their
/// waves each fills: run W2 (docs/performance.md), 0.93-1.07 at nine shapes, median 0.97
/// (1000 x 5000 x 3000: 128 tiles, one wave, 1.42x the 160 tiles of 128 x 256 in two).
inline constexpr double kTall256Rate = 0.97;
inline constexpr int64_t kTall256TileN = 160;
/// Clusters of two N tiles sharing the a tile (multicast), where the operand rows are not
/// whole 128-byte lines apart and K has at least this many steps of 64: run W12
/// (docs/performance.md) had them 1.10-1.23x the same tiles without a cluster at K = 3000
/// and 5000 (47 and 78 steps), level at K = 2000 (31 steps).
inline constexpr int64_t kClusterUnalignedMinKSteps = 40;
/// The tiles measured in such clusters (run W12), each with the output in pieces of
/// kEpiloguePieceColumns and the stages it was measured with (a tile is a candidate only
/// where they fit; the stages chosen are then the usual rule's, the same): 256 x 128 (4) and
/// 192 x 192 (4) ran within 4 % of each other where their clusters filled their waves
/// alike, 256 x 160 (3) where its waves were fuller (1000 x 5000 x 3000: 593 TFLOP/s
/// against 446 for 256 x 128's two waves).
struct ClusteredTile {
  int64_t tileM, tileN, stages;
};
inline constexpr ClusteredTile kClusteredUnalignedTiles[] = {
    {256, 128, 4}, {192, 192, 4}, {256, 160, 3}};
/// Their rate against 128 x 256 tiles without a cluster at such K, by the share of their
/// waves each fills: 1.14-1.27 at 4000 x 14000 x 5000 and 4096 x 14336 x 5000 (run W12,
/// through 192 x 192's kTall192RateUnaligned); the lowest but one.
inline constexpr double kClusterUnalignedRate = 1.15;
/// Persistent tiles in groups of 8 M tiles: the hand schedule of
/// examples/linear_bias_gelu.fsl, the fastest measured (docs/performance.md).
inline constexpr int64_t kSwizzle = 8;

} // namespace fsl::heuristics::tuned
