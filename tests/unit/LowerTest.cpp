// LowerTest.cpp — the choices the lowering makes that a schedule does not spell: early
// loads, reciprocal divisions, clamped rows and deferred inout write-backs.
#include "TestSupport.h"

#include "lower/Lower.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <llvm/ADT/STLExtras.h>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// Lowers the one schedule of `source`; fails the test on any diagnostic.
struct Lowered {
  Parsed parsed;
  std::unique_ptr<Program> program;
  std::unique_ptr<sched::Schedule> schedule;
  std::unique_ptr<kir::Kernel> kernel;
  explicit Lowered(const std::string &source) : parsed(source) {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
    schedule = sched::buildSchedule(*decl, *program->fusions[0], parsed.diagnostics);
    REQUIRE_MESSAGE(schedule, parsed.firstMessage());
    kernel = lowerSchedule(*schedule, "k", parsed.diagnostics);
    REQUIRE_MESSAGE(kernel, parsed.firstMessage());
  }
  const ir::Value &value(const char *name) const {
    for (const auto &v : program->fusions[0]->values)
      if (v->name == name)
        return *v;
    FAIL("no value " << name);
    return *program->fusions[0]->values[0];
  }
  std::vector<std::string> earlyInputs() const {
    std::vector<std::string> names;
    for (const ir::Value *input : kernel->earlyInputs)
      names.push_back(program->fusions[0]->params[input->paramIndex].name);
    return names;
  }
  int storePhase(const char *output) const {
    for (size_t p = 0; p < kernel->phases.size(); ++p)
      for (const ir::Output *o : kernel->phases[p].stores)
        if (o->name == output)
          return static_cast<int>(p);
    return -1;
  }
};

/// The early inputs of a fusion over rows of H = 4096 bf16 (a batch of 4 vectors of 16
/// bytes), scheduled as the heuristics would, with `header` its signature and `body` its
/// statements (reading x, keeping xf).
std::vector<std::string> earlyInputsOfNorm(const std::string &header, const std::string &body) {
  Lowered lowered("fusion f<H = 4096>" + header + " {\n    let xf = f32(x)" + body + "\n}\n" +
                  "schedule f {\n"
                  "    split H by 8 -> (Ho, Hv);\n"
                  "    split Ho by 128 -> (Hp, Hx);\n"
                  "    parallelize T -> BIDx, Hx -> TIDx;\n"
                  "    vectorize Hv;\n"
                  "    unroll Hp;\n"
                  "    persistent xf in registers;\n"
                  "}\n");
  return lowered.earlyInputs();
}

} // namespace

TEST_CASE("early loads: inputs read after a reduction, within 64 bytes a thread") {
  const char *weighted = "(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H])";
  // The weight costs 4 vectors of 16 bytes: 64 bytes.
  CHECK(
      earlyInputsOfNorm(weighted, ";\n    y = bf16(xf * rsqrt(mean(xf * xf, over H)) * f32(w));") ==
      std::vector<std::string>{"w"});
  // Two such inputs cost 128 bytes: the first fits, the second waits for its phase.
  CHECK(earlyInputsOfNorm("(x: bf16[T, H], g: bf16[H], b: bf16[H]) -> (y: bf16[T, H])",
                          ";\n    y = bf16((xf - mean(xf, over H)) * f32(g) + f32(b));") ==
        std::vector<std::string>{"g"});
  // An input read in phase 0 is loaded there anyway.
  CHECK(earlyInputsOfNorm(weighted, " * f32(w);\n    y = bf16(xf * rsqrt(mean(xf * xf, over H)));")
            .empty());
}

TEST_CASE("a division by a row-invariant value multiplies by its reciprocal") {
  Lowered softmax(
      "fusion f<H = 1024>(x: f32[T, H], s: f32 = 2.0) -> (y: f32[T, H], z: f32[T, H]) {\n"
      "    let e = exp(x);\n"
      "    let p = e / (sum(e, over H) * s);\n"
      "    let q = e / x;\n"
      "    y = p;\n    z = q;\n}\n"
      "schedule f {\n    split H by 128 -> (Hp, Hx);\n"
      "    parallelize T -> BIDx, Hx -> TIDx;\n}\n");
  CHECK(softmax.kernel->reciprocalDivisions.count(softmax.value("p").id) == 1);
  CHECK(softmax.kernel->reciprocalDivisions.count(softmax.value("q").id) == 0); // x varies
}

TEST_CASE("rows split over threadIdx.y are clamped; rows a thread walks are checked") {
  Lowered rows("fusion f<H = 1024>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n"
               "    let xf = f32(x);\n    y = bf16(xf / sum(xf, over H));\n}\n"
               "schedule f {\n    split H by 32 -> (Hp, Hx);\n    split T by 4 -> (Tb, Ty);\n"
               "    parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;\n}\n");
  ir::DimId t = 0;
  CHECK(rows.program->fusions[0]->dims[t].name == "T");
  CHECK(rows.kernel->clampedRoots.count(t) == 1);
  CHECK(rows.kernel->inexactRoots.count(t) == 0);
  // A column sum walks T in a serial loop (and sums over it: a repeated row would count
  // twice), so T keeps its bounds check.
  Lowered columns("fusion f<H = 64>(x: f32[T, H]) -> (y: f32[H]) {\n"
                  "    y = sum(x, over T);\n}\n"
                  "schedule f {\n    split T by 32 -> (Tb, Tx);\n"
                  "    parallelize H -> BIDx, Tx -> TIDx;\n}\n");
  CHECK(columns.kernel->clampedRoots.empty());
  CHECK(columns.kernel->inexactRoots.count(t) == 1);
}

TEST_CASE("an inout write-back waits for the last phase that reads its parameter") {
  const char *fusion =
      "fusion f<H = 1024>(x: bf16[T, H], r: inout bf16[T, H]) -> (y: bf16[T, H]) {\n"
      "    let h = f32(x) + f32(r);\n    r = bf16(h);\n"
      "    y = bf16(h * rsqrt(mean(h * h, over H)));\n}\n";
  std::string split = "    split H by 128 -> (Hp, Hx);\n    parallelize T -> BIDx, Hx -> TIDx;\n";
  Lowered recomputed(std::string(fusion) + "schedule f {\n" + split + "}\n");
  CHECK(recomputed.storePhase("r") == 1);
  // Kept in registers, h is not read again: the write-back stays in phase 0.
  Lowered kept(std::string(fusion) + "schedule f {\n" + split +
               "    persistent h in registers;\n}\n");
  CHECK(kept.storePhase("r") == 0);
}
