// Simulate.h — `fslc --simulate T=7`: runs the generated kernels on the CPU simulator and
// compares every output with the float64 reference on the same random inputs.
#pragma once

#include "driver/ErrorBound.h"
#include "driver/Evaluate.h"
#include "eval/Evaluator.h"
#include "kir/IR.h"
#include "support/Target.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl {

class DiagnosticEngine;

/// Tolerance of a comparison with the reference: |sim - ref| <= abs + rel * |ref|, or,
/// where larger, kPropagatedErrorFactor times the element's propagated rounding error
/// (ErrorBound.h) when compareOutputs is given those.
struct Tolerance {
  double abs = 0;
  double rel = 0;
  /// How it was derived ("bf16 arithmetic, f32 sum of 4096"), or "given" for options.
  std::string basis;
};

/// The multiple of the propagated rounding error an element may be off by (Simulate.cpp).
constexpr double kPropagatedErrorFactor = 4;

/// --simulate-atol / --simulate-rtol: each replaces the derived term it names.
struct ToleranceOptions {
  std::optional<double> abs;
  std::optional<double> rel;
};

/// The unit roundoff of a floating type (half its machine epsilon: 2^-8 for bf16, 2^-11
/// for f16, 2^-24 for f32, 2^-53 for f64); 0 for integers and bool (exact).
double unitRoundoff(ir::DType type);
/// Whether `type` rounds (a floating type): its unit roundoff is not 0.
bool isFloating(ir::DType type);

/// What the value of an output goes through on its way from the inputs: the floating
/// types of its operations (casts, constants and the output's own type included, the
/// inputs' not: both sides read the same rounded inputs) and its sums.
struct OutputArithmetic {
  /// The lowest-precision floating type among them; none when everything is integer.
  std::optional<ir::DType> lowest;
  /// Each sum, mean or matrix product on the way: the type it accumulates in (as the
  /// lowering does: bf16 and f16 in f32) and how many terms it adds.
  struct Sum {
    ir::DType accumulator;
    int64_t terms;
  };
  std::vector<Sum> sums;
  /// An f32 exp on the way that the kernel computes approximately (`fast_exp`).
  bool approximateExp = false;
  /// An f32 tanh on the way that the kernel computes approximately (`fast_tanh`).
  bool approximateTanh = false;
  /// An f32 division on the way that the kernel computes approximately (`fast_div`).
  bool approximateDiv = false;
};
/// `approximate`: the functions the kernel computes approximately (`fast_exp`, `fast_tanh`,
/// `fast_div`).
OutputArithmetic arithmeticOf(const ir::Fusion &fusion, const ir::Output &output,
                              const std::vector<int64_t> &extents,
                              ApproximateFunctions approximate = {});

/// The tolerance of one output: derived from its arithmetic and the reference values'
/// root mean square (Simulate.cpp says why), unless the options give a term.
Tolerance toleranceFor(const OutputArithmetic &arithmetic, const std::vector<double> &reference,
                       const ToleranceOptions &options = {});

/// One element out of tolerance: its coordinates by dimension, both values.
struct MismatchedElement {
  std::vector<int64_t> coordinates; // in the output's declared dimension order
  double got = 0, expected = 0;
  double error = 0;  // |got - expected| (infinite when got is NaN)
  double excess = 0; // error / tolerance (infinite for a zero tolerance, NaN or infinity)
};

/// How one output compares.
struct OutputComparison {
  Tolerance tolerance;
  int64_t elements = 0;
  int64_t mismatches = 0;
  double maxAbsError = 0; // over finite reference elements (infinite when one is NaN)
  double maxRelError = 0; // |error| / |reference|, over nonzero finite references
  /// Elements within their propagated rounding error (times kPropagatedErrorFactor) but
  /// not within abs + rel |reference|, and the widest such tolerance relative to its
  /// reference: the basis names them.
  int64_t widened = 0;
  double maxWidenedRel = 0;
  std::vector<MismatchedElement> worst; // the mismatches furthest out, at most 3, worst first
};

/// Compares simulated outputs with the reference, output by output. NaN matches only
/// NaN, an infinity only itself. `errorBounds` (roundingErrorBounds, one per output; none
/// when empty) widen an element's tolerance to kPropagatedErrorFactor times its bound
/// where that is larger, unless the options give both terms.
std::vector<OutputComparison>
compareOutputs(const ir::Fusion &fusion, const eval::EvalResult &simulated,
               const eval::EvalResult &reference, const ToleranceOptions &options = {},
               ApproximateFunctions approximate = {},
               const std::vector<std::vector<double>> &errorBounds = {});

/// Output `output`'s failed comparison in words (below); empty when it matches.
std::string describeMismatch(const ir::Fusion &fusion, size_t output,
                             const OutputComparison &comparison);

/// A failed comparison in words: "output y: 3 of 4096 elements out of tolerance A + R x
/// |reference| (basis); max |error| ..., max relative error ...; y[T=3, H=17]: got 1.25,
/// expected 1.5; ..." (the worst three), an output a line;
/// empty when every output is within its tolerance.
std::string describeMismatches(const ir::Fusion &fusion,
                               const std::vector<OutputComparison> &comparisons);

/// Simulates the program's variant for the sizes and compares. `misalign` places every
/// tensor that many elements past an aligned address; `limits` are the target's (a launch
/// beyond them is a fault, as on the GPU). Names in `assignments` that belong only to
/// `otherFusions` are ignored. Refused sizes (`invalid-simulate-argument`,
/// `sizes-over-budget`) and failed runs (`simulation-mismatch`, `simulation-fault`) are
/// reported before returning.
RunResult simulateAndCompare(const ir::Fusion &fusion, const kir::Program &program,
                             const std::string &assignments, uint64_t seed, int64_t misalign,
                             DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                             const LaunchLimits &limits = {},
                             const std::vector<const ir::Fusion *> &otherFusions = {},
                             const ToleranceOptions &tolerance = {},
                             InputValues values = InputValues::Uniform);

} // namespace fsl
