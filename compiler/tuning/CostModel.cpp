// CostModel.cpp — the tensor pipes' time and the memory's, whichever is longer, then the
// partial sums of K split into pieces.
#include "tuning/CostModel.h"

#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"

#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsl::tuning {
namespace {

using heuristics::ceilDiv;

/// The share of the 16-bit dense tensor peak that 128 x 256 tiles sustain over a long K:
/// 700-710 TFLOP/s of 989 on an H100 (docs/performance.md, run S29L at 8192^3 and
/// 8192 x 28672 x 8192).
constexpr double kSustainedShare = 0.71;
/// The share of the memory's datasheet bandwidth a copy reaches (H100: about 2.9 of 3.35
/// TB/s; H200: 4.2-4.3 of 4.8).
constexpr double kMemoryShare = 0.88;
/// A launch's fixed cost (µs): the product's, and for split-K and stream-K the kernel
/// before it that zeroes the tiles' arrival counters (lower/Lower.cpp).
constexpr double kLaunchMicros = 3.0;
/// What a stage of the pipeline waits from the producer's TMA load to its data in shared
/// memory (µs). Each stage's buffer goes round being loaded, then multiplied, then released,
/// so S stages give a k step at most every (latency + step) / S: past the step's own time
/// with 2 stages, not with 3 or more at 128 x 256 tiles. Fitted on an H100 (runs S37A-S37F,
/// docs/performance.md): 2 stages against the heuristics' 3-4 ran 1.48-1.72x at nine shapes
/// of 128 rows or more, a latency of 1.4-1.7 µs at the six plain ones (2.1 at 1000 x 5000 x
/// 3000, whose rows are not whole lines).
constexpr double kStageLatencyMicros = 1.5;

/// A 128-row tile's rate by its width, relative to 128 x 256 (TunedConstants.h's measured
/// widths, straight lines between them, and in proportion to the width below 112).
double widthRate(int64_t width) {
  struct Point {
    int64_t width;
    double rate;
  };
  // kTileRates sorted by width, once.
  static const std::vector<Point> points = [] {
    std::vector<Point> sorted;
    for (const heuristics::tuned::TileRate &each : heuristics::tuned::kTileRates)
      sorted.push_back({each.tileN, each.rate});
    std::sort(sorted.begin(), sorted.end(),
              [](const Point &a, const Point &b) { return a.width < b.width; });
    return sorted;
  }();
  if (width <= points.front().width)
    return points.front().rate * static_cast<double>(width) / points.front().width;
  for (size_t i = 1; i < points.size(); ++i)
    if (width <= points[i].width) {
      double t = static_cast<double>(width - points[i - 1].width) /
                 static_cast<double>(points[i].width - points[i - 1].width);
      return points[i - 1].rate + t * (points[i].rate - points[i - 1].rate);
    }
  return points.back().rate;
}

/// 64-row tiles (one consumer warpgroup) against 128-row ones of the same width, where both
/// fill their waves alike: 0.88-0.89 (docs/performance.md, run S26D at 384 and 512 rows).
/// (TunedConstants.h's kHalfTileRate, 0.55 of 128 x 256, also counts the waves' fill: taken
/// as a rate here it put the few-row tiles 1.5x slower than they ran in run S31B.)
constexpr double kHalfTileFactor = 0.88;

/// The pieces of stream-K's runs that do not cover their tile, each stored as f32 partial
/// sums and read back once: the split lower/matmul/StreamK.cpp makes. ctas = min(SMs,
/// tiles x k tiles); whole waves of tiles first (all of them when the tiles fill the waves,
/// else all but the last two), then the k tiles of the tiles left cut into one run a CTA.
int64_t streamKPartialPieces(int64_t tiles, int64_t kTiles, int64_t smCount) {
  std::optional<int64_t> allKTiles = llvm::checkedMul(tiles, kTiles);
  if (!allKTiles || *allKTiles <= 0 || smCount <= 0)
    return 0;
  int64_t ctas = std::min<int64_t>(smCount, *allKTiles);
  int64_t wholeTiles = tiles % ctas == 0 ? tiles : std::max<int64_t>(tiles / ctas - 1, 0) * ctas;
  // At most 2 ctas - 1 tiles are left, so runs cross a few tiles each; past 64 bits (a K of
  // some 2^50) every CTA is taken to store both of its slots.
  std::optional<int64_t> runKTiles = llvm::checkedMul(tiles - wholeTiles, kTiles);
  std::optional<int64_t> lastProduct =
      runKTiles ? llvm::checkedMul(*runKTiles, ctas) : std::nullopt;
  if (!lastProduct)
    return 2 * ctas;
  int64_t pieces = 0;
  for (int64_t cta = 0; cta < ctas; ++cta) {
    int64_t first = cta * *runKTiles / ctas, end = (cta + 1) * *runKTiles / ctas;
    for (int64_t tile = first / kTiles; first < end && tile <= (end - 1) / kTiles; ++tile) {
      int64_t begin = std::max(first, tile * kTiles), stop = std::min(end, (tile + 1) * kTiles);
      if (begin != tile * kTiles || stop != (tile + 1) * kTiles)
        ++pieces;
    }
  }
  return pieces;
}

} // namespace

std::optional<ProductEstimate> estimateProduct(const sched::MatmulSchedule &schedule, int64_t m,
                                               int64_t n, int64_t k, int products,
                                               int64_t outputBytes, const Target &target) {
  if (!schedule.mma || schedule.mma->ctaTile.size() < 2 || m <= 0 || n <= 0 || k <= 0 ||
      target.tensorTflops16 <= 0 || target.memoryBandwidthGBps <= 0 || target.smCount <= 0)
    return std::nullopt;
  const sched::Mma &mma = *schedule.mma;
  int64_t tileM = mma.ctaTile[0].value, tileN = mma.ctaTile[1].value;
  if (tileM <= 0 || tileN <= 0)
    return std::nullopt;
  int64_t parts = 1;
  bool streamK = false;
  for (const auto &tiles : schedule.tiles) {
    if (tiles.order == sched::TileOrder::SplitK && tiles.parameter)
      parts = std::max<int64_t>(1, tiles.parameter->value);
    streamK = streamK || tiles.order == sched::TileOrder::StreamK;
  }
  ProductEstimate estimate;
  // Checked: the sizes are the user's (`fslc tune --shapes`); no estimate past 64 bits.
  std::optional<int64_t> tiles = llvm::checkedMul(ceilDiv(m, tileM), ceilDiv(n, tileN));
  std::optional<int64_t> units = tiles ? llvm::checkedMul(*tiles, parts) : std::nullopt;
  if (!units)
    return std::nullopt;
  estimate.workUnits = *units;
  // Persistent CTAs, one an SM: an SM's share of the work units (its waves).
  int64_t waves = ceilDiv(estimate.workUnits, target.smCount);
  estimate.waveShare = streamK ? 1.0
                               : static_cast<double>(estimate.workUnits) /
                                     static_cast<double>(waves * target.smCount);

  // Ping-pong: consumer groups of the tile's rows each take alternate tiles, so an SM with
  // at least as many tiles as groups works on that many at once, at the rate of one tile as
  // tall as all of them; with fewer (a tile an SM), one group works alone.
  int64_t groups = 1;
  if (!mma.swapAB && schedule.warpSpecialize && !mma.warpTile.empty() &&
      mma.warpTile[0].value == tileM)
    groups = std::max<int64_t>(1, schedule.warpSpecialize->consumerCount.value);
  int64_t together = std::min(groups, waves);
  // The rows a tile's warpgroups cover together: 64-row tiles of one warpgroup run slower.
  // With swap_ab a consumer warpgroup takes 64 of N (the instruction's rows).
  int64_t rowsTogether = mma.swapAB ? tileN : tileM * together;
  // The instruction's N side sets the rate: the tile's width (a tile wider than 256 is
  // two instructions of half its width, measured level with 256), or with swap_ab the
  // tile's M (a's rows).
  double rate = widthRate(mma.swapAB ? tileM : std::min<int64_t>(tileN, 256)) *
                (rowsTogether < 128 ? kHalfTileFactor : 1.0);

  // One work unit, its tile over K / parts and both products, at the SM's whole rate; an SM
  // finishes its units `together` at a time, each group at its share of the rate.
  double perSmFlops =
      target.tensorTflops16 * 1e12 * kSustainedShare * rate / static_cast<double>(target.smCount);
  double unitFlops = 2.0 * static_cast<double>(tileM) * static_cast<double>(tileN) *
                     static_cast<double>(ceilDiv(k, parts)) * products;
  double unitMicros = unitFlops / perSmFlops * 1e6;
  // Too few stages to hide the loads' latency: each k step waits for its stage's data.
  int64_t kStep = mma.ctaTile.size() > 2 ? mma.ctaTile[2].value : 0;
  if (schedule.pipeline && schedule.pipeline->stages.value > 0 && kStep > 0) {
    // A whole k tile a step, K's last one padded as the hardware runs it (with K under a k
    // tile the unit's own flops would make the step, and so the wait's share, too small).
    double stepMicros = 2.0 * static_cast<double>(tileM) * static_cast<double>(tileN) *
                        static_cast<double>(kStep) * products / perSmFlops * 1e6;
    double fedMicros =
        (kStageLatencyMicros + stepMicros) / static_cast<double>(schedule.pipeline->stages.value);
    if (fedMicros > stepMicros) {
      estimate.stageFactor = fedMicros / stepMicros;
      unitMicros *= estimate.stageFactor;
    }
  }
  estimate.tensorMicros =
      streamK ? unitMicros * static_cast<double>(estimate.workUnits) /
                    static_cast<double>(target.smCount)
              : unitMicros * static_cast<double>(ceilDiv(waves, together) * together);

  double bytes = 2.0 * (static_cast<double>(m) * k + static_cast<double>(products) * n * k) +
                 static_cast<double>(outputBytes) * m * n;
  estimate.memoryMicros =
      bytes / (static_cast<double>(target.memoryBandwidthGBps) * 1e3 * kMemoryShare);
  // f32 partial sums, written and read back: split-K's every part and stream-K's pieces
  // that do not cover their tile, each summed by the CTA whose part arrives last. They are
  // written after a piece's main loop, so their time is not hidden behind the products (run
  // S34C, H100: inside the larger of the two, split-K and stream-K were estimated 1.6-2.3x
  // too fast; after it, with the zeroing kernel's launch, measured/estimated 0.96-1.21x,
  // stream-K at 160 rows 1.42x).
  double partialElements = 0;
  if (parts > 1)
    partialElements = static_cast<double>(parts) * static_cast<double>(m) * n;
  else if (streamK && mma.ctaTile[2].value > 0)
    partialElements = static_cast<double>(streamKPartialPieces(
                          *tiles, ceilDiv(k, mma.ctaTile[2].value), target.smCount)) *
                      static_cast<double>(tileM) * static_cast<double>(tileN);
  estimate.partialMicros = 2.0 * 4.0 * partialElements /
                           (static_cast<double>(target.memoryBandwidthGBps) * 1e3 * kMemoryShare);
  estimate.micros = std::max(estimate.tensorMicros, estimate.memoryMicros) +
                    estimate.partialMicros + kLaunchMicros +
                    (parts > 1 || streamK ? kLaunchMicros : 0.0);
  std::string spread =
      streamK ? llvm::formatv("stream-K over {0} SMs", target.smCount).str()
              : llvm::formatv("{0}% of {1} wave(s) filled",
                              static_cast<int>(std::lround(100 * estimate.waveShare)), waves)
                    .str();
  estimate.summary =
      llvm::formatv(
          "{0} x {1} tiles{2}: {3} work units, {4}; tensor pipes {5:F1} us{8}, memory "
          "{6:F1} us{7}",
          tileM, tileN, parts > 1 ? llvm::formatv(" in {0} parts of K", parts).str() : "",
          estimate.workUnits, spread, estimate.tensorMicros, estimate.memoryMicros,
          estimate.partialMicros > 0
              ? llvm::formatv(", then partial sums {0:F1} us", estimate.partialMicros).str()
              : std::string(),
          estimate.stageFactor > 1
              ? llvm::formatv(" ({0} stages: each k step waits for its loads, {1:F2}x)",
                              schedule.pipeline->stages.value, estimate.stageFactor)
                    .str()
              : std::string())
          .str();
  return estimate;
}

} // namespace fsl::tuning
