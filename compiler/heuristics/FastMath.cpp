// FastMath.cpp — fast_exp, fast_tanh and fast_div: the knob's, or on where the outputs'
// rounding dwarfs the approximation's error.
#include "heuristics/FastMath.h"

namespace fsl::heuristics {
namespace {

/// One approximate function: `knob` is its knob, `facts` whether the fusion computes the
/// f32 function and whether only 16-bit outputs see it.
FastMathChoice choose(const std::string &name, const std::string &function,
                      const FusionShape &shape, const std::optional<bool> &knob,
                      const ApproximableFunction &facts, bool byDefault, const std::string &why,
                      KnobVerdicts &verdicts) {
  FastMathChoice choice;
  choice.on = facts.present && knob.value_or(byDefault && facts.outputsNarrow);
  if (choice.on && !knob)
    choice.reason = why;
  if (!knob)
    return choice;
  if (!facts.present)
    verdicts.refuse(name, "'" + shape.name + "' computes no f32 " + function + "; remove the knob");
  else
    verdicts.honour(name);
  return choice;
}

} // namespace

// By default when every output the function reaches is stored in a 16-bit float type,
// whose rounding (2^-9 relative for bf16) dwarfs the approximation's error.
FastMathChoice chooseFastExp(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts) {
  // __expf: about |x| 2^-24 relative, at most 2^-17. Measured on the H200
  // (docs/performance.md): softmax 3-11 % faster at T = 1024.
  return choose("fast_exp", "exp", shape, knobs.fastExp, shape.f32Exp, /*byDefault=*/true,
                "fast_exp: every output the f32 exp reaches is 16-bit, whose rounding dwarfs "
                "__expf's error (fast_exp = false keeps expf).",
                verdicts);
}

FastMathChoice chooseFastTanh(const FusionShape &shape, const Knobs &knobs,
                              KnobVerdicts &verdicts) {
  // tanh.approx.f32: at most 2^-10.987 relative, a quarter of bf16's rounding. Measured on
  // the H200 (docs/performance.md): a GELU epilogue's tanhf is a tenth of a matrix
  // product's time, which the tensor cores spend waiting.
  return choose("fast_tanh", "tanh", shape, knobs.fastTanh, shape.f32Tanh, /*byDefault=*/true,
                "fast_tanh: every output the f32 tanh reaches is 16-bit; tanh.approx is within "
                "2^-11 of the tanh (the PTX ISA's bound; 2^-16.5 measured on the H200) "
                "(fast_tanh = false keeps tanhf).",
                verdicts);
}

FastMathChoice chooseFastDiv(const FusionShape &shape, const Knobs &knobs, KnobVerdicts &verdicts) {
  // div.full.f32: within 2 ulp. Measured on the H200 (docs/performance.md): SiLU's
  // 1 / (1 + exp(-x)) in SwiGLU's epilogue as `/` costs 10-25 % of the kernel.
  return choose("fast_div", "division", shape, knobs.fastDiv, shape.f32Div,
                /*byDefault=*/shape.matmul.has_value(),
                "fast_div: every output the f32 division reaches is 16-bit, whose rounding "
                "dwarfs div.full's 2 ulp (fast_div = false keeps the IEEE division).",
                verdicts);
}

} // namespace fsl::heuristics
