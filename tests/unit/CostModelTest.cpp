// CostModelTest.cpp — the estimates `fslc tune` prunes by (tuning/CostModel.h): the tiles'
// waves, the tensor pipes against the memory, split-K's partial sums, ping-pong's groups.
#include "tuning/CostModel.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace fsl;

namespace {

Target h100() {
  Target t;
  t.name = "h100-sxm";
  t.smCount = 132;
  t.memoryBandwidthGBps = 3350;
  t.tensorTflops16 = 989;
  return t;
}

sched::Count count(int64_t value) { return {value, {}}; }

/// `mma over K: tile (M, N, 64), warp (W, N)`, `warp_specialize ... consumers(C)` and the
/// tile order.
sched::MatmulSchedule schedule(int64_t tileM, int64_t tileN, int64_t warpM = 64,
                               int64_t consumers = 2,
                               sched::TileOrder order = sched::TileOrder::Persistent,
                               int64_t parts = 0, bool swapAB = false) {
  sched::MatmulSchedule s;
  sched::Applied<sched::Mma> mma;
  mma.ctaTile = {count(tileM), count(tileN), count(64)};
  mma.warpTile = {count(warpM), count(tileN)};
  mma.swapAB = swapAB;
  s.mma = mma;
  sched::Applied<sched::WarpSpecialize> specialize;
  specialize.producerRegs = count(40);
  specialize.consumerCount = count(consumers);
  specialize.consumerRegs = count(232);
  s.warpSpecialize = specialize;
  sched::Applied<sched::Tiles> tiles;
  tiles.order = order;
  if (parts)
    tiles.parameter = count(parts);
  s.tiles.push_back(tiles);
  return s;
}

} // namespace

TEST_CASE("cost model: 128 x 256 tiles at 8192^3 fill 97 % of 16 waves, bound by the tensor "
          "pipes") {
  auto estimate = tuning::estimateProduct(schedule(128, 256), 8192, 8192, 8192, 1, 2, h100());
  REQUIRE(estimate);
  CHECK(estimate->workUnits == 2048);
  CHECK(estimate->waveShare == doctest::Approx(2048.0 / (16 * 132)));
  CHECK(estimate->tensorMicros > estimate->memoryMicros);
  // 2 x 8192^3 flops in 16 waves at 71 % of 989 TFLOP/s: about 1.6 ms (measured on an H100:
  // 1.55 ms, 708 TFLOP/s).
  CHECK(estimate->micros == doctest::Approx(1617).epsilon(0.01));
  CHECK(estimate->summary.find("128 x 256 tiles: 2048 work units, 97% of 16 wave(s)") == 0);
}

TEST_CASE("cost model: ping-pong's two 64-row groups work like one 128-row tile") {
  auto pair = tuning::estimateProduct(schedule(128, 256), 4096, 4096, 4096, 1, 2, h100());
  auto pingpong = tuning::estimateProduct(schedule(64, 256, 64, 2), 4096, 4096, 4096, 1, 2, h100());
  auto alone = tuning::estimateProduct(schedule(64, 256, 64, 1), 4096, 4096, 4096, 1, 2, h100());
  REQUIRE((pair && pingpong && alone));
  CHECK(pingpong->micros == doctest::Approx(pair->micros));
  CHECK(alone->micros > pair->micros); // one warpgroup: the 64-row tiles' lower rate
}

TEST_CASE("cost model: ping-pong with a tile an SM has one group working") {
  // 128 x 4096: 64 tiles of 64 x 128 on 132 SMs; the second group has no tile of its own.
  auto pingpong = tuning::estimateProduct(schedule(64, 128, 64, 2), 128, 4096, 4096, 1, 2, h100());
  auto alone = tuning::estimateProduct(schedule(64, 128, 64, 1), 128, 4096, 4096, 1, 2, h100());
  REQUIRE((pingpong && alone));
  CHECK(pingpong->micros == doctest::Approx(alone->micros));
  // Stream-K spreads the same work over the SMs whether or not the groups alternate.
  auto streamed = tuning::estimateProduct(schedule(64, 256, 64, 2, sched::TileOrder::StreamK), 8192,
                                          8192, 8192, 1, 2, h100());
  auto streamedPair = tuning::estimateProduct(schedule(128, 256, 64, 2, sched::TileOrder::StreamK),
                                              8192, 8192, 8192, 1, 2, h100());
  REQUIRE((streamed && streamedPair));
  CHECK(streamed->tensorMicros == doctest::Approx(streamedPair->tensorMicros));
}

TEST_CASE("cost model: tiles wider than 256 keep the 64-row tiles' lower rate") {
  auto narrow = tuning::estimateProduct(schedule(64, 320, 64, 1), 8192, 8192, 8192, 1, 2, h100());
  auto tall = tuning::estimateProduct(schedule(128, 320), 8192, 8192, 8192, 1, 2, h100());
  REQUIRE((narrow && tall));
  CHECK(narrow->tensorMicros > 1.1 * tall->tensorMicros);
}

TEST_CASE("cost model: a few rows are bound by the memory; split-K writes partial sums") {
  // 16 x 14336 x 5120: w alone is 147 MB.
  auto swapped = tuning::estimateProduct(schedule(16, 64, 16, 1, sched::TileOrder::OnePerCta, 0,
                                                  /*swapAB=*/true),
                                         16, 14336, 5120, 1, 2, h100());
  REQUIRE(swapped);
  CHECK(swapped->memoryMicros ==
        doctest::Approx(2.0 * (16.0 * 5120 + 14336.0 * 5120) / 1e3 / (3350 * 0.88) +
                        2.0 * 16 * 14336 / 1e3 / (3350 * 0.88))
            .epsilon(0.001));
  CHECK(swapped->memoryMicros > swapped->tensorMicros);
  auto split = tuning::estimateProduct(schedule(64, 128, 64, 1, sched::TileOrder::SplitK, 4), 64,
                                       4096, 4096, 1, 2, h100());
  auto whole = tuning::estimateProduct(schedule(64, 128, 64, 1), 64, 4096, 4096, 1, 2, h100());
  REQUIRE((split && whole));
  CHECK(split->workUnits == 4 * whole->workUnits);
  CHECK(split->memoryMicros == doctest::Approx(whole->memoryMicros));
  CHECK(split->partialMicros == // 4 x 64 x 4096 f32 partial sums, written and read
        doctest::Approx(2.0 * 4.0 * 4 * 64 * 4096 / 1e3 / (3350 * 0.88)).epsilon(0.001));
  CHECK(whole->partialMicros == 0);
  CHECK(split->summary.find("in 4 parts of K") != std::string::npos);
}

TEST_CASE("cost model: tiles past the rows cost their whole area") {
  // 256-row tiles at 128 rows: half of each tile is past M, and 16 of 132 SMs work.
  auto tall = tuning::estimateProduct(schedule(256, 128, 128), 128, 4096, 4096, 1, 2, h100());
  auto half = tuning::estimateProduct(schedule(64, 128, 64, 1), 128, 4096, 4096, 1, 2, h100());
  REQUIRE((tall && half));
  CHECK(tall->workUnits == 32);
  CHECK(half->workUnits == 64);
  CHECK(tall->micros > tuning::kPruneAbove * half->micros);
}

TEST_CASE("cost model: no estimate without an mma, sizes or the target's tensor rate") {
  sched::MatmulSchedule none;
  CHECK_FALSE(tuning::estimateProduct(none, 128, 128, 128, 1, 2, h100()));
  CHECK_FALSE(tuning::estimateProduct(schedule(128, 256), 0, 128, 128, 1, 2, h100()));
  // Work units past 64 bits: no estimate (and no wrapped one).
  const int64_t huge = int64_t(1) << 62;
  CHECK_FALSE(tuning::estimateProduct(schedule(64, 64), huge, huge, 128, 1, 2, h100()));
  Target unknown = h100();
  unknown.tensorTflops16 = 0;
  CHECK_FALSE(tuning::estimateProduct(schedule(128, 256), 128, 128, 128, 1, 2, unknown));
}

TEST_CASE("cost model: partial sums are written after a piece's main loop, so their time adds") {
  // 2048^3 in 2 parts of K (run S34C, H100: 60.4 us measured; with the partial sums inside
  // the larger of tensor and memory time the model said 37). The operands stream in behind
  // the products; the 2 x 2048^2 f32 partial sums, written and read, come after them.
  Target target = h100();
  auto split = tuning::estimateProduct(schedule(128, 256, 64, 2, sched::TileOrder::SplitK, 2), 2048,
                                       2048, 2048, 1, 2, target);
  REQUIRE(split);
  double perMicro = 3350 * 1e3 * 0.88;
  double operands = (2.0 * (2.0 * 2048 * 2048) + 2.0 * 2048 * 2048) / perMicro;
  CHECK(split->memoryMicros == doctest::Approx(operands).epsilon(0.001));
  CHECK(split->partialMicros ==
        doctest::Approx(2.0 * 4.0 * 2 * 2048.0 * 2048.0 / perMicro).epsilon(0.001));
  CHECK(split->micros ==
        doctest::Approx(std::max(split->tensorMicros, operands) + split->partialMicros + 6.0)
            .epsilon(0.001));
  CHECK(split->micros == doctest::Approx(60.4).epsilon(0.15));
  CHECK(split->summary.find("then partial sums 22.8 us") != std::string::npos);
  // Stream-K at 2048^3: 128 tiles of 32 k tiles over 132 CTAs, every tile cut in two or
  // three runs; 248 pieces do not cover their tile (lower/matmul/StreamK.cpp's cut), each
  // 128 x 256 f32 written and read back (run S34C: 50.5 us measured; 27 estimated before).
  auto streamed = tuning::estimateProduct(schedule(128, 256, 64, 2, sched::TileOrder::StreamK),
                                          2048, 2048, 2048, 1, 2, target);
  REQUIRE(streamed);
  CHECK(streamed->partialMicros ==
        doctest::Approx(2.0 * 4.0 * 128 * 256 * 248 / perMicro).epsilon(0.001));
  CHECK(streamed->micros == doctest::Approx(50.5).epsilon(0.1));
  // Two launches, as split-K's: the arrival counters are zeroed by a kernel of their own.
  CHECK(streamed->micros ==
        doctest::Approx(std::max(streamed->tensorMicros, streamed->memoryMicros) +
                        streamed->partialMicros + 6.0)
            .epsilon(0.001));
  // Tiles that fill the waves (264 = 2 x 132) are all taken whole: no pieces.
  auto filled = tuning::estimateProduct(schedule(128, 256, 64, 2, sched::TileOrder::StreamK),
                                        128 * 24, 256 * 11, 2048, 1, 2, target);
  REQUIRE(filled);
  CHECK(filled->partialMicros == 0);
  // One k tile a tile: nothing to cut.
  auto shallow = tuning::estimateProduct(schedule(128, 256, 64, 2, sched::TileOrder::StreamK), 2048,
                                         2048, 64, 1, 2, target);
  REQUIRE(shallow);
  CHECK(shallow->partialMicros == 0);
  // Whole tiles write no partial sums: the larger of the two, as before.
  auto whole = tuning::estimateProduct(schedule(128, 256), 2048, 2048, 2048, 1, 2, target);
  REQUIRE(whole);
  CHECK(whole->partialMicros == 0);
  CHECK(whole->micros ==
        doctest::Approx(std::max(whole->tensorMicros, whole->memoryMicros) + 3.0).epsilon(0.001));
}

TEST_CASE("cost model: two stages leave each k step waiting for its loads; three hide them") {
  // 128 x 256 tiles at 4096 x 5120 x 14336 (run S37D, H100): 2 stages ran 1.56x the
  // heuristics' 3 (1.1689 against 0.7492 ms screened), 3 and 4 level. A stage goes round
  // load (about 1.5 us), multiply, release: S stages give a k step every (1.5 + step) / S.
  Target target = h100();
  auto withStages = [&](int64_t stages) {
    sched::MatmulSchedule s = schedule(128, 256);
    sched::Applied<sched::Pipeline> pipeline;
    pipeline.stages = count(stages);
    pipeline.viaTma = true;
    s.pipeline = pipeline;
    return tuning::estimateProduct(s, 4096, 5120, 14336, 1, 2, target);
  };
  auto none = tuning::estimateProduct(schedule(128, 256), 4096, 5120, 14336, 1, 2, target);
  auto two = withStages(2), three = withStages(3), four = withStages(4);
  REQUIRE((none && two && three && four));
  CHECK(three->micros == doctest::Approx(none->micros));
  CHECK(four->micros == doctest::Approx(none->micros));
  CHECK(three->stageFactor == 1);
  // The step: 2 x 128 x 256 x 64 flops at 71 % of 989 TFLOP/s over 132 SMs, 0.79 us.
  double step = 2.0 * 128 * 256 * 64 / (989e12 * 0.71 / 132) * 1e6;
  CHECK(two->stageFactor == doctest::Approx((1.5 + step) / 2 / step).epsilon(0.001));
  CHECK(two->micros / none->micros == doctest::Approx(1.56).epsilon(0.08));
  CHECK(two->summary.find("(2 stages: each k step waits for its loads, 1.45x)") !=
        std::string::npos);
  // Under the pruning bound: a 2-stage candidate is timed last, not dropped.
  CHECK(two->micros < tuning::kPruneAbove * none->micros);
}
