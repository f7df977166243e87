// Simplify.h — index arithmetic folded with what the loops bound.
//
// Constant folding, the identities of 0 and 1, and the div/mod rules that merged and
// split loops produce: with 0 <= y < c (known from loop extents),
//   (x * c + y) / c  ->  x      (x * c + y) % c  ->  y
//   y / c            ->  0      y % c            ->  y
// and products and sums re-associated so constants meet. Only integer expressions are
// rewritten; float arithmetic is left exactly as written (rounding must not change).
#pragma once

#include "kir/IR.h"

namespace fsl::kir {

/// Simplifies every expression of `s`, using the ranges of the loops around it.
Stmt simplify(const Stmt &s);
/// Simplifies `e`, with nothing known about its variables.
Expr simplify(const Expr &e);

} // namespace fsl::kir
