// SemaTest.cpp — the Fusion IR sema builds: dimension order, types, matrix products.
#include "TestSupport.h"

#include "ir/Printer.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

using namespace fsl;
using fsl::test::Parsed;

namespace {

struct Analyzed {
  Parsed parsed;
  std::unique_ptr<Program> program;
  explicit Analyzed(const std::string &text, SemaOptions options = {}) : parsed(text) {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, options);
  }
  const ir::Fusion &fusion() {
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    return *program->fusions.at(0);
  }
};

} // namespace

TEST_CASE("dimensions follow the order of first appearance in the signature") {
  Analyzed a("fusion f(w: f32[H], x: f32[T, H]) -> (y: f32[T, H]) {\n    y = x * w;\n}\n");
  const ir::Fusion &f = a.fusion();
  REQUIRE(f.dims.size() == 2);
  CHECK(f.dims[0].name == "H");
  CHECK(f.dims[1].name == "T");
  // x is declared [T, H]; its value lists dims in fusion order [H, T].
  CHECK(ir::typeString(f, f.params[1].value->dtype, f.params[1].value->dims) == "f32[H, T]");
  CHECK(ir::typeString(f, f.params[1].dtype, f.params[1].dims) == "f32[T, H]");
}

TEST_CASE("static dimensions take -D values over their defaults") {
  SemaOptions options;
  options.defines["H"] = 8192;
  Analyzed a("fusion f<H = 4096>(x: f32[T, H]) -> (y: f32[T]) {\n    y = sum(x, over H);\n}\n",
             options);
  CHECK(*a.fusion().dims[1].staticExtent == 8192);
  CHECK_FALSE(a.fusion().dims[0].staticExtent.has_value());
}

TEST_CASE("sum of a product over a shared dimension is a matrix product") {
  Analyzed a("fusion f(a: bf16[M, K], w: bf16[K, N]) -> (y: f32[M, N]) {\n"
             "    y = sum(f32(a) * f32(w), over K);\n}\n");
  const ir::Fusion &f = a.fusion();
  const ir::Value *product = f.outputs[0].value;
  REQUIRE(product->op == ir::Op::MatMul);
  CHECK(product->reduced == std::vector<ir::DimId>{*f.findDim("K")});
  CHECK(product->lhsLayout->inputName == "a");
  CHECK(product->lhsLayout->contractedIsInner);
  CHECK(product->rhsLayout->inputName == "w");
  CHECK_FALSE(product->rhsLayout->contractedIsInner); // w is [K, N]: K is the outer dim
  // The elementwise product is gone from the IR.
  for (const auto &value : f.values)
    CHECK(value->op != ir::Op::Mul);
}

TEST_CASE("a product reduced over a dimension only one side has is not a matrix product") {
  Analyzed a(
      "fusion f(x: f32[T, H], w: f32[H]) -> (y: f32[T]) {\n    y = sum(x * w, over H);\n}\n");
  CHECK(a.fusion().outputs[0].value->op == ir::Op::ReduceSum);
}

TEST_CASE("literals take the type of the tensor they meet") {
  Analyzed a("fusion f(x: bf16[T]) -> (y: bf16[T]) {\n    y = x * 2.0 + 1;\n}\n");
  for (const auto &value : a.fusion().values)
    if (value->op == ir::Op::Constant)
      CHECK(value->dtype == ir::DType::BF16);
}

TEST_CASE("literal arithmetic folds") {
  Analyzed a("fusion f(x: f32[T]) -> (y: f32[T]) {\n    y = x * (1.0 / 4.0);\n}\n");
  int constants = 0;
  for (const auto &value : a.fusion().values)
    if (value->op == ir::Op::Constant) {
      ++constants;
      CHECK(value->constant == 0.25);
    }
  CHECK(constants == 1);
}
