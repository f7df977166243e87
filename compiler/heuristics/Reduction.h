// Reduction.h — auto(reduction): inner, the reduced row split into vectors, threads and a
// serial batch, one row per block (InnerRows.h), grid reductions for few long rows; outer,
// kept columns on threads, the reduced dimension serial.
#pragma once

#include "heuristics/InnerRows.h"

namespace fsl::heuristics {

using ReductionParams = RowParams;

/// What auto(reduction) chooses for `shape` on `target`.
ReductionParams chooseReduction(const FusionShape &shape, const Target &target, const Knobs &knobs);

/// An outer reduction of `reduced` (not the contiguous dimension): each thread reduces
/// one column serially. Sets `params`' variant and the knobs it reads.
void chooseOuterReduction(const FusionShape &shape, const DimShape &reduced, const Knobs &knobs,
                          RowParams &params);

/// A grid reduction for fewer than `rowsBelow` rows: each row in `pieces` on blockIdx.y.
struct GridVariant {
  int64_t rowsBelow = 0, pieces = 1;
  std::string why;
};
/// The grid reductions for rows of `vectors` vectors whose reductions feed row outputs
/// alone, fewest rows first; none where they do not pay (TunedConstants.h). `kind` names the
/// heuristic in the reasons ("reduction", "inner_persistent"); the long rows' variant serves
/// fewer rows than the SM count and than `longRowsBelow`.
std::vector<GridVariant> gridVariants(int64_t vectors, const Target &target, const char *kind,
                                      int64_t longRowsBelow);

} // namespace fsl::heuristics
