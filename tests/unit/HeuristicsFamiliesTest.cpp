// HeuristicsFamiliesTest.cpp — each family's choice as a function of the fusion's shape:
// tables of shapes and the parameters chosen for them (today's choices, as
// `fslc --emit=schedule` prints them), calling the families' pure functions directly;
// and for a few parsed fusions, the shape shapeOf reads of them (family and layout).
#include "TestSupport.h"

#include "heuristics/FusionShape.h"
#include "heuristics/InnerPersistent.h"
#include "heuristics/Matmul.h"
#include "heuristics/Pointwise.h"
#include "heuristics/Reduction.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <llvm/Support/FormatVariadic.h>

using namespace fsl;
using namespace fsl::heuristics;

namespace {

Target h200() {
  Target t;
  t.name = "h200";
  t.arch = "sm_90a";
  t.smCount = 132;
  t.maxThreadsPerBlock = 1024;
  t.maxThreadsPerSm = 2048;
  t.registersPerSm = 65536;
  t.maxRegistersPerThread = 255;
  t.sharedMemoryPerBlock = 232448;
  t.sharedMemoryPerSm = 233472;
  return t;
}

/// [T, H] with H contiguous: T rows (a runtime size), H of `extent` (none: runtime).
FusionShape rowsShape(std::optional<int64_t> extent, unsigned bytes) {
  FusionShape shape;
  shape.name = "f";
  shape.inner = {1, "H", extent};
  shape.rows = {{0, "T", std::nullopt}};
  shape.innerBytes = bytes;
  return shape;
}

/// `persistent` buffers of f32 (casts of an input, or not), H reduced.
FusionShape reducedShape(std::optional<int64_t> extent, unsigned bytes, int buffers,
                         bool castsOfInput) {
  FusionShape shape = rowsShape(extent, bytes);
  shape.family = buffers > 0 ? Family::InnerPersistent : Family::Reduction;
  shape.reduced = {shape.inner};
  shape.firstReducedNames = {"H"};
  for (int i = 0; i < buffers; ++i)
    shape.buffers.push_back({"b" + std::to_string(i), "f32", true, false, castsOfInput});
  shape.scratchBytesTwoPass = shape.scratchBytesOnePass = 8;
  return shape;
}

std::string refusedOf(const KnobVerdicts &verdicts) {
  return verdicts.refused.empty() ? "" : verdicts.refused.front().first;
}

std::string splitText(const RowSplit &split) {
  std::string text =
      llvm::formatv("{0} x {1} threads x {2}", split.vector, split.threads, split.batch);
  if (split.rowsPerBlock > 1)
    text += llvm::formatv(", {0} rows", split.rowsPerBlock).str();
  if (split.unrollBy > 0)
    text += llvm::formatv(", unroll {0}", split.unrollBy).str();
  return text;
}

/// "Wide T < 132: 8 x 256 threads x 2; Normal: 8 x 128 threads x 4" (the guards' bounds).
std::string variantsText(const RowParams &params) {
  static const char *kinds[] = {"Outer",     "Grid",   "GridSync",        "Wide",
                                "Recompute", "Normal", "RuntimeMultiple", "RuntimeLoop"};
  std::string text;
  for (const RowVariant &variant : params.variants) {
    if (!text.empty())
      text += "; ";
    text += kinds[static_cast<int>(variant.kind)];
    for (const sched::SizeGuard &guard : variant.when)
      text += llvm::formatv(" {0}{1} {2} {3}", guard.dimName,
                            guard.modulus ? " % " + std::to_string(guard.modulus) : "",
                            sched::comparisonSpelling(guard.comparison), guard.bound)
                  .str();
    text += ": " + splitText(variant.split);
    if (variant.kind == RowVariant::Kind::Grid)
      text += llvm::formatv(", {0} pieces", variant.pieces).str();
    for (const BufferPlacement &buffer : variant.buffers)
      text += std::string(", ") + sched::memoryKindName(buffer.memory).str();
  }
  return text;
}

} // namespace

TEST_CASE("auto(pointwise): vector width and unroll by the row's extent and element size") {
  struct Row {
    std::optional<int64_t> extent;
    unsigned bytes;
    std::optional<int64_t> vectorKnob, unrollKnob;
    int64_t vector, unroll;
    const char *refused; // the first knob refused, or ""
  };
  const Row table[] = {
      {4096, 4, {}, {}, 4, 1, ""},            // 16-byte vectors of f32
      {4096, 2, {}, {}, 8, 1, ""},            // of bf16
      {4096, 8, {}, {}, 2, 1, ""},            // of f64
      {4096, 1, {}, {}, 16, 1, ""},           // of i8
      {1000, 2, {}, {}, 8, 1, ""},            // 8 divides 1000
      {1002, 2, {}, {}, 2, 1, ""},            // the widest power of two dividing it
      {1001, 4, {}, {}, 1, 1, ""},            // odd: scalar
      {std::nullopt, 4, {}, {}, 1, 1, ""},    // runtime: scalar
      {4096, 4, 2, {}, 2, 1, ""},             // the knob's width
      {4096, 4, 8, {}, 4, 1, "vector_width"}, // 32 bytes: refused
      {std::nullopt, 4, 4, {}, 1, 1, "vector_width"},
      {4096, 4, {}, 2, 4, 2, ""},           // 1024 vectors: 8 accesses a thread
      {4096, 4, {}, 8, 4, 8, ""},           // all 8
      {4096, 4, {}, 16, 4, 16, "unroll"},   // more than the accesses
      {std::nullopt, 4, {}, 32, 1, 32, ""}, // the prefetch limit
      {std::nullopt, 4, {}, 64, 1, 64, "unroll"},
  };
  for (const Row &row : table) {
    CAPTURE(row.extent.value_or(-1));
    CAPTURE(row.bytes);
    FusionShape shape = rowsShape(row.extent, row.bytes);
    Knobs knobs;
    knobs.vectorWidth = row.vectorKnob;
    knobs.unroll = row.unrollKnob;
    PointwiseParams params = choosePointwise(shape, h200(), knobs);
    CHECK(params.declined == "");
    CHECK(params.threads == 128);
    CHECK(params.vector == row.vector);
    CHECK(params.unroll == row.unroll);
    CHECK(refusedOf(params.verdicts) == row.refused);
  }
}

TEST_CASE("auto(pointwise): a transposed output keeps scalar accesses; a reduction is declined") {
  FusionShape shape = rowsShape(4096, 4);
  shape.innerOuterIn = "'yt' is [H, T], with H outer";
  PointwiseParams params = choosePointwise(shape, h200(), Knobs());
  CHECK(params.vector == 1);
  CHECK(params.vectorWhy == "'yt' is [H, T], with H outer: scalar accesses");
  FusionShape reduced = reducedShape(4096, 4, 0, false);
  CHECK(choosePointwise(reduced, h200(), Knobs()).declined ==
        "auto(pointwise) schedules fusions without reductions, and 'f' reduces over H: use "
        "auto(reduction)");
}

TEST_CASE("auto(inner_persistent): row split, wider blocks and buffers by row length") {
  struct Row {
    std::optional<int64_t> extent;
    unsigned bytes;
    int buffers;
    bool castsOfInput;
    const char *variants;
    int64_t lateInputBytes = 0; // inputs read beside the buffers (RMSNorm's weight: 2)
  };
  const Row table[] = {
      // RMSNorm-like, bf16: 128 threads x 4 vectors of 8; below 132 rows, 256 x 2.
      {4096, 2, 1, true,
       "Wide T < 132: 8 x 256 threads x 2, registers; Normal: 8 x 128 threads x 4, registers"},
      // Softmax-like (two buffers, 64 values a thread): the wider blocks serve a wave of
      // them, 8 blocks an SM.
      {4096, 2, 2, false,
       "Wide T < 1056: 8 x 256 threads x 2, registers, registers; Normal: 8 x 128 threads x 4, "
       "registers, registers"},
      // Short rows: a warp a row, four rows a block.
      {1024, 2, 1, true,
       "Wide T < 132: 8 x 128 threads x 1, registers; Normal: 8 x 32 threads x 4, 4 rows, "
       "registers"},
      {8192, 2, 1, true,
       "Wide T < 132: 8 x 512 threads x 2, registers; Normal: 8 x 256 threads x 4, registers"},
      // 2048 vectors: 8 a thread, and the buffers recomputed from a wave to 2048 rows.
      {16384, 2, 1, true,
       "Wide T < 132: 8 x 512 threads x 4, registers; Recompute T >= 132 T < 2048: 8 x 256 "
       "threads x 8, recompute; Normal: 8 x 256 threads x 8, registers"},
      // Not casts of an input: kept.
      {16384, 2, 2, false,
       "Wide T < 132: 8 x 512 threads x 4, registers, registers; Normal: 8 x 256 threads x 8, "
       "registers, registers"},
      // 4096 vectors: 512 threads x 8 keep 64 values of 128 registers a thread.
      {32768, 2, 1, true, "Normal: 8 x 512 threads x 8, registers"},
      // Longer rows: 1024 threads leave 64 registers a thread, 768 leave 80. A buffer of
      // 64 values needs about 72 with index math, 88 with a bf16 weight read beside it
      // (ir/RegisterPressure.h): what fits nowhere is recomputed, 8 vectors a thread on up
      // to 1024 threads unrolled by 4 (no wider variant: the row takes a block's threads
      // already). Below 16 rows, pieces of a row on 256 threads meet at grid barriers,
      // kept in registers.
      {131072, 2, 1, true,
       "GridSync T < 16: 8 x 256 threads x 4, registers; Normal: 8 x 1024 threads x 16, "
       "unroll 4, recompute"},
      {49152, 2, 2, false,
       "GridSync T < 16: 8 x 256 threads x 4, registers, registers; Normal: 8 x 768 threads x "
       "8, registers, registers"},
      {49152, 2, 1, true,
       "GridSync T < 16: 8 x 256 threads x 4, registers; Normal: 8 x 768 threads x 8, unroll 4, "
       "recompute",
       2},
      {65536, 2, 2, false,
       "GridSync T < 16: 8 x 256 threads x 4, registers, registers; Normal: 8 x 1024 threads x "
       "8, unroll 4, recompute, recompute"},
      // 640 threads leave 96 registers: 64 values and a bf16 weight's 16 fit. Over half
      // the registers: fewer rows than SMs recompute the row (a lone row waits on the
      // whole kept batch's loads); a buffer that is no cast of an input stays kept.
      {40960, 2, 1, true,
       "Recompute T < 132: 8 x 640 threads x 8, unroll 4, recompute; Normal: 8 x 640 threads "
       "x 8, registers",
       2},
      {40960, 2, 1, false, "Normal: 8 x 640 threads x 8, registers", 2},
      // f32 rows: 4-element vectors.
      {4096, 4, 1, true,
       "Wide T < 132: 4 x 512 threads x 2, registers; Normal: 4 x 256 threads x 4, registers"},
      // A runtime length: vector variants by length, then 256 threads looping.
      {std::nullopt, 2, 1, true,
       "RuntimeMultiple H % 8 == 0 H <= 1024: 8 x 128 threads x 1, registers; "
       "RuntimeMultiple H % 8 == 0 H > 1024 H <= 2048: 8 x 128 threads x 2, registers; "
       "RuntimeMultiple H % 8 == 0 H > 2048 H <= 8192: 8 x 256 threads x 4, registers; "
       "RuntimeMultiple H % 8 == 0 H > 8192 H <= 16384: 8 x 1024 threads x 2, registers; "
       "RuntimeMultiple H % 8 == 0 H > 16384 H <= 32768: 8 x 512 threads x 8, registers; "
       "RuntimeLoop: 1 x 256 threads x 1, recompute"},
  };
  for (const Row &row : table) {
    CAPTURE(row.extent.value_or(-1));
    CAPTURE(row.buffers);
    CAPTURE(row.lateInputBytes);
    FusionShape shape = reducedShape(row.extent, row.bytes, row.buffers, row.castsOfInput);
    shape.lateRowInputBytes = row.lateInputBytes;
    InnerPersistentParams params = chooseInnerPersistent(shape, h200(), Knobs());
    CHECK(params.declined == "");
    CHECK(variantsText(params) == row.variants);
    CHECK(params.verdicts.refused.empty());
  }
}

TEST_CASE("auto(inner_persistent): knobs fix the batch and the rows a block, or are refused") {
  struct Row {
    int64_t extent;
    std::optional<int64_t> batch, rowsPerBlock;
    std::optional<bool> staticBdimx;
    const char *variants;
    const char *refused;
  };
  const Row table[] = {
      {4096, 8, {}, {}, "Normal: 8 x 64 threads x 8, 2 rows, registers", ""},
      {4096, 3, {}, {}, "Normal: 8 x 192 threads x 3, registers", ""}, // 171 -> 192 threads
      {4096, 3, {}, false, "Normal: 8 x 171 threads x 3, registers", ""},
      {4096,
       1024,
       {},
       {},
       "Normal: 8 x 32 threads x 1024, 4 rows, unroll 4, recompute",
       "persistent_batch"},
      {4096, {}, 4, {}, "Normal: 8 x 128 threads x 4, 4 rows, registers", ""},
      {4096, {}, 16, {}, "Normal: 8 x 128 threads x 4, 16 rows, recompute", "rows_per_block"},
  };
  for (const Row &row : table) {
    CAPTURE(row.extent);
    Knobs knobs;
    knobs.persistentBatch = row.batch;
    knobs.rowsPerBlock = row.rowsPerBlock;
    knobs.staticBdimx = row.staticBdimx;
    InnerPersistentParams params =
        chooseInnerPersistent(reducedShape(row.extent, 2, 1, true), h200(), knobs);
    CHECK(variantsText(params) == row.variants);
    CHECK(refusedOf(params.verdicts) == row.refused);
  }
}

TEST_CASE("auto(reduction): streamed long rows, grid reductions of few rows, outer reductions") {
  struct Row {
    int64_t extent;
    unsigned bytes;
    bool rowOutputsOnly;
    const char *variants;
  };
  const Row table[] = {
      // A row's sum kept beside the row: no grid variant.
      {4096, 4, false, "Wide T < 132: 4 x 512 threads x 2; Normal: 4 x 128 threads x 8"},
      // argmax over a vocabulary: 256 threads unrolled by 4, pieces below 16 rows, 8 pieces
      // below the SM count.
      {32000, 4, true,
       "Grid T < 16: 4 x 256 threads x 4, 8 pieces; Wide T >= 16 T < 132: 4 x 512 threads x 16; "
       "Normal: 4 x 256 threads x 32, unroll 4"},
      {128256, 2, true,
       "Grid T < 16: 8 x 256 threads x 4, 16 pieces; Grid T >= 16 T < 132: 8 x 256 threads x "
       "8, 8 pieces; Normal: 8 x 256 threads x 63, unroll 4"},
      {1024, 4, true, "Wide T < 132: 4 x 128 threads x 2; Normal: 4 x 32 threads x 8, 4 rows"},
  };
  for (const Row &row : table) {
    CAPTURE(row.extent);
    FusionShape shape = reducedShape(row.extent, row.bytes, 0, false);
    shape.rowOutputsOnly = row.rowOutputsOnly;
    ReductionParams params = chooseReduction(shape, h200(), Knobs());
    CHECK(params.declined == "");
    CHECK(variantsText(params) == row.variants);
  }
  // Reduced over T, the outer dimension: a column a thread.
  FusionShape outer = reducedShape(4096, 4, 0, false);
  outer.reduced = {outer.rows[0]};
  ReductionParams params = chooseReduction(outer, h200(), Knobs());
  CHECK(variantsText(params) == "Outer: 1 x 128 threads x 1");
}

TEST_CASE("auto(reduction): pointwise operations after a row reduction keep its schedule") {
  // The shape of a fusion as fslc reads it (shapeOf), and auto(reduction)'s choice for it:
  // a cast, `* 2.0` or `+ 1` on a row's sum, or i32 on argmax's index, is still a row
  // reduction along the contiguous V, with the grid variants for few long rows, as the
  // reduction alone (not an outer reduction, a thread a row).
  struct Row {
    const char *fusion;
    const char *variants;
  };
  const char *grid =
      "Grid T < 16: 8 x 256 threads x 4, 16 pieces; Grid T >= 16 T < 132: 8 x 256 threads x "
      "8, 8 pieces; Normal: 8 x 256 threads x 63, unroll 4";
  const Row table[] = {
      // The reduction alone, the reference.
      {"fusion f<V = 128256>(x: bf16[T, V]) -> (y: f32[T]) {\n"
       "    y = sum(f32(x), over V);\n}\n",
       grid},
      {"fusion f<V = 128256>(x: bf16[T, V]) -> (y: bf16[T]) {\n"
       "    y = bf16(sum(f32(x), over V));\n}\n",
       grid},
      {"fusion f<V = 128256>(x: bf16[T, V]) -> (y: f32[T]) {\n"
       "    y = sum(f32(x), over V) * 2.0;\n}\n",
       grid},
      {"fusion f<V = 128256>(x: bf16[T, V]) -> (y: f32[T]) {\n"
       "    y = sum(f32(x), over V) + 1;\n}\n",
       grid},
      {"fusion f<V = 128256>(x: bf16[T, V]) -> (token: i32[T]) {\n"
       "    token = i32(argmax(x, over V));\n}\n",
       grid},
      // One row (T = 1): the grid variant serves it, in 16 pieces.
      {"fusion f<V = 128256, T = 1>(x: bf16[T, V]) -> (y: bf16[T]) {\n"
       "    y = bf16(sum(f32(x), over V));\n}\n",
       grid},
      {"fusion f<V = 128256, T = 1>(x: bf16[T, V]) -> (token: i32[T]) {\n"
       "    token = i32(argmax(x, over V));\n}\n",
       grid},
      // Short f32 rows: the wider blocks below the SM count, as for the sum alone.
      {"fusion f<V = 4096>(x: f32[T, V]) -> (y: f32[T]) {\n"
       "    y = sum(x, over V) * 2.0;\n}\n",
       "Wide T < 132: 4 x 512 threads x 2; Normal: 4 x 128 threads x 8"},
  };
  for (const Row &row : table) {
    CAPTURE(row.fusion);
    test::Parsed parsed(row.fusion);
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    auto program =
        analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    FusionShape shape = shapeOf(*program->fusions[0]);
    CHECK(shape.family == Family::Reduction);
    CHECK(shape.inner.name == "V");
    REQUIRE(shape.rows.size() == 1);
    CHECK(shape.rows[0].name == "T");
    CHECK(shape.rowOutputsOnly);
    ReductionParams params = chooseReduction(shape, h200(), Knobs());
    CHECK(params.declined == "");
    CHECK(variantsText(params) == row.variants);
  }
}

TEST_CASE("auto(matmul): tiles, stages, order and epilogue by M, N and K") {
  struct Row {
    std::optional<int64_t> m, n, k;
    int64_t outputBytes; // 0: no single [M, N] output
    bool twoProducts;
    const char *variants;
  };
  const Row table[] = {
      // A runtime M: at most 64 rows, 64-row tiles of one consumer warpgroup as wide as
      // fills one wave (128 tiles of 64 x 112 for N = 14336); 128 x 128 tiles below two
      // waves of 128 x 256.
      {{},
       14336,
       5120,
       2,
       false,
       "[, 9): 8 x 64, 12 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[9, 17): 16 x 64, 11 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[17, 33): 32 x 64, 9 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[33, 65): 64 x 112, 8 stages, 1 groups, one_per_cta 8, cluster 1, epilogue shared "
       "tma_store; "
       "[65, 640): 128 x 128, 5 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store; [640, ): 128 x 256, 3 stages, 1 groups, persistent 8, cluster 1, epilogue "
       "shared tma_store"},
      // A static M: its range's choice alone. At most 32 rows, the operands swapped: 16 x 64
      // tiles (224 CTAs, two an SM), as many 10 KiB stages as half the SM's shared memory
      // holds.
      {16, 14336, 5120, 2, false,
       "[, 65): 16 x 64, 11 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers"},
      // 33 to 64 rows: 64-row tiles as wide as fill one wave.
      {48, 14336, 5120, 2, false,
       "[, 65): 64 x 112, 8 stages, 1 groups, one_per_cta 8, cluster 1, epilogue shared tma_store"},
      // Few rows and a short N: 16 x 64 tiles would leave more than half the SMs idle, so K
      // is split (8 parts for 8 tiles on 132 SMs: 64 CTAs, one an SM, 16 stages each).
      {16, 512, 4096, 2, false,
       "[, 65): 16 x 64, 16 stages, 1 groups, split_k 8, cluster 1, epilogue registers"},
      // The same with 64-row tiles (33 rows or more).
      {40, 512, 4096, 2, false,
       "[, 65): 64 x 64, 8 stages, 1 groups, split_k 8, cluster 1, epilogue registers"},
      // Below two waves of 128 x 256 tiles, the narrower widths: 256 rows take 128 tiles
      // of 128 x 224 (97 % of a wave), not 224 of 128 x 128 (85 % of two).
      // Pieces of 32 columns leave the pipeline a fourth stage beside the output tile where
      // the tiles are few waves (static sizes).
      {256, 14336, 5120, 2, false,
       "[65, 640): 128 x 224, 4 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32"},
      // 128 rows: 112 tiles of 128 x 128 fill 85 % of a wave, 64 of 128 x 224 48 %, 128 of
      // 128 x 112 97 % (run W7: 1.04x 128 x 128).
      {128, 14336, 5120, 2, false,
       "[65, 640): 128 x 112, 5 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // 1024 rows: 448 tiles of 128 x 256 fill 85 % of four waves, 512 of 128 x 224 97 %.
      {1024, 14336, 5120, 2, false,
       "[640, ): 128 x 224, 4 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32"},
      // 64 k tiles: both groups on one 128 x 256 tile (ping-pong only when asked).
      // 512 tiles: 3.9 waves, so in pieces.
      {4096, 4096, 4096, 2, false,
       "[2176, ): 128 x 256, 4 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32"},
      {4096, 5120, 14336, 2, false,
       "[1792, ): 128 x 256, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // 2048 tiles of 128 x 256 fill 97 % of 16 waves, 2368 of 128 x 224 99 % of 18: an
      // estimated 2 %, within the estimate's error (kTileWidthMargin): 256 stays.
      {8192, 8192, 8192, 2, false,
       "[1152, ): 128 x 256, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // 1760 tiles of 128 x 256 fill 95 % of 14 waves, 2336 of 128 x 192 98 % of 18: an
      // estimated 1 % (measured 0.93x in runs T2 and M4), so not 192 columns; but a's rows
      // are 10000 bytes apart (not whole 128-byte lines) and K long: clusters of two N tiles
      // sharing a (run W12: 1.10-1.23x the same tiles without), here 192 x 192 (777 pairs
      // fill 98 % of their waves, 256 x 128's 880 95 %, 256 x 160's 704 97 %).
      {4000, 14000, 5000, 2, false,
       "[640, ): 192 x 192, 4 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32, cluster_n 2"},
      {4096, 14336, 5000, 2, false,
       "[640, ): 256 x 160, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32, cluster_n 2"},
      // Below two waves: 64 pairs of 256 x 160 tiles, one wave (run W12: 1.11x without).
      {1000, 5000, 3000, 2, false,
       "[65, 1792): 256 x 160, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32, cluster_n 2"},
      // Whole lines (K = 3072): no cluster, the 256 x 160 of the waves' estimate.
      {1000, 5000, 3072, 2, false,
       "[65, 1792): 256 x 160, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store in pieces of 32"},
      // 1088 tiles leave a last wave of 32 on 132 SMs: still persistent (stream-K only when
      // asked); 1280 tiles of 128 x 224 fill 97 % of ten waves.
      {8192, 4352, 8192, 2, false,
       "[2048, ): 128 x 224, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // 672 tiles of 128 x 256 fill 85 % of six waves, 768 of 128 x 224 97 % of six.
      {3000, 7000, 2000, 2, false,
       "[1280, ): 128 x 224, 3 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // 928 tiles of 128 x 256 fill 88 % of eight waves, 1248 of 128 x 192 94 % of ten.
      {4096, 7424, 5120, 2, false,
       "[1280, ): 128 x 192, 4 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store"},
      // A runtime N: each range twice, the output tile by TMA stores where N % 8 == 0,
      // copied out by the threads otherwise.
      {{},
       {},
       4096,
       2,
       false,
       "[, 9): 8 x 64, 12 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[9, 17): 16 x 64, 11 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[17, 33): 32 x 64, 9 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[33, 65): 64 x 128, 8 stages, 1 groups, one_per_cta 8, cluster 1, epilogue registers; "
       "[65, 512): 128 x 128, 5 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store; [65, 512): 128 x 128, 5 stages, 1 groups, persistent 8, cluster 1, "
       "epilogue shared; [512, ): 128 x 256, 3 stages, 1 groups, persistent 8, cluster 1, "
       "epilogue shared tma_store; [512, ): 128 x 256, 3 stages, 1 groups, persistent 8, "
       "cluster 1, epilogue shared"},
      // A runtime M with a's rows not whole lines apart (K = 5000, static, as the JIT
      // specializes it): from two waves up, 256 x 128 tiles in pairs along N sharing a.
      {{},
       14000,
       5000,
       2,
       false,
       "[, 9): 8 x 64, 12 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[9, 17): 16 x 64, 11 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[17, 33): 32 x 64, 9 stages, 1 groups, one_per_cta 1, cluster 1, epilogue registers; "
       "[33, 65): 64 x 112, 8 stages, 1 groups, one_per_cta 8, cluster 1, epilogue shared "
       "tma_store; "
       "[65, 640): 128 x 128, 5 stages, 1 groups, persistent 8, cluster 1, epilogue shared "
       "tma_store; [640, ): 256 x 128, 4 stages, 1 groups, persistent 8, cluster 1, epilogue "
       "shared tma_store in pieces of 32, cluster_n 2"},
      // Two products of one a (SwiGLU): 128 x 128 tiles, persistent, every M.
      {{},
       14336,
       5120,
       0,
       true,
       "[, ): 128 x 128, 4 stages, 1 groups, persistent 8, cluster 1, epilogue registers"},
  };
  static const char *epilogues[] = {"registers", "shared", "shared tma_store"};
  for (const Row &row : table) {
    CAPTURE(row.m.value_or(-1));
    CAPTURE(row.n.value_or(-1));
    FusionShape shape;
    shape.name = "f";
    shape.matmul = MatmulShape{{0, "M", row.m}, {1, "N", row.n}, {2, "K", row.k}, "a", "w",
                               row.twoProducts, row.outputBytes};
    MatmulParams params = chooseMatmul(shape, h200(), Knobs());
    std::string text;
    for (const MatmulVariant &variant : params.variants) {
      const MatmulTile &t = variant.tile;
      if (!text.empty())
        text += "; ";
      text += llvm::formatv("[{0}, {1}): {2} x {3}, {4} stages, {5} groups, {6} {7}, "
                            "cluster {8}, epilogue {9}",
                            variant.low ? std::to_string(*variant.low) : "",
                            variant.high ? std::to_string(*variant.high) : "", t.tileM, t.tileN,
                            t.stages, t.groups, sched::tileOrderName(t.order), t.orderParameter,
                            t.clusterM, epilogues[static_cast<int>(t.epilogue)])
                  .str();
      if (t.epiloguePiece)
        text += " in pieces of " + std::to_string(t.epiloguePiece);
      if (t.clusterN > 1)
        text += ", cluster_n " + std::to_string(t.clusterN);
    }
    CHECK(text == row.variants);
  }
}
