// SizeMath.h — arithmetic on sizes from static extents and knobs, up to 2^63 - 1:
// nothing may wrap.
#pragma once

#include <llvm/Support/CheckedArithmetic.h>

#include <cstdint>
#include <limits>

namespace fsl::heuristics {

inline int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
/// `a` rounded up to a multiple of `b`, or the largest int64_t when that does not fit.
inline int64_t roundUp(int64_t a, int64_t b) {
  return llvm::checkedMul(ceilDiv(a, b), b).value_or(std::numeric_limits<int64_t>::max());
}
/// `a * b`, or the largest int64_t when that does not fit: over every limit it is held to.
inline int64_t saturatingMul(int64_t a, int64_t b) {
  return llvm::checkedMul(a, b).value_or(std::numeric_limits<int64_t>::max());
}

} // namespace fsl::heuristics
