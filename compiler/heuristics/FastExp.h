// FastExp.h — whether a fusion's f32 exp is computed as __expf (`fast_exp`), for
// auto(pointwise), auto(reduction) and auto(inner_persistent).
#pragma once

#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"

#include <string>

namespace fsl::heuristics {

struct FastExpChoice {
  bool on = false;
  std::string reason; // when chosen without the knob
};

/// The knob's choice (refused without an f32 exp); by default, when every output an f32
/// exp reaches is a 16-bit float (TunedConstants.h).
FastExpChoice chooseFastExp(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts);

} // namespace fsl::heuristics
