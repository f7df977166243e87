// OnePass.h — reduction pairs that one pass over the row can compute together.
//
// Softmax reads its row twice for two reductions, the maximum and then the sum of
// exp(x - max); LayerNorm twice, the mean and then the mean of the squared difference
// from it. Each pair is one reduction with several accumulators: online softmax (a running
// maximum m and a sum s of exp(x - m), rescaled by exp(m_old - m_new) when the maximum
// grows) and Welford's (count, mean, M2). The algorithm stays written as two reductions,
// which the evaluator runs as the float64 reference; the lowering recognises the pairs
// here and combines them when the schedule asks (`reduce one_pass;`, docs/schedules.md).
#pragma once

#include "ir/FusionIR.h"

#include <set>
#include <string>
#include <vector>

namespace fsl::ir {

enum class OnePassKind {
  /// first = max(a, over D), second = sum (or mean) of exp(a - first) over D.
  MaxExpSum,
  /// first = mean(a, over D), second = mean (or sum) of (a - first) * (a - first) over D.
  Welford,
};

struct OnePassPair {
  OnePassKind kind;
  const Value *first = nullptr;   // the maximum, or the mean
  const Value *second = nullptr;  // the sum of exponentials, or the variance (M2 / count)
  const Value *operand = nullptr; // the values both reduce (the max's or mean's operand)
  DType accumulator = DType::F32; // the accumulators' type (f32 or f64)
};

/// The pairs of `fusion`, in the order of their second reductions; each reduction is in
/// at most one pair. `a` may be seen through widening float casts (`f32(x)` next to
/// `max(x)` of a bf16 `x`): those are exact, so the maximum is the same number.
std::vector<OnePassPair> findOnePassPairs(const Fusion &fusion);

/// A pair's accumulator, in the order of the block combine's tuple: the value it belongs
/// to (the first reduction's, the second's for the last), its name's suffix, and what it is
/// ("maximum", "mean", ...).
struct OnePassAccumulator {
  const Value *owner;
  std::string suffix;
  std::string what;
};
/// (max, sum) for online softmax; (count, mean, M2) for Welford.
std::vector<OnePassAccumulator> onePassAccumulators(const OnePassPair &pair);

/// The ids of the per-element values that the pairs' accumulators stand for in one pass:
/// each pair's second-reduction operand and the difference inside it (exp(a - max) and
/// a - max; the square and a - mean), where nothing else reads them (no output, no other
/// value but the next of the two and the second reduction). With `reduce one_pass` no loop
/// computes them, so they do not make the first reduction's result needed per element
/// (a grid reduction may hold it).
std::set<unsigned> absorbedValueIds(const Fusion &fusion);

/// reductionScratchBytesPerThread, with the one-pass pairs' elements when `onePass`:
/// Welford's triple is 12 bytes in f32 (16 a thread), 24 in f64; the (max, sum) pair 8 in
/// f32, 16 in f64.
int64_t reductionScratchBytesPerThread(const Fusion &fusion, bool onePass);

} // namespace fsl::ir
