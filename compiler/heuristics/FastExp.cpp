// FastExp.cpp — fast_exp: the knob's, or on where the outputs' rounding dwarfs its error.
#include "heuristics/FastExp.h"

namespace fsl::heuristics {

FastExpChoice chooseFastExp(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts) {
  FastExpChoice choice;
  // By default when every output an f32 exp reaches is stored in a 16-bit float type,
  // whose rounding (2^-9 relative for bf16) dwarfs __expf's error (about |x| 2^-24, at
  // most 2^-17). Measured on the H200 (docs/performance.md, issue 17): softmax 3-11 %
  // faster at T = 1024.
  choice.on = shape.hasF32Exp && knobs.fastExp.value_or(shape.expOutputsNarrow);
  if (choice.on && !knobs.fastExp)
    choice.reason = "fast_exp: every output the f32 exp reaches is 16-bit, whose rounding "
                    "dwarfs __expf's error (fast_exp = false keeps expf).";
  if (!knobs.fastExp)
    return choice;
  if (!shape.hasF32Exp)
    verdicts.refuse("fast_exp", "'" + shape.name + "' computes no f32 exp; remove the knob");
  else
    verdicts.honour("fast_exp");
  return choice;
}

} // namespace fsl::heuristics
