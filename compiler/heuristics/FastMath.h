// FastMath.h — whether a fusion's f32 exps and tanhs are computed by the hardware's
// approximations (`fast_exp`: __expf; `fast_tanh`: tanh.approx.f32), for every family
// that computes them (fast_exp: auto(pointwise), auto(reduction), auto(inner_persistent);
// fast_tanh: those and auto(matmul)).
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

} // namespace fsl::heuristics
