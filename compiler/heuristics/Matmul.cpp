// Matmul.cpp — auto(matmul): the tile, order and epilogue for each range of M, then their
// directives.
#include "heuristics/Matmul.h"

#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::heuristics {
namespace {

/// tile_n values: wgmma N (a multiple of 8 up to 256) whose output rows TMA stores in whole
/// 32-byte boxes (a multiple of 16 bf16), at least 64; or 288 and 320, two instructions of
/// half as many columns a k step (160 f32 accumulators a thread at most, b's tile in two TMA
/// boxes).
bool validTileN(int64_t tileN) {
  return tileN >= 64 && tileN % 16 == 0 && (tileN <= 256 || tileN == 288 || tileN == 320);
}

/// tile_m values: with swap_ab a's rows on wgmma's N side (a multiple of 8 up to 256);
/// otherwise one consumer warpgroup (64), two (128, or 256 of 128-row halves) or three (192).
bool validTileM(int64_t tileM, bool swapped) {
  return swapped ? tileM > 0 && tileM % 8 == 0 && tileM <= 256
                 : tileM == 64 || tileM == 128 || tileM == 192 || tileM == 256;
}

/// wgmma's N for a tile of `tileN` columns: the tile's own up to 256, half of it above.
int64_t instructionColumns(int64_t tileN) { return tileN > 256 ? tileN / 2 : tileN; }

/// The widest tile of two consumer warpgroups of 128 rows: 128 x 160 warp tiles hold 160
/// f32 accumulators a thread, what 232 registers hold beside the addresses.
constexpr int64_t kTall256TileNMost = 160;

/// The widest tile of three consumer warpgroups: each holds 64 x tile_n accumulators,
/// tile_n / 2 f32 registers a thread, and ptxas compiles the 512-thread kernel within 128
/// registers a thread (setmaxnreg raises them only at run time): 96 accumulators fit
/// without spills, 104 (tile_n = 208) do not compile (`fslc --resource-usage`).
constexpr int64_t kTallTileNMost = 192;

/// The matmul knobs' values: refused at the knob when out of range or in conflict.
void checkMatmulKnobs(const Knobs &knobs, const MatmulShape &mm, KnobVerdicts &verdicts) {
  const bool twoProducts = mm.twoProducts;
  auto refuse = [&](const std::string &knob, const std::string &why) {
    verdicts.refuse(knob, why);
  };
  if (knobs.tileN && !validTileN(*knobs.tileN))
    refuse("tile_n", "the CTA tile's columns, each consumer warpgroup's too (wgmma's N, "
                     "stored in whole 32-byte boxes): a multiple of 16 from 64 to 256, or 288 "
                     "or 320 (two instructions of half the columns)");
  else if (knobs.tileN && !mm.rhsKContiguous && instructionColumns(*knobs.tileN) % 64 != 0)
    refuse("tile_n", mm.rhsInput + " is [" + mm.k.name + ", " + mm.n.name + "] (" + mm.n.name +
                         " contiguous), which wgmma reads in blocks of 64 columns: tile_n is a "
                         "multiple of 64 up to 256 (320 is two instructions of 160)");
  if (twoProducts) {
    const char *why = "two products of one a keep two accumulator sets: 128 x 128 tiles, "
                      "persistent, one consumer group";
    if (knobs.tileN && *knobs.tileN != 128)
      refuse("tile_n", why);
    if (knobs.splitK && *knobs.splitK > 1)
      refuse("split_k", why);
    if (knobs.streamK.value_or(false))
      refuse("stream_k", why);
    if (knobs.pingpong.value_or(false))
      refuse("pingpong", why);
    if (knobs.clusterM && *knobs.clusterM > 1)
      refuse("cluster_m", why);
    if (knobs.clusterN && *knobs.clusterN > 1)
      refuse("cluster_n", why);
  }
  const bool swapped = knobs.swapAB.value_or(false);
  if (knobs.tileM && swapped) {
    // Swapped, the tile's rows are a's, on wgmma's N side: a multiple of 8 up to 256.
    if (!validTileM(*knobs.tileM, true))
      refuse("tile_m", "with swap_ab a's rows are wgmma's N side: tile_m is a multiple of 8 "
                       "from 8 to 256");
  } else if (knobs.tileM) {
    int64_t rows = *knobs.tileM;
    if (!validTileM(rows, false))
      refuse("tile_m", "the CTA tile's M is 64 (one consumer warpgroup), 128 (two), 192 (three) "
                       "or 256 (two consumer warpgroups of 128 rows)");
    else if (twoProducts && rows != 128)
      refuse("tile_m", "two products of one a keep two accumulator sets: 128 x 128 tiles");
    else if (knobs.pingpong.value_or(false))
      refuse("tile_m", "pingpong's two consumer groups take 64-row tiles each: leave tile_m out");
    else if (rows == 256 && knobs.tileN && *knobs.tileN > kTall256TileNMost)
      refuse("tile_m", llvm::formatv("256-row tiles are two consumer warpgroups of 128 x tile_n: "
                                     "at most 160 f32 accumulators a thread fit, so tile_n is at "
                                     "most {0}",
                                     kTall256TileNMost)
                           .str());
    else if (rows == 192 && knobs.tileN && *knobs.tileN > kTallTileNMost)
      refuse("tile_m", llvm::formatv("192-row tiles are three consumer warpgroups of 64 x tile_n "
                                     "at 152 registers a thread: tile_n is at most {0}",
                                     kTallTileNMost)
                           .str());
  }
  if (knobs.splitK && *knobs.splitK > 64)
    refuse("split_k", "split_k takes 1 to 64 parts of K");
  if (knobs.splitK && *knobs.splitK > 1 && knobs.streamK.value_or(false))
    refuse("split_k", "split_k and stream_k = true are two tile orders: keep one");
  if (knobs.splitK && *knobs.splitK > 1 && knobs.swizzle)
    refuse("swizzle", "swizzle orders persistent and stream-K tiles; split_k runs one tile a CTA");
  if (knobs.clusterM && *knobs.clusterM != 1 && *knobs.clusterM != 2 && *knobs.clusterM != 4)
    refuse("cluster_m", "clusters of 1, 2 or 4 M tiles are lowered");
  if (knobs.clusterN && *knobs.clusterN != 1 && *knobs.clusterN != 2 && *knobs.clusterN != 4)
    refuse("cluster_n", "clusters of 1, 2 or 4 N tiles are lowered");
  if (knobs.clusterN && *knobs.clusterN > 1 && knobs.clusterM && *knobs.clusterM > 1)
    refuse("cluster_n", "a cluster runs along M or along N: keep cluster_m or cluster_n");
  if (knobs.pingpong.value_or(false) && knobs.splitK && *knobs.splitK > 1)
    refuse("pingpong", "two consumer groups take alternate tiles of a persistent or stream-K "
                       "CTA; split_k runs one tile a CTA");
  if (knobs.pingpong.value_or(false) &&
      ((knobs.clusterM && *knobs.clusterM > 1) || (knobs.clusterN && *knobs.clusterN > 1)))
    refuse("pingpong", "two consumer groups with clusters are not lowered");
  if (knobs.pingpong.value_or(false) && knobs.tileN && *knobs.tileN != 256)
    refuse("pingpong", "two consumer groups take 64 x 256 tiles: leave tile_n at 256");
  if (knobs.clusterM && *knobs.clusterM > 1 &&
      ((knobs.splitK && *knobs.splitK > 1) || knobs.streamK.value_or(false)))
    refuse("cluster_m", "clusters run with persistent tiles, not with split_k or stream_k");
  if (knobs.clusterN && *knobs.clusterN > 1 &&
      ((knobs.splitK && *knobs.splitK > 1) || knobs.streamK.value_or(false)))
    refuse("cluster_n", "clusters run with persistent tiles, not with split_k or stream_k");
  if (knobs.swapAB.value_or(false)) {
    if (twoProducts)
      refuse("swap_ab", "two products of one a share its tile; swapped, each would need its own "
                        "(not lowered)");
    else if (!mm.rhsKContiguous)
      refuse("swap_ab", "with the operands swapped " + mm.rhsInput +
                            " is wgmma's left operand, read with K contiguous: write it as [" +
                            mm.n.name + ", " + mm.k.name + "]");
    else if (!mm.lhsKContiguous)
      refuse("swap_ab", "with the operands swapped " + mm.lhsInput +
                            " is wgmma's right operand, which the swapped kernel reads with K "
                            "contiguous: write it as [" +
                            mm.m.name + ", " + mm.k.name + "]");
    if (knobs.pingpong.value_or(false))
      refuse("swap_ab", "the swapped tiles have one consumer warpgroup a 64 columns of N; "
                        "pingpong's 64 x 256 tiles are not swapped");
    if (knobs.streamK.value_or(false))
      refuse("swap_ab", "stream_k with swapped operands is not lowered");
    if ((knobs.clusterM && *knobs.clusterM > 1) || (knobs.clusterN && *knobs.clusterN > 1))
      refuse("swap_ab", "clusters of swapped tiles are not chosen by auto(matmul) yet; write the "
                        "schedule by hand");
    if (knobs.swizzle)
      refuse("swizzle", "swapped tiles run one a CTA (or split_k): there is no walk to swizzle");
    // A consumer warpgroup a 64 columns: at most three beside the producer (four would need
    // 128 x (40 + 4 x 232) registers, more than an SM's 65536).
    if (knobs.tileN && (*knobs.tileN % 64 != 0 || *knobs.tileN > 192))
      refuse("tile_n", "with swap_ab a consumer warpgroup takes 64 columns of N, and at most "
                       "three fit an SM's registers beside the producer: tile_n is 64, 128 or "
                       "192");
    // Three consumers compile within 128 registers a thread (512 threads): a's rows are each
    // thread's accumulators twice over, at most kTallTileNMost rows as for unswapped tiles.
    else if (knobs.tileN && *knobs.tileN == 192 && knobs.tileM && *knobs.tileM > kTallTileNMost)
      refuse("tile_m", llvm::formatv("swapped tiles of 192 columns are three consumer "
                                     "warpgroups within 128 registers a thread, each holding "
                                     "tile_m / 2 f32 accumulators: tile_m is at most {0}",
                                     kTallTileNMost)
                           .str());
    // Consumer warpgroups: one a 64 columns of N, or (64 columns) two on halves of a's rows,
    // each half a multiple of 8 (wgmma's N).
    int64_t alongN = knobs.tileN && *knobs.tileN % 64 == 0 ? *knobs.tileN / 64 : 1;
    if (knobs.consumers && *knobs.consumers != alongN) {
      if (alongN != 1 || *knobs.consumers != 2)
        refuse("consumers",
               llvm::formatv("with swap_ab each consumer warpgroup takes 64 columns of N ({0} "
                             "here), or with tile_n = 64 two take half of a's rows each: "
                             "consumers is {0}{1}",
                             alongN, alongN == 1 ? " or 2" : "")
                   .str());
      else if (knobs.tileM && *knobs.tileM % 16 != 0)
        refuse("consumers", "two consumer warpgroups on halves of a's rows take a multiple of 8 "
                            "each: tile_m is a multiple of 16");
    }
  } else if (knobs.consumers) {
    refuse("consumers", "unswapped tiles take their consumer warpgroups from tile_m (64 rows "
                        "each; two of 128 rows at tile_m = 256) and pingpong: consumers is a "
                        "knob of swapped tiles (swap_ab = true)");
  }
}

/// The directives of `c`, each pointing at the knob that decided it (else the `= auto`).
void matmulDirectives(Block &block, const std::string &k, const MatmulTile &c,
                      const BlockContext &context) {
  const Knobs &knobs = *context.knobs;
  llvm::SMRange header = context.decl();
  auto at = [&](const std::string &knob) { return context.at(knob); };
  auto count = [&](int64_t v, llvm::SMRange at) { return sched::Count{v, at}; };
  llvm::SMRange tileAt = at("tile_n");
  llvm::SMRange groupsAt = knobs.pingpong ? at("pingpong") : header;
  llvm::SMRange swapAt = knobs.swapAB ? at("swap_ab") : header;
  if (c.swapAB) {
    // The instruction's 64 rows along N: a consumer warpgroup a 64 columns of the tile, and
    // c.warpM of a's rows (all of them, or half with `consumers = 2`).
    llvm::SMRange rowsAt = knobs.tileM ? at("tile_m") : swapAt;
    llvm::SMRange warpRowsAt = knobs.consumers ? at("consumers") : rowsAt;
    block.add(sched::Mma{{k, header},
                         {count(c.tileM, rowsAt), count(c.tileN, tileAt), count(64, header)},
                         {count(c.warpM, warpRowsAt), count(64, swapAt)},
                         {"wgmma", header},
                         {count(64, header), count(c.warpM, warpRowsAt), count(16, header)},
                         true,
                         swapAt},
              swapAt);
  } else {
    llvm::SMRange rowsAt = knobs.tileM ? at("tile_m") : groupsAt;
    block.add(sched::Mma{{k, header},
                         {count(c.tileM, rowsAt), count(c.tileN, tileAt), count(64, header)},
                         {count(c.warpM, rowsAt), count(c.tileN, tileAt)},
                         {"wgmma", header},
                         {count(64, header), count(instructionColumns(c.tileN), tileAt),
                          count(16, header)},
                         false,
                         {}},
              knobs.tileN ? tileAt : header);
  }
  // Consumer warpgroups: the tile's warp tiles, in each of the groups. Three take 152
  // registers each: with the producer's 40, 128 x (40 + 3 x 152) of the 65536.
  int64_t consumers = (c.swapAB ? c.tileN / 64 : 1) * (c.tileM / c.warpM) * c.groups;
  int64_t consumerRegisters = consumers == 3 ? 152 : 232;
  llvm::SMRange consumersAt = knobs.consumers ? at("consumers")
                              : knobs.tileM   ? at("tile_m")
                                              : groupsAt;
  block.add(sched::Pipeline{count(c.stages, at("stages")), true},
            knobs.stages ? at("stages") : header);
  block.add(sched::WarpSpecialize{count(40, header), count(consumers, consumersAt),
                                  count(consumerRegisters, header)},
            knobs.pingpong    ? groupsAt
            : knobs.consumers ? at("consumers")
            : knobs.tileM     ? at("tile_m")
                              : header);
  llvm::SMRange orderAt = c.order == sched::TileOrder::SplitK && knobs.splitK     ? at("split_k")
                          : c.order == sched::TileOrder::StreamK && knobs.streamK ? at("stream_k")
                          : knobs.swizzle && c.order != sched::TileOrder::SplitK  ? at("swizzle")
                                                                                  : header;
  block.add(
      sched::Tiles{c.order, c.order == sched::TileOrder::OnePerCta
                                ? std::nullopt
                                : std::optional<sched::Count>(count(c.orderParameter, orderAt))},
      orderAt);
  if (c.clusterM > 1)
    block.add(sched::Cluster{{count(c.clusterM, at("cluster_m")), count(1, at("cluster_m"))}, true},
              at("cluster_m"));
  if (c.clusterN > 1)
    block.add(sched::Cluster{{count(1, at("cluster_n")), count(c.clusterN, at("cluster_n"))}, true},
              at("cluster_n"));
  llvm::SMRange pieceAt = knobs.epiloguePiece ? at("epilogue_piece") : header;
  sched::Epilogue epilogue{c.epilogue, {}};
  if (c.epiloguePiece)
    epilogue.tile = {count(c.tileM, pieceAt), count(c.epiloguePiece, pieceAt)};
  block.add(epilogue, pieceAt);
}

} // namespace

/// As the hand schedule of examples/linear_bias_gelu.fsl, the fastest measured on the
/// H200 (docs/performance.md): 128 x 256 tiles, persistent in groups of 8 M tiles, a
/// producer warpgroup; the epilogue through shared memory and TMA stores when there is
/// one output over [M, N] whose rows TMA can store (a static N, or a runtime one under
/// `when N % 8 == 0` for bf16), through shared memory and the threads for the other
/// runtime N, in registers otherwise. By the number of rows M:
///   M <= 64         64-row tiles of one consumer warpgroup, one a CTA, 8 stages, the
///                   epilogue by TMA stores from 33 rows where the 8 stages fit beside the
///                   output tile (in registers otherwise): the product is bound by reading w, and
///                   tiles as wide as fill one wave of CTAs (64 x 112 for N = 14336; 64 x 128 for a
///                   runtime N) stream it through a deep pipeline (run T2: 237 against split_k's
///                   158 TFLOP/s at M = 64). split_k only where even 64 x 64 tiles leave more than
///                   half the SMs idle (a short N).
///   M < two waves   128 x 128 tiles (twice as many CTAs busy: 364 against 205 TFLOP/s
///                   at M = 128, N = 14336, K = 5120), or 128 x 256 / 224 / 192 / 112
///                   where their fuller waves make up for their rate, or 64 x 128 where
///                   128-row tiles leave most SMs idle (static sizes).
///   otherwise       128 x 256 tiles, both consumer warpgroups on one tile, persistent;
///                   with static M and N the width of 256, 224, 192 or 128 whose rate and
///                   last-wave fill finish first (TunedConstants.h).
/// Knobs override single choices: tile_m (64, 128, 192: three consumer warpgroups, 256:
/// two of 128 rows, for every M), tile_n (a multiple of 16 from 64 to 256), stages,
/// swizzle, split_k, stream_k (true or false), cluster_m (1, 2 or 4: cluster (C, 1)
/// multicast), cluster_n (cluster (1, C) multicast: C N tiles sharing the a tile; not
/// measured yet, never chosen without the knob), pingpong (two consumer groups on
/// alternate 64-row tiles), fast_exp,
/// fast_tanh, fast_div.
MatmulParams chooseMatmul(const FusionShape &shape, const Target &target, const Knobs &given) {
  MatmulParams params;
  KnobVerdicts &verdicts = params.verdicts;
  if (target.arch != "sm_90a") {
    params.declined = "auto(matmul) schedules wgmma and TMA: it needs an sm_90a target (" +
                      target.name + " is " + target.arch + ")";
    return params;
  }
  using namespace family_sets;
  for (const auto &[name, set] : knobsOutside(given, Matmul))
    if (set)
      verdicts.refuse(name,
                      "auto(matmul) has no such knob (it takes " + knobNames(Family::Matmul) + ")");
  const MatmulShape &mm = *shape.matmul;
  const DimShape &mDim = mm.m, &nDim = mm.n, &kDim = mm.k;
  // Two products of one a (SwiGLU's gate and up) share a kernel: two accumulator sets, so
  // 128 x 128 tiles (64 + 64 accumulators a thread), one tile order (persistent).
  const bool twoProducts = mm.twoProducts;
  sched::EpilogueKind epilogue = sched::EpilogueKind::Registers;
  std::string epilogueWhy =
      "in registers (several outputs, or one not over [" + mDim.name + ", " + nDim.name + "])";
  int64_t outputBytes = mm.outputBytes;
  if (outputBytes > 0) {
    if (nDim.extent && *nDim.extent % 16 * outputBytes % 16 == 0) {
      epilogue = sched::EpilogueKind::SharedTmaStore;
      epilogueWhy = "through shared memory and TMA stores";
    } else if (!nDim.extent) {
      epilogue = sched::EpilogueKind::Shared;
      epilogueWhy = "through shared memory, copied out by the threads (a runtime " + nDim.name +
                    " may leave rows TMA cannot store)";
    } else {
      epilogueWhy = "in registers (rows of " + std::to_string(*nDim.extent) +
                    " elements are not 16-byte multiples)";
    }
  }
  // A refused knob drops the choice (Heuristics.cpp); an invalid tile_n or tile_m (any
  // 64-bit value the user wrote) is not used to pick the rest.
  checkMatmulKnobs(given, mm, verdicts);
  Knobs knobs = given;
  if (knobs.tileM && !validTileM(*knobs.tileM, knobs.swapAB.value_or(false)))
    knobs.tileM.reset();
  std::optional<int64_t> tileNKnob = knobs.tileN;
  if (tileNKnob && !validTileN(*tileNKnob))
    tileNKnob.reset();
  int64_t operandBytes = 2;
  // The widths wgmma reads b at: any multiple of 16 with K contiguous ([N, K]); whole
  // blocks of 64 columns with N contiguous ([K, N], the 128-byte swizzle's span).
  auto readableWidth = [&](int64_t tileN) { return mm.rhsKContiguous || tileN % 64 == 0; };
  // Stages: what the shared memory holds after the epilogue's tile, at most `most`.
  auto stagesFit = [&](const MatmulTile &c) {
    int64_t stage = (c.tileM + c.tileN * (twoProducts ? 2 : 1)) * 64 * operandBytes + 16;
    int64_t tile = c.epilogue == sched::EpilogueKind::Registers ? 0
                   : c.epiloguePiece ? c.groups * 2 * c.tileM * c.epiloguePiece * outputBytes
                                     : c.groups * c.tileM * c.tileN * outputBytes;
    return (target.sharedMemoryPerBlock - tile - 16 * (c.groups - 1)) / stage;
  };
  // Why `c`'s output tile cannot leave in pieces of `columns` (empty: it can): the
  // epilogue through shared memory and TMA stores, not stream-K (whose shared pieces of K
  // leave from the accumulators), a divisor of the tile's columns, fewer than all, of whole
  // 32-byte boxes (the checker's epilogue-tile-shape).
  auto piecesRefusal = [&](const MatmulTile &c, int64_t columns) -> std::string {
    if (c.epilogue != sched::EpilogueKind::SharedTmaStore)
      return c.swapAB ? "swapped tiles store their epilogue from registers, transposed: no "
                        "output tile to store in pieces"
                      : "the epilogue here is not stored by TMA through shared memory (it is "
                        "in registers, or copied out by the threads): no pieces";
    if (c.order == sched::TileOrder::StreamK)
      return "stream-K stores the pieces of K it shares from the accumulators, not through "
             "the output tile";
    if (columns <= 0 || columns >= c.tileN || c.tileN % columns != 0 ||
        columns * outputBytes % 32 != 0)
      return llvm::formatv("the {0}-column tile is stored in pieces of a divisor of its "
                           "columns, fewer than all, of whole 32-byte boxes ({1} elements of "
                           "the output)",
                           c.tileN, 32 / outputBytes);
    return "";
  };
  auto tilesOf = [&](const DimShape &dim, int64_t tile) -> std::optional<int64_t> {
    if (!dim.extent)
      return std::nullopt;
    return ceilDiv(*dim.extent, tile);
  };
  int64_t tilesAlongN = nDim.extent ? ceilDiv(*nDim.extent, 256) : 0;
  int64_t twoWaves =
      tilesAlongN > 0 ? 128 * ((2 * target.smCount + tilesAlongN - 1) / tilesAlongN) : 512;
  // A static K whose operand rows are not whole 128-byte lines apart (K = 5000: 10000
  // bytes): every TMA box row straddles two lines. With a long K, clusters along N pay.
  const bool rowsStraddleLines = kDim.extent && *kDim.extent % 128 * operandBytes % 128 != 0;
  const bool clustersForStraddlingRows =
      rowsStraddleLines && *kDim.extent / 64 >= tuned::kClusterUnalignedMinKSteps;
  auto straddleWhy = [&](const MatmulTile &tile) {
    return llvm::formatv("{0}'s rows are {1} bytes apart, not whole 128-byte lines, and K has "
                         "{2} steps of 64: clusters of two {3} x {4} tiles along N share the a "
                         "tile (each CTA loads half of it into both)",
                         mm.lhsInput, saturatingMul(*kDim.extent, operandBytes), *kDim.extent / 64,
                         tile.tileM, tile.tileN)
        .str();
  };
  // A runtime M over a static N (as the JIT specializes it): the 64 x 128 tiles that a
  // static M takes where 128-row tiles leave most SMs idle (below) get their own range of
  // rows from kFewRowsBelow to the last 64 rows at which the estimate prefers them to
  // 128 x 128 tiles by the margin, before two bands of 64 rows in a row that it does not
  // (N = 4096: up to 256 rows). One band in between may go the other way by the estimate (N = 4096,
  // 129-192 rows: 96 tiles of 64 x 128 against 64 of 128 x 128, where the estimate counts the
  // second row of 128-row tiles as full though half of it is past M); one range keeps the variants
  // few. Nullopt: no such range.
  // The share of its waves `units` of work fill, `perWave` at a time (CTAs on the SMs,
  // or clusters).
  auto waveShare = [&](int64_t units, int64_t perWave) {
    int64_t waves = ceilDiv(units, perWave);
    return static_cast<double>(units) / (static_cast<double>(waves) * static_cast<double>(perWave));
  };
  const bool halfAsMeasured =
      !knobs.stages && !knobs.splitK && !knobs.streamK.value_or(false) && !knobs.epiloguePiece;
  // A static M in the band takes the same tiles (below, `inHalfRows`): one decision for
  // both. 64 x 128 tiles of one consumer warpgroup with the deep pipeline of few rows put
  // twice the CTAs to work at a lower rate (TunedConstants.h: kHalfTileRate) where 128-row
  // tiles leave most SMs idle (128 x 4096 x 4096: 37 tiles of 128 x 112 on 132 SMs); an
  // estimate of the static M's own tiles took 128 x 112 at 129-192 rows of N = 4096, which
  // ran at 0.46-0.49x the 64 x 128 ones there (run S27B, H100: 146 against 316 TFLOP/s at
  // 160 rows, 203 against 418 at 192).
  std::optional<int64_t> halfRowsBelow;
  // (Under the knobs that give a runtime M no such range, a static M has none either.)
  if (nDim.extent && !tileNKnob && !knobs.tileM && !twoProducts && halfAsMeasured &&
      !knobs.swizzle && !knobs.clusterM && !knobs.clusterN && !knobs.pingpong.value_or(false)) {
    int64_t columns = ceilDiv(*nDim.extent, 128);
    auto filled = [&](int64_t tiles) { return waveShare(tiles, target.smCount); };
    double rate128 = 1.0;
    for (const tuned::TileRate &width : tuned::kTileRates)
      if (width.tileN == 128)
        rate128 = width.rate;
    bool lostLast = false;
    for (int64_t upTo = tuned::kFewRowsBelow - 1 + 64; upTo + 1 < twoWaves; upTo += 64) {
      double half = 1.0 / (tuned::kHalfTileRate * filled(upTo / 64 * columns));
      double tall = 1.0 / (rate128 * filled((upTo + 127) / 128 * columns));
      bool wins = half < tall * (1.0 - tuned::kTileWidthMargin);
      if (wins)
        halfRowsBelow = upTo + 1;
      else if (lostLast || !halfRowsBelow)
        break; // two bands in a row (or the first) go to 128 x 128 tiles: the range ends
      lostLast = !wins;
    }
  }
  // One choice for rows in [low, high) (nullopt: unbounded).
  auto choose = [&](std::optional<int64_t> low, std::optional<int64_t> high) {
    MatmulVariant variant;
    variant.low = low;
    variant.high = high;
    MatmulTile &c = variant.tile;
    c.epilogue = epilogue;
    std::string epilogueHow = epilogueWhy, groupsWhy;
    bool fewRows = high && *high <= tuned::kFewRowsBelow && !twoProducts;
    c.tileN = tileNKnob ? *tileNKnob : (twoProducts || (high && !fewRows) ? 128 : 256);
    std::string tileWhy;
    // Static sizes: the width whose tiles finish first, at each width's rate
    // (TunedConstants.h) and the share of their last wave they fill, e.g. 1024 x 14336:
    // 448 tiles of 128 x 256 fill 85 % of four waves, 512 of 128 x 224 97 %. (The estimate
    // is for 128-row tiles without clusters: not under the pingpong or cluster_m knobs,
    // whose tiles pingpong's documentation and the cluster's walk fix.)
    auto wavesFilled = [&](int64_t tileM, int64_t tileN) {
      int64_t tiles = saturatingMul(ceilDiv(*mDim.extent, tileM), ceilDiv(*nDim.extent, tileN));
      return waveShare(tiles, target.smCount);
    };
    // Below two waves of 128 x 256 tiles the range's own width is 128, and 128 x 256 is a
    // candidate like the others: where both fill their waves alike (2048^3: one wave of 128
    // tiles against two of 256) its rate wins. Run M3 had one wave of them lose to two of
    // 128 x 128 (692 against 721 TFLOP/s) with 3 stages and the whole output tile; with the
    // output in pieces and 4 stages they ran 1.03-1.06x 128 x 128 at 2048^3,
    // 1024 x 4096 x 4096, 2048 x 4096 x 4096 and 1024 x 8192 x 8192 (run W10, and W8/W9 at
    // 2048^3: 1.03x).
    bool belowTwoWaves = c.tileN == 128;
    if (!tileNKnob && !knobs.tileM && !twoProducts && !fewRows && mDim.extent && nDim.extent &&
        !knobs.pingpong.value_or(false) && !knobs.clusterM && !knobs.clusterN) {
      // The range's own width stays unless another is estimated faster by more than the
      // estimate's error (TunedConstants.h: kTileWidthMargin).
      int64_t was = c.tileN;
      auto timeOf = [&](const tuned::TileRate &width) {
        return 1.0 / (width.rate * wavesFilled(128, width.tileN));
      };
      const tuned::TileRate *best = nullptr;
      for (const tuned::TileRate &width : tuned::kTileRates)
        if (width.tileN == was)
          best = &width;
      double bestTime = timeOf(*best) * (1.0 - tuned::kTileWidthMargin);
      for (const tuned::TileRate &width : tuned::kTileRates) {
        if (width.tileN == was || !readableWidth(width.tileN))
          continue;
        if (double time = timeOf(width); time < bestTime) {
          best = &width;
          bestTime = time;
        }
      }
      c.tileN = best->tileN;
      if (c.tileN != was)
        tileWhy = llvm::formatv("128 x {0} tiles fill {1}% of their waves, 128 x {2} ones "
                                "{3}%; at {4}% of the widest tiles' rate they finish first.",
                                c.tileN, static_cast<int>(100 * wavesFilled(128, c.tileN)), was,
                                static_cast<int>(100 * wavesFilled(128, was)),
                                static_cast<int>(100 * best->rate))
                      .str();
      // Operand rows that are not whole 128-byte lines apart (K = 5000: 10000 bytes) make
      // every box row straddle two lines: the kernel becomes bound by L2, and 192 x 192
      // tiles, three consumer warpgroups of 64 x 192 (96 flops a loaded element against
      // 128 x 256's 85), finish first (TunedConstants.h: kTall192RateUnaligned) where
      // their pipeline keeps the 3 stages it was measured with beside the output tile.
      MatmulTile tallTile = c;
      tallTile.tileM = 192;
      tallTile.tileN = 192;
      if (!belowTwoWaves && rowsStraddleLines && stagesFit(tallTile) >= 3) {
        // Against the width chosen, by the same margin as the widths against the default
        // (bestTime already has it when the default stayed).
        double tall = 1.0 / (tuned::kTall192RateUnaligned * wavesFilled(192, 192));
        double beat = c.tileN == was ? bestTime : bestTime * (1.0 - tuned::kTileWidthMargin);
        if (tall < beat) {
          tileWhy = llvm::formatv("{0}'s rows are {1} bytes apart, not whole 128-byte lines: "
                                  "L2 bounds the kernel, and 192 x 192 tiles (three consumer "
                                  "warpgroups) load fewer bytes a flop; they fill {2}% of "
                                  "their waves.",
                                  mm.lhsInput, saturatingMul(*kDim.extent, operandBytes),
                                  static_cast<int>(100 * wavesFilled(192, 192)))
                        .str();
          c.tileM = 192;
          c.tileN = 192;
        }
      }
      // 256 x 160 tiles (two consumer warpgroups of 128 x 160: 98 flops a loaded element)
      // where their waves are fuller than the choice so far by more than the margin, e.g.
      // 1000 x 5000 x 3000: 128 tiles in one wave against 216 of 128 x 192 in two (82 %).
      // Their output leaves in pieces, which leave them 3 stages: the rate was measured so,
      // persistent, so not where a knob sets the stages, the pieces or another tile order.
      const bool wideAsMeasured =
          !knobs.stages && !knobs.epiloguePiece && !knobs.splitK && !knobs.streamK.value_or(false);
      MatmulTile wide = c;
      wide.tileM = 256;
      wide.warpM = 128;
      wide.tileN = tuned::kTall256TileN;
      MatmulTile widePieces = wide;
      widePieces.epiloguePiece = tuned::kEpiloguePieceColumns;
      // The estimated time of the tiles chosen so far: their rate against 128 x 256 tiles
      // (TunedConstants.h) and the share of their waves they fill.
      auto chosenTime = [&] {
        double rate = c.tileM == 192   ? tuned::kTall192RateUnaligned
                      : c.tileM == 256 ? tuned::kTall256Rate
                                       : 1.0;
        if (c.tileM == 128)
          for (const tuned::TileRate &width : tuned::kTileRates)
            if (width.tileN == c.tileN)
              rate = width.rate;
        return 1.0 / (rate * wavesFilled(c.tileM, c.tileN));
      };
      if (wideAsMeasured && readableWidth(wide.tileN) &&
          piecesRefusal(wide, tuned::kEpiloguePieceColumns).empty() && stagesFit(widePieces) >= 3) {
        double tall = 1.0 / (tuned::kTall256Rate * wavesFilled(256, wide.tileN));
        if (tall < chosenTime() * (1.0 - tuned::kTileWidthMargin)) {
          tileWhy =
              llvm::formatv("256 x {0} tiles (two consumer warpgroups of 128 x {0}) fill "
                            "{1}% of their waves, the {2} x {3} ones {4}%; at {5}% of "
                            "128 x 256's rate they finish first.",
                            wide.tileN, static_cast<int>(100 * wavesFilled(256, wide.tileN)),
                            c.tileM, c.tileN, static_cast<int>(100 * wavesFilled(c.tileM, c.tileN)),
                            static_cast<int>(100 * tuned::kTall256Rate))
                  .str();
          c.tileM = 256;
          c.warpM = 128;
          c.tileN = wide.tileN;
        }
      }
      // Operand rows not whole 128-byte lines apart and a long K: every box row of a straddles
      // two lines, and clusters of two N tiles that load half of their shared a tile each
      // (multicast) ran 1.10-1.23x the same tiles without a cluster (run W12: 4000 x 14000 x
      // 5000, 4096 x 14336 x 5000, 1000 x 5000 x 3000), where whole lines ran level (0.96-1.02,
      // runs W11 and W12) and a short K gained nothing (3000 x 7000 x 2000). Of the three
      // tiles measured so, at rates within the margin of each other, the one whose clusters
      // fill their waves best (a wave: one cluster on each two SMs), where it is estimated
      // faster than the tiles chosen so far by the margin.
      if (clustersForStraddlingRows && wideAsMeasured && !knobs.swizzle) {
        auto clusterWavesFilled = [&](int64_t tileM, int64_t tileN) {
          int64_t units =
              saturatingMul(ceilDiv(*mDim.extent, tileM), ceilDiv(*nDim.extent, 2 * tileN));
          return waveShare(units, target.smCount / 2);
        };
        std::optional<MatmulTile> best;
        double bestFill = 0;
        for (const tuned::ClusteredTile &tile : tuned::kClusteredUnalignedTiles) {
          MatmulTile candidate = c;
          candidate.tileM = tile.tileM;
          candidate.tileN = tile.tileN;
          candidate.warpM = tile.tileM == 256 ? 128 : 64;
          candidate.clusterN = 2;
          candidate.epiloguePiece = tuned::kEpiloguePieceColumns;
          if (!readableWidth(tile.tileN) ||
              !piecesRefusal(candidate, tuned::kEpiloguePieceColumns).empty() ||
              stagesFit(candidate) < tile.stages)
            continue;
          if (double fill = clusterWavesFilled(tile.tileM, tile.tileN); fill > bestFill + 0.005) {
            best = candidate;
            bestFill = fill;
          }
        }
        if (best && 1.0 / (tuned::kClusterUnalignedRate * bestFill) <
                        chosenTime() * (1.0 - tuned::kTileWidthMargin)) {
          tileWhy = straddleWhy(*best) + llvm::formatv("; their clusters fill {0}% of their waves.",
                                                       static_cast<int>(100 * bestFill))
                                             .str();
          c.tileM = best->tileM;
          c.tileN = best->tileN;
          c.warpM = best->warpM;
          c.clusterN = 2;
        }
      }
    }
    // A runtime M (the JIT specializes K and N, not M) whose rows of a are not whole lines
    // and whose K is long: from two waves of 128 x 256 tiles up, 256 x 128 tiles in pairs
    // along N sharing a, the tile within 4 % of the best of the three measured at both
    // large shapes of run W12 (1.20-1.23x the same tiles alone), whatever M fills.
    if (!mDim.extent && low && *low == twoWaves && !high && !tileNKnob && !knobs.tileM &&
        !twoProducts && !knobs.pingpong.value_or(false) && !knobs.clusterM && !knobs.clusterN &&
        !knobs.stages && !knobs.epiloguePiece && !knobs.splitK && !knobs.streamK.value_or(false) &&
        !knobs.swizzle && clustersForStraddlingRows) {
      MatmulTile pair = c;
      pair.tileM = 256;
      pair.tileN = 128;
      pair.warpM = 128;
      pair.clusterN = 2;
      pair.epiloguePiece = tuned::kEpiloguePieceColumns;
      int64_t measuredStages = 0;
      for (const tuned::ClusteredTile &tile : tuned::kClusteredUnalignedTiles)
        if (tile.tileM == pair.tileM && tile.tileN == pair.tileN)
          measuredStages = tile.stages;
      if (piecesRefusal(pair, tuned::kEpiloguePieceColumns).empty() &&
          stagesFit(pair) >= measuredStages) {
        tileWhy = straddleWhy(pair) + ".";
        c.tileM = 256;
        c.tileN = 128;
        c.warpM = 128;
        c.clusterN = 2;
      }
    }
    // A runtime M's rows where 64 x 128 tiles are estimated to finish first (halfRowsBelow),
    // and a static M among them.
    bool inHalfRows =
        halfRowsBelow &&
        (mDim.extent ? *mDim.extent >= tuned::kFewRowsBelow && *mDim.extent < *halfRowsBelow
                     : low && *low == tuned::kFewRowsBelow && high && *high == *halfRowsBelow);
    if (inHalfRows) {
      c.tileM = 64;
      c.warpM = 64;
      c.tileN = 128;
      c.clusterN = 1; // as measured: alone (a cluster chosen above was for other tiles)
      tileWhy = llvm::formatv("up to {0} rows, 128 x 128 tiles of {1} = {2} leave most SMs "
                              "idle: 64 x 128 tiles put more CTAs to work.",
                              *halfRowsBelow - 1, nDim.name, *nDim.extent)
                    .str();
    }
    // Few rows: 64-row tiles of one consumer warpgroup, as wide as fills one wave of CTAs
    // (N = 14336: 128 tiles of 64 x 112), each CTA streaming its rows of b through a deep
    // pipeline of small stages.
    if (fewRows) {
      c.tileM = 64;
      if (!tileNKnob && nDim.extent) {
        int64_t rowsM = mDim.extent ? ceilDiv(*mDim.extent, 64) : 1;
        double bestFill = -1;
        for (int64_t width = 256; width >= 64; width -= readableWidth(16) ? 16 : 64) {
          int64_t tiles = saturatingMul(rowsM, ceilDiv(*nDim.extent, width));
          double fill = waveShare(tiles, target.smCount);
          if (fill > bestFill + 1e-9) {
            bestFill = fill;
            c.tileN = width;
          }
        }
        tileWhy = llvm::formatv("64 x {0} tiles: {1} CTAs fill {2}% of their waves.", c.tileN,
                                saturatingMul(rowsM, ceilDiv(*nDim.extent, c.tileN)),
                                static_cast<int>(100 * bestFill))
                      .str();
      } else if (!tileNKnob) {
        c.tileN = 128;
      }
    }
    // Few rows, the operands swapped: w's rows take wgmma's 64-row side and a's few rows
    // its N side (M rounded up to 8), so a stage is (M + 64) x 64 elements instead of
    // (64 + tile_n) x 64 with most of the 64 rows of a empty, and each SM keeps up to
    // kSwapStages of them in flight for each of its CTAs.
    // A runtime M has its own ranges of swapped tiles (at most 8, 16 and 32 rows).
    std::optional<int64_t> swapRows = mDim.extent ? std::optional<int64_t>(*mDim.extent)
                                      : high      ? std::optional<int64_t>(*high - 1)
                                                  : std::nullopt;
    bool swap = knobs.swapAB
                    ? *knobs.swapAB
                    : fewRows && swapRows && *swapRows <= tuned::kSwapRowsAtMost &&
                          mm.swappable() && !tileNKnob && !knobs.tileM && !knobs.swizzle &&
                          !knobs.clusterM && !knobs.clusterN && !knobs.streamK.value_or(false) &&
                          !knobs.pingpong.value_or(false);
    if (knobs.swapAB && !*knobs.swapAB)
      verdicts.honour("swap_ab");
    if (swap && mm.swappable()) {
      if (knobs.swapAB)
        verdicts.honour("swap_ab");
      c.swapAB = true;
      c.groups = 1;
      c.tileM = knobs.tileM ? *knobs.tileM
                : swapRows  ? std::clamp<int64_t>(roundUp(*swapRows, 8), 8, 64)
                            : 64;
      c.tileN = tileNKnob && *tileNKnob % 64 == 0 ? *tileNKnob : 64;
      c.warpM = c.tileM;
      if (knobs.tileM)
        verdicts.honour("tile_m");
      if (knobs.consumers) {
        verdicts.honour("consumers");
        // Two consumer warpgroups on halves of a's rows (the 384-thread form cuBLAS launches
        // for few rows): each waits on its own wgmma groups while the other issues.
        // Each half a multiple of 8 (wgmma's N): rows derived from M (not tile_m, whose
        // value the knob check holds to multiples of 16) round up to 16.
        if (*knobs.consumers == 2 && c.tileN == 64) {
          c.tileM = (c.tileM + 15) / 16 * 16;
          c.warpM = c.tileM / 2;
        }
      }
      c.epilogue = sched::EpilogueKind::Registers;
      int64_t tiles = saturatingMul(tilesOf(mDim, c.tileM).value_or(1),
                                    tilesOf(nDim, c.tileN).value_or(target.smCount));
      int64_t parts = 1;
      if (knobs.splitK) {
        parts = *knobs.splitK;
        verdicts.honour("split_k");
      } else if (nDim.extent && tiles < ceilDiv(target.smCount, 2)) {
        // As many parts as fit one CTA an SM: more leave some SMs two parts to stream
        // (run Q3: 2 parts of 64 tiles 1.28-1.37x no split at N = 4096, 3 parts 0.97-1.08x).
        parts = std::clamp<int64_t>(target.smCount / tiles, 1, tuned::kSplitKMaxParts);
        if (std::optional<int64_t> kTiles = tilesOf(kDim, 64))
          parts = std::max<int64_t>(1, std::min(parts, *kTiles / tuned::kSplitKMinKTiles));
      }
      c.order = parts > 1 ? sched::TileOrder::SplitK : sched::TileOrder::OnePerCta;
      c.orderParameter = parts;
      // The CTAs an SM hosts at once share its shared memory: the stages a CTA gets.
      // At most two: measured with two (run S1); more CTAs an SM would each get fewer stages.
      // The registers (232 a consumer thread) leave one CTA resident all the same: run S34A
      // measured this form 1.04-1.05x as fast as two resident CTAs (216 registers,
      // __launch_bounds__(256, 2)) and 1.02x as fast as one CTA with all the shared memory's
      // stages (16 and 32 rows, N = 14336).
      int64_t ctasPerSm =
          nDim.extent
              ? std::clamp<int64_t>(ceilDiv(saturatingMul(tiles, parts), target.smCount), 1, 2)
              : 2;
      int64_t stage = (c.tileM + c.tileN) * 64 * operandBytes + 16;
      int64_t perCta =
          std::min(target.sharedMemoryPerBlock, target.sharedMemoryPerSm / ctasPerSm - 1024);
      int64_t fit = std::max<int64_t>(1, target.sharedMemoryPerBlock / stage);
      c.stages = std::clamp<int64_t>(perCta / stage, 1, tuned::kSwapStages);
      if (knobs.stages) {
        verdicts.honour("stages");
        if (*knobs.stages > fit)
          verdicts.refuse("stages",
                          llvm::formatv("{0} stages of {1} x 64 and {2} x 64 operand tiles do not "
                                        "fit in the {3} bytes of shared memory a block has on {4}: "
                                        "at most {5}",
                                        *knobs.stages, c.tileM, c.tileN,
                                        target.sharedMemoryPerBlock, target.name, fit)
                              .str());
        c.stages = *knobs.stages;
      }
      if (tileNKnob)
        verdicts.honour("tile_n");
      variant.reasons.push_back(
          knobs.swapAB ? "auto(matmul), the operands swapped (swap_ab)."
                       : llvm::formatv("auto(matmul), {0} rows: the product is bound by reading "
                                       "{1} once; the operands swapped.",
                                       low ? std::to_string(*low) + " to " + std::to_string(c.tileM)
                                           : "at most " + std::to_string(c.tileM),
                                       mm.rhsInput)
                             .str());
      int64_t consumers = c.tileN / 64 * (c.tileM / c.warpM);
      variant.reasons.push_back(
          llvm::formatv("{0} x {1} tiles computed as {1} x {0} (wgmma m64n{9}k16 on {2}'s rows, "
                        "{3} consumer warpgroup{4}{10}), {5} stages of {6} bytes ({7}), {8}; the "
                        "epilogue in registers, stored transposed.",
                        c.tileM, c.tileN, mm.rhsInput,
                        consumers == 1 ? std::string("one") : std::to_string(consumers),
                        consumers > 1 ? "s" : "", c.stages, stage,
                        ctasPerSm > 1 ? "half an SM's shared memory" : "an SM's shared memory",
                        parts > 1 ? "K split in " + std::to_string(parts) + " parts"
                                  : std::string("one tile a CTA"),
                        c.warpM, c.warpM < c.tileM ? " on halves of its rows" : "")
              .str());
      return variant;
    }
    std::string orderWhy = "persistent CTAs in groups of " +
                           std::to_string(knobs.swizzle ? *knobs.swizzle : tuned::kSwizzle) +
                           " M tiles";
    // split_k for few rows, unless a knob asks for another order.
    int64_t parts = 1;
    if (knobs.splitK) {
      parts = *knobs.splitK;
      verdicts.honour("split_k");
    } else if (fewRows && !knobs.streamK.value_or(false) && !knobs.swizzle && !knobs.clusterM &&
               !knobs.clusterN && !tileNKnob && nDim.extent) {
      int64_t rowsM = mDim.extent ? ceilDiv(*mDim.extent, 64) : 1;
      int64_t narrowest = saturatingMul(rowsM, *tilesOf(nDim, 64));
      if (narrowest < ceilDiv(target.smCount, 2)) {
        c.tileN = 64;
        tileWhy.clear();
        parts = std::clamp<int64_t>(target.smCount / narrowest, 1, tuned::kSplitKMaxParts);
        if (std::optional<int64_t> kTiles = tilesOf(kDim, 64))
          parts = std::max<int64_t>(1, std::min(parts, *kTiles / tuned::kSplitKMinKTiles));
      }
    }
    if (parts > 1) {
      c.order = sched::TileOrder::SplitK;
      c.orderParameter = parts;
      c.epilogue = sched::EpilogueKind::Registers;
      orderWhy = knobs.splitK
                     ? "K split in " + std::to_string(parts) + " parts (split_k)"
                     : llvm::formatv("K split in {0} parts: the 64 x 64 tiles of {1} rows "
                                     "leave more than half the SMs idle and the product is "
                                     "bound by reading {2}; each SM streams a part",
                                     parts, "at most 64", mm.rhsInput)
                           .str();
      epilogueHow = "in registers, by the CTA whose part arrives last";
    } else if (fewRows && !knobs.streamK.value_or(false) && !knobs.swizzle && !knobs.clusterM &&
               !knobs.clusterN && !knobs.pingpong.value_or(false)) {
      c.order = sched::TileOrder::OnePerCta;
      orderWhy = "one tile a CTA";
      // The output tile through shared memory and TMA stores where it still leaves the
      // deep pipeline its stages (64 x 112: 8 stages of 22.5 KiB beside 14 KiB; the stages
      // knob's count where it asks for more; counted in the pieces the epilogue_piece knob
      // asks for); run S28A, 64 x 14336 x 5120 on an H100: 175 against 167 TFLOP/s in
      // registers, whose 4-byte stores of the accumulators' pairs are each a part of a
      // line. Measured at 40-64 rows only: fewer rows (64-row tiles that are not swapped,
      // a [K, N] w) and wider tiles (64 x 224 for N = 28672, which would give up stages for
      // it) keep registers.
      MatmulTile stored = c;
      stored.epilogue = sched::EpilogueKind::SharedTmaStore;
      if (knobs.epiloguePiece && piecesRefusal(stored, *knobs.epiloguePiece).empty())
        stored.epiloguePiece = *knobs.epiloguePiece;
      const int64_t stagesWanted =
          std::max<int64_t>(tuned::kFewRowsStages, knobs.stages.value_or(0));
      const bool measuredRows = mDim.extent ? *mDim.extent >= tuned::kStoredFewRowsFrom
                                            : low && *low >= tuned::kStoredFewRowsFrom;
      if (c.epilogue != sched::EpilogueKind::SharedTmaStore) {
        // The threads' copy that a runtime N takes above is not measured with these tiles.
        epilogueHow = c.epilogue == sched::EpilogueKind::Registers
                          ? epilogueWhy
                          : "in registers (a runtime " + nDim.name +
                                ": rows TMA may not store, and the threads' copy is not "
                                "measured with 64-row tiles)";
        c.epilogue = sched::EpilogueKind::Registers;
      } else if (measuredRows && stagesFit(stored) >= stagesWanted) {
        epilogueHow += " (the pipeline keeps its stages beside the output tile)";
      } else {
        c.epilogue = sched::EpilogueKind::Registers;
        epilogueHow = !measuredRows
                          ? "in registers (fewer than " +
                                std::to_string(tuned::kStoredFewRowsFrom) +
                                " rows: these tiles' TMA stores not measured there)"
                          : "in registers (" + std::to_string(stagesWanted) +
                                " stages would not fit beside the " + std::to_string(c.tileM) +
                                " x " + std::to_string(c.tileN) + " output tile)";
      }
    } else {
      c.orderParameter = knobs.swizzle ? *knobs.swizzle : tuned::kSwizzle;
      // Ping-pong (two consumer groups on alternate 64 x tile_n tiles, one group's
      // epilogue under the other's products) only when the knob asks: since the epilogue
      // stores pairs and GELU's tanh is one instruction, the epilogue is too short to pay
      // for 64-row tiles' operand traffic. Measured on the H200 (docs/performance.md, run
      // M2): the 128 x 256 tiles of both groups on one tile ran 1.0-1.5x ping-pong at every
      // shape, 4096^3 (short K, where ping-pong used to win by 13 %) included.
      bool pingpong = knobs.pingpong.value_or(false);
      if (knobs.pingpong)
        verdicts.honour("pingpong");
      if (pingpong) {
        c.tileM = 64;
        c.groups = 2;
        groupsWhy = "two consumer groups on alternate 64-row tiles (pingpong)";
      }
      // Stream-K only when the knob asks: its fix-up kernel and workspace cost what the
      // tail wave saves. Measured on the H200 (docs/performance.md, run M2) against the
      // persistent order at the shapes with a short last wave: 0.84x at 3000 x 7000 x 2000,
      // 1.00x at 4096 x 7424 x 5120 and 4000 x 14000 x 5000.
      bool streamK = knobs.streamK.value_or(false);
      if (knobs.streamK)
        verdicts.honour("stream_k");
      if (streamK) {
        c.order = sched::TileOrder::StreamK;
        if (knobs.streamK)
          orderWhy = "stream-K (stream_k)";
      }
      if (knobs.swizzle)
        verdicts.honour("swizzle");
      if (knobs.clusterM) {
        c.clusterM = *knobs.clusterM;
        verdicts.honour("cluster_m");
      }
      if (knobs.clusterN) {
        c.clusterN = *knobs.clusterN;
        verdicts.honour("cluster_n");
      }
    }
    if (fewRows && c.groups == 1 && c.order != sched::TileOrder::OnePerCta &&
        c.order != sched::TileOrder::SplitK)
      c.tileM = 128; // a knob's tile order: the 128-row tiles it was measured with
    if (knobs.tileM) {
      // The knob's rows for every M (its ranges are merged below); the width, unless
      // tile_n sets it, the widest the tile's consumers hold: 128 for two of 128 rows,
      // 192 for three (the tall tiles measured for operand rows not whole lines apart).
      c.tileM = *knobs.tileM;
      c.warpM = c.tileM == 256 ? 128 : 64;
      if (!tileNKnob && c.tileM == 256)
        c.tileN = std::min<int64_t>(c.tileN, 128);
      if (!tileNKnob && c.tileM == 192)
        c.tileN = std::min<int64_t>(c.tileN, 192);
      verdicts.honour("tile_m");
    }
    // With epilogue_piece, the stages the pieces leave (storeInPieces below gives them to
    // the variants whose tile leaves by TMA; a runtime N's variant of rows TMA cannot store
    // keeps the whole tile, so its stages are counted with it).
    MatmulTile budgeted = c;
    if (knobs.epiloguePiece && piecesRefusal(c, *knobs.epiloguePiece).empty())
      budgeted.epiloguePiece = *knobs.epiloguePiece;
    // 256-row tiles leave in pieces by default where they may (storeInPieces below): the
    // knob's tile is budgeted so, or a 256 x 160 tile of f32 would find no stage beside its
    // whole output tile.
    else if (knobs.tileM && c.tileM == 256 && !knobs.stages && c.groups == 1 &&
             piecesRefusal(c, tuned::kEpiloguePieceColumns).empty())
      budgeted.epiloguePiece = tuned::kEpiloguePieceColumns;
    int64_t fit = stagesFit(budgeted);
    int64_t deepest = c.tileM == 64 && c.groups == 1   ? tuned::kFewRowsStages
                      : c.tileN <= 128 || c.groups > 1 ? 5
                                                       : 4;
    c.stages = std::max<int64_t>(1, std::min<int64_t>(deepest, fit));
    // The knob's taller tile must still leave a pipeline beside the epilogue's tile.
    if (knobs.tileM && !knobs.stages && fit < 2)
      verdicts.refuse("tile_m",
                      llvm::formatv("{0} x {1} tiles leave room for {2} stage{3} of operands "
                                    "beside the epilogue's tile in the {4} bytes of shared memory "
                                    "a block has on {5}: no pipeline; use a narrower tile_n",
                                    c.tileM, c.tileN, fit, fit == 1 ? "" : "s",
                                    target.sharedMemoryPerBlock, target.name)
                          .str());
    if (knobs.stages) {
      verdicts.honour("stages");
      if (*knobs.stages > fit)
        verdicts.refuse(
            "stages", llvm::formatv("{0} stages of {5} x 64 and {1} x 64 operand tiles do not fit "
                                    "in the {2} bytes of shared memory a block has on {3} beside "
                                    "the epilogue's tile: at most {4}",
                                    *knobs.stages, c.tileN, target.sharedMemoryPerBlock,
                                    target.name, fit, c.tileM)
                          .str());
      c.stages = *knobs.stages;
    }
    if (tileNKnob)
      verdicts.honour("tile_n");
    std::string rowsWhy = "auto(matmul)";
    if (twoProducts)
      rowsWhy += ", two products of " + mm.lhsInput +
                 " in one kernel (a second b tile a stage, a second accumulator set)";
    if (low && high)
      rowsWhy += llvm::formatv(", {0} to {1} rows", *low, *high - 1).str();
    else if (high && fewRows)
      rowsWhy += llvm::formatv(", at most {0} rows", *high - 1).str();
    else if (high)
      rowsWhy += llvm::formatv(", fewer than {0} rows", *high).str();
    else if (low)
      rowsWhy += llvm::formatv(", {0} rows or more", *low).str();
    if (fewRows)
      rowsWhy += ": the product is bound by reading " + mm.rhsInput + " once";
    else if (high && *high == twoWaves)
      rowsWhy += llvm::formatv(" (fewer than two waves of 128 x 256 tiles on {0} SMs): "
                               "smaller tiles",
                               target.smCount)
                     .str();
    rowsWhy += ".";
    variant.reasons.push_back(rowsWhy);
    if (!tileWhy.empty())
      variant.reasons.push_back(tileWhy);
    variant.reasons.push_back(
        llvm::formatv("{5} x {0} tiles, {7} of {9} x {0} and a producer "
                      "(40 / {8} registers){6}, {1} stages (the shared memory left by the "
                      "epilogue), {2}{3}; the epilogue {4}.",
                      c.tileN, c.stages, orderWhy,
                      c.clusterM > 1 ? ", clusters of " + std::to_string(c.clusterM) +
                                           " M tiles sharing the b tile (multicast)"
                      : c.clusterN > 1 ? ", clusters of " + std::to_string(c.clusterN) +
                                             " N tiles sharing the a tile (multicast)"
                                       : "",
                      epilogueHow, c.tileM, groupsWhy.empty() ? "" : ": " + groupsWhy,
                      c.tileM / c.warpM * c.groups == 1   ? "one consumer warpgroup"
                      : c.tileM / c.warpM * c.groups == 3 ? "three consumer warpgroups"
                                                          : "two consumer warpgroups",
                      c.tileM / c.warpM * c.groups == 3 ? 152 : 232, c.warpM)
            .str());
    return variant;
  };
  // The output tile in pieces, after the variants' tiles and epilogues are chosen (a runtime
  // N's TMA variants included): where the knob asks, and by default in pieces of
  // kEpiloguePieceColumns where they buy the pipeline a stage (at most 4; one consumer
  // group) for 256-row tiles, clusters along N (measured so, run W12), a fused epilogue, or
  // static sizes of few waves of tiles
  // (TunedConstants.h has the measurements). A variant whose tile does not leave
  // through shared memory by TMA (few rows, swapped tiles, split-K, a runtime N whose rows
  // TMA cannot store) keeps its epilogue; the knob is refused where no variant takes it.
  // Static sizes whose tiles make at most kEpiloguePieceWaves waves.
  auto fewWaves = [&](const MatmulTile &c) {
    std::optional<int64_t> alongM = tilesOf(mDim, c.tileM), alongN = tilesOf(nDim, c.tileN);
    return alongM && alongN &&
           saturatingMul(*alongM, *alongN) <= tuned::kEpiloguePieceWaves * target.smCount;
  };
  auto storeInPieces = [&](MatmulParams &chosen) {
    std::string whyNot;
    bool taken = false;
    for (MatmulVariant &variant : chosen.variants) {
      MatmulTile &c = variant.tile;
      auto fits = [&](int64_t columns) {
        if (std::string why = piecesRefusal(c, columns); !why.empty()) {
          whyNot = why;
          return false;
        }
        return true;
      };
      int64_t columns = 0;
      if (knobs.epiloguePiece) {
        if (fits(*knobs.epiloguePiece))
          columns = *knobs.epiloguePiece;
      } else if (!knobs.stages && c.groups == 1 && outputBytes > 0 &&
                 (c.tileM == 256 || c.clusterN > 1 || mm.fusedEpilogue || fewWaves(c))) {
        const int64_t width = tuned::kEpiloguePieceColumns;
        MatmulTile pieces = c;
        pieces.epiloguePiece = width;
        std::string kept = whyNot;
        if (fits(width) &&
            std::min<int64_t>(stagesFit(pieces), 4) > std::min<int64_t>(stagesFit(c), 4))
          columns = width;
        whyNot = kept; // the knob's reason, not the default's
      }
      if (!columns)
        continue;
      taken = true;
      int64_t before = c.stages;
      c.epiloguePiece = columns;
      if (!knobs.stages) {
        int64_t deepest = c.tileM == 64 && c.groups == 1   ? tuned::kFewRowsStages
                          : c.tileN <= 128 || c.groups > 1 ? 5
                                                           : 4;
        c.stages = std::max<int64_t>(c.stages, std::min<int64_t>(deepest, stagesFit(c)));
      }
      std::string was =
          llvm::formatv("{0} stages (the shared memory left by the epilogue)", before);
      for (std::string &reason : variant.reasons)
        if (size_t at = reason.find(was); at != std::string::npos)
          reason.replace(at, was.size(),
                         llvm::formatv("{0} stages (the shared memory left by the epilogue's "
                                       "two pieces)",
                                       c.stages)
                             .str());
      variant.reasons.push_back(
          llvm::formatv("The output tile leaves {0} columns at a time through two shared "
                        "pieces of {1} x {0}{2}.",
                        columns, c.tileM,
                        knobs.epiloguePiece ? " (epilogue_piece)"
                                            : ": the pipeline keeps a stage more beside them")
              .str());
    }
    if (knobs.epiloguePiece) {
      if (taken)
        verdicts.honour("epilogue_piece");
      else
        verdicts.refuse("epilogue_piece", whyNot);
    }
  };
  // The ranges of M with their own choice: few rows (split_k), fewer than two waves of
  // 128 x 256 tiles (128 x 128 tiles), the rest. Knobs that fix what a range changes
  // merge it with its neighbour.
  std::vector<int64_t> bounds;
  // A runtime M: swapped tiles of 8, 16 and 32 rows for the fewest rows (run S1: each the
  // fastest at its rows), unless a knob fixes what they change.
  if (!mDim.extent && mm.swappable() && knobs.swapAB.value_or(true) && !knobs.splitK &&
      !knobs.streamK.value_or(false) && !knobs.swizzle && !knobs.clusterM && !knobs.clusterN &&
      !tileNKnob && !knobs.tileM && !knobs.pingpong.value_or(false))
    for (int64_t rows = 8; rows <= tuned::kSwapRowsAtMost; rows *= 2)
      bounds.push_back(rows + 1);
  if (!knobs.splitK && !knobs.streamK.value_or(false) && !knobs.swizzle && !knobs.clusterM &&
      !knobs.clusterN && !knobs.tileM && !twoProducts)
    bounds.push_back(tuned::kFewRowsBelow);
  if (!mDim.extent && halfRowsBelow && !bounds.empty() && bounds.back() == tuned::kFewRowsBelow)
    bounds.push_back(*halfRowsBelow);
  if (!tileNKnob && !knobs.tileM && !twoProducts)
    bounds.push_back(twoWaves);
  std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges;
  std::optional<int64_t> low;
  for (int64_t bound : bounds) {
    ranges.push_back({low, bound});
    low = bound;
  }
  ranges.push_back({low, std::nullopt});
  if (!knobs.when.empty()) {
    // The user's guard: one choice, as for a runtime M below two waves (128 x 128 tiles
    // unless tile_n or tile_m says otherwise).
    MatmulVariant variant = choose(
        std::nullopt, tileNKnob || knobs.tileM ? std::nullopt : std::optional<int64_t>(twoWaves));
    variant.userGuard = true;
    params.variants.push_back(std::move(variant));
    storeInPieces(params);
    return params;
  }
  for (const auto &[from, to] : ranges) {
    if (mDim.extent) {
      // A static M: the choice of its range alone.
      if ((from && *mDim.extent < *from) || (to && *mDim.extent >= *to))
        continue;
      MatmulVariant variant = choose(from, to);
      variant.reasons.front() = "auto(matmul), " + std::to_string(*mDim.extent) + " rows.";
      params.variants.push_back(std::move(variant));
      break;
    }
    params.variants.push_back(choose(from, to));
  }
  // A runtime N: where the output's rows are 16-byte multiples (the usual case), the tile
  // leaves by TMA stores, which overlap the next tile's products; the threads' copy out of
  // the tile is for the other sizes. Measured on the H200 (docs/performance.md, run M3):
  // at 1024 x 14336 x 5120 the copy by the threads ran at 0.82x the TMA stores.
  if (!nDim.extent && outputBytes > 0 && 16 % outputBytes == 0) {
    std::vector<MatmulVariant> split;
    for (MatmulVariant &variant : params.variants) {
      if (variant.tile.epilogue != sched::EpilogueKind::Shared) {
        split.push_back(std::move(variant));
        continue;
      }
      MatmulVariant aligned = variant;
      aligned.rowsAligned = true;
      aligned.rowAlignment = 16 / outputBytes;
      aligned.tile.epilogue = sched::EpilogueKind::SharedTmaStore;
      std::string byTma = llvm::formatv("through shared memory and TMA stores ({0} a multiple "
                                        "of {1}: rows of 16-byte multiples)",
                                        nDim.name, aligned.rowAlignment);
      std::string byThreads = llvm::formatv("through shared memory, copied out by the threads "
                                            "({0} not a multiple of {1}: rows TMA cannot store)",
                                            nDim.name, aligned.rowAlignment);
      for (std::string &reason : aligned.reasons)
        if (size_t at = reason.find(epilogueWhy); at != std::string::npos)
          reason.replace(at, epilogueWhy.size(), byTma);
      for (std::string &reason : variant.reasons)
        if (size_t at = reason.find(epilogueWhy); at != std::string::npos)
          reason.replace(at, epilogueWhy.size(), byThreads);
      variant.rowsAligned = false;
      variant.rowAlignment = 16 / outputBytes;
      split.push_back(std::move(aligned));
      split.push_back(std::move(variant));
    }
    params.variants = std::move(split);
  }
  storeInPieces(params);
  return params;
}

std::vector<sched::ScheduleBlock> matmulBlocks(const FusionShape &shape, const MatmulParams &params,
                                               const BlockContext &context) {
  const MatmulShape &mm = *shape.matmul;
  std::vector<sched::ScheduleBlock> blocks;
  for (const MatmulVariant &variant : params.variants) {
    Block block;
    block.reasons = variant.reasons;
    matmulDirectives(block, mm.k.name, variant.tile, context);
    std::vector<sched::SizeGuard> when;
    if (variant.userGuard)
      when = context.knobs->when;
    else if (!mm.m.extent) {
      if (variant.low)
        when.push_back({mm.m.id, mm.m.name, sched::Comparison::Ge, *variant.low, context.decl()});
      if (variant.high)
        when.push_back({mm.m.id, mm.m.name, sched::Comparison::Lt, *variant.high, context.decl()});
    }
    if (variant.rowsAligned)
      when.push_back({mm.n.id, mm.n.name,
                      *variant.rowsAligned ? sched::Comparison::Eq : sched::Comparison::Ne, 0,
                      context.decl(), variant.rowAlignment});
    blocks.push_back(context.finish(std::move(block), when));
  }
  return blocks;
}

} // namespace fsl::heuristics
