// Heuristics.cpp — one function per heuristic; each returns typed schedule blocks with
// the reasons for its choices.
#include "heuristics/Heuristics.h"

#include "ast/AST.h"
#include "ir/OnePass.h"
#include "schedule/ScheduleBuilder.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

namespace fsl::heuristics {
namespace {

/// Whether auto(reduction) and auto(inner_persistent) compute softmax's and LayerNorm's
/// reduction pairs in one pass (`reduce one_pass`) without the `one_pass` knob. Off until
/// measured on the H200 (tests/bench: the `onepass_<H>` variants): one pass saves a
/// block reduction (a barrier and the shuffles) and a read of the row, or of its buffer,
/// per pair, but its serial update costs more (an exp and selects an element for softmax,
/// a division for Welford).
constexpr bool kOnePassByDefault = false;

/// The most accesses a thread `unroll = N` may ask for: what the prefetch pass loads
/// ahead (lower/EarlyLoads.cpp).
constexpr int64_t kMaxUnroll = 32;

// Sizes here come from static extents and knobs, up to 2^63 - 1: nothing may wrap.
int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
/// `a` rounded up to a multiple of `b`, or the largest int64_t when that does not fit.
int64_t roundUp(int64_t a, int64_t b) {
  return llvm::checkedMul(ceilDiv(a, b), b).value_or(std::numeric_limits<int64_t>::max());
}
/// `a * b`, or the largest int64_t when that does not fit: over every limit it is held to.
int64_t saturatingMul(int64_t a, int64_t b) {
  return llvm::checkedMul(a, b).value_or(std::numeric_limits<int64_t>::max());
}

/// The output with the most dimensions: its layout is the kernel's.
const ir::Output *referenceOutput(const ir::Fusion &fusion) {
  const ir::Output *best = nullptr;
  for (const ir::Output &output : fusion.outputs)
    if (!best || output.dims.size() + output.value->reduced.size() >
                     best->dims.size() + best->value->reduced.size())
      best = &output;
  return best;
}

/// Widest element among the inputs and outputs whose innermost dimension is `dim`.
unsigned widestElement(const ir::Fusion &fusion, ir::DimId dim) {
  unsigned bytes = 1;
  for (const ir::Param &param : fusion.params)
    if (!param.dims.empty() && param.dims.back() == dim)
      bytes = std::max(bytes, ir::dtypeBytes(param.dtype));
  for (const ir::Output &output : fusion.outputs)
    if (!output.dims.empty() && output.dims.back() == dim)
      bytes = std::max(bytes, ir::dtypeBytes(output.dtype));
  return bytes;
}

/// Whether some sizes satisfy both guards. Between the bounds (and their neighbours)
/// nothing changes, so those sizes are the only ones to try.
bool guardsOverlap(const std::vector<sched::SizeGuard> &a, const std::vector<sched::SizeGuard> &b) {
  std::map<std::string, std::vector<int64_t>> candidates = sched::sizeCandidates({&a, &b});
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims(candidates.begin(),
                                                                 candidates.end());
  std::map<std::string, int64_t> point;
  std::function<bool(size_t)> search = [&](size_t i) {
    if (i == dims.size()) {
      for (const auto *guards : {&a, &b})
        for (const sched::SizeGuard &guard : *guards)
          if (!guard.holds(point.at(guard.dimName)))
            return false;
      return true;
    }
    for (int64_t value : dims[i].second) {
      point[dims[i].first] = value;
      if (search(i + 1))
        return true;
    }
    return false;
  };
  return search(0);
}

/// A schedule block being chosen: its reasons and its directives, every operand of a
/// directive pointing at what asked for it (a knob, or the `= auto` declaration).
struct Block {
  std::vector<std::string> reasons;
  std::vector<sched::Directive> directives;

  static sched::LoopRef loop(const std::string &name, llvm::SMRange at) {
    return {std::nullopt, {name, at}, at};
  }
  void add(sched::DirectiveOp op, llvm::SMRange at) {
    directives.push_back({std::move(op), at, {}, false});
  }

  /// `split loop by factor -> (outer, inner)`, or `into` when `factorIsOuter`.
  void split(const std::string &name, int64_t factor, const std::string &outer,
             const std::string &inner, llvm::SMRange at, bool factorIsOuter = false) {
    add(sched::Split{loop(name, at), factorIsOuter, {factor, at}, {outer, at}, {inner, at}}, at);
  }
  void parallelize(const std::vector<std::pair<std::string, sched::Parallel>> &bindings,
                   llvm::SMRange at) {
    sched::Parallelize parallelize;
    for (const auto &[name, parallel] : bindings)
      parallelize.bindings.push_back({loop(name, at), parallel});
    add(parallelize, at);
  }
  void vectorize(const std::string &name, llvm::SMRange at) {
    add(sched::Vectorize{loop(name, at)}, at);
  }
  void unroll(const std::string &name, llvm::SMRange at) {
    add(sched::Unroll{loop(name, at), std::nullopt}, at);
  }
  void persistent(const std::string &tensor, sched::MemoryKind memory, llvm::SMRange at) {
    add(sched::Persistent{{tensor, at}, memory}, at);
  }
  void computeWith(const std::string &tensor, llvm::SMRange at) {
    add(sched::ComputeWith{{tensor, at}}, at);
  }
  void launchBounds(int64_t threads, llvm::SMRange at) {
    add(sched::LaunchBounds{{threads, at}}, at);
  }

  sched::ScheduleBlock finish(const sched::ScheduleHeader &header,
                              std::vector<sched::SizeGuard> when) && {
    sched::ScheduleBlock block;
    block.header = header;
    block.header.when = std::move(when);
    block.directives = std::move(directives);
    block.reasons = std::move(reasons);
    return block;
  }
};

/// rows -> BIDx (or Tb -> BIDx, Ty -> TIDy), the row split into Hp x Hx x Hv.
struct RowSplit {
  int64_t vector = 1, threads = 32, batch = 1, rowsPerBlock = 1;
  int64_t unrollBy = 0; // the serial loop unrolled by this many (0: fully)
};

/// Where each directive of a row split points: the knob that decided it, or the header.
struct RowRanges {
  llvm::SMRange vector, threads, rows, header;
};

void rowDirectives(Block &block, const std::string &row, const std::string &dim,
                   const RowSplit &split, bool staticBdimx, bool unroll, const RowRanges &at) {
  const std::string outer = dim + "o", vec = dim + "v", serial = dim + "p", lanes = dim + "x";
  if (split.vector > 1)
    block.split(dim, split.vector, outer, vec, at.vector);
  std::string base = split.vector > 1 ? outer : dim;
  if (staticBdimx)
    block.split(base, split.threads, serial, lanes, at.threads);
  else
    block.split(base, split.batch, serial, lanes, at.threads, /*factorIsOuter=*/true);
  if (split.rowsPerBlock > 1) {
    block.split(row, split.rowsPerBlock, row + "b", row + "y", at.rows);
    block.parallelize({{row + "b", sched::Parallel::BIDx},
                       {row + "y", sched::Parallel::TIDy},
                       {lanes, sched::Parallel::TIDx}},
                      at.header);
  } else {
    block.parallelize({{row, sched::Parallel::BIDx}, {lanes, sched::Parallel::TIDx}}, at.header);
  }
  if (split.vector > 1)
    block.vectorize(vec, at.vector);
  if (unroll && split.batch > 1 && split.unrollBy > 0 && split.unrollBy < split.batch)
    block.add(sched::Unroll{block.loop(serial, at.header), sched::Count{split.unrollBy, at.header}},
              at.header);
  else if (unroll && split.batch > 1)
    block.unroll(serial, at.header);
}

class Chooser {
public:
  Chooser(const ir::Fusion &fusion, const Target &target, const Knobs &knobs,
          DiagnosticEngine *diagnostics)
      : fusion_(fusion), target_(target), knobs_(knobs), diagnostics_(diagnostics) {
    header_.fusion = fusion.name;
    // Without an `= auto` declaration, the choice is for the fusion itself.
    header_.fusionRange = knobs.fusionRange.isValid() ? knobs.fusionRange : fusion.range;
    header_.range = knobs.declRange.isValid() ? knobs.declRange : fusion.range;
    header_.chosenByHeuristics = true;
  }

  Choice run() {
    Choice choice = dispatch();
    // A heuristic that declines the fusion takes the knobs with it: `why` says why.
    if (choice.blocks.empty())
      return choice;
    // Whatever the heuristic did not use is refused, so no knob is ever ignored.
    for (const auto &[name, set] : written())
      if (set && !honoured_.count(name))
        refuse(name, unused_.empty()
                         ? "auto(" + kind_ + ") does not read it for '" + fusion_.name + "'"
                         : unused_);
    if (refused_.empty())
      return choice;
    for (const auto &[name, reason] : refused_) {
      auto at = knobs_.ranges.find(name);
      if (diagnostics_)
        diagnostics_->report(DiagId::AutoKnobUnsupported,
                             at != knobs_.ranges.end() ? at->second : llvm::SMRange(), name,
                             reason);
    }
    return {{},
            "knob '" + refused_.front().first + "' cannot be honoured: " + refused_.front().second};
  }

private:
  Choice dispatch() {
    for (const auto &value : fusion_.values)
      if (value->op == ir::Op::MatMul) {
        kind_ = "matmul";
        if (!knobs_.kind.empty() && knobs_.kind != "matmul")
          return {{},
                  "auto(" + knobs_.kind +
                      ") on a fusion with a matrix product (auto(matmul) "
                      "schedules it)"};
        return matmul(*value);
      }
    const ir::Output *reference = referenceOutput(fusion_);
    if (!reference)
      return {{}, "the fusion has no output"};
    kind_ = knobs_.kind.empty() ? classify(fusion_) : knobs_.kind;
    chooseFastExp();
    if (kind_ == "pointwise")
      return pointwise();
    if (kind_ == "reduction" || kind_ == "inner_persistent")
      return reductionLike(kind_ == "inner_persistent");
    return {{}, "auto(" + kind_ + ") is not implemented yet"};
  }

  // --- auto(matmul) -----------------------------------------------------------------

  /// One matmul schedule of auto(matmul): a CTA tile of (128, tileN), two consumer
  /// warpgroups of (64, tileN) and a producer warpgroup, and the tile order.
  struct MatmulChoice {
    int64_t tileM = 128, tileN = 256, stages = 3;
    /// Consumer groups: 2 takes alternate tiles of 64 x tileN (ping-pong).
    int64_t groups = 1;
    sched::TileOrder order = sched::TileOrder::Persistent;
    int64_t orderParameter = 8; // the swizzle's group of M tiles, or split_k's parts
    int64_t clusterM = 1;
    sched::EpilogueKind epilogue = sched::EpilogueKind::Registers;
  };

  /// The directives of `c`, each pointing at the knob that decided it (else the `= auto`).
  void matmulDirectives(Block &block, const std::string &k, const MatmulChoice &c) const {
    llvm::SMRange header = header_.range;
    auto count = [&](int64_t v, llvm::SMRange at) { return sched::Count{v, at}; };
    llvm::SMRange tileAt = at("tile_n");
    llvm::SMRange groupsAt = knobs_.pingpong ? at("pingpong") : header;
    block.add(sched::Mma{{k, header},
                         {count(c.tileM, groupsAt), count(c.tileN, tileAt), count(64, header)},
                         {count(64, header), count(c.tileN, tileAt)},
                         {"wgmma", header},
                         {count(64, header), count(c.tileN, tileAt), count(16, header)}},
              knobs_.tileN ? tileAt : header);
    block.add(sched::Pipeline{count(c.stages, at("stages")), true},
              knobs_.stages ? at("stages") : header);
    block.add(sched::WarpSpecialize{count(40, header), count(2, groupsAt), count(232, header)},
              knobs_.pingpong ? groupsAt : header);
    llvm::SMRange orderAt = c.order == sched::TileOrder::SplitK && knobs_.splitK ? at("split_k")
                            : c.order == sched::TileOrder::StreamK && knobs_.streamK
                                ? at("stream_k")
                            : knobs_.swizzle && c.order != sched::TileOrder::SplitK ? at("swizzle")
                                                                                    : header;
    block.add(sched::Tiles{c.order, count(c.orderParameter, orderAt)}, orderAt);
    if (c.clusterM > 1)
      block.add(
          sched::Cluster{{count(c.clusterM, at("cluster_m")), count(1, at("cluster_m"))}, true},
          at("cluster_m"));
    block.add(sched::Epilogue{c.epilogue}, header);
  }

  /// As the hand schedule of examples/linear_bias_gelu.fsl, the fastest measured on the
  /// H200 (docs/performance.md): 128 x 256 tiles, persistent in groups of 8 M tiles, a
  /// producer warpgroup; the epilogue through shared memory and TMA stores when there is
  /// one output over [M, N] whose rows TMA can store (a static N), through shared memory
  /// and the threads for a runtime N, in registers otherwise. By the number of rows M:
  ///   M < 64          split_k: one row of tiles leaves most SMs idle, and the product
  ///                   is bound by reading w; K is split so that every SM streams a part
  ///                   (ceil(SMs / tiles along N) parts, at most 8, each of 4 k tiles or
  ///                   more); measured 42 against 32 TFLOP/s at M = 16, N = 14336.
  ///   M < two waves   128 x 128 tiles (twice as many CTAs busy: 364 against 205 TFLOP/s
  ///                   at M = 128, N = 14336, K = 5120).
  ///   otherwise       128 x 256 tiles; stream_k instead of persistent when M and N are
  ///                   static and the last wave would keep at most a third of the SMs
  ///                   busy (the last two waves' k tiles are then spread evenly).
  /// Knobs override single choices: tile_n (128 or 256), stages, swizzle, split_k,
  /// stream_k (true or false), cluster_m (1, 2 or 4: cluster (C, 1) multicast).
  Choice matmul(const ir::Value &product) {
    if (target_.arch != "sm_90a")
      return {{},
              "auto(matmul) schedules wgmma and TMA: it needs an sm_90a target (" + target_.name +
                  " is " + target_.arch + ")"};
    for (const auto &[name, set] : written())
      if (set)
        refuse(name, "auto(matmul) has no such knob (it takes tile_n, stages, swizzle, split_k, "
                     "stream_k and cluster_m)");
    ir::DimId m = product.lhsLayout->rowDim, n = product.rhsLayout->rowDim,
              k = product.reduced.at(0);
    const ir::Dim &mDim = fusion_.dims[m], &nDim = fusion_.dims[n], &kDim = fusion_.dims[k];
    // Two products of one a (SwiGLU's gate and up) share a kernel: two accumulator sets, so
    // 128 x 128 tiles (64 + 64 accumulators a thread), one tile order (persistent).
    twoProducts_ =
        llvm::count_if(fusion_.values, [](const auto &v) { return v->op == ir::Op::MatMul; }) == 2;
    sched::EpilogueKind epilogue = sched::EpilogueKind::Registers;
    std::string epilogueWhy =
        "in registers (several outputs, or one not over [" + mDim.name + ", " + nDim.name + "])";
    int64_t outputBytes = 0;
    if (fusion_.outputs.size() == 1 && fusion_.outputs[0].dims.size() == 2 &&
        fusion_.outputs[0].dims[0] == m && fusion_.outputs[0].dims[1] == n) {
      outputBytes = ir::dtypeBytes(fusion_.outputs[0].dtype);
      if (nDim.staticExtent && *nDim.staticExtent * outputBytes % 16 == 0) {
        epilogue = sched::EpilogueKind::SharedTmaStore;
        epilogueWhy = "through shared memory and TMA stores";
      } else if (!nDim.staticExtent) {
        epilogue = sched::EpilogueKind::Shared;
        epilogueWhy = "through shared memory, copied out by the threads (a runtime " + nDim.name +
                      " may leave rows TMA cannot store)";
      } else {
        epilogueWhy = "in registers (rows of " + std::to_string(*nDim.staticExtent) +
                      " elements are not 16-byte multiples)";
      }
    }
    // A refused knob is reported by run(), which then drops the choice; an invalid
    // tile_n is not used to pick the rest.
    checkMatmulKnobs();
    std::optional<int64_t> tileNKnob = knobs_.tileN;
    if (tileNKnob && *tileNKnob != 128 && *tileNKnob != 256)
      tileNKnob.reset();
    int64_t operandBytes = 2;
    // Stages: what the shared memory holds after the epilogue's tile, at most `most`.
    auto stagesFit = [&](const MatmulChoice &c) {
      int64_t stage = (c.tileM + c.tileN * (twoProducts_ ? 2 : 1)) * 64 * operandBytes + 16;
      int64_t tile = c.epilogue == sched::EpilogueKind::Registers
                         ? 0
                         : c.groups * c.tileM * c.tileN * outputBytes;
      return (target_.sharedMemoryPerBlock - tile - 16 * (c.groups - 1)) / stage;
    };
    auto tilesOf = [&](const ir::Dim &dim, int64_t tile) -> std::optional<int64_t> {
      if (!dim.staticExtent)
        return std::nullopt;
      return (*dim.staticExtent + tile - 1) / tile;
    };
    int64_t tilesAlongN = nDim.staticExtent ? (*nDim.staticExtent + 255) / 256 : 0;
    int64_t twoWaves =
        tilesAlongN > 0 ? 128 * ((2 * target_.smCount + tilesAlongN - 1) / tilesAlongN) : 512;
    // One choice for rows in [low, high) (nullopt: unbounded).
    auto choose = [&](std::optional<int64_t> low, std::optional<int64_t> high, Block &block) {
      MatmulChoice c;
      c.epilogue = epilogue;
      std::string epilogueHow = epilogueWhy, groupsWhy;
      bool fewRows = high && *high <= 64 && !twoProducts_;
      c.tileN = tileNKnob ? *tileNKnob : (twoProducts_ || (high && !fewRows) ? 128 : 256);
      std::string orderWhy = "persistent CTAs in groups of " +
                             std::to_string(knobs_.swizzle ? *knobs_.swizzle : 8) + " M tiles";
      // split_k for few rows, unless a knob asks for another order.
      int64_t parts = 1;
      if (knobs_.splitK) {
        parts = *knobs_.splitK;
        honour("split_k");
      } else if (fewRows && !knobs_.streamK.value_or(false) && !knobs_.swizzle &&
                 !knobs_.clusterM) {
        std::optional<int64_t> alongN = tilesOf(nDim, c.tileN);
        parts = alongN ? std::clamp<int64_t>((target_.smCount + *alongN - 1) / *alongN, 1, 8) : 3;
        if (std::optional<int64_t> kTiles = tilesOf(kDim, 64))
          parts = std::max<int64_t>(1, std::min(parts, *kTiles / 4));
      }
      if (parts > 1) {
        c.order = sched::TileOrder::SplitK;
        c.orderParameter = parts;
        c.epilogue = sched::EpilogueKind::Registers;
        orderWhy = knobs_.splitK
                       ? "K split in " + std::to_string(parts) + " parts (split_k)"
                       : llvm::formatv("K split in {0} parts: {1} rows leave most SMs idle and "
                                       "the product is bound by reading {2}; each SM streams a "
                                       "part",
                                       parts, "fewer than 64", product.rhsLayout->inputName)
                             .str();
        epilogueHow = "in registers, in the kernel that adds the parts";
      } else {
        c.orderParameter = knobs_.swizzle ? *knobs_.swizzle : 8;
        // Ping-pong: two consumer groups on alternate 64 x tile_n tiles, one group's
        // epilogue under the other's products. It pays where the epilogue is a large share,
        // a short K (measured at 64 k tiles: +13 % at 4096^3, +11 % at 3000 x 7000 x 2000;
        // at 224 k tiles, 4096 x 5120 x 14336, -10 %), among the 128 x 256 choices.
        std::optional<int64_t> kTiles = tilesOf(kDim, 64);
        bool pingpong = knobs_.pingpong.value_or(!twoProducts_ && !high && c.tileN == 256 &&
                                                 kTiles && *kTiles <= 64 && !knobs_.clusterM);
        if (knobs_.pingpong)
          honour("pingpong");
        if (pingpong) {
          c.tileM = 64;
          c.groups = 2;
          groupsWhy = knobs_.pingpong
                          ? "two consumer groups on alternate 64-row tiles (pingpong)"
                          : llvm::formatv("two consumer groups on alternate 64-row tiles, one's "
                                          "epilogue under the other's products ({0} k tiles: the "
                                          "epilogue is a large share)",
                                          *kTiles)
                                .str();
        }
        bool streamK = knobs_.streamK.value_or(false);
        std::optional<int64_t> rows = tilesOf(mDim, c.tileM), columns = tilesOf(nDim, c.tileN);
        if (!knobs_.streamK && !knobs_.clusterM && !twoProducts_ && rows && columns && !high) {
          int64_t tiles = *rows * *columns, tail = tiles % target_.smCount;
          if (tiles >= 2 * target_.smCount && tail > 0 && 3 * tail <= target_.smCount) {
            streamK = true;
            orderWhy = llvm::formatv("stream-K: {0} tiles leave a last wave of {1} on {2} SMs; "
                                     "the last two waves' k tiles are spread evenly",
                                     tiles, tail, target_.smCount)
                           .str();
          }
        }
        if (knobs_.streamK)
          honour("stream_k");
        if (streamK) {
          c.order = sched::TileOrder::StreamK;
          if (knobs_.streamK)
            orderWhy = "stream-K (stream_k)";
        }
        if (knobs_.swizzle)
          honour("swizzle");
        if (knobs_.clusterM) {
          c.clusterM = *knobs_.clusterM;
          honour("cluster_m");
        }
      }
      int64_t fit = stagesFit(c);
      c.stages =
          std::max<int64_t>(1, std::min<int64_t>(c.tileN == 128 || c.groups > 1 ? 5 : 4, fit));
      if (knobs_.stages) {
        honour("stages");
        if (*knobs_.stages > fit)
          refuse("stages",
                 llvm::formatv("{0} stages of 128 x 64 and {1} x 64 operand tiles do not fit in "
                               "the {2} bytes of shared memory a block has on {3} beside the "
                               "epilogue's tile: at most {4}",
                               *knobs_.stages, c.tileN, target_.sharedMemoryPerBlock, target_.name,
                               fit)
                     .str());
        c.stages = *knobs_.stages;
      }
      if (tileNKnob)
        honour("tile_n");
      std::string rowsWhy = "auto(matmul)";
      if (twoProducts_)
        rowsWhy += ", two products of " + product.lhsLayout->inputName +
                   " in one kernel (a second b tile a stage, a second accumulator set)";
      if (low && high)
        rowsWhy += llvm::formatv(", {0} to {1} rows", *low, *high - 1).str();
      else if (high)
        rowsWhy += llvm::formatv(", fewer than {0} rows", *high).str();
      else if (low)
        rowsWhy += llvm::formatv(", {0} rows or more", *low).str();
      if (fewRows)
        rowsWhy += ": the product reads " + product.rhsLayout->inputName + " once, by few CTAs";
      else if (high && *high == twoWaves)
        rowsWhy += llvm::formatv(" (fewer than two waves of 128 x 256 tiles on {0} SMs): "
                                 "smaller tiles",
                                 target_.smCount)
                       .str();
      rowsWhy += ".";
      block.reasons.push_back(rowsWhy);
      block.reasons.push_back(
          llvm::formatv("{5} x {0} tiles, two consumer warpgroups of 64 x {0} and a producer "
                        "(40 / 232 registers){6}, {1} stages (the shared memory left by the "
                        "epilogue), {2}{3}; the epilogue {4}.",
                        c.tileN, c.stages, orderWhy,
                        c.clusterM > 1 ? ", clusters of " + std::to_string(c.clusterM) +
                                             " M tiles sharing the b tile (multicast)"
                                       : "",
                        epilogueHow, c.tileM, groupsWhy.empty() ? "" : ": " + groupsWhy)
              .str());
      matmulDirectives(block, kDim.name, c);
    };
    // The ranges of M with their own choice: few rows (split_k), fewer than two waves of
    // 128 x 256 tiles (128 x 128 tiles), the rest. Knobs that fix what a range changes
    // merge it with its neighbour.
    std::vector<int64_t> bounds;
    if (!knobs_.splitK && !knobs_.streamK.value_or(false) && !knobs_.swizzle && !knobs_.clusterM &&
        !twoProducts_)
      bounds.push_back(64);
    if (!tileNKnob && !twoProducts_)
      bounds.push_back(twoWaves);
    std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges;
    std::optional<int64_t> low;
    for (int64_t bound : bounds) {
      ranges.push_back({low, bound});
      low = bound;
    }
    ranges.push_back({low, std::nullopt});
    std::vector<sched::ScheduleBlock> blocks;
    if (!knobs_.when.empty()) {
      // The user's guard: one choice, as for a runtime M below two waves (128 x 128 tiles
      // unless tile_n says otherwise).
      Block block;
      choose(std::nullopt, tileNKnob ? std::nullopt : std::optional<int64_t>(twoWaves), block);
      blocks.push_back(finish(std::move(block), knobs_.when));
      return {std::move(blocks), ""};
    }
    for (const auto &[from, to] : ranges) {
      if (mDim.staticExtent) {
        // A static M: the choice of its range alone.
        if ((from && *mDim.staticExtent < *from) || (to && *mDim.staticExtent >= *to))
          continue;
        Block block;
        choose(from, to, block);
        block.reasons.front() = "auto(matmul), " + std::to_string(*mDim.staticExtent) + " rows.";
        blocks.push_back(finish(std::move(block), {}));
        break;
      }
      Block block;
      choose(from, to, block);
      std::vector<sched::SizeGuard> when;
      if (from)
        when.push_back({m, mDim.name, sched::Comparison::Ge, *from, header_.range});
      if (to)
        when.push_back({m, mDim.name, sched::Comparison::Lt, *to, header_.range});
      blocks.push_back(finish(std::move(block), when));
    }
    return {std::move(blocks), ""};
  }

  /// The matmul knobs' values: refused at the knob when out of range or in conflict.
  bool checkMatmulKnobs() {
    size_t before = refused_.size();
    if (knobs_.tileN && *knobs_.tileN != 128 && *knobs_.tileN != 256)
      refuse("tile_n", "the CTA tile is 128 x tile_n with two consumer warpgroups of 64 x "
                       "tile_n: 128 or 256");
    if (twoProducts_) {
      const char *why = "two products of one a keep two accumulator sets: 128 x 128 tiles, "
                        "persistent, one consumer group";
      if (knobs_.tileN && *knobs_.tileN != 128)
        refuse("tile_n", why);
      if (knobs_.splitK && *knobs_.splitK > 1)
        refuse("split_k", why);
      if (knobs_.streamK.value_or(false))
        refuse("stream_k", why);
      if (knobs_.pingpong.value_or(false))
        refuse("pingpong", why);
      if (knobs_.clusterM && *knobs_.clusterM > 1)
        refuse("cluster_m", why);
    }
    if (knobs_.splitK && *knobs_.splitK > 64)
      refuse("split_k", "split_k takes 1 to 64 parts of K");
    if (knobs_.splitK && *knobs_.splitK > 1 && knobs_.streamK.value_or(false))
      refuse("split_k", "split_k and stream_k = true are two tile orders: keep one");
    if (knobs_.splitK && *knobs_.splitK > 1 && knobs_.swizzle)
      refuse("swizzle",
             "swizzle orders persistent and stream-K tiles; split_k runs one tile a CTA");
    if (knobs_.clusterM && *knobs_.clusterM != 1 && *knobs_.clusterM != 2 && *knobs_.clusterM != 4)
      refuse("cluster_m", "clusters of 1, 2 or 4 M tiles are lowered");
    if (knobs_.pingpong.value_or(false) && knobs_.splitK && *knobs_.splitK > 1)
      refuse("pingpong", "two consumer groups take alternate tiles of a persistent or stream-K "
                         "CTA; split_k runs one tile a CTA");
    if (knobs_.pingpong.value_or(false) && knobs_.clusterM && *knobs_.clusterM > 1)
      refuse("pingpong", "two consumer groups with clusters are not lowered");
    if (knobs_.pingpong.value_or(false) && knobs_.tileN && *knobs_.tileN != 256)
      refuse("pingpong", "two consumer groups take 64 x 256 tiles: leave tile_n at 256");
    if (knobs_.clusterM && *knobs_.clusterM > 1 &&
        ((knobs_.splitK && *knobs_.splitK > 1) || knobs_.streamK.value_or(false)))
      refuse("cluster_m", "clusters run with persistent tiles, not with split_k or stream_k");
    return refused_.size() == before;
  }

  /// Each knob and whether it is set.
  std::vector<std::pair<std::string, bool>> written() const {
    return {{"static_bdimx", knobs_.staticBdimx.has_value()},
            {"compute_with", knobs_.computeWith.has_value()},
            {"vector_width", knobs_.vectorWidth.has_value()},
            {"unroll", knobs_.unroll.has_value()},
            {"persistent_batch", knobs_.persistentBatch.has_value()},
            {"rows_per_block", knobs_.rowsPerBlock.has_value()},
            {"one_pass", knobs_.onePass.has_value()},
            {"fast_exp", knobs_.fastExp.has_value()}};
  }
  void honour(const std::string &knob) { honoured_.insert(knob); }
  /// Where a directive the knob decided points: the knob when it is written, else the
  /// `= auto` declaration (or the fusion).
  llvm::SMRange at(const std::string &knob) const {
    auto found = knobs_.ranges.find(knob);
    return found != knobs_.ranges.end() ? found->second : header_.range;
  }
  /// Whether every reduction's result reaches only values without the reduced dimension
  /// `inner` (row outputs: argmax's token, a row's sum), and no output has it: what a grid
  /// reduction can do (lower/Plan.cpp).
  bool rowOutputsOnly(ir::DimId inner) const {
    // An inout row (written back by every block of a grid loop) is left to one block a row.
    for (const ir::Output &output : fusion_.outputs)
      if (llvm::is_contained(output.dims, inner) || output.isInout)
        return false;
    for (const auto &reduction : fusion_.values) {
      if (!ir::isReduction(reduction->op))
        continue;
      std::set<unsigned> reached{reduction->id};
      for (const auto &value : fusion_.values)
        if (llvm::any_of(value->operands,
                         [&](const ir::Value *operand) { return reached.count(operand->id); })) {
          reached.insert(value->id);
          if (llvm::is_contained(value->dims, inner))
            return false;
        }
    }
    return true;
  }

  RowRanges rowRanges() const {
    return {at("vector_width"), at(knobs_.persistentBatch ? "persistent_batch" : "static_bdimx"),
            at("rows_per_block"), header_.range};
  }
  sched::ScheduleBlock finish(Block block, std::vector<sched::SizeGuard> when) const {
    if (fastExp_) {
      block.reasons.push_back(fastExpReason_.empty()
                                  ? "fast_exp (fast_exp = true): f32 exp as __expf."
                                  : fastExpReason_);
      block.add(sched::FastExp{}, at("fast_exp"));
    }
    return std::move(block).finish(header_, std::move(when));
  }

  /// `fast_exp`: the knob's choice (refused without an f32 exp); by default, when every
  /// output an f32 exp reaches is stored in a 16-bit float type, whose rounding (2^-9
  /// relative for bf16) dwarfs __expf's error (about |x| 2^-24, at most 2^-17). Measured on
  /// the H200 (docs/performance.md, issue 17): softmax 3-11 % faster at T = 1024.
  void chooseFastExp() {
    std::vector<bool> reaches(fusion_.values.size(), false); // depends on an f32 exp
    bool any = false;
    for (const auto &value : fusion_.values) { // operands come first
      bool exp = value->op == ir::Op::Exp && value->dtype == ir::DType::F32;
      any |= exp;
      for (const ir::Value *operand : value->operands)
        exp |= reaches[operand->id];
      reaches[value->id] = exp;
    }
    bool narrow = any;
    for (const ir::Output &output : fusion_.outputs)
      if (reaches[output.value->id] && output.dtype != ir::DType::BF16 &&
          output.dtype != ir::DType::F16)
        narrow = false;
    fastExp_ = any && knobs_.fastExp.value_or(narrow);
    if (fastExp_ && !knobs_.fastExp)
      fastExpReason_ = "fast_exp: every output the f32 exp reaches is 16-bit, whose rounding "
                       "dwarfs __expf's error (fast_exp = false keeps expf).";
    if (!knobs_.fastExp)
      return;
    if (!any)
      refuse("fast_exp", "'" + fusion_.name + "' computes no f32 exp; remove the knob");
    else
      honour("fast_exp");
  }
  void refuse(const std::string &knob, const std::string &reason) {
    honoured_.insert(knob);
    for (const auto &[name, first] : refused_)
      if (name == knob)
        return; // one error a knob: its first reason
    refused_.emplace_back(knob, reason);
  }

  /// Vector width: the knob's exactly, or up to 16 bytes, a power of two dividing the
  /// static extent.
  int64_t vectorWidth(ir::DimId dim, std::string &why) {
    const ir::Dim &d = fusion_.dims[dim];
    // A vector loop is the innermost loop of every input and output that has it: one
    // that keeps `dim` outer (a transposed output) gets scalar accesses throughout.
    if (std::optional<std::string> across = outerIn(dim)) {
      if (knobs_.vectorWidth && *knobs_.vectorWidth > 1)
        refuse("vector_width",
               *across + ", and a vector loop must be the innermost loop of every input and "
                         "output that has it; use vector_width = 1, or write the schedule by "
                         "hand");
      else if (knobs_.vectorWidth)
        honour("vector_width");
      why = *across + ": scalar accesses";
      return 1;
    }
    unsigned bytes = widestElement(fusion_, dim);
    int64_t widest = 16 / bytes;
    if (d.staticExtent)
      while (widest > 1 && *d.staticExtent % widest != 0)
        widest /= 2;
    if (knobs_.vectorWidth) {
      int64_t width = *knobs_.vectorWidth;
      if (width == 1) {
        honour("vector_width");
        why = "vector_width = 1: scalar accesses";
        return 1;
      }
      if (!d.staticExtent)
        refuse("vector_width", d.name +
                                   " is a runtime size, and vectors need a static extent "
                                   "they divide; give " +
                                   d.name + " a static size or remove the knob");
      else if (width * bytes > 16)
        refuse("vector_width", llvm::formatv("{0} x {1}-byte elements are {2} bytes, over the 16 "
                                             "bytes of one access; use vector_width = {3} or less",
                                             width, bytes, width * bytes, widest)
                                   .str());
      else if (*d.staticExtent % width != 0)
        refuse("vector_width",
               llvm::formatv("{0} does not divide {1} = {2}; use vector_width = {3} or less", width,
                             d.name, *d.staticExtent, widest)
                   .str());
      else {
        honour("vector_width");
        why = llvm::formatv("vector_width = {0}: {0} x {1} bytes = {2}-byte accesses", width, bytes,
                            width * bytes)
                  .str();
        return width;
      }
    }
    if (!d.staticExtent) {
      why =
          d.name + " is a runtime size: scalar accesses (vectors need a static extent they divide)";
      return 1;
    }
    why = llvm::formatv("{0} x {1} bytes = {2}-byte accesses", widest, bytes, widest * bytes).str();
    return widest;
  }

  /// "'yt' is [H, T]" for the first input or output that has `dim` but not as its
  /// innermost (contiguous) dimension; none when every one that has it ends with it.
  std::optional<std::string> outerIn(ir::DimId dim) const {
    auto layout = [&](const std::vector<ir::DimId> &dims) {
      std::vector<std::string> names;
      for (ir::DimId each : dims)
        names.push_back(fusion_.dims[each].name);
      return "[" + llvm::join(names, ", ") + "]";
    };
    auto outer = [&](const std::vector<ir::DimId> &dims) {
      return llvm::is_contained(dims, dim) && dims.back() != dim;
    };
    for (const ir::Param &param : fusion_.params)
      if (outer(param.dims))
        return "'" + param.name + "' is " + layout(param.dims) + ", with " +
               fusion_.dims[dim].name + " outer";
    for (const ir::Output &output : fusion_.outputs)
      if (outer(output.dims))
        return "'" + output.name + "' is " + layout(output.dims) + ", with " +
               fusion_.dims[dim].name + " outer";
    return std::nullopt;
  }

  /// The contiguous dimension and the others of the reference layout.
  bool layout(ir::DimId &inner, std::vector<ir::DimId> &rows, std::string &why) {
    const ir::Output *reference = referenceOutput(fusion_);
    std::vector<ir::DimId> dims = reference->dims;
    dims.insert(dims.end(), reference->value->reduced.begin(), reference->value->reduced.end());
    // The largest input's layout decides when the output is a reduction; otherwise the
    // output's own (a transposed input is read across its rows).
    if (!reference->value->reduced.empty())
      for (const ir::Param &param : fusion_.params)
        if (param.dims.size() >= dims.size())
          dims = param.dims;
    if (dims.empty() || dims.size() > 2) {
      why = "the heuristics handle fusions of one or two dimensions for now";
      return false;
    }
    inner = dims.back();
    rows.assign(dims.begin(), dims.end() - 1);
    return true;
  }

  Choice pointwise() {
    // Its loops would put a reduced dimension on blocks: a reduction needs its heuristic.
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op)) {
        std::vector<std::string> names;
        for (ir::DimId dim : value->reduced)
          names.push_back(fusion_.dims[dim].name);
        return {{},
                "auto(pointwise) schedules fusions without reductions, and '" + fusion_.name +
                    "' reduces over " + llvm::join(names, ", ") + ": use auto(" +
                    classify(fusion_) + ")"};
      }
    ir::DimId inner;
    std::vector<ir::DimId> rows;
    std::string why;
    if (!layout(inner, rows, why))
      return {{}, why};
    const ir::Dim &d = fusion_.dims[inner];
    std::string vectorWhy;
    int64_t vector = vectorWidth(inner, vectorWhy);
    // unroll = N: each thread makes N accesses a block's width apart (so each stays
    // coalesced), in an unrolled loop: fewer blocks, more loads in flight a thread.
    int64_t unroll = knobs_.unroll.value_or(1);
    if (knobs_.unroll) {
      // The accesses a thread has: with a static row, ceil(vectors / 128); more would be
      // predicated off. At most the 32 of a batch the prefetch pass loads ahead.
      std::optional<int64_t> accesses;
      if (d.staticExtent)
        accesses = ceilDiv(ceilDiv(*d.staticExtent, vector), 128);
      if (accesses && unroll > *accesses)
        refuse("unroll",
               llvm::formatv("{0} = {1} in accesses of {2} element{3} gives each of the 128 "
                             "threads {4} access{5}; use unroll = {4}{6}",
                             d.name, *d.staticExtent, vector, vector == 1 ? "" : "s", *accesses,
                             *accesses == 1 ? "" : "es", *accesses == 1 ? "" : " or less")
                   .str());
      else if (unroll > kMaxUnroll)
        refuse("unroll",
               llvm::formatv("an unrolled batch is at most {0} accesses a thread (the prefetch "
                             "pass loads up to {0} ahead; more only lengthens the code); use "
                             "unroll = {0} or less",
                             kMaxUnroll)
                   .str());
      else
        honour("unroll");
    }
    Block block;
    block.reasons.push_back(
        "auto(pointwise): " + vectorWhy + "; 128 threads a block, " +
        (unroll > 1
             ? llvm::formatv("{0} accesses each, 128 accesses apart (unroll = {0})", unroll).str()
             : std::string(knobs_.unroll ? "one access each (unroll = 1)" : "one access each")) +
        ".");
    if (vector > 1)
      block.split(d.name, vector, d.name + "o", d.name + "v", at("vector_width"));
    std::string base = vector > 1 ? d.name + "o" : d.name;
    if (unroll > 1) {
      block.split(base, 128, d.name + "q", d.name + "x", header_.range);
      block.split(d.name + "q", unroll, d.name + "b", d.name + "u", at("unroll"));
    } else {
      block.split(base, 128, d.name + "b", d.name + "x", header_.range);
    }
    if (rows.empty())
      block.parallelize(
          {{d.name + "b", sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}},
          header_.range);
    else
      block.parallelize({{fusion_.dims[rows[0]].name, sched::Parallel::BIDx},
                         {d.name + "b", sched::Parallel::BIDy},
                         {d.name + "x", sched::Parallel::TIDx}},
                        header_.range);
    if (vector > 1)
      block.vectorize(d.name + "v", at("vector_width"));
    if (unroll > 1)
      block.unroll(d.name + "u", at("unroll"));
    return {{finish(std::move(block), knobs_.when)}, ""};
  }

  /// Persistent buffers: values a reduction consumes and a later use needs. One that
  /// itself waits for a reduction is kept only when recomputing it costs a transcendental
  /// function (softmax's exp(x - max)); others are cheap to recompute from the buffer.
  std::vector<const sched::TensorSchedule *>
  buffers(const std::vector<sched::TensorSchedule> &tensors) {
    std::vector<const sched::TensorSchedule *> result;
    for (const sched::TensorSchedule &tensor : tensors) {
      // A reduction's result is one value a row, in a register: no buffer.
      if (!tensor.isPersistentBuffer || tensor.isOutput ||
          tensor.name.find('%') != std::string::npos || ir::isReduction(tensor.value->op))
        continue;
      bool afterReduction = false;
      std::vector<const ir::Value *> stack = {tensor.value};
      while (!stack.empty()) {
        const ir::Value *v = stack.back();
        stack.pop_back();
        for (const ir::Value *operand : v->operands) {
          afterReduction |= ir::isReduction(operand->op);
          stack.push_back(operand);
        }
      }
      if ((!afterReduction || expensive(tensor.value, tensors)) &&
          !(onePass_ && bufferOnlyInTwoPasses(tensor.value)))
        result.push_back(&tensor);
    }
    return result;
  }

  /// Whether `value` follows the first reduction of a one-pass pair and feeds no
  /// reduction but pairs' second ones (softmax's exp(x - max)): in one pass nothing
  /// reduces it before its later use, so it is no buffer.
  bool bufferOnlyInTwoPasses(const ir::Value *value) const {
    std::set<const ir::Value *> firsts, seconds;
    for (const ir::OnePassPair &pair : pairs_) {
      firsts.insert(pair.first);
      seconds.insert(pair.second);
    }
    bool afterFirst = false;
    std::vector<const ir::Value *> stack = {value};
    std::set<const ir::Value *> seen;
    while (!stack.empty()) {
      const ir::Value *v = stack.back();
      stack.pop_back();
      for (const ir::Value *operand : v->operands)
        if (seen.insert(operand).second) {
          afterFirst |= firsts.count(operand) != 0;
          stack.push_back(operand);
        }
    }
    if (!afterFirst)
      return false;
    // The reductions that read it, directly or through pointwise values.
    std::set<const ir::Value *> reached = {value};
    for (const auto &user : fusion_.values)
      for (const ir::Value *operand : user->operands)
        if (reached.count(operand) && !ir::isReduction(operand->op) && !reached.count(user.get())) {
          if (ir::isReduction(user->op) && !seconds.count(user.get()))
            return false;
          reached.insert(user.get());
        }
    return true;
  }

  /// `one_pass`: the knob's choice, refused without a pair; else kOnePassByDefault.
  void chooseOnePass() {
    pairs_ = ir::findOnePassPairs(fusion_);
    onePass_ = !pairs_.empty() && knobs_.onePass.value_or(kOnePassByDefault);
    if (!knobs_.onePass)
      return;
    if (pairs_.empty())
      refuse("one_pass", "'" + fusion_.name +
                             "' has no pair of reductions that one pass could compute together "
                             "(softmax's max(a) and sum(exp(a - max)), or LayerNorm's mean(a) "
                             "and mean((a - mean)^2), over the same dimensions); remove the knob");
    else
      honour("one_pass");
  }

  /// `reduce one_pass;` and its reason, when chosen.
  void onePassDirective(Block &block) {
    if (!onePass_)
      return;
    std::vector<std::string> names;
    for (const ir::OnePassPair &pair : pairs_)
      names.push_back((pair.kind == ir::OnePassKind::MaxExpSum ? "online softmax (" : "Welford (") +
                      (pair.first->name.empty() ? "max" : pair.first->name) + ", " +
                      (pair.second->name.empty() ? std::string(ir::opName(pair.second->op))
                                                 : pair.second->name) +
                      ")");
    block.reasons.push_back("reduce one_pass" +
                            std::string(knobs_.onePass ? " (one_pass = true)" : "") + ": " +
                            llvm::join(names, ", ") +
                            " in one pass over the row, one block "
                            "reduction a pair.");
    block.add(sched::ReduceForm{true}, at("one_pass"));
  }

  /// Computing `value` from the nearest tensors involves exp, log, tanh, erf, sigmoid or pow.
  static bool expensive(const ir::Value *value, const std::vector<sched::TensorSchedule> &tensors) {
    auto isTensor = [&](const ir::Value *v) {
      for (const sched::TensorSchedule &t : tensors)
        if (t.value == v)
          return true;
      return false;
    };
    std::vector<const ir::Value *> stack = {value};
    while (!stack.empty()) {
      const ir::Value *v = stack.back();
      stack.pop_back();
      switch (v->op) {
      case ir::Op::Exp:
      case ir::Op::Log:
      case ir::Op::Tanh:
      case ir::Op::Erf:
      case ir::Op::Sigmoid:
      case ir::Op::Pow:
        return true;
      default:
        break;
      }
      for (const ir::Value *operand : v->operands)
        if (!isTensor(operand))
          stack.push_back(operand);
    }
    return false;
  }

  Choice reductionLike(bool persistent) {
    ir::DimId inner;
    std::vector<ir::DimId> rows;
    std::string why;
    if (!layout(inner, rows, why))
      return {{}, why};
    std::set<ir::DimId> reduced;
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op))
        reduced.insert(value->reduced.begin(), value->reduced.end());
    if (reduced.size() != 1)
      return {{}, "the reduction heuristics handle fusions that reduce one dimension"};
    ir::DimId r = *reduced.begin();
    chooseOnePass();
    if (r != inner)
      return outerReduction(r, inner);
    if (rows.size() != 1)
      return {{}, "an inner reduction needs one row dimension"};
    const ir::Dim &d = fusion_.dims[inner];
    const std::string row = fusion_.dims[rows[0]].name;
    std::string vectorWhy;
    int64_t vector = vectorWidth(inner, vectorWhy);
    bool staticBdimx = knobs_.staticBdimx.value_or(true);

    std::vector<sched::TensorSchedule> tensors = sched::rootTensors(fusion_);
    std::vector<const sched::TensorSchedule *> kept =
        persistent ? buffers(tensors) : std::vector<const sched::TensorSchedule *>{};
    int64_t numBuffers = std::max<int64_t>(1, static_cast<int64_t>(kept.size()));

    if (!d.staticExtent) {
      // A runtime row length: guarded variants for rows that whole vectors divide, then
      // threads that cover any row in a loop (dynamic blockDim-free split).
      std::string noVariants;
      std::vector<sched::ScheduleBlock> blocks =
          runtimeRowVariants(inner, rows[0], kept, persistent, noVariants);
      Block block;
      block.reasons.push_back(
          llvm::formatv("auto({0}): {1} is a runtime size{2}: 256 threads loop over the row; "
                        "values are recomputed (no static buffer size).",
                        persistent ? "inner_persistent" : "reduction", d.name,
                        blocks.empty() ? noVariants : ", and no variant above applies")
              .str());
      block.split(d.name, 256, d.name + "p", d.name + "x", at("static_bdimx"));
      block.parallelize({{row, sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}},
                        header_.range);
      for (const sched::TensorSchedule *buffer : kept)
        block.persistent(buffer->name, sched::MemoryKind::Recompute, header_.range);
      onePassDirective(block);
      // 256 threads is a static blockDim.x, the variants' is not; the rest needs a
      // static row to size it.
      if (staticBdimx || !blocks.empty())
        honour("static_bdimx");
      unused_ =
          d.name +
          (blocks.empty() ? " is a runtime size: 256 threads loop over the row, one row a block, "
                            "and buffers are recomputed; the knob needs a static "
                          : " is a runtime size: the variants split rows that whole vectors divide "
                            "by a fixed batch, and other rows loop over 256 threads with buffers "
                            "recomputed; the knob needs a static ") +
          d.name;
      blocks.push_back(finish(std::move(block), knobs_.when));
      return {std::move(blocks), ""};
    }

    int64_t vectors = ceilDiv(*d.staticExtent, vector);
    // Register budget for buffers: 64 f32 values a thread keeps occupancy near 50%. The
    // batch is at most 4 vectors a thread: measured on the H200 (docs/performance.md,
    // change 5), 256 threads x 4 beat 128 x 8 at H = 8192 and 512 x 4 beat 256 x 8 at
    // H = 16384 (the larger batch's registers halve the warps an SM holds).
    // Rows of 2048 vectors or more (H = 16384 bf16) take 8 a thread, 256 threads: once the
    // block reductions were given their static width (issue 17), 256 x 8 beat 512 x 4 at
    // H = 16384 for softmax by 4-9 % and RMSNorm by 0-2 %, LayerNorm within 2 % either way
    // (softmax's second buffer reuses the first's registers: 80 registers, not 128). With
    // three buffers or more, the register budget decides as for shorter rows.
    const int64_t registerBudget = 64, batchTarget = 4;
    int64_t batchLimit = knobs_.persistentBatch.value_or(
        !persistent ? 16
        : vectors >= 2048 && numBuffers <= 2
            ? 8
            : std::clamp<int64_t>(registerBudget / (vector * numBuffers), 1, batchTarget));
    auto choose = [&](int64_t minThreads) {
      RowSplit split;
      split.vector = vector;
      if (knobs_.persistentBatch) {
        // The knob is the batch: the fewest threads that cover the row with it (whole
        // warps when blockDim.x is static), checked below.
        split.batch = *knobs_.persistentBatch;
        split.threads = ceilDiv(vectors, split.batch);
        if (staticBdimx)
          split.threads = roundUp(split.threads, 32);
      } else {
        split.threads = std::clamp(roundUp(ceilDiv(vectors, batchLimit), 32),
                                   std::min<int64_t>(minThreads, roundUp(vectors, 32)),
                                   target_.maxThreadsPerBlock);
        split.batch = ceilDiv(vectors, split.threads);
        if (!staticBdimx) // the baseline: batch first, threads = what is left
          split.threads = ceilDiv(vectors, split.batch);
      }
      split.rowsPerBlock =
          knobs_.rowsPerBlock.value_or(split.threads < 128 ? 128 / roundUp(split.threads, 32) : 1);
      return split;
    };
    // Short rows: a warp a row when its batch fits, four rows a block, so each reduction
    // is shuffles alone and a block has four rows' loads in flight. Measured on the H200
    // (docs/performance.md, changes 3 and 5): at H = 1024 and T >= 1024, 5-17 % faster
    // than 128 threads a row for every fusion once block reductions are cheap.
    bool warpPerRow = ceilDiv(vectors, 32) <= batchLimit && vectors > 32;
    RowSplit normal = choose(warpPerRow ? 32 : 128);
    // Rows read once (a reduction without persistent buffers: argmax over a vocabulary)
    // of more than 4 vectors a thread at 256 threads: 256 threads and a serial loop
    // unrolled by 4, not up to 1024 threads each loading its whole batch ahead. Measured
    // on the H200 (docs/performance.md, issue 17), argmax at T = 4096: V = 32000 74 us
    // against 118, V = 50304 108 against 235, V = 128256 256 against 822 (96 % of the copy
    // ceiling): more blocks an SM stream the row, each with 4 vectors in flight a thread.
    if (!persistent && staticBdimx && !knobs_.persistentBatch && vectors > 256 * 4) {
      normal.threads = 256;
      normal.batch = ceilDiv(vectors, normal.threads);
      normal.unrollBy = 4;
    }
    // Fewer rows than SMs: a batch of 2, up to 512 threads a row (at least 128). Measured
    // (change 5): 512 x 2 beat 1024 x 1 at H = 8192 by 5-16 %, 256 x 2 beat 512 x 1 at
    // H = 4096 by 1-6 %: half the threads wait at each barrier for the same loads.
    RowSplit wide = choose(std::clamp<int64_t>(roundUp(ceilDiv(vectors, 2), 32), 128, 512));
    wide.rowsPerBlock = 1;
    if (knobs_.staticBdimx)
      honour("static_bdimx"); // either way: it decides how the row is split
    if (knobs_.persistentBatch) {
      int64_t batch = *knobs_.persistentBatch;
      if (batch > vectors)
        refuse("persistent_batch",
               llvm::formatv("the row has {0} vectors ({1}); use persistent_batch = {0} or less",
                             vectors, vectorWhy)
                   .str());
      else if (normal.threads > target_.maxThreadsPerBlock)
        refuse("persistent_batch",
               llvm::formatv("{0} vectors at {1} a thread need {2} threads, over the {3} of a "
                             "block on {4}; use persistent_batch = {5} or more",
                             vectors, batch, normal.threads, target_.maxThreadsPerBlock,
                             target_.name, ceilDiv(vectors, target_.maxThreadsPerBlock))
                   .str());
      else if (staticBdimx && ceilDiv(vectors, normal.threads) != batch)
        refuse("persistent_batch",
               llvm::formatv("a static blockDim.x is whole warps, and {0} threads cover the "
                             "{1} vectors with {2} a thread; use persistent_batch = {2}, or "
                             "static_bdimx = false",
                             normal.threads, vectors, ceilDiv(vectors, normal.threads))
                   .str());
      else
        honour("persistent_batch");
    }
    if (knobs_.rowsPerBlock) {
      int64_t rowsPerBlock = *knobs_.rowsPerBlock;
      int64_t threads = saturatingMul(normal.threads, rowsPerBlock);
      if (threads > target_.maxThreadsPerBlock)
        refuse("rows_per_block",
               llvm::formatv("{0} rows of {1} threads are {2} threads, over the {3} of a block "
                             "on {4}; use rows_per_block = {5} or less",
                             rowsPerBlock, normal.threads,
                             threads == std::numeric_limits<int64_t>::max()
                                 ? std::string("more than 2^63 - 1")
                                 : std::to_string(threads),
                             target_.maxThreadsPerBlock, target_.name,
                             std::max<int64_t>(1, target_.maxThreadsPerBlock / normal.threads))
                   .str());
      else
        honour("rows_per_block");
    }

    bool computedWith = false; // some buffer is computed with its first consumer
    auto persistentDirectives = [&](Block &block, const RowSplit &split) {
      int64_t values = split.batch * split.vector;
      for (const sched::TensorSchedule *buffer : kept) {
        int64_t sharedBytes = saturatingMul(saturatingMul(values, 4),
                                            saturatingMul(split.threads, split.rowsPerBlock));
        sched::MemoryKind memory = sched::MemoryKind::Registers;
        std::string reason = llvm::formatv("{0} values of {1} a thread fit registers", values,
                                           ir::dtypeName(buffer->dtype))
                                 .str();
        if (saturatingMul(values, numBuffers) > 2 * registerBudget) {
          // Shared memory also holds the reduction scratch, 8 or 16 bytes a thread.
          std::optional<int64_t> blockBytes =
              llvm::checkedAdd(saturatingMul(sharedBytes, numBuffers),
                               saturatingMul(ir::reductionScratchBytesPerThread(fusion_, onePass_),
                                             saturatingMul(split.threads, split.rowsPerBlock)));
          if (blockBytes && *blockBytes <= target_.sharedMemoryPerBlock) {
            memory = sched::MemoryKind::Shared;
            reason = llvm::formatv("{0} values a thread are too many for registers; {1} bytes a "
                                   "block fit shared memory",
                                   values, sharedBytes)
                         .str();
          } else {
            memory = sched::MemoryKind::Recompute;
            reason = "too large for registers and shared memory: the inputs are read again";
          }
        }
        block.reasons.push_back("persistent " + buffer->name + " in " +
                                sched::memoryKindName(memory).str() + ": " + reason + ".");
        block.persistent(buffer->name, memory, header_.range);
        if (memory != sched::MemoryKind::Recompute) {
          computedWith = true;
          if (knobs_.computeWith.value_or(true))
            block.computeWith(buffer->name, at("compute_with"));
        }
      }
    };
    auto describe = [&](const RowSplit &split, const char *purpose) {
      return llvm::formatv(
                 "{0}: {1} = {2}: {3} vectors ({4}) = {5} threads x {6} serial{9}{7}{8}.", purpose,
                 d.name, *d.staticExtent, vectors, vectorWhy, split.threads, split.batch,
                 staticBdimx ? " (blockDim.x static: the row split inner by the thread count)"
                             : " (static_bdimx = false: the batch split outer)",
                 split.rowsPerBlock > 1
                     ? llvm::formatv(", {0} rows a block", split.rowsPerBlock).str()
                     : "",
                 split.unrollBy > 0 && split.unrollBy < split.batch
                     ? llvm::formatv(" unrolled by {0}", split.unrollBy).str()
                     : "")
          .str();
    };
    const char *kind = persistent ? "inner_persistent" : "reduction";
    std::vector<sched::ScheduleBlock> blocks;
    // Few rows of a fusion whose reductions feed row outputs alone (argmax over a
    // vocabulary, a row's sum): each row in pieces on blockIdx.y, a grid reduction whose
    // second kernel combines the pieces a row. Measured on the H200 (docs/performance.md,
    // issue 17, argmax): at T = 1 about 1024 vectors a piece (256 threads x 4) was the
    // fastest, V = 32000 3.55 -> 2.70 us, 50304 4.49 -> 2.96, 128256 13.10 -> 3.67; at
    // T = 128 only the longest rows gain (V = 128256, 8 pieces: 30.07 -> 14.80 us; V =
    // 32000 and 50304 were 4-15 % slower with any number of pieces), and from T = 1024 on
    // every split was slower (the blocks' fixed costs, then the second kernel).
    bool gridRows = !persistent && !onePass_ && staticBdimx && knobs_.when.empty() &&
                    !knobs_.rowsPerBlock && !knobs_.persistentBatch && rowOutputsOnly(inner);
    int64_t gridBelow = 0; // the grid variants serve rows counts below this
    auto gridVariant = [&](int64_t bound, int64_t pieces, const std::string &why) {
      std::vector<sched::SizeGuard> guard{
          {rows[0], row, sched::Comparison::Lt, bound, header_.range}};
      if (gridBelow > 0)
        guard.insert(guard.begin(),
                     {rows[0], row, sched::Comparison::Ge, gridBelow, header_.range});
      if (llvm::any_of(knobs_.otherGuards, [&](const std::vector<sched::SizeGuard> &g) {
            return guardsOverlap(guard, g);
          }))
        return;
      const int64_t threads = 256;
      const std::string outer = d.name + "o", vec = d.name + "v", rest = d.name + "q",
                        lanes = d.name + "x", piece = d.name + "g", serial = d.name + "p";
      int64_t perThread = ceilDiv(ceilDiv(vectors, threads), pieces);
      Block block;
      block.reasons.push_back(why);
      block.reasons.push_back(
          llvm::formatv("grid reduction: {0} = {1}: {2} vectors ({3}) = {4} pieces on blockIdx.y "
                        "x {5} threads x {6} serial; a second kernel combines the pieces a row.",
                        d.name, *d.staticExtent, vectors, vectorWhy, pieces, threads, perThread)
              .str());
      llvm::SMRange at = header_.range;
      if (vector > 1)
        block.split(d.name, vector, outer, vec, this->at("vector_width"));
      block.split(vector > 1 ? outer : d.name, threads, rest, lanes, at);
      block.split(rest, pieces, piece, serial, at, /*factorIsOuter=*/true);
      block.parallelize({{row, sched::Parallel::BIDx},
                         {piece, sched::Parallel::BIDy},
                         {lanes, sched::Parallel::TIDx}},
                        at);
      if (vector > 1)
        block.vectorize(vec, this->at("vector_width"));
      if (perThread > 4)
        block.add(sched::Unroll{block.loop(serial, at), sched::Count{4, at}}, at);
      else if (perThread > 1)
        block.unroll(serial, at);
      blocks.push_back(finish(std::move(block), guard));
      gridBelow = bound;
    };
    if (gridRows && vectors >= 2048)
      gridVariant(16, std::clamp<int64_t>(ceilDiv(vectors, 1024), 2, 32),
                  llvm::formatv("auto({0}), fewer than 16 rows: each row in pieces of about 1024 "
                                "vectors.",
                                kind)
                      .str());
    if (gridRows && vectors >= 8192)
      gridVariant(target_.smCount, 8,
                  llvm::formatv("auto({0}), fewer rows than the {1} SMs of {2}, rows of {3} "
                                "vectors or more: each row in 8 pieces.",
                                kind, target_.smCount, target_.name, 8192)
                      .str());
    // A guard, a row count or a batch the user gave applies to every size: no variant.
    bool widen = wide.threads > normal.threads && knobs_.when.empty() && !knobs_.rowsPerBlock &&
                 !knobs_.persistentBatch;
    // Nor when another guarded schedule of the fusion applies to some of those sizes.
    // Where the normal split keeps more than 32 values a thread in registers (softmax's
    // xf and e at H = 4096: 64) and the wider blocks have at most 256 threads, they serve
    // every row count that is one wave of them: half the values a thread, and no row
    // waits for an SM. Measured on the H200 (docs/performance.md, issue 17): softmax at
    // H = 4096, T = 1024, 256 x 2 against 128 x 4, 6.24 against 6.81 us; for RMSNorm and
    // LayerNorm (32 values) and for 512-thread wider blocks (H = 8192, 16384) one wave of
    // them was as fast or up to 19 % slower, so those keep the SM count.
    int64_t wave = target_.smCount;
    int64_t keptValues = normal.batch * normal.vector * numBuffers;
    if (persistent && normal.threads >= 128 && wide.threads <= 256 && keptValues > 32 &&
        target_.maxThreadsPerSm > 0)
      wave = target_.smCount *
             std::max<int64_t>(1, target_.maxThreadsPerSm / (wide.threads * wide.rowsPerBlock));
    sched::SizeGuard fewRows{rows[0], row, sched::Comparison::Lt, wave, header_.range};
    bool overlaps = llvm::any_of(knobs_.otherGuards, [&](const std::vector<sched::SizeGuard> &g) {
      return guardsOverlap({fewRows}, g);
    });
    // The grid variants serve these rows already, or the fewest of them.
    if (gridBelow >= wave)
      widen = false;
    std::string notWidened =
        widen && overlaps
            ? llvm::formatv("; no variant for fewer {0}: another guarded schedule of '{1}' "
                            "applies to some of those sizes",
                            wave == target_.smCount
                                ? llvm::formatv("rows than the {0} SMs", wave).str()
                                : llvm::formatv("than {0} rows", wave).str(),
                            fusion_.name)
                  .str()
            : "";
    widen &= !overlaps;
    if (widen) {
      Block small;
      small.reasons.push_back(
          wave == target_.smCount
              ? llvm::formatv("auto({0}), fewer rows than the {1} SMs of {2}: wider blocks, "
                              "more warps a row.",
                              kind, target_.smCount, target_.name)
                    .str()
              : llvm::formatv("auto({0}), fewer than {1} rows, one wave of the wider blocks "
                              "({2} SMs of {3} x {4} blocks): more warps a row.",
                              kind, wave, target_.smCount, target_.name, wave / target_.smCount)
                    .str());
      small.reasons.push_back(describe(wide, "row split"));
      rowDirectives(small, row, d.name, wide, staticBdimx, true, rowRanges());
      persistentDirectives(small, wide);
      onePassDirective(small);
      std::vector<sched::SizeGuard> guard{fewRows};
      if (gridBelow > 0)
        guard.insert(guard.begin(),
                     {rows[0], row, sched::Comparison::Ge, gridBelow, header_.range});
      blocks.push_back(finish(std::move(small), guard));
    }
    // Rows of 2048 vectors or more (H = 16384 bf16), from one wave to 2048 rows: the
    // buffers recomputed (the second phase reads the row again, from L2, where it was
    // just read) rather than kept in 64 registers a value, so an SM holds more rows.
    // Measured on the H200 (docs/performance.md, issue 17, run G1 and the run after it):
    // LayerNorm 16384 x 512 13.09 -> 12.47 us, x 1024 22.81 -> 21.67 (Inductor's static
    // kernel 12.71 and 25.38); RMSNorm x 512 11.80 -> 11.22, x 1024 even; at T = 128 and
    // from T = 4096 on, keeping them was as fast or faster.
    // Only where each buffer is a cast of one input (LayerNorm's and RMSNorm's xf): reading
    // it again costs the bytes kept and a conversion, not an exp (softmax's e) or a second
    // tensor (rms_norm_add's h), which were not measured this way.
    const int64_t recomputeBelow = 2048;
    bool castsOfInputs = llvm::all_of(kept, [](const sched::TensorSchedule *buffer) {
      const ir::Value &value = *buffer->value;
      return value.op == ir::Op::Cast && value.operands.size() == 1 &&
             value.operands[0]->op == ir::Op::Input;
    });
    if (widen && persistent && !onePass_ && !kept.empty() && castsOfInputs && vectors >= 2048 &&
        wave < recomputeBelow) {
      std::vector<sched::SizeGuard> guard{
          {rows[0], row, sched::Comparison::Ge, wave, header_.range},
          {rows[0], row, sched::Comparison::Lt, recomputeBelow, header_.range}};
      if (llvm::none_of(knobs_.otherGuards, [&](const std::vector<sched::SizeGuard> &g) {
            return guardsOverlap(guard, g);
          })) {
        Block middle;
        middle.reasons.push_back(
            llvm::formatv("auto({0}), {1} to {2} rows of {3} vectors: buffers recomputed from "
                          "the row (read again, from L2), so more rows fit an SM.",
                          kind, wave, recomputeBelow - 1, vectors)
                .str());
        middle.reasons.push_back(describe(normal, "row split"));
        rowDirectives(middle, row, d.name, normal, staticBdimx, true, rowRanges());
        for (const sched::TensorSchedule *buffer : kept)
          middle.persistent(buffer->name, sched::MemoryKind::Recompute, header_.range);
        blocks.push_back(finish(std::move(middle), guard));
      }
    }
    Block block;
    block.reasons.push_back(
        llvm::formatv("auto({0}){1}{2}.", kind,
                      widen ? llvm::formatv(", {0} rows or more", wave).str() : "", notWidened)
            .str());
    block.reasons.push_back(describe(normal, "row split"));
    rowDirectives(block, row, d.name, normal, staticBdimx, true, rowRanges());
    persistentDirectives(block, normal);
    onePassDirective(block);
    blocks.push_back(finish(std::move(block), knobs_.when));
    if (knobs_.computeWith) {
      if (computedWith)
        honour("compute_with");
      else
        refuse("compute_with",
               kept.empty() ? "'" + fusion_.name +
                                  "' keeps no persistent buffer to compute with its first consumer"
                            : "its persistent buffers are recomputed (too large for registers "
                              "and shared memory), not kept");
    }
    return {std::move(blocks), ""};
  }

  /// Variants for a runtime row length `inner` (the reduced, contiguous dimension) that
  /// whole 16-byte vectors divide: `when H % 8 == 0` and a range of lengths, each with a
  /// fixed batch of vectors a thread (so the persistent buffers have a static size and
  /// stay in registers) on as many threads as the row needs (a runtime blockDim.x,
  /// bounded by `launch_bounds` from the range). This is the static schedule's shape
  /// (docs/schedules.md) without its whole warps: what a kernel compiled before the
  /// size is known can do. Empty, with `why`, when the variants cannot apply.
  std::vector<sched::ScheduleBlock>
  runtimeRowVariants(ir::DimId inner, ir::DimId rowDim,
                     const std::vector<const sched::TensorSchedule *> &kept, bool persistent,
                     std::string &why) {
    const ir::Dim &d = fusion_.dims[inner];
    const std::string &row = fusion_.dims[rowDim].name;
    if (!knobs_.when.empty()) {
      why = " (the schedule's own guard applies to every size: no variants)";
      return {};
    }
    if (knobs_.staticBdimx.value_or(false)) {
      why = " (static_bdimx = true: no variants, whose block follows the row)";
      return {};
    }
    if (knobs_.vectorWidth || outerIn(inner)) {
      why = " (scalar accesses: no vector variants)";
      return {};
    }
    int64_t vector = 16 / widestElement(fusion_, inner);
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
    std::vector<sched::ScheduleBlock> blocks;
    for (const Range &range : ranges) {
      // The static schedule's register budget: 64 f32 values a thread, twice for one
      // row's worth in the largest range (docs/schedules.md).
      if (persistent && range.batch * vector * numBuffers > 128)
        break;
      std::vector<sched::SizeGuard> when = {
          {inner, d.name, sched::Comparison::Eq, 0, header_.range, vector}};
      if (range.lo > 0)
        when.push_back({inner, d.name, sched::Comparison::Gt, range.lo * vector, header_.range});
      when.push_back({inner, d.name, sched::Comparison::Le, range.hi * vector, header_.range});
      bool overlaps =
          llvm::any_of(knobs_.otherGuards, [&](const auto &g) { return guardsOverlap(when, g); });
      if (overlaps) {
        why = llvm::formatv(" (another guarded schedule of '{0}' applies to some sizes of the "
                            "variants: none added)",
                            fusion_.name)
                  .str();
        return {};
      }
      Block block;
      block.reasons.push_back(
          llvm::formatv("auto({0}), {1} a runtime multiple of {2} up to {3}: {2}-element "
                        "vectors, {4} a thread, on ceil({1} / {5}) threads (at most {6}).",
                        persistent ? "inner_persistent" : "reduction", d.name, vector,
                        range.hi * vector, range.batch, range.batch * vector, range.maxThreads)
              .str());
      RowSplit split;
      split.vector = vector;
      split.batch = range.batch;
      split.threads = range.maxThreads;
      rowDirectives(block, row, d.name, split, /*staticBdimx=*/false, /*unroll=*/true, rowRanges());
      block.launchBounds(range.maxThreads, header_.range);
      for (const sched::TensorSchedule *buffer : kept) {
        block.reasons.push_back(llvm::formatv("persistent {0} in registers: {1} values of {2} a "
                                              "thread.",
                                              buffer->name, range.batch * vector,
                                              ir::dtypeName(buffer->dtype))
                                    .str());
        block.persistent(buffer->name, sched::MemoryKind::Registers, header_.range);
        if (knobs_.computeWith.value_or(true))
          block.computeWith(buffer->name, at("compute_with"));
      }
      onePassDirective(block);
      blocks.push_back(finish(std::move(block), std::move(when)));
    }
    if (!blocks.empty() && knobs_.computeWith && !kept.empty())
      honour("compute_with");
    return blocks;
  }

  Choice outerReduction(ir::DimId reduced, ir::DimId inner) {
    const ir::Dim &d = fusion_.dims[inner];
    if (knobs_.vectorWidth == 1)
      honour("vector_width"); // scalar accesses are what it makes
    unused_ = "'" + fusion_.name + "' reduces " + fusion_.dims[reduced].name +
              ", not its contiguous dimension " + d.name +
              ": the outer-reduction schedule gives each thread one column and has no row "
              "to split, batch or vectorize; write the schedule by hand";
    Block block;
    block.reasons.push_back("auto(reduction), outer: each thread reduces one column over " +
                            fusion_.dims[reduced].name +
                            " serially; columns on threads and blocks.");
    block.split(d.name, 128, d.name + "b", d.name + "x", header_.range);
    block.parallelize(
        {{d.name + "b", sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}},
        header_.range);
    onePassDirective(block);
    return {{finish(std::move(block), knobs_.when)}, ""};
  }

  const ir::Fusion &fusion_;
  std::vector<ir::OnePassPair> pairs_; // of the fusion
  bool onePass_ = false;               // reduce one_pass
  bool fastExp_ = false;               // fast_exp
  std::string fastExpReason_;
  const Target &target_;
  const Knobs &knobs_;
  /// auto(matmul): the fusion has two products of one a.
  bool twoProducts_ = false;
  DiagnosticEngine *diagnostics_;
  std::string kind_;
  std::set<std::string> honoured_;                           // and refused
  std::vector<std::pair<std::string, std::string>> refused_; // knob, why
  std::string unused_;           // why the schedule taken reads none of the other knobs
  sched::ScheduleHeader header_; // of every block chosen
};

} // namespace

Knobs knobsOf(const ast::ScheduleDecl &decl, const sched::ScheduleHeader &header) {
  Knobs knobs;
  if (decl.autoKind)
    knobs.kind = decl.autoKind->text;
  knobs.when = header.when;
  knobs.declRange = header.range;
  knobs.fusionRange = header.fusionRange;
  for (const ast::Knob &knob : decl.knobs) {
    const auto &literal = llvm::cast<ast::LiteralExpr>(*knob.value);
    knobs.ranges[knob.name.text] = knob.range;
    if (knob.name.text == "static_bdimx")
      knobs.staticBdimx = literal.boolValue;
    else if (knob.name.text == "compute_with")
      knobs.computeWith = literal.boolValue;
    else if (knob.name.text == "vector_width")
      knobs.vectorWidth = literal.intValue;
    else if (knob.name.text == "persistent_batch")
      knobs.persistentBatch = literal.intValue;
    else if (knob.name.text == "rows_per_block")
      knobs.rowsPerBlock = literal.intValue;
    else if (knob.name.text == "one_pass")
      knobs.onePass = literal.boolValue;
    else if (knob.name.text == "fast_exp")
      knobs.fastExp = literal.boolValue;
    else if (knob.name.text == "unroll")
      knobs.unroll = literal.intValue;
    else if (knob.name.text == "tile_n")
      knobs.tileN = literal.intValue;
    else if (knob.name.text == "stages")
      knobs.stages = literal.intValue;
    else if (knob.name.text == "swizzle")
      knobs.swizzle = literal.intValue;
    else if (knob.name.text == "split_k")
      knobs.splitK = literal.intValue;
    else if (knob.name.text == "stream_k")
      knobs.streamK = literal.boolValue;
    else if (knob.name.text == "cluster_m")
      knobs.clusterM = literal.intValue;
    else if (knob.name.text == "pingpong")
      knobs.pingpong = literal.boolValue;
    // sched::checkAutoSchedule refuses the other knobs before the heuristics run.
  }
  return knobs;
}

std::string classify(const ir::Fusion &fusion) {
  bool reduces = false;
  for (const auto &value : fusion.values)
    reduces |= ir::isReduction(value->op);
  if (!reduces)
    return "pointwise";
  for (const sched::TensorSchedule &tensor : sched::rootTensors(fusion))
    if (tensor.isPersistentBuffer)
      return "inner_persistent";
  return "reduction";
}

Choice chooseSchedules(const ir::Fusion &fusion, const Target &target, const Knobs &knobs,
                       DiagnosticEngine *diagnostics) {
  return Chooser(fusion, target, knobs, diagnostics).run();
}

} // namespace fsl::heuristics
