// InnerRows.cpp — the row split of auto(reduction) and auto(inner_persistent), its
// variants, then their directives.
#include "heuristics/InnerRows.h"

#include "heuristics/Guards.h"
#include "heuristics/InnerPersistent.h"
#include "heuristics/Reduction.h"
#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"
#include "heuristics/Vectors.h"
#include "ir/RegisterPressure.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::heuristics {
namespace {

/// A guard on `dim`; its range is the declaration's (rowBlocks sets it).
sched::SizeGuard guard(const DimShape &dim, sched::Comparison comparison, int64_t bound,
                       int64_t modulus = 0) {
  return {dim.id, dim.name, comparison, bound, llvm::SMRange(), modulus};
}

/// `one_pass`: the knob's choice, refused without a pair; else one pass where it keeps
/// nothing of a static row whose outputs are all a row's (inner_persistent: cross-entropy's
/// loss and logsumexp; kOnePassForRowOutputs, measured there), two passes elsewhere
/// (kOnePassByDefault; a runtime row length is not measured yet).
bool chooseOnePass(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts,
                   bool persistent) {
  bool byDefault = tuned::kOnePassByDefault ||
                   (persistent && shape.noOutputAlongRow && shape.inner.extent &&
                    keptBuffers(shape, /*onePass=*/true).empty() && tuned::kOnePassForRowOutputs);
  bool onePass = !shape.onePassPairs.empty() && knobs.onePass.value_or(byDefault);
  if (!knobs.onePass)
    return onePass;
  if (shape.onePassPairs.empty())
    verdicts.refuse("one_pass", "'" + shape.name +
                                    "' has no pair of reductions that one pass could compute "
                                    "together (softmax's max(a) and sum(exp(a - max)), or "
                                    "LayerNorm's mean(a) and mean((a - mean)^2), over the same "
                                    "dimensions); remove the knob");
  else
    verdicts.honour("one_pass");
  return onePass;
}

/// Variants for a runtime row length (the reduced, contiguous dimension) that whole
/// 16-byte vectors divide: `when H % 8 == 0` and a range of lengths, each with a fixed
/// batch of vectors a thread (so the persistent buffers have a static size and stay in
/// registers) on as many threads as the row needs (a runtime blockDim.x, bounded by
/// `launch_bounds` from the range). This is the static schedule's shape
/// (docs/schedules.md) without its whole warps: what a kernel compiled before the size is
/// known can do. None, with `why`, when the variants cannot apply.
std::vector<RowVariant> runtimeRowVariants(const FusionShape &shape, const Knobs &knobs,
                                           const std::vector<const BufferShape *> &kept,
                                           bool persistent, KnobVerdicts &verdicts,
                                           std::string &why) {
  const DimShape &d = shape.inner;
  if (!knobs.when.empty()) {
    why = " (the schedule's own guard applies to every size: no variants)";
    return {};
  }
  if (knobs.staticBdimx.value_or(false)) {
    why = " (static_bdimx = true: no variants, whose block follows the row)";
    return {};
  }
  if (knobs.vectorWidth || shape.innerOuterIn) {
    why = " (scalar accesses: no vector variants)";
    return {};
  }
  int64_t vector = 16 / shape.innerBytes;
  if (vector < 2) {
    why = " (8-byte elements: no vector variants)";
    return {};
  }
  int64_t numBuffers = std::max<int64_t>(1, static_cast<int64_t>(kept.size()));
  // Row lengths in vectors: (lo, hi], a batch, and the most threads that makes.
  struct Range {
    int64_t lo, hi, batch, maxThreads;
  };
  // Batches of 1, 2 and 4 vectors like the static schedule's, then 2 on up to 1024
  // threads: a runtime row's 64-bit index math costs registers, and 4 vectors on 384
  // threads took 88 registers at H = 12288 (one 384-thread block an SM, 1.7x slower than
  // the static kernel on the H200); 2 vectors take 48-63, without spills. Past 2048
  // vectors, 8 on at most 512 threads (at 1024 threads ptxas has 64 registers a thread
  // and spills the buffer).
  std::vector<Range> ranges = {{0, 128, 1, 128},
                               {128, 256, 2, 128},
                               {256, 1024, 4, 256},
                               {1024, 2048, 2, 1024},
                               {2048, 4096, 8, 512}};
  std::vector<RowVariant> variants;
  for (const Range &range : ranges) {
    // The static schedule's register budget: 64 f32 values a thread, twice for one
    // row's worth in the largest range (docs/schedules.md).
    if (persistent && range.batch * vector * numBuffers > 2 * tuned::kRegisterBudget)
      break;
    std::vector<sched::SizeGuard> when = {guard(d, sched::Comparison::Eq, 0, vector)};
    if (range.lo > 0)
      when.push_back(guard(d, sched::Comparison::Gt, range.lo * vector));
    when.push_back(guard(d, sched::Comparison::Le, range.hi * vector));
    if (overlapsAny(when, knobs.otherGuards)) {
      why = llvm::formatv(" (another guarded schedule of '{0}' applies to some sizes of the "
                          "variants: none added)",
                          shape.name)
                .str();
      return {};
    }
    RowVariant variant;
    variant.kind = RowVariant::Kind::RuntimeMultiple;
    variant.when = std::move(when);
    variant.reasons.push_back(
        llvm::formatv("auto({0}), {1} a runtime multiple of {2} up to {3}: {2}-element "
                      "vectors, {4} a thread, on ceil({1} / {5}) threads (at most {6}).",
                      persistent ? "inner_persistent" : "reduction", d.name, vector,
                      range.hi * vector, range.batch, range.batch * vector, range.maxThreads)
            .str());
    variant.split.vector = vector;
    variant.split.batch = range.batch;
    variant.split.threads = range.maxThreads;
    for (const BufferShape *buffer : kept)
      variant.buffers.push_back(
          {buffer->name, sched::MemoryKind::Registers,
           llvm::formatv("persistent {0} in registers: {1} values of {2} a "
                         "thread.",
                         buffer->name, range.batch * vector, buffer->dtypeName)
               .str(),
           knobs.computeWith.value_or(true)});
    variants.push_back(std::move(variant));
  }
  if (!variants.empty() && knobs.computeWith && !kept.empty())
    verdicts.honour("compute_with");
  return variants;
}

/// A runtime row length: the variants above, then 256 threads looping over any row.
void chooseRuntimeRow(const FusionShape &shape, const Knobs &knobs,
                      const std::vector<const BufferShape *> &kept, bool persistent,
                      RowParams &params) {
  const DimShape &d = shape.inner;
  std::string noVariants;
  params.variants = runtimeRowVariants(shape, knobs, kept, persistent, params.verdicts, noVariants);
  bool none = params.variants.empty();
  RowVariant loop;
  loop.kind = RowVariant::Kind::RuntimeLoop;
  loop.userGuard = true;
  loop.split.threads = tuned::kRuntimeRowThreads;
  loop.reasons.push_back(
      llvm::formatv("auto({0}): {1} is a runtime size{2}: 256 threads loop over the row; "
                    "values are recomputed (no static buffer size).",
                    persistent ? "inner_persistent" : "reduction", d.name,
                    none ? noVariants : ", and no variant above applies")
          .str());
  for (const BufferShape *buffer : kept)
    loop.buffers.push_back({buffer->name, sched::MemoryKind::Recompute, "", false});
  // 256 threads is a static blockDim.x, the variants' is not; the rest needs a
  // static row to size it.
  if (params.staticBdimx || !none)
    params.verdicts.honour("static_bdimx");
  params.verdicts.unused =
      d.name +
      (none ? " is a runtime size: 256 threads loop over the row, one row a block, "
              "and buffers are recomputed; the knob needs a static "
            : " is a runtime size: the variants split rows that whole vectors divide "
              "by a fixed batch, and other rows loop over 256 threads with buffers "
              "recomputed; the knob needs a static ") +
      d.name;
  params.variants.push_back(std::move(loop));
}

/// A static row's split so far: what the variants for few rows start from.
struct StaticRow {
  const DimShape &d, &rowDim; // the row's dimension and the rows'
  int64_t vectors, vector;    // the row's vectors, elements a vector
  const std::string &vectorWhy;
};

/// Few rows of a long row whose reductions its elements use (softmax, the norms over a
/// row too long for one block: one SM reads it): each row in pieces on blockIdx.y whose
/// buffers stay in registers; the blocks of a row meet at a grid barrier after each
/// reduction (a cooperative launch) and go on with the row's results, so the row is read
/// once, in one kernel, in two passes (TunedConstants.h). `grid_sync = true` asks for it
/// from shorter rows, `false` keeps one block a row.
///
/// The variant, or none (a `grid_sync` knob it cannot honour refused in `params`'s
/// verdicts). `gridBelow`: the row counts the grid reductions' variants serve (0: none);
/// `rowsBelow`: the row counts this one serves.
std::optional<RowVariant> gridSyncVariant(const FusionShape &shape, const StaticRow &row,
                                          const Target &target, const Knobs &knobs,
                                          int64_t gridBelow, int64_t scratchBytes,
                                          RowParams &params, int64_t &rowsBelow) {
  const DimShape &d = row.d, &rowDim = row.rowDim;
  const int64_t vectors = row.vectors, vector = row.vector;
  const std::string &vectorWhy = row.vectorWhy;
  KnobVerdicts &verdicts = params.verdicts;
  std::string refused;
  if (shape.noOutputAlongRow || gridBelow > 0)
    refused = "'" + shape.name +
              "' stores row outputs alone: a second kernel combines the pieces of its "
              "rows, with no grid barrier";
  else if (!params.staticBdimx)
    refused = "static_bdimx = false splits the row's batch outer, not into pieces";
  else if (!knobs.when.empty() || knobs.rowsPerBlock || knobs.persistentBatch)
    refused = "a guard, rows_per_block or persistent_batch applies to every row count: no "
              "variant for few rows";
  else if (vectors < tuned::kGridSyncKnobMinVectors)
    refused = llvm::formatv("a row of {0} vectors ({1}) is one block's work; pieces of a row "
                            "need {2} vectors or more",
                            vectors, vectorWhy, tuned::kGridSyncKnobMinVectors)
                  .str();

  // Every block of the grid is resident at once, with its piece of the row in registers
  // (the kept buffers, or without them the inputs read twice, at most half a thread's
  // share): the rows served are those whose values fit half the SMs' registers.
  bool gridOnePass = knobs.onePass.value_or(false) && params.onePass;
  std::vector<const BufferShape *> pieceBuffers = keptBuffers(shape, gridOnePass);
  int64_t registersPerElement = 0;
  for (const BufferShape *buffer : pieceBuffers)
    registersPerElement += buffer->registersPerValue;
  if (pieceBuffers.empty()) // the inputs' first loads kept for the later phase instead
    registersPerElement = shape.rowInputsReadTwice;
  rowsBelow = tuned::kGridFewRows;
  if (registersPerElement > 0 && target.registersPerSm > 0)
    rowsBelow = std::min<int64_t>(
        rowsBelow, 1 + saturatingMul(target.registersPerSm, target.smCount) /
                           saturatingMul(saturatingMul(vectors * vector, registersPerElement), 2));
  // And at most two of the 256-thread blocks an SM, as measured (128 registers a thread:
  // at four an SM, 64, LayerNorm's pieces of 262144 spilled).
  const int64_t gridSyncPieces =
      std::clamp<int64_t>(ceilDiv(vectors, tuned::kGridPieceVectors), 2, tuned::kGridSyncMaxPieces);
  rowsBelow = std::min<int64_t>(rowsBelow,
                                1 + target.smCount * tuned::kGridSyncBlocksPerSm / gridSyncPieces);
  if (refused.empty() && rowsBelow < 2)
    refused = llvm::formatv("a row of {0} values of {1} registers each is more than half of "
                            "the {2} SMs' registers",
                            vectors * vector, registersPerElement, target.smCount)
                  .str();
  std::vector<sched::SizeGuard> when{guard(rowDim, sched::Comparison::Lt, rowsBelow)};
  if (refused.empty() && overlapsAny(when, knobs.otherGuards))
    refused = "another guarded schedule of '" + shape.name + "' applies to some of its " +
              std::to_string(rowsBelow - 1) + " rows or fewer";
  if (refused.empty() && rowDim.extent && *rowDim.extent >= rowsBelow)
    refused = llvm::formatv("{0} = {1} rows: the pieces serve fewer than {2}", rowDim.name,
                            *rowDim.extent, rowsBelow)
                  .str();
  if (!refused.empty()) {
    if (knobs.gridSync)
      verdicts.refuse("grid_sync", refused + "; remove the knob");
    return std::nullopt;
  }
  if (knobs.gridSync)
    verdicts.honour("grid_sync");
  RowVariant variant;
  variant.kind = RowVariant::Kind::GridSync;
  variant.when = std::move(when);
  // The pieces a row, then as few as that batch needs (no piece left empty).
  const int64_t laneVectors = ceilDiv(vectors, tuned::kGridThreads);
  variant.split.vector = vector;
  variant.split.threads = tuned::kGridThreads;
  variant.split.batch = ceilDiv(laneVectors, gridSyncPieces);
  variant.pieces = ceilDiv(laneVectors, variant.split.batch);
  // Two passes, a barrier a reduction: one pass was slower (Welford 1.3-1.5x).
  variant.twoPass = params.onePass && !gridOnePass;
  variant.reasons.push_back(
      llvm::formatv("auto(inner_persistent), fewer than {0} rows{1}: each row in pieces "
                    "whose blocks meet at a grid barrier after each reduction{2}.",
                    rowsBelow, knobs.gridSync ? " (grid_sync = true)" : "",
                    rowsBelow < tuned::kGridFewRows
                        ? llvm::formatv(" (the pieces of {0} rows or more would pass half the SMs' "
                                        "registers)",
                                        rowsBelow)
                              .str()
                        : "")
          .str());
  variant.reasons.push_back(
      llvm::formatv("grid_sync: {0} = {1}: {2} vectors ({3}) = {4} pieces on blockIdx.y "
                    "x {5} threads x {6} serial; a cooperative launch, one kernel.",
                    d.name, *d.extent, vectors, vectorWhy, variant.pieces, variant.split.threads,
                    variant.split.batch)
          .str());
  if (variant.twoPass)
    variant.reasons.push_back("two passes: a grid barrier a reduction, each pass over "
                              "the row's piece.");
  // Every block of the grid is resident at once: the blocks an SM that its most rows
  // need share the SM's registers as rows of one block would (`__launch_bounds__`
  // holds ptxas to that share).
  int64_t mostRows = rowDim.extent ? *rowDim.extent : rowsBelow - 1;
  RowSplit resident = variant.split;
  resident.rowsPerBlock =
      std::max<int64_t>(1, ceilDiv(saturatingMul(mostRows, variant.pieces), target.smCount));
  std::vector<BufferPlacement> placed =
      placeBuffers(shape, pieceBuffers, resident, scratchBytes, target, knobs);
  for (size_t i = 0; i < pieceBuffers.size(); ++i) {
    const BufferShape *buffer = pieceBuffers[i];
    if (knobs.recompute.value_or(false)) {
      variant.buffers.push_back({buffer->name, sched::MemoryKind::Recompute,
                                 "persistent " + buffer->name +
                                     " in recompute (recompute = true): each phase reads "
                                     "the piece again.",
                                 false});
      continue;
    }
    variant.buffers.push_back(std::move(placed[i]));
  }
  return variant;
}

} // namespace

RowParams chooseRows(const FusionShape &shape, const Target &target, const Knobs &knobs,
                     bool persistent) {
  RowParams params;
  KnobVerdicts &verdicts = params.verdicts;
  if (shape.layoutError) {
    params.declined = *shape.layoutError;
    return params;
  }
  if (shape.reduced.size() != 1) {
    params.declined = "the reduction heuristics handle fusions that reduce one dimension";
    return params;
  }
  const DimShape &r = shape.reduced[0];
  params.onePass = chooseOnePass(shape, knobs, verdicts, persistent);
  if (r.id != shape.inner.id) {
    chooseOuterReduction(shape, r, knobs, params);
    return params;
  }
  if (shape.rows.size() != 1) {
    params.declined = "an inner reduction needs one row dimension";
    return params;
  }
  const DimShape &d = shape.inner;
  const DimShape &rowDim = shape.rows[0];
  VectorChoice vectorChoice = chooseVectorWidth(shape, knobs, verdicts);
  const int64_t vector = params.vector = vectorChoice.width;
  const std::string &vectorWhy = params.vectorWhy = vectorChoice.why;
  const bool staticBdimx = params.staticBdimx = knobs.staticBdimx.value_or(true);
  std::vector<const BufferShape *> kept =
      persistent ? keptBuffers(shape, params.onePass) : std::vector<const BufferShape *>{};
  int64_t numBuffers = std::max<int64_t>(1, static_cast<int64_t>(kept.size()));

  if (!d.extent) {
    chooseRuntimeRow(shape, knobs, kept, persistent, params);
    return params;
  }

  int64_t vectors = ceilDiv(*d.extent, vector);
  // Without buffers, the inputs a later phase reads again stay in registers from the
  // first phase's loads (ptxas reuses them): they count against the register budget as
  // buffers do. A warp a row of softmax's backward at S = 4096 kept 16 vectors of y and
  // of grad_y a thread: 255 registers and spills (docs/performance.md).
  int64_t reductionBatchLimit =
      shape.rowInputsReadTwice == 0
          ? tuned::kReductionBatchLimit
          : std::clamp<int64_t>(tuned::kRegisterBudget / (vector * shape.rowInputsReadTwice), 1,
                                tuned::kReductionBatchLimit);
  int64_t batchLimit = knobs.persistentBatch.value_or(
      !persistent ? reductionBatchLimit : persistentBatchLimit(vectors, vector, numBuffers));
  auto choose = [&](int64_t minThreads) {
    RowSplit split;
    split.vector = vector;
    if (knobs.persistentBatch) {
      // The knob is the batch: the fewest threads that cover the row with it (whole
      // warps when blockDim.x is static), checked below.
      split.batch = *knobs.persistentBatch;
      split.threads = ceilDiv(vectors, split.batch);
      if (staticBdimx)
        split.threads = roundUp(split.threads, 32);
    } else {
      split.threads = std::clamp(roundUp(ceilDiv(vectors, batchLimit), 32),
                                 std::min<int64_t>(minThreads, roundUp(vectors, 32)),
                                 target.maxThreadsPerBlock);
      split.batch = ceilDiv(vectors, split.threads);
      if (!staticBdimx) // the baseline: batch first, threads = what is left
        split.threads = ceilDiv(vectors, split.batch);
    }
    split.rowsPerBlock =
        knobs.rowsPerBlock.value_or(split.threads < 128 ? 128 / roundUp(split.threads, 32) : 1);
    return split;
  };
  // Short rows: a warp a row when its batch fits, four rows a block, so each reduction
  // is shuffles alone and a block has four rows' loads in flight. Measured on the H200
  // (docs/performance.md, changes 3 and 5): at H = 1024 and T >= 1024, 5-17 % faster
  // than 128 threads a row for every fusion once block reductions are cheap.
  bool warpPerRow = ceilDiv(vectors, 32) <= batchLimit && vectors > 32;
  RowSplit normal = choose(warpPerRow ? 32 : 128);
  int64_t scratchBytes = params.onePass ? shape.scratchBytesOnePass : shape.scratchBytesTwoPass;
  // Rows too long to keep (bf16 rows over 32768 for LayerNorm, 40960 for RMSNorm, 57344
  // for softmax: the block's registers and shared memory hold no buffer of the row), or
  // the `recompute` knob: every buffer is recomputed, each phase reads the row again (from
  // L2), and the row is streamed as one that keeps nothing. Decided on the heuristics' own
  // split: a batch or rows a block given by a knob keep their split (and are checked on
  // it below), buffers placed by size.
  const bool fitsNowhere =
      persistent && !kept.empty() &&
      llvm::all_of(placeBuffers(shape, kept, normal, scratchBytes, target, knobs),
                   [](const BufferPlacement &placement) {
                     return placement.memory == sched::MemoryKind::Recompute;
                   });
  const bool recomputeAll =
      persistent && !kept.empty() &&
      knobs.recompute.value_or(fitsNowhere && !knobs.persistentBatch && !knobs.rowsPerBlock);
  if (knobs.recompute) {
    if (persistent && kept.empty())
      verdicts.refuse("recompute", "'" + shape.name +
                                       "' keeps no persistent buffer to recompute (each phase "
                                       "reads its inputs already); remove the knob");
    else
      verdicts.honour("recompute");
  }
  // Rows streamed from memory (no persistent buffers: argmax over a vocabulary, or an
  // inner_persistent row that keeps nothing: cross-entropy's forward, whose passes re-read
  // the logits or which one pass reduces, or whose buffers are all recomputed) of more
  // than 4 vectors a thread at 256 threads: 256 threads and a serial loop unrolled by 4
  // (TunedConstants.h; for cross-entropy at T = 1024, 142 against 335 us two-pass at
  // V = 128256, docs/performance.md, run U6).
  // An inner_persistent row that keeps nothing but whose inputs a later phase reads again,
  // where 256 threads hold them whole with a margin: the loop unrolled whole keeps every
  // first-phase load in registers for the second, where the streamed loop reads them again
  // from memory once a wave's rows are past the L2 (LayerNorm's backward at H = 16384,
  // T = 4096: 152 against 217 us, 1.14-1.42x at T = 1-4096; docs/performance.md, run
  // S42A). Not a fusion with reduction pairs (cross-entropy's max and sum read the logits
  // again only with one_pass = false) nor rows a block given by a knob (the block's
  // registers a thread are fewer): not timed held. auto(reduction)'s rows (RMSNorm's and
  // softmax's backward) stay streamed: not timed held either.
  // Whether a thread's batch of the inputs read again fits the block's registers a thread
  // with 16 to spare (index math and the row's other values): the rule for holding them,
  // and what the printed reason says.
  auto readAgainHeldFits = [&](int64_t batch, int64_t vectorWidth, int64_t blockThreads) {
    return batch * vectorWidth * shape.rowInputsReadTwice + 2 * ir::kIndexRegisters <=
           target.registersPerThreadOfBlock(blockThreads);
  };
  const bool readAgainHeld = persistent && shape.rowInputsReadTwice > 0 &&
                             shape.onePassPairs.empty() && !params.onePass && !recomputeAll &&
                             !knobs.rowsPerBlock &&
                             readAgainHeldFits(ceilDiv(vectors, tuned::kStreamedRowThreads), vector,
                                               tuned::kStreamedRowThreads);
  if ((!persistent || kept.empty() || recomputeAll) && staticBdimx && !knobs.persistentBatch &&
      vectors > tuned::kStreamedRowThreads * tuned::kStreamedRowUnroll) {
    normal.threads = tuned::kStreamedRowThreads;
    // A recomputed row: more threads a row (TunedConstants.h), a block's rows in flight
    // fewer, so the row read again is found in L2 more often.
    if (recomputeAll && !knobs.rowsPerBlock)
      normal.threads = std::clamp(roundUp(ceilDiv(vectors, tuned::kRecomputedRowBatch), 32),
                                  tuned::kRecomputedRowMinThreads, target.maxThreadsPerBlock);
    normal.batch = ceilDiv(vectors, normal.threads);
    normal.unrollBy = readAgainHeld ? 0 : tuned::kStreamedRowUnroll;
  }
  // Reduction pairs of a recomputed row in one pass: each pass reads the row, and one
  // fewer is what the rows that fill the SMs pay for (TunedConstants.h); fewer rows keep
  // two passes (the wide variant's twoPass below).
  bool recomputedOnePass = false;
  if (recomputeAll && !knobs.onePass && !params.onePass && !shape.onePassPairs.empty()) {
    params.onePass = true;
    recomputedOnePass = true;
    // Its blocks of more than 512 threads: registers for two an SM, so one block's wait
    // on its loads overlaps the other's work (LayerNorm's one pass at 768 threads took 46
    // registers, one block an SM; held to 40, 0.90-0.91x the time, run S40C; where ptxas
    // needs no more, the kernel is the same). Not measured for the other fusions.
    int64_t blockThreads = normal.threads * normal.rowsPerBlock;
    if (blockThreads > tuned::kTwoBlocksMinThreads)
      normal.maxRegisters = target.registersPerThreadOfBlock(2 * blockThreads);
  }
  // A recomputed row's loop unrolled whole loads its batch ahead, into registers the
  // block does not have (1024 threads x 16 vectors spilled 1.1-1.3 KB a thread): unrolled
  // by 4 wherever the row is not streamed (static_bdimx = false, recompute = false).
  if ((recomputeAll || fitsNowhere) && normal.batch > tuned::kStreamedRowUnroll &&
      normal.unrollBy == 0)
    normal.unrollBy = tuned::kStreamedRowUnroll;
  // Fewer rows than SMs: a batch of 2, up to 512 threads a row (at least 128)
  // (TunedConstants.h).
  RowSplit wide = choose(std::clamp<int64_t>(roundUp(ceilDiv(vectors, tuned::kWideBatch), 32),
                                             tuned::kWideMinThreads, tuned::kWideMaxThreads));
  wide.rowsPerBlock = 1;
  // Few rows of a row that keeps nothing: where the wide split's whole row a thread fits
  // the registers, two passes over its vectors prefetched whole (a latency-bound row: 4.5
  // against 5.8 us at T = 1, V = 32000), also where one pass is the default for the other
  // rows (not where the knob asks for it); where it does not fit, the loop unrolled as the
  // streamed rows' (prefetched whole, 16 vectors a thread at V = 128256 spilled 104 bytes;
  // one pass 1.24-1.4x faster there). Measured on the H200 (docs/performance.md, run U6).
  // Fitting is also within the block's registers a thread, less 8 of index math: at
  // 1024 threads (64 registers) 8 vectors a thread (V = 61440, 65536) spilled 20-104 bytes.
  bool fewRowsTwoPass = false;
  if (persistent && kept.empty() && !knobs.persistentBatch) {
    bool rowFits = wide.batch * wide.vector <= tuned::kRegisterBudget &&
                   wide.batch * wide.vector + ir::kIndexRegisters <=
                       target.registersPerThreadOfBlock(wide.threads * wide.rowsPerBlock);
    if (rowFits && !knobs.onePass.value_or(false))
      fewRowsTwoPass = params.onePass;
    else if (wide.batch > tuned::kStreamedRowUnroll)
      wide.unrollBy = tuned::kStreamedRowUnroll;
  }
  if ((recomputeAll || fitsNowhere) && wide.batch > tuned::kStreamedRowUnroll)
    wide.unrollBy = tuned::kStreamedRowUnroll;
  // The wider blocks of a row that keeps no buffer, whose batch is over the inputs read
  // again that fit the registers (1024 threads x 3-16 vectors of the backward norms'
  // three inputs from H = 20480): a loop unrolled whole lets ptxas keep every first-phase
  // load for the second (176-1676 bytes a thread spilled at 20480-65536); unrolled by 2
  // or 4 it reads them again, with no spill (ptxas, sm_90a). Not timed. The budget is
  // also the block's registers a thread, less 8 of index math: softmax's backward at
  // 1024 threads x 4 vectors of its two inputs (64 values) spilled 44 bytes.
  // In inner_persistent, nor over the 64-value budget where the block's registers hold
  // them with a margin: LayerNorm's backward at 512 threads x 4 vectors of its three
  // inputs (H = 16384), unrolled whole, 128 registers, no spill, 1.13-1.16x faster than
  // unrolled by 2 at T = 1 and 64 (run S42A).
  bool readAgainFits =
      (wide.batch <= reductionBatchLimit &&
       wide.batch * wide.vector * shape.rowInputsReadTwice + ir::kIndexRegisters <=
           target.registersPerThreadOfBlock(wide.threads * wide.rowsPerBlock)) ||
      (persistent && shape.onePassPairs.empty() &&
       readAgainHeldFits(wide.batch, wide.vector, wide.threads * wide.rowsPerBlock));
  // Not where the few rows take two passes over their row prefetched whole (it fits, as
  // decided above): that loop stays unrolled whole.
  if ((!persistent || (kept.empty() && !fewRowsTwoPass)) && !knobs.persistentBatch &&
      !readAgainFits)
    wide.unrollBy = wide.batch > tuned::kStreamedRowUnroll ? tuned::kStreamedRowUnroll
                                                           : tuned::kReadAgainUnroll;
  if (recomputedOnePass)
    fewRowsTwoPass = true;
  params.normal = normal;
  params.wide = wide;
  if (knobs.staticBdimx)
    verdicts.honour("static_bdimx"); // either way: it decides how the row is split
  if (knobs.persistentBatch) {
    int64_t batch = *knobs.persistentBatch;
    if (batch > vectors)
      verdicts.refuse("persistent_batch",
                      llvm::formatv("the row has {0} vectors ({1}); use persistent_batch = {0} or "
                                    "less",
                                    vectors, vectorWhy)
                          .str());
    else if (normal.threads > target.maxThreadsPerBlock)
      verdicts.refuse(
          "persistent_batch",
          llvm::formatv("{0} vectors at {1} a thread need {2} threads, over the {3} of a "
                        "block on {4}; use persistent_batch = {5} or more",
                        vectors, batch, normal.threads, target.maxThreadsPerBlock, target.name,
                        ceilDiv(vectors, target.maxThreadsPerBlock))
              .str());
    else if (staticBdimx && ceilDiv(vectors, normal.threads) != batch)
      verdicts.refuse("persistent_batch",
                      llvm::formatv("a static blockDim.x is whole warps, and {0} threads cover "
                                    "the {1} vectors with {2} a thread; use persistent_batch = "
                                    "{2}, or static_bdimx = false",
                                    normal.threads, vectors, ceilDiv(vectors, normal.threads))
                          .str());
    else
      verdicts.honour("persistent_batch");
  }
  if (knobs.rowsPerBlock) {
    int64_t rowsPerBlock = *knobs.rowsPerBlock;
    int64_t threads = saturatingMul(normal.threads, rowsPerBlock);
    if (threads > target.maxThreadsPerBlock)
      verdicts.refuse(
          "rows_per_block",
          llvm::formatv("{0} rows of {1} threads are {2} threads, over the {3} of a block "
                        "on {4}; use rows_per_block = {5} or less",
                        rowsPerBlock, normal.threads,
                        threads == std::numeric_limits<int64_t>::max()
                            ? std::string("more than 2^63 - 1")
                            : std::to_string(threads),
                        target.maxThreadsPerBlock, target.name,
                        std::max<int64_t>(1, target.maxThreadsPerBlock / normal.threads))
              .str());
    else
      verdicts.honour("rows_per_block");
  }

  bool computedWith = false; // some buffer is computed with its first consumer
  auto place = [&](const RowSplit &split) {
    std::vector<BufferPlacement> placements;
    std::vector<BufferPlacement> placed =
        placeBuffers(shape, kept, split, scratchBytes, target, knobs);
    for (size_t i = 0; i < kept.size(); ++i) {
      const BufferShape *buffer = kept[i];
      placements.push_back(std::move(placed[i]));
      // The streamed split of a row too long to keep recomputes every buffer, wherever
      // its smaller batch would fit.
      if (recomputeAll && placements.back().memory != sched::MemoryKind::Recompute)
        placements.back() = {buffer->name, sched::MemoryKind::Recompute,
                             "persistent " + buffer->name +
                                 (knobs.recompute
                                      ? " in recompute (recompute = true): each phase reads "
                                        "the row again."
                                      : " in recompute: the row is streamed, as the blocks of "
                                        "the split that keeps it hold no buffer of it."),
                             false};
      computedWith |= placements.back().memory != sched::MemoryKind::Recompute;
    }
    return placements;
  };
  auto describe = [&](const RowSplit &split, const char *purpose) {
    std::string readTwice;
    bool readAgain = !knobs.persistentBatch && shape.rowInputsReadTwice > 0 && !params.onePass &&
                     (!persistent || kept.empty());
    if (readAgain && split.batch > reductionBatchLimit) {
      int64_t values = split.batch * split.vector * shape.rowInputsReadTwice;
      bool whole = split.unrollBy == 0 || split.unrollBy >= split.batch;
      bool fits = readAgainHeldFits(split.batch, split.vector, split.threads * split.rowsPerBlock);
      readTwice = llvm::formatv("; the {0} input(s) read again after the reductions ({1} "
                                "values a thread) {2}",
                                shape.rowInputsReadTwice, values,
                                !whole ? "are loaded again from memory by the second phase"
                                : fits ? "stay in registers, unrolled whole"
                                       : "are unrolled whole, over the block's registers a "
                                         "thread: ptxas loads them again or spills")
                      .str();
    } else if (!persistent && !knobs.persistentBatch &&
               reductionBatchLimit < tuned::kReductionBatchLimit)
      readTwice =
          llvm::formatv("; at most {0} a thread: {1} inputs read again after the "
                        "reductions stay in registers ({2} values a thread at most)",
                        reductionBatchLimit, shape.rowInputsReadTwice, tuned::kRegisterBudget)
              .str();
    return llvm::formatv(
               "{0}: {1} = {2}: {3} vectors ({4}) = {5} threads x {6} serial{9}{7}{8}{10}.",
               purpose, d.name, *d.extent, vectors, vectorWhy, split.threads, split.batch,
               staticBdimx ? " (blockDim.x static: the row split inner by the thread count)"
                           : " (static_bdimx = false: the batch split outer)",
               split.rowsPerBlock > 1
                   ? llvm::formatv(", {0} rows a block", split.rowsPerBlock).str()
                   : "",
               split.unrollBy > 0 && split.unrollBy < split.batch
                   ? llvm::formatv(" unrolled by {0}", split.unrollBy).str()
                   : "",
               readTwice)
        .str();
  };
  const char *kind = persistent ? "inner_persistent" : "reduction";
  // Few rows of a fusion whose reductions feed row outputs alone (argmax over a
  // vocabulary, a row's sum): each row in pieces on blockIdx.y, a grid reduction whose
  // second kernel combines the pieces a row (Reduction.cpp). In one pass, auto(inner_persistent)
  // splits the rows of online-softmax pairs the same way (cross-entropy's loss and
  // logsumexp, keeping nothing), for rows long enough that one block's exponentials are the
  // time (TunedConstants.h; measured on cross-entropy only, so not for Welford's pairs).
  bool onePassGrid = persistent && params.onePass && kept.empty() && shape.rowOutputsOnlyOnePass &&
                     !shape.onePassPairs.empty() &&
                     llvm::all_of(shape.onePassPairs,
                                  [](const OnePassPairShape &pair) { return pair.maxExpSum; }) &&
                     vectors >= tuned::kGridOnePassMinVectors;
  bool gridRows = ((!persistent && !params.onePass && shape.rowOutputsOnly) || onePassGrid) &&
                  staticBdimx && knobs.when.empty() && !knobs.rowsPerBlock &&
                  !knobs.persistentBatch;
  int64_t gridBelow = 0; // the grid variants serve rows counts below this
  if (gridRows)
    for (const GridVariant &grid :
         gridVariants(vectors, target, persistent ? "inner_persistent" : "reduction",
                      onePassGrid ? tuned::kGridOnePassRowsBelow : target.smCount)) {
      std::vector<sched::SizeGuard> when{guard(rowDim, sched::Comparison::Lt, grid.rowsBelow)};
      if (gridBelow > 0)
        when.insert(when.begin(), guard(rowDim, sched::Comparison::Ge, gridBelow));
      if (overlapsAny(when, knobs.otherGuards))
        continue;
      RowVariant variant;
      variant.kind = RowVariant::Kind::Grid;
      variant.when = std::move(when);
      variant.pieces = grid.pieces;
      variant.split.vector = vector;
      variant.split.threads = tuned::kGridThreads;
      variant.split.batch = ceilDiv(ceilDiv(vectors, variant.split.threads), grid.pieces);
      variant.reasons.push_back(grid.why);
      variant.reasons.push_back(
          llvm::formatv("grid reduction: {0} = {1}: {2} vectors ({3}) = {4} pieces on blockIdx.y "
                        "x {5} threads x {6} serial; a second kernel combines the pieces a row.",
                        d.name, *d.extent, vectors, vectorWhy, grid.pieces, variant.split.threads,
                        variant.split.batch)
              .str());
      params.variants.push_back(std::move(variant));
      gridBelow = grid.rowsBelow;
    }
  // Few rows of a row too long for one block whose reductions its elements use: pieces
  // that meet at grid barriers (gridSyncVariant).
  bool gridSyncDefault = vectors >= tuned::kGridSyncMinVectors;
  if (persistent && knobs.gridSync.value_or(gridSyncDefault)) {
    int64_t rowsBelow = 0;
    if (std::optional<RowVariant> variant =
            gridSyncVariant(shape, {d, rowDim, vectors, vector, vectorWhy}, target, knobs,
                            gridBelow, scratchBytes, params, rowsBelow)) {
      params.variants.push_back(std::move(*variant));
      gridBelow = rowsBelow;
    }
  } else if (knobs.gridSync) {
    verdicts.honour("grid_sync"); // false: one block a row
  }
  // A guard, a row count or a batch the user gave applies to every size: no variant.
  bool widen = (wide.threads > normal.threads || recomputedOnePass) && knobs.when.empty() &&
               !knobs.rowsPerBlock && !knobs.persistentBatch;
  // Nor when another guarded schedule of the fusion applies to some of those sizes.
  // Where the normal split keeps more than 32 values a thread in registers and the wider
  // blocks have at most 256 threads, they serve every row count that is one wave of them
  // (TunedConstants.h).
  int64_t wave = target.smCount;
  int64_t keptValues = recomputeAll ? 0 : normal.batch * normal.vector * numBuffers;
  if (persistent && normal.threads >= 128 && wide.threads <= tuned::kWideWaveMaxThreads &&
      keptValues > tuned::kWideWaveKeptValues && target.maxThreadsPerSm > 0)
    wave = target.smCount *
           std::max<int64_t>(1, target.maxThreadsPerSm / (wide.threads * wide.rowsPerBlock));
  sched::SizeGuard fewRows = guard(rowDim, sched::Comparison::Lt, wave);
  bool overlaps = overlapsAny({fewRows}, knobs.otherGuards);
  // The grid variants serve these rows already, or the fewest of them.
  if (gridBelow >= wave)
    widen = false;
  std::string notWidened =
      widen && overlaps
          ? llvm::formatv("; no variant for fewer {0}: another guarded schedule of '{1}' "
                          "applies to some of those sizes",
                          wave == target.smCount
                              ? llvm::formatv("rows than the {0} SMs", wave).str()
                              : llvm::formatv("than {0} rows", wave).str(),
                          shape.name)
                .str()
          : "";
  widen &= !overlaps;
  if (widen) {
    RowVariant small;
    small.kind = RowVariant::Kind::Wide;
    small.split = wide;
    small.reasons.push_back(
        wave == target.smCount
            ? llvm::formatv("auto({0}), fewer rows than the {1} SMs of {2}: wider blocks, "
                            "more warps a row.",
                            kind, target.smCount, target.name)
                  .str()
            : llvm::formatv("auto({0}), fewer than {1} rows, one wave of the wider blocks "
                            "({2} SMs of {3} x {4} blocks): more warps a row.",
                            kind, wave, target.smCount, target.name, wave / target.smCount)
                  .str());
    small.reasons.push_back(describe(wide, "row split"));
    small.twoPass = fewRowsTwoPass;
    if (recomputedOnePass)
      small.reasons.push_back("two passes: the rows of a one-pass recomputed row are "
                              "latency-bound below a wave (one pass 1.1-1.8x slower at T = 1).");
    else if (fewRowsTwoPass)
      small.reasons.push_back(llvm::formatv("two passes over the row's {0} prefetched values a "
                                            "thread: few rows are latency-bound.",
                                            wide.batch * wide.vector)
                                  .str());
    small.buffers = place(wide);
    small.when = {fewRows};
    if (gridBelow > 0)
      small.when.insert(small.when.begin(), guard(rowDim, sched::Comparison::Ge, gridBelow));
    params.variants.push_back(std::move(small));
  }
  // Rows of 2048 vectors or more (H = 16384 bf16), from one wave to 2048 rows: the
  // buffers recomputed (the second phase reads the row again, from L2, where it was
  // just read) rather than kept, so an SM holds more rows (TunedConstants.h). Only where
  // each buffer is a cast of one input (LayerNorm's and RMSNorm's xf): reading it again
  // costs the bytes kept and a conversion, not an exp (softmax's e) or a second tensor
  // (rms_norm_add's h), which were not measured this way.
  const int64_t recomputeBelow = tuned::kRecomputeBelowRows;
  bool castsOfInputs =
      llvm::all_of(kept, [](const BufferShape *buffer) { return buffer->castOfInput; });
  if (widen && persistent && !params.onePass && !kept.empty() && !recomputeAll && castsOfInputs &&
      vectors >= tuned::kRecomputeMinVectors && wave < recomputeBelow) {
    std::vector<sched::SizeGuard> when{guard(rowDim, sched::Comparison::Ge, wave),
                                       guard(rowDim, sched::Comparison::Lt, recomputeBelow)};
    if (!overlapsAny(when, knobs.otherGuards)) {
      RowVariant middle;
      middle.kind = RowVariant::Kind::Recompute;
      middle.when = std::move(when);
      middle.split = normal;
      middle.reasons.push_back(
          llvm::formatv("auto({0}), {1} to {2} rows of {3} vectors: buffers recomputed from "
                        "the row (read again, from L2), so more rows fit an SM.",
                        kind, wave, recomputeBelow - 1, vectors)
              .str());
      middle.reasons.push_back(describe(normal, "row split"));
      for (const BufferShape *buffer : kept)
        middle.buffers.push_back({buffer->name, sched::MemoryKind::Recompute, "", false});
      params.variants.push_back(std::move(middle));
    }
  }
  std::vector<BufferPlacement> normalBuffers = place(normal);
  // Fewer rows than SMs of a row whose kept casts of one input take more than half the
  // registers a thread of its block has (RMSNorm's xf at H = 36864-40960: 64 values of
  // 96): the buffers recomputed, the loop unrolled by 4. A lone row is latency-bound, and
  // the kept row's whole batch loaded ahead with the weight's waits longer than the
  // recomputed row's loop reading it again from L2 (1.06-1.20x slower at T = 1 and 64,
  // 0.77-0.81x from T = 1024: docs/performance.md, run S40B). Where the wide variant
  // serves those rows, its own placement decides.
  int64_t normalThreadRegisters =
      target.registersPerThreadOfBlock(normal.threads * normal.rowsPerBlock);
  bool keptInRegisters =
      !normalBuffers.empty() && llvm::all_of(normalBuffers, [](const BufferPlacement &placement) {
        return placement.memory == sched::MemoryKind::Registers;
      });
  if (persistent && !widen && !params.onePass && keptInRegisters && castsOfInputs &&
      2 * normal.batch * normal.vector * numBuffers > normalThreadRegisters &&
      gridBelow < target.smCount && knobs.when.empty() && !knobs.rowsPerBlock &&
      !knobs.persistentBatch && !knobs.recompute && !knobs.vectorWidth) {
    std::vector<sched::SizeGuard> when{guard(rowDim, sched::Comparison::Lt, target.smCount)};
    if (gridBelow > 0)
      when.insert(when.begin(), guard(rowDim, sched::Comparison::Ge, gridBelow));
    if (!overlapsAny(when, knobs.otherGuards)) {
      RowVariant fewKept;
      fewKept.kind = RowVariant::Kind::Recompute;
      fewKept.when = std::move(when);
      fewKept.split = normal;
      if (fewKept.split.batch > tuned::kStreamedRowUnroll)
        fewKept.split.unrollBy = tuned::kStreamedRowUnroll;
      fewKept.reasons.push_back(
          llvm::formatv("auto({0}), fewer rows than the {1} SMs of {2}: buffers recomputed "
                        "from the row (read again, from L2); the {3} values a thread kept "
                        "take over half the {4} registers a thread of {5} has, and a lone "
                        "row waits on their loads.",
                        kind, target.smCount, target.name,
                        normal.batch * normal.vector * numBuffers, normalThreadRegisters,
                        normal.threads * normal.rowsPerBlock)
              .str());
      fewKept.reasons.push_back(describe(fewKept.split, "row split"));
      for (const BufferShape *buffer : kept)
        fewKept.buffers.push_back({buffer->name, sched::MemoryKind::Recompute, "", false});
      params.variants.push_back(std::move(fewKept));
    }
  }
  RowVariant block;
  block.kind = RowVariant::Kind::Normal;
  block.userGuard = true;
  block.split = normal;
  block.reasons.push_back(
      llvm::formatv("auto({0}){1}{2}.", kind,
                    widen ? llvm::formatv(", {0} rows or more", wave).str() : "", notWidened)
          .str());
  block.reasons.push_back(describe(normal, "row split"));
  block.buffers = std::move(normalBuffers);
  params.variants.push_back(std::move(block));
  if (knobs.computeWith) {
    if (computedWith)
      verdicts.honour("compute_with");
    else
      verdicts.refuse("compute_with",
                      kept.empty()
                          ? "'" + shape.name +
                                "' keeps no persistent buffer to compute with its first consumer"
                      : knobs.recompute.value_or(false)
                          ? std::string("recompute = true recomputes its persistent buffers: "
                                        "none is kept to compute with its first consumer")
                          : std::string("its persistent buffers are recomputed (too large for "
                                        "a thread's share of the block's registers and for "
                                        "shared memory), not kept"));
  }
  return params;
}

namespace {

/// `reduce one_pass;` and its reason, when chosen.
void onePassDirective(const FusionShape &shape, const RowParams &params, RowVariant::Kind kind,
                      Block &block, const BlockContext &context) {
  if (!params.onePass)
    return;
  std::vector<std::string> names;
  for (const OnePassPairShape &pair : shape.onePassPairs)
    names.push_back((pair.maxExpSum ? "online softmax (" : "Welford (") + pair.first + ", " +
                    pair.second + ")");
  block.reasons.push_back(
      "reduce one_pass" + std::string(context.knobs->onePass ? " (one_pass = true)" : "") + ": " +
      llvm::join(names, ", ") +
      (kind == RowVariant::Kind::Grid ? " in one pass over each piece, one block reduction a pair; "
                                        "the second kernel combines the pieces' pairs."
       : kind == RowVariant::Kind::GridSync
           ? " in one pass over each piece, one block reduction and one "
             "grid barrier a pair."
           : " in one pass over the row, one block reduction a pair."));
  block.add(sched::ReduceForm{true}, context.at("one_pass"));
}

/// Each row in `variant.pieces` on blockIdx.y, a grid reduction.
void gridDirectives(Block &block, const DimShape &d, const DimShape &rowDim,
                    const RowVariant &variant, const BlockContext &context) {
  const std::string outer = d.name + "o", vec = d.name + "v", rest = d.name + "q",
                    lanes = d.name + "x", piece = d.name + "g", serial = d.name + "p";
  const RowSplit &split = variant.split;
  llvm::SMRange at = context.decl();
  if (split.vector > 1)
    block.split(d.name, split.vector, outer, vec, context.at("vector_width"));
  block.split(split.vector > 1 ? outer : d.name, split.threads, rest, lanes, at);
  block.split(rest, variant.pieces, piece, serial, at, /*factorIsOuter=*/true);
  block.parallelize({{rowDim.name, sched::Parallel::BIDx},
                     {piece, sched::Parallel::BIDy},
                     {lanes, sched::Parallel::TIDx}},
                    at);
  if (split.vector > 1)
    block.vectorize(vec, context.at("vector_width"));
  if (split.batch > tuned::kGridUnroll)
    block.add(sched::Unroll{block.loop(serial, at), sched::Count{tuned::kGridUnroll, at}}, at);
  else if (split.batch > 1)
    block.unroll(serial, at);
}

} // namespace

std::vector<sched::ScheduleBlock> rowBlocks(const FusionShape &shape, const RowParams &params,
                                            const BlockContext &context) {
  const DimShape &d = shape.inner;
  llvm::SMRange decl = context.decl();
  std::vector<sched::ScheduleBlock> blocks;
  for (const RowVariant &variant : params.variants) {
    Block block;
    block.reasons = variant.reasons;
    switch (variant.kind) {
    case RowVariant::Kind::Outer:
      block.split(d.name, 128, d.name + "b", d.name + "x", decl);
      block.parallelize(
          {{d.name + "b", sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}}, decl);
      break;
    case RowVariant::Kind::Grid:
      gridDirectives(block, d, shape.rows[0], variant, context);
      break;
    case RowVariant::Kind::GridSync:
      gridDirectives(block, d, shape.rows[0], variant, context);
      block.add(sched::GridSync{}, context.at("grid_sync"));
      break;
    case RowVariant::Kind::Wide:
    case RowVariant::Kind::Recompute:
    case RowVariant::Kind::Normal:
      rowDirectives(block, shape.rows[0].name, d.name, variant.split, params.staticBdimx, true,
                    rowRanges(context));
      if (variant.split.maxRegisters > 0) {
        block.add(sched::MaxRRegCount{sched::Count{variant.split.maxRegisters, decl}}, decl);
        block.reasons.push_back(llvm::formatv("maxrregcount {0}: two blocks of {1} threads an SM.",
                                              variant.split.maxRegisters,
                                              variant.split.threads * variant.split.rowsPerBlock)
                                    .str());
      }
      break;
    case RowVariant::Kind::RuntimeMultiple:
      rowDirectives(block, shape.rows[0].name, d.name, variant.split, /*staticBdimx=*/false,
                    /*unroll=*/true, rowRanges(context));
      block.launchBounds(variant.split.threads, decl);
      break;
    case RowVariant::Kind::RuntimeLoop:
      block.split(d.name, variant.split.threads, d.name + "p", d.name + "x",
                  context.at("static_bdimx"));
      block.parallelize(
          {{shape.rows[0].name, sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}},
          decl);
      break;
    }
    for (const BufferPlacement &buffer : variant.buffers) {
      if (!buffer.reason.empty())
        block.reasons.push_back(buffer.reason);
      block.persistent(buffer.name, buffer.memory, decl);
      if (buffer.computeWith)
        block.computeWith(buffer.name, context.at("compute_with"));
    }
    if (variant.kind != RowVariant::Kind::Recompute && !variant.twoPass)
      onePassDirective(shape, params, variant.kind, block, context);
    std::vector<sched::SizeGuard> when = variant.when;
    for (sched::SizeGuard &guard : when)
      guard.range = decl;
    blocks.push_back(context.finish(std::move(block),
                                    variant.userGuard ? context.knobs->when : std::move(when)));
  }
  return blocks;
}

} // namespace fsl::heuristics
