// Simulate.cpp — random inputs shared by the simulator and the reference, then a
// per-output comparison.
#include "driver/Simulate.h"

#include "driver/ErrorBound.h"
#include "driver/Evaluate.h"
#include "ir/Printer.h"
#include "kir/Mutator.h"
#include "sim/Simulator.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>

namespace fsl {

double unitRoundoff(ir::DType type) {
  switch (type) {
  case ir::DType::BF16:
    return std::ldexp(1.0, -8);
  case ir::DType::F16:
    return std::ldexp(1.0, -11);
  case ir::DType::F32:
    return std::ldexp(1.0, -24);
  case ir::DType::F64:
    return std::ldexp(1.0, -53);
  case ir::DType::Bool:
  case ir::DType::I32:
  case ir::DType::I64:
    return 0; // exact
  }
  FSL_UNREACHABLE("dtype");
}

bool isFloating(ir::DType type) { return unitRoundoff(type) > 0; }

namespace {

/// The lower-precision of two floating types.
ir::DType lowerPrecision(ir::DType a, ir::DType b) {
  return unitRoundoff(a) >= unitRoundoff(b) ? a : b;
}

} // namespace

OutputArithmetic arithmeticOf(const ir::Fusion &fusion, const ir::Output &output,
                              const std::vector<int64_t> &extents,
                              ApproximateFunctions approximate) {
  OutputArithmetic arithmetic;
  auto note = [&](ir::DType type) {
    if (isFloating(type))
      arithmetic.lowest = arithmetic.lowest ? lowerPrecision(*arithmetic.lowest, type) : type;
  };
  note(output.dtype);
  std::vector<bool> seen(fusion.values.size(), false);
  std::vector<const ir::Value *> work = {output.value};
  while (!work.empty()) {
    const ir::Value *value = work.back();
    work.pop_back();
    if (seen[value->id])
      continue;
    seen[value->id] = true;
    // Inputs and scalars are rounded to their types on both sides alike. An index
    // (argmax, argmin) is compared exactly, whatever arithmetic chose it.
    if (value->op == ir::Op::Input || value->op == ir::Op::Scalar || ir::isArgReduction(value->op))
      continue;
    note(value->dtype);
    if (value->op == ir::Op::Exp && value->dtype == ir::DType::F32 && approximate.exp)
      arithmetic.approximateExp = true;
    if (value->op == ir::Op::Tanh && value->dtype == ir::DType::F32 && approximate.tanh)
      arithmetic.approximateTanh = true;
    if (value->op == ir::Op::Div && value->dtype == ir::DType::F32 && approximate.div)
      arithmetic.approximateDiv = true;
    switch (value->op) {
    case ir::Op::ReduceSum:
    case ir::Op::ReduceMean:
    case ir::Op::MatMul: {
      // The lowering accumulates bf16 and f16 in f32 (wgmma too), wider types in their own.
      ir::DType accumulator = value->dtype == ir::DType::BF16 || value->dtype == ir::DType::F16
                                  ? ir::DType::F32
                                  : value->dtype;
      if (isFloating(accumulator))
        arithmetic.sums.push_back({accumulator, eval::elementCount(value->reduced, extents)});
      break;
    }
    default:
      break;
    }
    for (const ir::Value *operand : value->operands)
      work.push_back(operand);
  }
  return arithmetic;
}

// The derived tolerance. The reference computes in float64 and rounds only where the
// program says so (inputs, constants, casts, outputs); the kernel rounds every operation
// to its type. With u the unit roundoff of a type:
//
//  - Pointwise arithmetic: each operation of type T is off by at most u_T relative to its
//    exact result, and the output rounds once more (from a value that may differ, so to a
//    neighbouring number). A chain of a few operations, the GPU's math functions (expf,
//    rsqrtf: 1-2 ulp) and the contraction of a * b + c into an FMA stay within a few
//    units of the lowest-precision type on the way: rel = K * u_lowest, K = 4.
//  - Sums (sum, mean, matrix products) of n terms accumulated in type A: the kernel adds
//    serial runs in each thread, then a tree (warp butterflies, a tree over the warps),
//    a depth d between log2(n) (all tree) and n (one thread). Each addition is off by at
//    most u_A times its partial sum; the worst case grows with d (Higham, "Accuracy and
//    Stability of Numerical Algorithms", 4.2), but rounding errors of independent
//    operations behave as independent zero-mean variables and grow with sqrt(d) in
//    practice (ibid. 2.8; a 200000-term f32 sum in one thread is off by about 1e-5 of its
//    partial sums). The tolerance may not depend on the schedule, so it takes the
//    sequential depth, d = n: each sum adds K * u_A * sqrt(n) to rel. A tree-only
//    reduction (error ~ u_A * log2(n)) is well inside it; an element missed or counted
//    twice (an error of one term, about 1/sqrt(n) of a random sum) is far outside it.
//  - Cancellation: the partial sums of a sum are as large as the output's typical
//    values, not as the element's own: a row of inputs uniform in [-1, 1) that sums to
//    almost 0 still carried partial sums of size ~sqrt(n). So the absolute term is rel
//    times the root mean square of the output's finite reference values: each element is
//    judged against the output's typical magnitude as well as its own.
//
//  - `fast_exp`: an f32 exp as 2^(x log2(e)) with the product rounded to f32 and the
//    hardware's approximate exp2 (2 ulp) is off by about |x| u_f32 relative, at most
//    88 u_f32 (beyond, e^x is 0 or infinite in f32): 2^-17 more on rel (before K).
//  - `fast_tanh`: tanh.approx.f32 is off by at most 2^-10.987 relative (PTX ISA): that
//    much more on rel. Where the tanh's result is the small difference of a larger sum
//    (1 + tanh(x) near x = -3, as GELU computes it), its absolute error counts against
//    that sum's size: the propagated bound below carries it.
//  - `fast_div`: div.full.f32 is within 2 ulp (2^-22 relative) instead of a rounding.
//
// Integer-only arithmetic is exact: both terms 0.
//
//  - Conditioning: the terms above take the pointwise math to pass its operands' errors
//    on unamplified, which an ill-conditioned computation does not: exp(20 x) multiplies
//    the relative error of 20 x by |20 x|, x^16 by 16, a sum of terms that cancel by the
//    sum of their magnitudes over its own. compareOutputs therefore also takes each
//    element's rounding error propagated through the fusion on the same inputs
//    (ErrorBound.h: every operation's rounding, times the derivatives of what follows)
//    and allows K times that where it is more (kPropagatedErrorFactor). It is large only
//    where the computation amplifies, so a wrong element (a neighbour's value, a term
//    missed) stays far outside it wherever the computation can tell it apart at all.
Tolerance toleranceFor(const OutputArithmetic &arithmetic, const std::vector<double> &reference,
                       const ToleranceOptions &options) {
  constexpr double K = 4;
  Tolerance tolerance;
  if (arithmetic.lowest) {
    double rel = unitRoundoff(*arithmetic.lowest);
    std::vector<std::string> basis = {ir::dtypeName(*arithmetic.lowest).str() + " arithmetic"};
    for (const OutputArithmetic::Sum &sum : arithmetic.sums) {
      rel += unitRoundoff(sum.accumulator) * std::sqrt(static_cast<double>(sum.terms));
      basis.push_back(
          llvm::formatv("an {0} sum of {1}", ir::dtypeName(sum.accumulator), sum.terms));
    }
    if (arithmetic.approximateExp) {
      rel += std::ldexp(1.0, -17);
      basis.push_back("an approximate f32 exp (fast_exp)");
    }
    if (arithmetic.approximateTanh) {
      rel += kFastTanhRelativeError;
      basis.push_back("an approximate f32 tanh (fast_tanh)");
    }
    if (arithmetic.approximateDiv) {
      rel += std::ldexp(1.0, -22);
      basis.push_back("an approximate f32 division (fast_div)");
    }
    tolerance.rel = K * rel;
    double squares = 0;
    int64_t finite = 0;
    for (double r : reference)
      if (std::isfinite(r)) {
        squares += r * r;
        ++finite;
      }
    double rms = finite ? std::sqrt(squares / static_cast<double>(finite)) : 0;
    tolerance.abs = tolerance.rel * rms;
    tolerance.basis = llvm::join(basis, ", ");
  } else {
    tolerance.basis = "integer arithmetic";
  }
  if (options.abs)
    tolerance.abs = *options.abs;
  if (options.rel)
    tolerance.rel = *options.rel;
  if (options.abs || options.rel)
    tolerance.basis = options.abs && options.rel ? "given" : tolerance.basis + "; partly given";
  return tolerance;
}

std::vector<OutputComparison> compareOutputs(const ir::Fusion &fusion,
                                             const eval::EvalResult &simulated,
                                             const eval::EvalResult &reference,
                                             const ToleranceOptions &options,
                                             ApproximateFunctions approximate,
                                             const std::vector<std::vector<double>> &errorBounds) {
  std::vector<OutputComparison> comparisons;
  bool propagate = !errorBounds.empty() && !(options.abs && options.rel);
  for (size_t o = 0; o < fusion.outputs.size(); ++o) {
    const ir::Output &output = fusion.outputs[o];
    const std::vector<double> &want = reference.outputs[o], &have = simulated.outputs[o];
    OutputComparison c;
    c.tolerance =
        toleranceFor(arithmeticOf(fusion, output, reference.extents, approximate), want, options);
    c.elements = static_cast<int64_t>(want.size());
    std::vector<MismatchedElement> mismatched;
    for (size_t i = 0; i < want.size(); ++i) {
      double expected = want[i], got = have[i];
      double error = std::fabs(got - expected);
      double allowed = c.tolerance.abs + c.tolerance.rel * std::fabs(expected);
      double propagated = propagate ? kPropagatedErrorFactor * errorBounds[o][i] : 0;
      bool widened = false;
      if (std::isfinite(expected) && propagated > allowed) {
        // Within the propagated rounding error but not the fixed terms: counted, so that
        // the report says what let it pass.
        widened = std::fabs(got - expected) > allowed && std::fabs(got - expected) <= propagated;
        allowed = propagated;
      }
      if (widened) {
        ++c.widened;
        if (expected != 0)
          c.maxWidenedRel = std::max(c.maxWidenedRel, propagated / std::fabs(expected));
      }
      bool ok;
      double excess;
      if (std::isnan(expected) || std::isinf(expected)) {
        ok = std::isnan(expected) ? std::isnan(got) : got == expected;
        error = ok ? 0 : INFINITY;
        excess = INFINITY;
      } else {
        if (std::isnan(got))
          error = INFINITY;
        c.maxAbsError = std::max(c.maxAbsError, error);
        if (expected != 0)
          c.maxRelError = std::max(c.maxRelError, error / std::fabs(expected));
        ok = error <= allowed;
        excess = allowed > 0 ? error / allowed : INFINITY;
      }
      if (ok)
        continue;
      ++c.mismatches;
      MismatchedElement element;
      element.got = got;
      element.expected = expected;
      element.excess = excess;
      element.error = error;
      // Row-major in the output's declared order: the last dimension varies fastest.
      int64_t rest = static_cast<int64_t>(i);
      element.coordinates.assign(output.dims.size(), 0);
      for (size_t d = output.dims.size(); d-- > 0;) {
        int64_t extent = reference.extents[output.dims[d]];
        element.coordinates[d] = rest % extent;
        rest /= extent;
      }
      mismatched.push_back(std::move(element));
      // Keep the three furthest out, worst first (stable: the first of equals wins).
      std::stable_sort(mismatched.begin(), mismatched.end(),
                       [](const MismatchedElement &a, const MismatchedElement &b) {
                         if (a.excess != b.excess)
                           return a.excess > b.excess;
                         return a.error > b.error; // a zero tolerance: by the error
                       });
      if (mismatched.size() > 3)
        mismatched.pop_back();
    }
    c.worst = std::move(mismatched);
    if (c.widened)
      c.tolerance.basis += llvm::formatv(
          "; {0} of {1} elements within {2} x the rounding error propagated to them only (up "
          "to {3} x |reference|)",
          c.widened, c.elements, llvm::format("%g", kPropagatedErrorFactor),
          llvm::format("%.3g", c.maxWidenedRel));
    comparisons.push_back(std::move(c));
  }
  return comparisons;
}

namespace {

std::string nineDigits(double value) { return llvm::formatv("{0}", llvm::format("%.9g", value)); }
std::string brief(double value) { return llvm::formatv("{0}", llvm::format("%.3g", value)); }

} // namespace

std::string describeMismatch(const ir::Fusion &fusion, size_t o, const OutputComparison &c) {
  if (c.mismatches == 0)
    return "";
  const ir::Output &output = fusion.outputs.at(o);
  std::vector<std::string> worst;
  for (const MismatchedElement &e : c.worst) {
    std::vector<std::string> at;
    for (size_t d = 0; d < output.dims.size(); ++d)
      at.push_back(fusion.dims[output.dims[d]].name + "=" + std::to_string(e.coordinates[d]));
    worst.push_back(llvm::formatv("{0}[{1}]: got {2}, expected {3}", output.name,
                                  llvm::join(at, ", "), nineDigits(e.got), nineDigits(e.expected)));
  }
  return llvm::formatv("output {0}: {1} of {2} elements out of tolerance {3} + {4} x "
                       "|reference| ({5}); max |error| {6}, max relative error {7}; {8}",
                       output.name, c.mismatches, c.elements, brief(c.tolerance.abs),
                       brief(c.tolerance.rel), c.tolerance.basis, brief(c.maxAbsError),
                       brief(c.maxRelError), llvm::join(worst, "; "));
}

std::string describeMismatches(const ir::Fusion &fusion,
                               const std::vector<OutputComparison> &comparisons) {
  std::vector<std::string> parts;
  for (size_t o = 0; o < comparisons.size() && o < fusion.outputs.size(); ++o)
    if (comparisons[o].mismatches)
      parts.push_back(describeMismatch(fusion, o, comparisons[o]));
  return llvm::join(parts, "\n");
}

namespace {

/// The first variant whose guard holds for these sizes.
const kir::Variant *chooseVariant(const kir::Program &program,
                                  const std::vector<int64_t> &extents) {
  for (const kir::Variant &variant : program.variants) {
    if (!variant.guard)
      return &variant;
    kir::Expr bound = kir::substitute(variant.guard, [&](const kir::VarPtr &v) -> kir::Expr {
      for (size_t d = 0; d < program.dims.size(); ++d)
        if (program.dims[d] == v)
          return kir::index(extents[d]);
      return nullptr;
    });
    if (kir::evaluateStatic(bound).value_or(0) != 0)
      return &variant;
  }
  return nullptr;
}

} // namespace

RunResult simulateAndCompare(const ir::Fusion &fusion, const kir::Program &program,
                             const std::string &assignments, uint64_t seed, int64_t misalign,
                             DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                             const LaunchLimits &limits,
                             const std::vector<const ir::Fusion *> &otherFusions,
                             const ToleranceOptions &toleranceOptions, InputValues values) {
  // The evaluate path parses the sizes and makes the inputs; reuse it silently.
  std::string ignored;
  llvm::raw_string_ostream sink(ignored);
  eval::EvalRequest request;
  if (!makeEvaluationRequest(fusion, assignments, seed, otherFusions, diagnostics, sink, request,
                             RunMode::Simulate, values))
    return RunResult::Refused;
  llvm::Expected<eval::EvalResult> reference = eval::evaluate(fusion, request);
  if (!reference) {
    diagnostics.report(DiagId::InvalidSimulateArgument, llvm::SMRange(),
                       llvm::toString(reference.takeError()));
    return RunResult::Refused;
  }
  const kir::Variant *variant = chooseVariant(program, reference->extents);
  if (!variant) {
    diagnostics.report(DiagId::InvalidSimulateArgument, llvm::SMRange(),
                       "no schedule of " + fusion.name + " applies to these sizes");
    return RunResult::Refused;
  }
  // The variant's own kernel, which names it: the others extend its name (a grid
  // reduction's `_rows` after it, a split product's counters `_zero` before it).
  const kir::Kernel *chosen = &program.kernels[variant->launches.front()];
  for (unsigned k : variant->launches)
    if (program.kernels[k].name.size() < chosen->name.size())
      chosen = &program.kernels[k];
  sim::SimulatorLimits simulatorLimits;
  simulatorLimits.maxSharedBytesPerBlock = limits.maxSharedBytesPerBlock;
  simulatorLimits.maxThreadsPerBlock = limits.maxThreadsPerBlock;
  simulatorLimits.maxBlockDim = limits.maxBlockDim;
  simulatorLimits.maxGridDim = limits.maxGridDim;
  simulatorLimits.maxClusterSize = limits.maxClusterSize;
  llvm::Expected<eval::EvalResult> simulated =
      sim::simulate(program, request, misalign, simulatorLimits);
  if (!simulated) {
    diagnostics.report(DiagId::SimulationFault, chosen->origin.range,
                       chosen->name + ": " + llvm::toString(simulated.takeError()));
    return RunResult::Failed;
  }
  // Whether the chosen variant's kernels compute f32 exps or tanhs approximately
  // (`fast_exp`, `fast_tanh`).
  ApproximateFunctions approximate;
  for (unsigned k : variant->launches)
    kir::forEachExpr(program.kernels[k].body, [&](const kir::Expr &e) {
      approximate.exp |= e->kind == kir::ExprKind::Unary && e->unary == kir::UnaryOp::FastExp;
      approximate.tanh |= e->kind == kir::ExprKind::Unary && e->unary == kir::UnaryOp::FastTanh;
      approximate.div |= e->kind == kir::ExprKind::Binary && e->binary == kir::BinaryOp::FastDiv;
    });
  // The rounding errors propagated through the fusion on the same inputs. They hold the
  // reference's values again with a bound each: only while that fits the budget twice.
  std::vector<std::vector<double>> bounds;
  std::optional<uint64_t> bytes = eval::evaluationBytes(fusion, reference->extents);
  if (bytes && *bytes <= eval::kMemoryBudgetBytes / 2)
    bounds = roundingErrorBounds(fusion, request, reference->extents, approximate);
  std::vector<OutputComparison> comparisons =
      compareOutputs(fusion, *simulated, *reference, toleranceOptions, approximate, bounds);
  std::vector<std::string> sizes;
  for (size_t i = 0; i < fusion.dims.size(); ++i)
    sizes.push_back(fusion.dims[i].name + "=" + std::to_string(reference->extents[i]));
  out << "simulate " << fusion.name << " (" << chosen->name << "): " << llvm::join(sizes, ", ")
      << "; seed " << seed << "\n";
  bool matches = true;
  for (size_t o = 0; o < fusion.outputs.size() && o < comparisons.size(); ++o) {
    const OutputComparison &c = comparisons[o];
    out << "  output " << fusion.outputs[o].name << ": "
        << ir::typeString(fusion, fusion.outputs[o].dtype, fusion.outputs[o].dims)
        << "  max |error| " << brief(c.maxAbsError) << "  (tolerance " << brief(c.tolerance.abs)
        << " + " << brief(c.tolerance.rel) << " x |reference|: " << c.tolerance.basis << ")\n";
    matches = matches && c.mismatches == 0;
  }
  if (!matches) {
    // One error an output out of tolerance.
    for (size_t o = 0; o < comparisons.size(); ++o)
      if (comparisons[o].mismatches)
        diagnostics.report(DiagId::SimulationMismatch, chosen->origin.range,
                           chosen->name + ": " + describeMismatch(fusion, o, comparisons[o]));
    return RunResult::Failed;
  }
  out << "  matches the float64 reference\n";
  return RunResult::Ok;
}

} // namespace fsl
