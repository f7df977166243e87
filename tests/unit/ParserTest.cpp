// ParserTest.cpp — the AST the parser builds: structure, ranges, precedence, errors.
#include "TestSupport.h"

#include <doctest/doctest.h>

using namespace fsl;
using namespace fsl::ast;
using fsl::test::Parsed;

TEST_CASE("a fusion's signature and body become AST nodes with their source ranges") {
  Parsed p("fusion rms<H = 4096, W>(x: bf16[T, H], r: inout strided f32[H], eps: f32 = 1e-6)"
           " -> (y: bf16[T, H]) {\n"
           "    let ms: f32[T] = mean(f32(x) * f32(x), over H);\n"
           "    y = bf16(ms);\n"
           "}\n");
  REQUIRE(p.file);
  REQUIRE(p.file->decls.size() == 1);
  auto *fusion = llvm::dyn_cast<FusionDecl>(p.file->decls[0].get());
  REQUIRE(fusion);
  CHECK(fusion->name.text == "rms");
  REQUIRE(fusion->staticDims.size() == 2);
  CHECK(fusion->staticDims[0].value->value == 4096);
  CHECK_FALSE(fusion->staticDims[1].value.has_value());
  REQUIRE(fusion->params.size() == 3);
  CHECK(p.text(fusion->params[0].range) == "x: bf16[T, H]");
  CHECK(fusion->params[0].type.element == ElementType::BF16);
  CHECK(fusion->params[0].type.dims.size() == 2);
  CHECK(fusion->params[1].isInout);
  CHECK(fusion->params[1].isStrided);
  CHECK(fusion->params[2].type.isScalar());
  REQUIRE(fusion->params[2].defaultValue);
  CHECK(llvm::cast<LiteralExpr>(*fusion->params[2].defaultValue).floatValue ==
        doctest::Approx(1e-6));
  REQUIRE(fusion->outputs.size() == 1);
  REQUIRE(fusion->body.size() == 2);
  const Statement &let = fusion->body[0];
  CHECK(let.isLet);
  CHECK(let.declaredType->dims[0].text == "T");
  auto *mean = llvm::dyn_cast<CallExpr>(let.value.get());
  REQUIRE(mean);
  CHECK(mean->callee.text == "mean");
  CHECK(mean->args.size() == 1);
  REQUIRE(mean->overDims.size() == 1);
  CHECK(mean->overDims[0].text == "H");
  CHECK(p.text(mean->range) == "mean(f32(x) * f32(x), over H)");
  CHECK(p.text(mean->overRange) == "over H");
  CHECK_FALSE(fusion->body[1].isLet);
}

TEST_CASE("binary operators follow precedence and associate to the left") {
  Parsed p("fn f(a, b, c) = a - b - c * -a < b && c == a || b;");
  REQUIRE(p.file);
  auto *fn = llvm::cast<FnDecl>(p.file->decls[0].get());
  // ((((a - b) - (c * -a)) < b) && (c == a)) || b
  auto *orExpr = llvm::dyn_cast<BinaryExpr>(fn->body.get());
  REQUIRE(orExpr);
  CHECK(orExpr->op == BinaryOp::Or);
  auto *andExpr = llvm::cast<BinaryExpr>(orExpr->lhs.get());
  CHECK(andExpr->op == BinaryOp::And);
  auto *less = llvm::cast<BinaryExpr>(andExpr->lhs.get());
  CHECK(less->op == BinaryOp::Lt);
  auto *minus = llvm::cast<BinaryExpr>(less->lhs.get());
  CHECK(minus->op == BinaryOp::Sub);
  CHECK(llvm::cast<BinaryExpr>(minus->lhs.get())->op == BinaryOp::Sub);
  auto *product = llvm::cast<BinaryExpr>(minus->rhs.get());
  CHECK(product->op == BinaryOp::Mul);
  CHECK(llvm::isa<UnaryExpr>(product->rhs.get()));
  CHECK(p.text(product->opRange) == "*");
}

TEST_CASE("schedule directives keep their operands") {
  Parsed p("schedule f when T < 132 && H >= 8 {\n"
           "  split y.H into 4 -> (Ho, Hi);\n"
           "  parallelize T -> BIDx, Hi -> TIDx;\n"
           "  unroll Ho by 2;\n"
           "  persistent h in shared;\n"
           "  tiles split_k 4;\n"
           "  warp_specialize producer(regs 40), consumers(2, regs 232);\n"
           "}\n"
           "schedule f = auto(inner_persistent) { static_bdimx = false; }\n");
  REQUIRE(p.file);
  auto *schedule = llvm::cast<ScheduleDecl>(p.file->decls[0].get());
  REQUIRE(schedule->when.size() == 2);
  CHECK(schedule->when[0].op == BinaryOp::Lt);
  CHECK(schedule->when[0].bound.value == 132);
  CHECK(schedule->when[1].op == BinaryOp::Ge);
  REQUIRE(schedule->directives.size() == 6);
  auto *split = llvm::dyn_cast<SplitDirective>(schedule->directives[0].get());
  REQUIRE(split);
  CHECK(split->factorIsOuter);
  CHECK(split->factor.value == 4);
  CHECK(split->dim.tensor->text == "y");
  CHECK(split->dim.dim.text == "H");
  CHECK(p.text(split->range) == "split y.H into 4 -> (Ho, Hi);");
  auto *parallelize = llvm::cast<ParallelizeDirective>(schedule->directives[1].get());
  REQUIRE(parallelize->bindings.size() == 2);
  CHECK(parallelize->bindings[1].type == ParallelType::TIDx);
  CHECK(llvm::cast<UnrollDirective>(schedule->directives[2].get())->factor->value == 2);
  CHECK(llvm::cast<PersistentDirective>(schedule->directives[3].get())->memory ==
        MemoryKind::Shared);
  auto *tiles = llvm::cast<TilesDirective>(schedule->directives[4].get());
  CHECK(tiles->order == TileOrderKind::SplitK);
  CHECK(tiles->parameter->value == 4);
  auto *warps = llvm::cast<WarpSpecializeDirective>(schedule->directives[5].get());
  CHECK(warps->producerRegs.value == 40);
  CHECK(warps->consumerCount.value == 2);
  CHECK(warps->consumerRegs.value == 232);

  auto *autoSchedule = llvm::cast<ScheduleDecl>(p.file->decls[1].get());
  CHECK(autoSchedule->isAuto);
  CHECK(autoSchedule->autoKind->text == "inner_persistent");
  REQUIRE(autoSchedule->knobs.size() == 1);
  CHECK_FALSE(llvm::cast<LiteralExpr>(*autoSchedule->knobs[0].value).boolValue);
}

TEST_CASE("comments attach to the items they annotate") {
  Parsed p("// about f\n"
           "fusion f(x: f32[T], // the input\n"
           "         w: f32[T]) -> (y: f32[T]) {\n"
           "    // first\n"
           "    y = x; // trailing\n"
           "    // last\n"
           "}\n");
  REQUIRE(p.file);
  auto *fusion = llvm::cast<FusionDecl>(p.file->decls[0].get());
  CHECK(fusion->comments.leading == std::vector<std::string>{"// about f"});
  CHECK(fusion->params[0].comments.trailing == "// the input");
  CHECK(fusion->body[0].comments.leading == std::vector<std::string>{"// first"});
  CHECK(fusion->body[0].comments.trailing == "// trailing");
  CHECK(fusion->endComments == std::vector<std::string>{"// last"});
}

TEST_CASE("syntax errors are reported several per file, and no AST is returned") {
  Parsed p("fusion f() {\n  let = 1;\n  y = ;\n}\nschedule f { split H by x -> (a, b); }\n");
  CHECK_FALSE(p.file);
  REQUIRE(p.collected.diagnostics.size() == 3);
  for (const Diagnostic &d : p.collected.diagnostics)
    CHECK(d.kind == DiagId::SyntaxError);
  CHECK(p.text(p.collected.diagnostics[2].range) == "x");
}

TEST_CASE("nesting beyond the limit is refused before parsing") {
  ParseLimits limits;
  limits.maxNesting = 4;
  Parsed deep("fn f(x) = ((((((x))))));", limits);
  CHECK_FALSE(deep.file);
  REQUIRE(deep.collected.diagnostics.size() == 1);
  CHECK(deep.collected.diagnostics[0].kind == DiagId::NestingTooDeep);
  Parsed shallow("fn f(x) = (((x)));", limits);
  CHECK(shallow.file);
}

TEST_CASE("each invalid character is reported once, without syntax errors after it") {
  Parsed p("fusion f() { y = x $ $ $ $ $ $ $ $ $ $; }");
  CHECK_FALSE(p.file);
  CHECK(p.collected.diagnostics.size() == 10);
  for (const Diagnostic &d : p.collected.diagnostics)
    CHECK(d.kind == DiagId::InvalidCharacter);
}

TEST_CASE("the error limit stops the parser") {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  engine.setErrorLimit(3);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("fusion f() { a = ; b = ; c = ; d = ; e = ; }", "t.fsl"),
      llvm::SMLoc());
  CHECK_FALSE(parseFile(sources, buffer, engine));
  REQUIRE(collected.diagnostics.size() == 4);
  CHECK(collected.diagnostics[3].kind == DiagId::TooManyErrors);
}
