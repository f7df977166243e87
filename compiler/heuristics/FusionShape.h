// FusionShape.h — what the heuristics read of a fusion: its layout, extents, element
// sizes, reductions, persistent-buffer candidates and matrix products, as plain data.
//
// Every family's choice is a function of a FusionShape, the Target and the Knobs alone
// (Pointwise.h, Reduction.h, InnerPersistent.h, Matmul.h), so the unit tests build shapes
// directly and check what each family chooses for them.
#pragma once

#include "heuristics/Family.h"
#include "ir/FusionIR.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fsl::heuristics {

/// One dimension: its id (for guards), name and static extent (none: a runtime size).
struct DimShape {
  ir::DimId id = 0;
  std::string name;
  std::optional<int64_t> extent;
};

/// A one-pass pair of reductions (ir/OnePass.h), as its reason names it.
struct OnePassPairShape {
  bool maxExpSum = true; // online softmax; else Welford
  std::string first;     // the first reduction's name, or "max"
  std::string second;    // the second's name, or its op's
};

/// A value a reduction consumes and a later use needs: a persistent-buffer candidate.
struct BufferShape {
  std::string name;
  std::string dtypeName;
  /// Kept when the reductions run in two passes: it waits for no reduction, or
  /// recomputing it costs a transcendental function (softmax's exp(x - max)); others are
  /// cheap to recompute from a buffer.
  bool keptInTwoPasses = true;
  /// It follows a one-pass pair's first reduction and feeds only pairs' second ones: in
  /// one pass nothing reduces it before its later use, so it is no buffer.
  bool onlyInTwoPasses = false;
  /// A cast of one input (LayerNorm's and RMSNorm's xf): reading it again costs a read
  /// and a conversion.
  bool castOfInput = false;
  /// Registers a value takes (2 for 64-bit types).
  int64_t registersPerValue = 1;
};

/// A fusion with a matrix product: its M, N and K and what its epilogue stores.
struct MatmulShape {
  DimShape m, n, k;
  std::string lhsInput, rhsInput; // the inputs a and b are read from
  bool twoProducts = false;       // two products of one a (SwiGLU's gate and up)
  /// The one output over [M, N], and its element size; 0 when there is none.
  int64_t outputBytes = 0;
  bool rhsKContiguous = true; // b is [N, K], not [K, N]
  bool lhsKContiguous = true; // a is [M, K], not [K, M] (which the lowering refuses)
  /// The epilogue computes more than the product's cast (a bias, an activation, a
  /// residual): its instructions sit between one tile's products and the next's.
  bool fusedEpilogue = false;

  /// Whether the product can be computed with its operands swapped (swap_ab): one product,
  /// both operands K contiguous (b becomes wgmma's left operand and a its right one).
  bool swappable() const { return !twoProducts && rhsKContiguous && lhsKContiguous; }
};

/// A function the hardware can approximate (exp, tanh, division): whether the fusion computes it
/// in f32, and whether only 16-bit float outputs see its results.
struct ApproximableFunction {
  bool present = false;
  bool outputsNarrow = false;
};

struct FusionShape {
  std::string name;
  Family family = Family::Pointwise; // classify(): the family its shape calls for
  std::optional<MatmulShape> matmul; // a fusion with a matrix product
  bool hasOutput = true;
  /// The reference layout: the contiguous dimension and the others (at most one), or why
  /// the heuristics cannot take it.
  std::optional<std::string> layoutError;
  DimShape inner;
  std::vector<DimShape> rows;
  /// The widest element among the inputs and outputs whose innermost dimension is `inner`.
  unsigned innerBytes = 1;
  /// "'yt' is [H, T], with T outer": an input or output that has `inner` but not as its
  /// innermost dimension; none when every one ends with it.
  std::optional<std::string> innerOuterIn;
  /// Reductions: the first one's reduced dimensions' names, and every reduced dimension.
  std::vector<std::string> firstReducedNames;
  std::vector<DimShape> reduced;
  /// Whether the fusion computes an f32 exp, tanh or division, and whether every output
  /// each reaches is a 16-bit float (fast_exp, fast_tanh, fast_div).
  ApproximableFunction f32Exp, f32Tanh, f32Div;
  std::vector<OnePassPairShape> onePassPairs;
  std::vector<BufferShape> buffers;
  /// Block-reduction scratch a thread, in two passes and in one (ir/OnePass.h).
  int64_t scratchBytesTwoPass = 0, scratchBytesOnePass = 0;
  /// Every reduction reaches only values without `inner`, and no output has it (nor is an
  /// inout): what a grid reduction can do (lower/Plan.cpp).
  bool rowOutputsOnly = false;
  /// The same with `reduce one_pass`: the values a one-pass pair absorbs do not count
  /// (ir::absorbedValueIds), so a grid reduction of the pairs can do it.
  bool rowOutputsOnlyOnePass = false;
  /// No output has `inner` (nor is an inout): every output is a row's, whatever the
  /// reductions' results reach on the way (cross-entropy's loss and logsumexp).
  bool noOutputAlongRow = false;
  /// Inputs along `inner` that a reduction reads and a value after a reduction reads again
  /// (softmax's backward: y and grad_y): no buffer keeps them, but ptxas keeps the first
  /// phase's loads in registers for the later one, so they weigh as kept values.
  int64_t rowInputsReadTwice = 0;
  /// Bytes a row element of the inputs along `inner` that only values after a reduction
  /// read (RMSNorm's weight): they take registers beside a kept buffer (ir/RegisterPressure.h).
  int64_t lateRowInputBytes = 0;
  /// The same with every buffer recomputed: what a kept buffer has beside it where others
  /// are not kept.
  int64_t lateRowInputBytesNoneKept = 0;
  /// Registers a value of the buffers live together take (ir/RegisterPressure.h: softmax's
  /// xf hands its registers to e); 0 without buffers.
  int64_t liveRegistersPerValue = 0;
};

/// The shape of `fusion`.
FusionShape shapeOf(const ir::Fusion &fusion);

} // namespace fsl::heuristics
