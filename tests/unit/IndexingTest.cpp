// IndexingTest.cpp — selects, gathers and windows in the float64 reference, by hand.
#include "TestSupport.h"

#include "eval/Evaluator.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// The first fusion of `text` evaluated on `request`: its outputs, or the error's text.
struct Outcome {
  std::vector<std::vector<double>> outputs;
  std::string error;
};

Outcome run(const std::string &text, eval::EvalRequest request) {
  Parsed parsed(text);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  llvm::Expected<eval::EvalResult> result = eval::evaluate(*program->fusions[0], request);
  if (!result)
    return {{}, llvm::toString(result.takeError())};
  return {result->outputs, ""};
}

} // namespace

TEST_CASE("the two halves of a dimension, as windows") {
  const char *halves = "fusion halves(x: f64[T, H2]) -> (a: f64[T, H], b: f64[H, T]) {\n"
                       "    a = x[H2 -> H];\n"
                       "    b = x[H2 -> H from H];\n"
                       "}\n";
  Outcome out = run(halves, {{{"T", 2}, {"H2", 6}, {"H", 3}},
                             {{0, 1, 2, 3, 4, 5, //
                               6, 7, 8, 9, 10, 11}}});
  REQUIRE(out.error.empty());
  CHECK(out.outputs[0] == std::vector<double>{0, 1, 2, 6, 7, 8});
  // b is stored [H, T]: the second halves, transposed.
  CHECK(out.outputs[1] == std::vector<double>{3, 9, 4, 10, 5, 11});
}

TEST_CASE("a window from a runtime offset, and one that does not fit") {
  const char *shifted = "fusion shifted(x: f64[T, S], k: i32) -> (y: f64[T, W]) {\n"
                        "    y = x[S -> W from k + 1];\n"
                        "}\n";
  Outcome out = run(shifted, {{{"T", 1}, {"S", 5}, {"W", 2}}, {{10, 11, 12, 13, 14}, {2}}});
  REQUIRE(out.error.empty());
  CHECK(out.outputs[0] == std::vector<double>{13, 14});
  out = run(shifted, {{{"T", 1}, {"S", 5}, {"W", 2}}, {{10, 11, 12, 13, 14}, {3}}});
  CHECK(out.error == "the window of x along S from 4 of size W = 2 is outside S = 5");
}

TEST_CASE("a gather by a label per row, with out-of-range labels giving 0") {
  const char *target = "fusion target(logits: f64[T, V], label: i64[T]) -> (y: f64[T]) {\n"
                       "    y = logits[V = label];\n"
                       "}\n";
  Outcome out = run(
      target, {{{"T", 4}, {"V", 3}}, {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 0, -100, 3}}});
  REQUIRE(out.error.empty());
  CHECK(out.outputs[0] == std::vector<double>{3, 4, 0, 0});
}

TEST_CASE("a select by a constant and by a size, and the extent as a value") {
  const char *ends = "fusion ends(x: f64[T, H]) -> (first: f64[T], last: f64[T]) {\n"
                     "    first = x[H = 0];\n"
                     "    last = x[H = H - 1];\n"
                     "}\n";
  Outcome out = run(ends, {{{"T", 2}, {"H", 3}}, {{1, 2, 3, 4, 5, 6}}});
  REQUIRE(out.error.empty());
  CHECK(out.outputs[0] == std::vector<double>{1, 4});
  CHECK(out.outputs[1] == std::vector<double>{3, 6});
}

TEST_CASE("a gather whose index has dimensions the parameter lacks") {
  // Each (row, pick) reads row's element at idx[pick]: the result has both.
  const char *picks = "fusion picks(x: f64[T, V], idx: i32[P]) -> (y: f64[T, P]) {\n"
                      "    y = x[V = idx];\n"
                      "}\n";
  Outcome out = run(picks, {{{"T", 2}, {"V", 3}, {"P", 2}}, {{1, 2, 3, 4, 5, 6}, {2, 1}}});
  REQUIRE(out.error.empty());
  CHECK(out.outputs[0] == std::vector<double>{3, 2, 6, 5});
}

TEST_CASE("rotate-half by positions: a gather along its own dimension") {
  // index(D) is each element's position; x[D = f(index(D))] permutes D (and an index
  // outside D reads 0, so each branch of the where reads only its half).
  const char *rope = "fn rotate_half(x) = where(index(D) < D / 2, -x[D = index(D) + D / 2],\n"
                     "                         x[D = index(D) - D / 2]);\n"
                     "fusion rope(x: f64[T, D], c: f64[D], s: f64[D]) -> (y: f64[T, D]) {\n"
                     "    y = x * c + rotate_half(x) * s;\n"
                     "}\n";
  Outcome out = run(rope, {{{"T", 1}, {"D", 4}}, {{1, 2, 3, 4}, {1, 1, 1, 1}, {1, 1, 2, 2}}});
  REQUIRE(out.error.empty());
  // rotate_half = (-3, -4, 1, 2); y = x + (-3, -4, 2, 4).
  CHECK(out.outputs[0] == std::vector<double>{-2, -2, 5, 8});
}
