// ErrorBound.h — how far the kernel's rounded arithmetic may carry each output element from
// the float64 reference: every operation's rounding, amplified by the operations after it
// (its condition), propagated through the fusion's graph on the reference's own values.
//
// --simulate compares the simulated outputs with the float64 reference. A fixed number of
// units in the last place is wrong both ways: exp(20 x) multiplies the relative error of
// its argument by |20 x|, x^16 by 16, a sum of terms that cancel by the sum of their
// magnitudes over the magnitude of the sum; a fixed tolerance rejects such correct kernels
// or, made loose enough for them, accepts wrong ones everywhere else. So the bound is per
// element, from first-order error analysis (Higham, "Accuracy and Stability of Numerical
// Algorithms", 1.4 and 3.1): the kernel's value of an operation of type T is its exact
// result on the kernel's (perturbed) operands, rounded (off by at most u_T of it), and an
// operand off by e moves the result by |f'| e. Simulate.cpp takes a multiple of it.
#pragma once

#include "eval/Evaluator.h"
#include "ir/FusionIR.h"

#include <cstdint>
#include <vector>

namespace fsl {

/// The functions a kernel computes approximately: f32 exps by `fast_exp` (the argument's
/// product with log2(e) rounded, then ex2.approx's 2 ulp), f32 tanhs by `fast_tanh`
/// (tanh.approx.f32: relative error at most 2^-10.987).
struct ApproximateFunctions {
  bool exp = false;
  bool tanh = false;
  bool div = false; // `fast_div`: div.full.f32, within 2 ulp
};

/// tanh.approx.f32's bound on its relative error (PTX ISA), rounded up to 2^-10.9.
inline constexpr double kFastTanhRelativeError = 5.2e-4;

/// Per output of `fusion` (row-major in its declared dimension order, as
/// eval::EvalResult::outputs), per element: a first-order bound on |kernel - reference|
/// for the inputs of `request` at `extents`. A sum's own roundings count as independent
/// (their root sum of squares over its sequential partial sums, as toleranceFor's sums); the
/// errors its terms bring count in full. Integer and boolean values (and indices chosen by
/// argmax) are taken as exact, as toleranceFor does. `approximate`: the functions the
/// kernel computes approximately, each with its own error added.
std::vector<std::vector<double>> roundingErrorBounds(const ir::Fusion &fusion,
                                                     const eval::EvalRequest &request,
                                                     const std::vector<int64_t> &extents,
                                                     ApproximateFunctions approximate = {});

} // namespace fsl
