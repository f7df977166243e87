// EvaluatorTest.cpp — the float64 reference against hand-computed values.
#include "TestSupport.h"

#include "eval/Evaluator.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// Parses and analyses `text`; returns its first fusion's outputs for `request`.
std::vector<std::vector<double>> run(const std::string &text, eval::EvalRequest request) {
  Parsed parsed(text);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  REQUIRE(!program->fusions.empty());
  llvm::Expected<eval::EvalResult> result = eval::evaluate(*program->fusions[0], request);
  REQUIRE_MESSAGE(static_cast<bool>(result), llvm::toString(result.takeError()));
  return result->outputs;
}

void checkClose(const std::vector<double> &actual, const std::vector<double> &expected,
                double tolerance = 1e-12) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    CHECK_MESSAGE(std::fabs(actual[i] - expected[i]) <=
                      tolerance * std::max(1.0, std::fabs(expected[i])),
                  "element ", i, ": ", actual[i], " vs ", expected[i]);
}

const char *kSoftmax = "fusion softmax(x: f64[T, S]) -> (y: f64[T, S]) {\n"
                       "    let e = exp(x - max(x, over S));\n"
                       "    y = e / sum(e, over S);\n"
                       "}\n";

} // namespace

TEST_CASE("softmax of a known row") {
  auto outputs = run(kSoftmax, {{{"T", 1}, {"S", 3}}, {{1, 2, 3}}});
  // e^(x - 3) = e^-2, e^-1, 1; divided by their sum 1.503214724...
  checkClose(outputs[0], {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
}

TEST_CASE("RMSNorm of a known row, with the bf16 output rounded") {
  const char *rms =
      "fusion rms(x: f32[T, H], w: f32[H], eps: f32 = 0.0) -> (y: f32[T, H], b: bf16[T, H]) {\n"
      "    let ms = mean(x * x, over H);\n"
      "    let n = x * rsqrt(ms + eps) * w;\n"
      "    y = n;\n"
      "    b = bf16(n);\n"
      "}\n";
  auto outputs = run(rms, {{{"T", 1}, {"H", 4}}, {{1, 2, 3, 4}, {1, 1, 1, 1}, {}}});
  // mean of squares 30 / 4 = 7.5; 1 / sqrt(7.5) = 0.3651483716701107
  // y is f32: the stored values are these, rounded to f32 (relative error below 2^-24).
  checkClose(outputs[0],
             {0.3651483716701107, 0.7302967433402214, 1.0954451150103321, 1.4605934866804429},
             6e-8);
  // bf16 keeps 8 significant bits: 0.365148 -> 0.365234375, 1.46059 -> 1.4609375
  checkClose(outputs[1], {0.365234375, 0.73046875, 1.09375, 1.4609375});
}

TEST_CASE("a small matrix product, recognised and evaluated") {
  const char *mm = "fusion mm(a: f32[M, K], b: f32[N, K]) -> (c: f32[M, N]) {\n"
                   "    c = sum(a * b, over K);\n"
                   "}\n";
  // a = [[1, 2], [3, 4]]; b rows (N) = [[5, 6], [7, 8], [9, 10]]: c = a * b^T
  auto outputs = run(mm, {{{"M", 2}, {"K", 2}, {"N", 3}}, {{1, 2, 3, 4}, {5, 6, 7, 8, 9, 10}}});
  checkClose(outputs[0], {17, 23, 29, 39, 53, 67});
}

TEST_CASE("outputs are laid out in their declared dimension order") {
  const char *transpose = "fusion t(x: f32[A, B]) -> (y: f32[B, A]) {\n    y = x;\n}\n";
  auto outputs = run(transpose, {{{"A", 2}, {"B", 3}}, {{1, 2, 3, 4, 5, 6}}});
  checkClose(outputs[0], {1, 4, 2, 5, 3, 6});
}

TEST_CASE("NaN and infinity propagate") {
  double nan = std::nan(""), inf = INFINITY;
  auto softmax = run(kSoftmax, {{{"T", 2}, {"S", 2}}, {{nan, 1, inf, 1}}});
  // A NaN row stays NaN (max propagates it); inf - inf makes the other row NaN too.
  CHECK(std::isnan(softmax[0][0]));
  CHECK(std::isnan(softmax[0][1]));
  CHECK(std::isnan(softmax[0][2]));
  const char *sums = "fusion s(x: f32[T, H]) -> (total: f32[T], biggest: f32[T], e: f32[T, H]) {\n"
                     "    total = sum(x, over H);\n"
                     "    biggest = max(x, over H);\n"
                     "    e = exp(x);\n"
                     "}\n";
  auto outputs = run(sums, {{{"T", 2}, {"H", 2}}, {{nan, 1, inf, 1}}});
  CHECK(std::isnan(outputs[0][0]));
  CHECK(outputs[0][1] == inf);
  CHECK(std::isnan(outputs[1][0]));
  CHECK(outputs[1][1] == inf);
  CHECK(std::isnan(outputs[2][0]));
  CHECK(outputs[2][2] == inf);
}

TEST_CASE("argmax and argmin: the lowest index on ties, the first NaN wins, any row order") {
  const char *arg = "fusion arg(x: f64[T, H]) -> (hi: i64[T], lo: i64[T], col: i64[H]) {\n"
                    "    hi = argmax(x, over H);\n"
                    "    lo = argmin(x, over H);\n"
                    "    col = argmax(x, over T);\n"
                    "}\n";
  double inf = INFINITY, nan = NAN;
  std::vector<double> x = {
      2,    -1,   2,    -1,   // ties: the first 2, the first -1
      1,    nan,  3,    nan,  // NaN beats every number, for argmax and argmin alike
      -inf, -inf, -inf, -inf, // all -inf: index 0 either way
      -inf, inf,  inf,  -0.0, // infinities; -0.0 == 0.0 would tie
  };
  auto outputs = run(arg, {{{"T", 4}, {"H", 4}}, {x}});
  CHECK(outputs[0] == std::vector<double>{0, 1, 0, 1});
  CHECK(outputs[1] == std::vector<double>{1, 1, 0, 0});
  // Over T (not the innermost dimension): NaNs at row 1 in columns 1 and 3, +inf at row 3
  // in column 2.
  CHECK(outputs[2] == std::vector<double>{0, 1, 3, 1});
}

TEST_CASE("rounding to storage types is round-to-nearest-even") {
  using eval::roundTo;
  CHECK(roundTo(1.00390625, ir::DType::BF16) == 1.0);      // halfway, even is 1.0
  CHECK(roundTo(1.01171875, ir::DType::BF16) == 1.015625); // halfway, even is up
  CHECK(roundTo(1.005, ir::DType::BF16) == 1.0078125);     // nearest
  CHECK(roundTo(1.0 + std::ldexp(1.0, -11), ir::DType::F16) == 1.0);
  CHECK(roundTo(65520.0, ir::DType::F16) == INFINITY); // overflows f16
  CHECK(roundTo(0.1, ir::DType::F32) == static_cast<double>(0.1f));
  CHECK(roundTo(-2.7, ir::DType::I32) == -2.0);
  CHECK(roundTo(1e20, ir::DType::I32) == 2147483647.0);
  CHECK(roundTo(std::nan(""), ir::DType::I64) == 0.0);
  CHECK(std::isnan(roundTo(std::nan(""), ir::DType::BF16)));
  CHECK(roundTo(INFINITY, ir::DType::BF16) == INFINITY);
  CHECK(roundTo(0.5, ir::DType::Bool) == 1.0);
}

TEST_CASE("evaluation refuses missing sizes and wrong-sized inputs") {
  Parsed parsed(kSoftmax);
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE(program);
  auto missing = eval::evaluate(*program->fusions[0], {{{"T", 1}}, {{1, 2}}});
  REQUIRE_FALSE(static_cast<bool>(missing));
  CHECK(llvm::toString(missing.takeError()) == "no size given for dimension S");
  auto wrongSize = eval::evaluate(*program->fusions[0], {{{"T", 1}, {"S", 3}}, {{1, 2}}});
  REQUIRE_FALSE(static_cast<bool>(wrongSize));
  CHECK(llvm::toString(wrongSize.takeError()) == "x needs 3 elements, 2 given");
}

TEST_CASE("sizes over the memory budget are refused before anything is allocated") {
  Parsed parsed(kSoftmax);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE(program);
  const ir::Fusion &fusion = *program->fusions[0];
  // 2^20 x 2^20 elements: 8 TiB of each tensor.
  std::optional<uint64_t> bytes =
      eval::evaluationBytes(fusion, {int64_t(1) << 20, int64_t(1) << 20});
  REQUIRE(bytes);
  CHECK(*bytes > eval::kMemoryBudgetBytes);
  // A count past 64 bits is over the budget, not wrapped under it.
  CHECK(!eval::evaluationBytes(fusion, {int64_t(1) << 40, int64_t(1) << 40}));
  llvm::Expected<eval::EvalResult> result =
      eval::evaluate(fusion, {{{"T", int64_t(1) << 40}, {"S", int64_t(1) << 40}}, {{}}});
  REQUIRE(!result);
  CHECK(llvm::toString(result.takeError()).find("2 GiB") != std::string::npos);
  CHECK(eval::evaluationBytes(fusion, {7, 3}).value_or(0) <= 4096);
}
