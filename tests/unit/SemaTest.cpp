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

TEST_CASE("identical computations are one value, however they were written") {
  // Inlined twice, spelled twice, through two lets: one exp, one constant 1.0.
  Analyzed a("fn act(x) = x * (1.0 / (1.0 + exp(-x)));\n"
             "fusion f(x: f32[T, H]) -> (y: f32[T, H], z: f32[T, H]) {\n"
             "    let a = act(x);\n"
             "    let b = x * (1.0 / (1.0 + exp(-x)));\n"
             "    y = a + b;\n"
             "    z = act(x);\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  size_t exps = 0, constants = 0;
  for (const auto &value : f.values) {
    exps += value->op == ir::Op::Exp;
    constants += value->op == ir::Op::Constant;
  }
  CHECK(exps == 1);
  CHECK(constants == 1);
  REQUIRE(f.outputs.size() == 2);
  // y = a + a; z is a.
  CHECK(f.outputs[0].value->operands[0] == f.outputs[0].value->operands[1]);
  CHECK(f.outputs[1].value == f.outputs[0].value->operands[0]);
  CHECK(f.outputs[1].value->name == "a");
  CHECK(f.outputs[1].value->aliases == std::vector<std::string>{"b"});
}

TEST_CASE("values that differ in type, dimensions or constant stay apart") {
  Analyzed a("fusion f(x: f32[T, H], w: f32[H]) -> (y: f32[T, H], z: f32[H]) {\n"
             "    y = x * 2.0 + x * 3.0;\n"
             "    z = w * 2.0 + f32(f16(w) * f16(2.0));\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  size_t muls = 0;
  for (const auto &value : f.values)
    muls += value->op == ir::Op::Mul;
  CHECK(muls == 4); // x * 2, x * 3, w * 2 (f32), w * 2 (f16)
}

TEST_CASE("nested fn calls cost their distinct calls") {
  std::string text = "fn g0(x) = x * 1.5;\n";
  for (int i = 1; i < 40; ++i)
    text += "fn g" + std::to_string(i) + "(x) = g" + std::to_string(i - 1) + "(x) + g" +
            std::to_string(i - 1) + "(x);\n";
  text += "fusion h(x: f32[T]) -> (y: f32[T]) { y = g39(x); }\n";
  Analyzed a(text);
  // x, 1.5, x * 1.5, then one add a level: 2^40 copies otherwise.
  CHECK(a.fusion().values.size() == 42);
}
