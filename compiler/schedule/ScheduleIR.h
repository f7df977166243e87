// ScheduleIR.h — how a fusion runs: per-tensor loop nests and placement decisions.
//
// Every tensor of the fusion (inputs, named values, reductions, outputs) has a loop
// nest derived from its named dimensions by the schedule's split / merge / reorder
// directives, each loop carrying a parallel type and annotations. Directives act on
// loops by name, so a transform of H reaches every tensor that has H (propagation by
// name). Placement (compute_at, compute_with, inline), memory (persistent, cache), kernel
// attributes and the declarative matrix-product record complete it. The builder makes it
// from a typed schedule block (ScheduleBlock.h), whether the user wrote the block or the
// heuristics chose it; the checker, the printer and the lowering read it. It holds no
// syntax tree: decisions keep the directive that made them as an Origin (a range).
#pragma once

#include "ir/FusionIR.h"
#include "schedule/Directive.h"
#include "schedule/ScheduleBlock.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fsl::sched {

/// The directive that made a decision: its place in the block's list (one directive
/// may set several loops; rules report once per directive) and where it is written.
struct Origin {
  size_t index = 0;
  llvm::SMRange range;
};

/// A directive's operands as applied, with the directive.
template <typename T> struct Applied : T { Origin origin; };

/// An extent as an expression over the fusion's dimension sizes.
struct SizeExpr {
  enum class Kind { Const, Dim, CeilDiv, Mul };
  Kind kind = Kind::Const;
  int64_t value = 0; // Const; the divisor of CeilDiv
  ir::DimId dim = 0; // Dim
  std::shared_ptr<const SizeExpr> lhs, rhs;
  /// Its value for the given extent of every fusion dimension; none when a product does
  /// not fit in 64 bits.
  std::optional<int64_t> evaluate(const std::vector<int64_t> &extents) const;
};
using SizeExprPtr = std::shared_ptr<const SizeExpr>;

/// A loop extent: a number when static, otherwise an expression over runtime sizes.
/// Static values are positive int64_t: ceilDiv cannot overflow (it never forms
/// `n + d - 1`), and mul is checked, because a wrapped product (a negative BIDy extent,
/// 0 threads a block) would slip past every limit the checker compares it with.
struct Extent {
  std::optional<int64_t> value;
  std::string text;
  SizeExprPtr expr;
  static Extent of(int64_t value);
  static Extent ofDim(ir::DimId dim, const std::string &name);
  /// `divisor` is at least 1.
  static Extent ceilDiv(const Extent &extent, int64_t divisor);
  /// None when both are static and their product does not fit in 64 bits.
  static std::optional<Extent> mul(const Extent &a, const Extent &b);
  bool isStatic() const { return value.has_value(); }
};

struct Loop {
  std::string name;
  Extent extent;
  bool isReduction = false;
  Parallel parallel = Parallel::Serial;
  bool vectorized = false;
  bool unswitched = false;
  bool unrolled = false;
  std::optional<int64_t> unrollFactor; // none with unrolled: fully
  std::vector<ir::DimId> roots;        // the fusion dimensions it iterates over
  /// How far one step of this loop moves along its root dimension (splits only).
  Extent stride = Extent::of(1);
  /// The innermost piece of the tensor's contiguous dimension: a vector of it reads
  /// consecutive addresses.
  bool contiguous = false;
  /// Every split on its way divides its extent: no remainder iterations.
  bool exact = true;
  /// The inner piece of a split (or a piece of one): its index is not its root's.
  bool innerPiece = false;
  /// A split on its way that does not divide an inner piece (`split V into 3` then the
  /// inner piece of 334 by 64): its last iteration would reach the next piece's elements,
  /// and bounds are checked on dimensions only. The checker refuses it (split-overruns-piece).
  std::optional<llvm::SMRange> overrunningSplit;
  // Where its annotations came from, for diagnostics.
  std::optional<Origin> parallelizedBy, vectorizedBy, unrolledBy;
  /// `prefetch L`: the row walk L loads the next row's vectors during this row.
  std::optional<Origin> prefetchedBy;
};

/// One split or merge, in the order applied: how a tensor's loops derive from its
/// dimensions. Lowering walks them backwards to index every dimension from the loops
/// (a split's input is outer * inner extent + inner; a merge's inputs are the merged
/// index divided by, and modulo, the second input's extent).
struct LoopTransform {
  enum class Kind { Split, Merge };
  Kind kind = Kind::Split;
  std::string input, secondInput; // split: input; merge: first and second
  std::string outer, inner;       // split: the two loops
  std::string result;             // merge: the merged loop
  Extent innerExtent;             // split: the inner loop's extent; merge: the second's
  llvm::SMRange range;            // the directive
};

struct TensorSchedule {
  std::string name;
  const ir::Value *value = nullptr;
  ir::DType dtype = ir::DType::F32;
  bool isInput = false;
  bool isOutput = false;
  std::vector<std::string> aliases; // output names that are this tensor
  std::vector<Loop> loops;          // outermost first
  std::vector<LoopTransform> transforms;
  std::vector<unsigned> producers, consumers;
  /// A value kept across a reduction that consumes it (a persistent buffer candidate).
  bool isPersistentBuffer = false;
  // Placement and memory, with the directives that set them.
  std::optional<size_t> computeAtPosition; // loops [0, position] are shared with the consumer
  std::optional<Origin> computeAtBy, computeWithBy;
  std::optional<MemoryKind> persistent;
  std::optional<Origin> persistentBy;
  std::optional<MemoryKind> cache;
  std::optional<Origin> cacheBy;
  std::optional<Origin> rfactorBy, inlinedBy;

  int findLoop(llvm::StringRef loopName) const;
};

/// The declarative matrix-product schedule (the fields nvFuser's MatmulParams has).
struct MatmulSchedule {
  std::optional<Applied<Mma>> mma;
  std::optional<Applied<Pipeline>> pipeline;
  std::optional<Applied<WarpSpecialize>> warpSpecialize;
  std::vector<Applied<Tiles>> tiles; // all of them: the checker reports the extra ones
  std::optional<Applied<Cluster>> cluster;
  std::optional<Applied<Epilogue>> epilogue;
  bool any() const {
    return mma || pipeline || warpSpecialize || !tiles.empty() || cluster || epilogue;
  }
};

struct Schedule {
  ScheduleHeader header;
  const ir::Fusion *fusion = nullptr;
  std::vector<TensorSchedule> tensors;
  std::optional<Applied<LaunchBounds>> launchBounds;
  std::optional<Applied<MaxRRegCount>> maxRRegCount;
  std::optional<Origin> pdl;
  /// `grid_sync`: a grid reduction finished in its own kernel after a grid barrier.
  std::optional<Origin> gridSync;
  /// `fast_exp`: the kernel's f32 exps are approximate (CUDA's __expf).
  std::optional<Origin> fastExp;
  /// `fast_tanh`: the kernel's f32 tanhs are approximate (tanh.approx.f32).
  std::optional<Origin> fastTanh;
  /// `fast_div`: the kernel's f32 divisions are approximate (div.full.f32).
  std::optional<Origin> fastDiv;
  /// `reduce one_pass|two_pass`; without it, each reduction has its own pass.
  std::optional<Applied<ReduceForm>> reduceForm;
  bool onePass() const { return reduceForm && reduceForm->onePass; }
  /// `inline all`: every value that is not kept is substituted into its uses.
  std::optional<Origin> inlineAll;
  MatmulSchedule matmul;
  /// What each directive derived (`Hx: 64 threads, static`), by its index in the block;
  /// --emit=schedule prints them after the directives. Empty: nothing to say.
  std::vector<std::string> notes;

  int findTensor(llvm::StringRef name) const;
};

/// Loop names of a tensor, for messages: "T, Hp, Hx, Hv".
std::string loopNames(const TensorSchedule &tensor);
/// A tensor for messages: its name, or for a value no let or output names (the schedule
/// calls it `max%3`, a name the user never wrote) the expression that computes it.
std::string userName(const TensorSchedule &tensor, const ir::Fusion &fusion);

} // namespace fsl::sched
