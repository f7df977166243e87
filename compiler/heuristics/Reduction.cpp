// Reduction.cpp — auto(reduction): the outer reduction and the grid reductions of few
// long rows; inner rows are InnerRows.cpp's.
#include "heuristics/Reduction.h"

#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::heuristics {

ReductionParams chooseReduction(const FusionShape &shape, const Target &target,
                                const Knobs &knobs) {
  return chooseRows(shape, target, knobs, /*persistent=*/false);
}

void chooseOuterReduction(const FusionShape &shape, const DimShape &reduced, const Knobs &knobs,
                          RowParams &params) {
  const DimShape &d = shape.inner;
  if (knobs.vectorWidth == 1)
    params.verdicts.honour("vector_width"); // scalar accesses are what it makes
  params.verdicts.unused = "'" + shape.name + "' reduces " + reduced.name +
                           ", not its contiguous dimension " + d.name +
                           ": the outer-reduction schedule gives each thread one column and has "
                           "no row to split, batch or vectorize; write the schedule by hand";
  RowVariant variant;
  variant.kind = RowVariant::Kind::Outer;
  variant.userGuard = true;
  variant.split.threads = 128;
  variant.reasons.push_back("auto(reduction), outer: each thread reduces one column over " +
                            reduced.name + " serially; columns on threads and blocks.");
  params.variants.push_back(std::move(variant));
}

std::vector<GridVariant> gridVariants(int64_t vectors, const Target &target, const char *kind,
                                      int64_t longRowsBelow) {
  // Measured on argmax over a vocabulary (TunedConstants.h): pieces of about 1024 vectors
  // below 16 rows, and 8 pieces of the longest rows below the SM count.
  std::vector<GridVariant> variants;
  if (vectors >= tuned::kGridMinVectors)
    variants.push_back(
        {tuned::kGridFewRows,
         std::clamp<int64_t>(ceilDiv(vectors, tuned::kGridPieceVectors), 2, 32),
         llvm::formatv("auto({0}), fewer than 16 rows: each row in pieces of about 1024 "
                       "vectors.",
                       kind)
             .str()});
  if (vectors >= tuned::kGridLongRowVectors) {
    int64_t below = std::min<int64_t>(target.smCount, longRowsBelow);
    std::string rows =
        below == target.smCount
            ? llvm::formatv("fewer rows than the {0} SMs of {1}", target.smCount, target.name).str()
            : llvm::formatv("fewer than {0} rows", below).str();
    if (below > tuned::kGridFewRows)
      variants.push_back({below, tuned::kGridLongRowPieces,
                          llvm::formatv("auto({0}), {1}, rows of {2} vectors or more: each row in "
                                        "8 pieces.",
                                        kind, rows, tuned::kGridLongRowVectors)
                              .str()});
  }
  return variants;
}

} // namespace fsl::heuristics
