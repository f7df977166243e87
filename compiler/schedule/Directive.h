// Directive.h — schedule directives as typed values, in the order a schedule applies them.
//
// A schedule block (ScheduleBlock.h) is a list of these; ScheduleBuilder applies them
// one by one and the printer (Printer.h) writes them back as text. A user's directives
// are converted from the AST (schedule/FromAst.h); the heuristics build theirs directly.
// Every operand keeps a source range for diagnostics: a user's points at what was
// written, a heuristic's at the `= auto` knob that asked for it or at the schedule
// header (or fusion) it was chosen for.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fsl::sched {

enum class Parallel { Serial, BIDx, BIDy, BIDz, TIDx, TIDy, TIDz };
llvm::StringRef parallelName(Parallel parallel);
bool isBlockIndex(Parallel parallel);  // BIDx..BIDz
bool isThreadIndex(Parallel parallel); // TIDx..TIDz

enum class MemoryKind { Registers, Shared, Recompute };
llvm::StringRef memoryKindName(MemoryKind kind);

/// A loop or tensor name, and where it is written.
struct Name {
  std::string text;
  llvm::SMRange range;
};

/// A number, and where it is written.
struct Count {
  int64_t value = 0;
  llvm::SMRange range;
};

/// `H` (the loop H of every tensor that has one) or `y.H` (of tensor y only).
struct LoopRef {
  std::optional<Name> tensor;
  Name loop;
  llvm::SMRange range;
};

/// `split H by 8 -> (Ho, Hi)`: inner extent 8. `split H into 4 -> (Ho, Hi)`: outer extent 4.
struct Split {
  LoopRef loop;
  bool factorIsOuter = false; // `into`
  Count factor;
  Name outer, inner;
};

struct Merge {
  LoopRef first, second;
  Name result;
};

struct Reorder {
  std::vector<LoopRef> order;
};

/// `Hx -> TIDx` in a parallelize directive; never Parallel::Serial.
struct Binding {
  LoopRef loop;
  Parallel parallel = Parallel::BIDx;
};

struct Parallelize {
  std::vector<Binding> bindings;
};

struct Vectorize {
  LoopRef loop;
};

struct Unroll {
  LoopRef loop;
  std::optional<Count> factor; // none: fully
};

struct Unswitch {
  LoopRef loop;
};

/// The serial loop over a block's rows (the inner-outer walk) loads each next row's
/// vectors while the current row is reduced.
struct Prefetch {
  LoopRef loop;
};
/// The vectors of each input a thread's row may take for `prefetch` (the next row's are
/// registers beside the current row's).
inline constexpr int64_t kMaxPrefetchVectors = 8;

struct Rfactor {
  LoopRef loop;
};

/// `inline t;` or `inline all;`
struct Inline {
  std::optional<Name> tensor; // none: all
};

struct ComputeAt {
  Name tensor;
  LoopRef at;
};

struct ComputeWith {
  Name tensor;
};

/// `persistent t in registers|shared|recompute`.
struct Persistent {
  Name tensor;
  MemoryKind memory = MemoryKind::Registers;
};

/// `cache t in shared|registers`.
struct Cache {
  Name tensor;
  MemoryKind memory = MemoryKind::Shared;
};

struct LaunchBounds {
  Count threads;
};

struct MaxRRegCount {
  Count registers;
};

struct Pdl {};

/// `grid_sync`: the blocks of a grid reduction (the inner-outer form's column sums) meet at
/// a grid barrier and add their partial results in the same kernel, launched cooperatively
/// (every block resident at once), instead of in a second kernel.
struct GridSync {};

/// `fast_exp`: every f32 exp of the kernel as CUDA's __expf, ex2.approx of x log2(e).
struct FastExp {};

/// `fast_tanh`: every f32 tanh of the kernel as the hardware's tanh.approx.f32 (one
/// instruction of the special-function unit, relative error at most 2^-10.987).
struct FastTanh {};

/// `fast_div`: every f32 division of the kernel as the hardware's full-range approximate
/// division (div.full.f32: within 2 ulp, no slow path for the IEEE rounding).
struct FastDiv {};

/// `reduce one_pass|two_pass`: softmax's (max, sum of exp) and LayerNorm's (mean,
/// variance) reduction pairs in one pass over the row, or a pass a reduction.
struct ReduceForm {
  bool onePass = false;
};

/// `mma over K: tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)`.
/// The tiles are (M, N) of the output. `swap_ab`: the product is computed as (b a^T)^T,
/// so that the instruction's 64 rows run along N and its N side (down to 8) along M; the
/// warp tile's N is then a multiple of 64 and its M of the instruction's N.
struct Mma {
  Name reductionDim;
  std::vector<Count> ctaTile, warpTile;
  Name instruction;
  std::vector<Count> instructionShape;
  bool swapAB = false;
  llvm::SMRange swapABRange;
};

/// `pipeline 4 stages via tma`.
struct Pipeline {
  Count stages;
  bool viaTma = false;
};

/// `warp_specialize producer(regs 40), consumers(2, regs 232)`.
struct WarpSpecialize {
  Count producerRegs, consumerCount, consumerRegs;
};

enum class TileOrder { OnePerCta, Persistent, StreamK, SplitK };
llvm::StringRef tileOrderName(TileOrder order);

/// `tiles one_per_cta | persistent [swizzle N | hilbert B] | stream_k [swizzle N |
/// hilbert B] | split_k N`.
struct Tiles {
  TileOrder order = TileOrder::OnePerCta;
  std::optional<Count> parameter; // swizzle N, hilbert B or split_k N
  /// The walk goes along a Hilbert curve in blocks of B x B tiles (the parameter), not in
  /// groups of N M tiles.
  bool hilbert = false;
};

/// `cluster (2, 1) multicast`.
struct Cluster {
  std::vector<Count> shape;
  bool multicast = false;
};

enum class EpilogueKind { Registers, Shared, SharedTmaStore };

/// `epilogue via registers | shared [tma_store] [, tile (BM, C)]`.
struct Epilogue {
  EpilogueKind via = EpilogueKind::Registers;
  /// The epilogue's tile: the output tile goes through shared memory C columns at a time,
  /// two such pieces in turn (empty: the whole output tile at once).
  std::vector<Count> tile;
};

/// What a directive does, with its operands.
using DirectiveOp =
    std::variant<Split, Merge, Reorder, Parallelize, Vectorize, Unroll, Unswitch, Prefetch, Rfactor,
                 Inline, ComputeAt, ComputeWith, Persistent, Cache, LaunchBounds, MaxRRegCount, Pdl,
                 GridSync, FastExp, FastTanh, FastDiv, ReduceForm, Mma, Pipeline, WarpSpecialize,
                 Tiles, Cluster, Epilogue>;

struct Directive {
  DirectiveOp op;
  llvm::SMRange range; // the whole directive (or the knob or header a heuristic used)
  /// Comment lines the user wrote above it (each `// ...`, or empty for a blank line in
  /// the group) and whether a blank line came first: --emit=schedule writes them back.
  std::vector<std::string> comments;
  bool blankLineBefore = false;
};

} // namespace fsl::sched
