// Vectors.cpp — the vector width: the knob's, or the widest the row allows.
#include "heuristics/Vectors.h"

#include <llvm/Support/FormatVariadic.h>

namespace fsl::heuristics {

VectorChoice chooseVectorWidth(const FusionShape &shape, const Knobs &knobs,
                               KnobVerdicts &verdicts) {
  const DimShape &d = shape.inner;
  // A vector loop is the innermost loop of every input and output that has it: one
  // that keeps `dim` outer (a transposed output) gets scalar accesses throughout.
  if (const std::optional<std::string> &across = shape.innerOuterIn) {
    if (knobs.vectorWidth && *knobs.vectorWidth > 1)
      verdicts.refuse("vector_width",
                      *across + ", and a vector loop must be the innermost loop of every input "
                                "and output that has it; use vector_width = 1, or write the "
                                "schedule by hand");
    else if (knobs.vectorWidth)
      verdicts.honour("vector_width");
    return {1, *across + ": scalar accesses"};
  }
  unsigned bytes = shape.innerBytes;
  int64_t widest = 16 / bytes;
  if (d.extent)
    while (widest > 1 && *d.extent % widest != 0)
      widest /= 2;
  if (knobs.vectorWidth) {
    int64_t width = *knobs.vectorWidth;
    if (width == 1) {
      verdicts.honour("vector_width");
      return {1, "vector_width = 1: scalar accesses"};
    }
    if (!d.extent)
      verdicts.refuse("vector_width", d.name +
                                          " is a runtime size, and vectors need a static extent "
                                          "they divide; give " +
                                          d.name + " a static size or remove the knob");
    else if (width * bytes > 16)
      verdicts.refuse("vector_width",
                      llvm::formatv("{0} x {1}-byte elements are {2} bytes, over the 16 bytes of "
                                    "one access; use vector_width = {3} or less",
                                    width, bytes, width * bytes, widest)
                          .str());
    else if (*d.extent % width != 0)
      verdicts.refuse("vector_width",
                      llvm::formatv("{0} does not divide {1} = {2}; use vector_width = {3} or less",
                                    width, d.name, *d.extent, widest)
                          .str());
    else {
      verdicts.honour("vector_width");
      return {width, llvm::formatv("vector_width = {0}: {0} x {1} bytes = {2}-byte accesses", width,
                                   bytes, width * bytes)
                         .str()};
    }
  }
  if (!d.extent)
    return {1,
            d.name +
                " is a runtime size: scalar accesses (vectors need a static extent they divide)"};
  return {
      widest,
      llvm::formatv("{0} x {1} bytes = {2}-byte accesses", widest, bytes, widest * bytes).str()};
}

} // namespace fsl::heuristics
