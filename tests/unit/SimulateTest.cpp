// SimulateTest.cpp — the --simulate comparison: the tolerance derived from an output's
// arithmetic and sums, the options that replace it, and the mismatch report.
#include "TestSupport.h"

#include "driver/Simulate.h"
#include "eval/Evaluator.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// The first fusion of `text`, analysed.
struct Analysed {
  Parsed parsed;
  std::unique_ptr<Program> program;

  explicit Analysed(const std::string &text) : parsed(text) {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
  }
  const ir::Fusion &fusion() const { return *program->fusions[0]; }
};

} // namespace

TEST_CASE("simulate tolerance: the lowest-precision type an output's value goes through") {
  // An f64 output computed in f32; an f16 output computed in bf16; a bf16 sum (f32
  // accumulation) with an f32 output; integers only.
  Analysed a("fusion f(x: f32[T, H], b: bf16[T, H], n: i32[T, H]) -> (w: f64[T, H], h: f16[T, H], "
             "s: f32[T], i: i32[T, H], c: f32[T, H]) {\n"
             "    w = f64(x * x);\n"
             "    h = f16(b * b);\n"
             "    s = f32(sum(b * b, over H));\n"
             "    i = n * n + 1;\n"
             "    c = f32(b);\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  std::vector<int64_t> extents = {3, 100}; // T, H
  auto arithmetic = [&](size_t o) { return arithmeticOf(f, f.outputs[o], extents); };
  CHECK(arithmetic(0).lowest == ir::DType::F32);
  CHECK(arithmetic(0).sums.empty());
  CHECK(arithmetic(1).lowest == ir::DType::BF16);
  OutputArithmetic sum = arithmetic(2);
  CHECK(sum.lowest == ir::DType::BF16);
  REQUIRE(sum.sums.size() == 1);
  CHECK(sum.sums[0].accumulator == ir::DType::F32);
  CHECK(sum.sums[0].terms == 100);
  CHECK(!arithmetic(3).lowest);
  // A widened bf16 input is exact on both sides: f32's tolerance, not bf16's.
  CHECK(arithmetic(4).lowest == ir::DType::F32);

  // rtol = 4 (u + sum of u_A sqrt(n)); atol = rtol x the reference's root mean square.
  std::vector<double> reference = {3, -4}; // rms 3.5355...
  Tolerance w = toleranceFor(arithmetic(0), reference);
  CHECK(w.rel == doctest::Approx(4 * std::ldexp(1.0, -24)));
  CHECK(w.abs == doctest::Approx(w.rel * std::sqrt(12.5)));
  CHECK(w.basis == "f32 arithmetic");
  Tolerance s = toleranceFor(sum, reference);
  CHECK(s.rel == doctest::Approx(4 * (std::ldexp(1.0, -8) + std::ldexp(1.0, -24) * 10)));
  CHECK(s.basis == "bf16 arithmetic, an f32 sum of 100");
  Tolerance exact = toleranceFor(arithmetic(3), reference);
  CHECK(exact.rel == 0);
  CHECK(exact.abs == 0);

  // The options replace the term they name.
  ToleranceOptions rel;
  rel.rel = 0.5;
  Tolerance partly = toleranceFor(arithmetic(0), reference, rel);
  CHECK(partly.rel == 0.5);
  CHECK(partly.abs == doctest::Approx(w.abs));
  CHECK(partly.basis == "f32 arithmetic; partly given");
  ToleranceOptions both = rel;
  both.abs = 0;
  Tolerance given = toleranceFor(arithmetic(0), reference, both);
  CHECK(given.abs == 0);
  CHECK(given.basis == "given");
}

TEST_CASE("simulate tolerance: a mismatch counts its elements and names the worst") {
  Analysed a("fusion f(x: f32[T, H]) -> (y: f32[T, H]) {\n"
             "    y = x;\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  eval::EvalResult reference, simulated;
  reference.extents = simulated.extents = {2, 3}; // T = 2, H = 3
  reference.outputs = {{1, 2, 3, 4, 5, NAN}};
  simulated.outputs = {{1, 2.5, 3, 4.25, NAN, NAN}};
  ToleranceOptions zero;
  zero.abs = 0;
  zero.rel = 0.1;
  std::vector<OutputComparison> c = compareOutputs(f, simulated, reference, zero);
  REQUIRE(c.size() == 1);
  CHECK(c[0].elements == 6);
  CHECK(c[0].mismatches == 2); // 2.5 for 2 and NaN for 5; 4.25 is within 10 % of 4
  CHECK(std::isinf(c[0].maxAbsError));
  REQUIRE(c[0].worst.size() == 2);
  CHECK(c[0].worst[0].coordinates == std::vector<int64_t>{1, 1}); // the NaN, worst
  CHECK(c[0].worst[1].coordinates == std::vector<int64_t>{0, 1});
  CHECK(describeMismatch(f, 0, c[0]) ==
        "output y: 2 of 6 elements out of tolerance 0 + 0.1 x |reference| (given); max |error| "
        "inf, max relative error inf; y[T=1, H=1]: got nan, expected 5; y[T=0, H=1]: got 2.5, "
        "expected 2");
  simulated.outputs[0][4] = 5;
  simulated.outputs[0][1] = 2;
  c = compareOutputs(f, simulated, reference, zero);
  CHECK(c[0].mismatches == 0);
  CHECK(c[0].maxAbsError == 0.25);
  CHECK(c[0].maxRelError == 0.0625);
  CHECK(describeMismatches(f, c) == "");
}
