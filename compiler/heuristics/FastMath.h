// FastMath.h — whether a fusion's f32 exps, tanhs and divisions are computed by the
// hardware's approximations (`fast_exp`: __expf; `fast_tanh`: tanh.approx.f32;
// `fast_div`: div.full.f32), for every family that computes them.
#pragma once

#include "heuristics/FusionShape.h"
#include "heuristics/KnobVerdicts.h"
#include "heuristics/Knobs.h"

#include <string>

namespace fsl::heuristics {

struct FastMathChoice {
  bool on = false;
  std::string reason; // when chosen without the knob
};

/// The knob's choice (refused without an f32 exp); by default, when every output an f32
/// exp reaches is a 16-bit float (TunedConstants.h).
FastMathChoice chooseFastExp(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts);

/// The same for f32 tanh and `fast_tanh`.
FastMathChoice chooseFastTanh(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts);

/// The same for f32 division and `fast_div`, by default in matrix products' epilogues
/// only (the normalizations keep the IEEE division until measured).
FastMathChoice chooseFastDiv(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts);

} // namespace fsl::heuristics
