// Vectors.h — the vector width on the contiguous dimension, for auto(pointwise),
// auto(reduction) and auto(inner_persistent).
#pragma once

#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"

#include <string>

namespace fsl::heuristics {

struct VectorChoice {
  int64_t width = 1; // elements an access
  std::string why;
};

/// The `vector_width` knob's width exactly (refused when it cannot be), or up to 16 bytes,
/// a power of two dividing the static extent of `shape.inner`.
VectorChoice chooseVectorWidth(const FusionShape &shape, const Knobs &knobs,
                               KnobVerdicts &verdicts);

} // namespace fsl::heuristics
