// PrinterTest.cpp — canonical printing: layout, idempotence, parentheses.
#include "TestSupport.h"

#include "ast/Printer.h"

#include <doctest/doctest.h>

using namespace fsl;
using namespace fsl::ast;
using fsl::test::Parsed;

namespace {

std::string format(const std::string &text) {
  Parsed p(text);
  REQUIRE_MESSAGE(p.file, p.firstMessage());
  return formatFile(*p.file);
}

} // namespace

TEST_CASE("printing is idempotent on messy input") {
  std::string messy =
      "fusion   f<H=8>(x:bf16[T,H],eps:f32=1e-6)->(y:bf16[T,H]){let a=f32(x)*f32(x);"
      "y=bf16(a+eps);}schedule f{split H by 2->(a,b);vectorize b;}";
  std::string once = format(messy);
  CHECK(once == "fusion f<H = 8>(x: bf16[T, H], eps: f32 = 1e-6) -> (y: bf16[T, H]) {\n"
                "    let a = f32(x) * f32(x);\n"
                "    y = bf16(a + eps);\n"
                "}\n"
                "\n"
                "schedule f {\n"
                "    split H by 2 -> (a, b);\n"
                "    vectorize b;\n"
                "}\n");
  CHECK(format(once) == once);
}

TEST_CASE("long signatures wrap one parameter per line with a trailing comma") {
  std::string text = "fusion a_rather_long_fusion_name(first_input: bf16[T, H], second_input: "
                     "bf16[T, H], third: bf16[H]) -> (y: bf16[T, H]) {\n    y = first_input;\n}\n";
  std::string printed = format(text);
  CHECK(printed == "fusion a_rather_long_fusion_name(\n"
                   "    first_input: bf16[T, H],\n"
                   "    second_input: bf16[T, H],\n"
                   "    third: bf16[H],\n"
                   ") -> (y: bf16[T, H]) {\n"
                   "    y = first_input;\n"
                   "}\n");
  CHECK(format(printed) == printed);
}

TEST_CASE("user parentheses stay; needed ones are added for built trees") {
  CHECK(format("fn f(a, b) = ((a + b)) * b;") == "fn f(a, b) = ((a + b)) * b;\n");
  auto name = [](const char *n) { return std::make_unique<NameExpr>(Name{n, {}}); };
  // a - (b - c) and (a + b) * c, built without ParenExpr nodes.
  BinaryExpr rightNested(BinaryOp::Sub, name("a"),
                         std::make_unique<BinaryExpr>(BinaryOp::Sub, name("b"), name("c"),
                                                      llvm::SMRange(), llvm::SMRange()),
                         llvm::SMRange(), llvm::SMRange());
  CHECK(formatExpr(rightNested) == "a - (b - c)");
  BinaryExpr lowerLeft(BinaryOp::Mul,
                       std::make_unique<BinaryExpr>(BinaryOp::Add, name("a"), name("b"),
                                                    llvm::SMRange(), llvm::SMRange()),
                       name("c"), llvm::SMRange(), llvm::SMRange());
  CHECK(formatExpr(lowerLeft) == "(a + b) * c");
  UnaryExpr negated(UnaryOp::Negate,
                    std::make_unique<BinaryExpr>(BinaryOp::Add, name("a"), name("b"),
                                                 llvm::SMRange(), llvm::SMRange()),
                    llvm::SMRange());
  CHECK(formatExpr(negated) == "-(a + b)");
}

TEST_CASE("blank lines between items are kept, at most one") {
  std::string printed =
      format("fusion f() -> (y: f32[T]) {\n    let a = 1;\n\n\n\n    y = a;\n}\n");
  CHECK(printed == "fusion f() -> (y: f32[T]) {\n    let a = 1;\n\n    y = a;\n}\n");
}

TEST_CASE("reductions over several dimensions print a parenthesized list") {
  CHECK(format("fn f(x) = sum(x, over (H, W)) + max(x, over (H));") ==
        "fn f(x) = sum(x, over (H, W)) + max(x, over H);\n");
}
