// CompilationTest.cpp — the compilation library (pipeline/Compilation.h) on texts held in
// memory, as the JIT calls it: its Fusion IR, lowered programs and generated sources,
// runtime and specialized dimensions, and its errors.
#include "pipeline/Compilation.h"
#include "kir/IR.h"
#include "pipeline/Sources.h"
#include "pipeline/Targets.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Target.h"

#include <doctest/doctest.h>
#include <llvm/Support/SourceMgr.h>

using namespace fsl;

namespace {

const char *kScale = "fusion scale<T = 64>(x: f32[B, T]) -> (y: f32[B, T]) { y = x * 2.0; }\n";

/// A text through every phase; the diagnostics collected.
struct Compiled {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diagnostics{collected};
  std::optional<pipeline::Compilation> compilation;
  bool ok = false;

  Compiled(const std::string &text, pipeline::Options options) {
    std::optional<pipeline::FoundTarget> target =
        pipeline::findTarget(kDefaultTarget, FSL_TEST_STDLIB_DIR, sources, diagnostics);
    REQUIRE(target);
    options.target = target->target;
    options.stdlibDir = FSL_TEST_STDLIB_DIR;
    options.scheduleEveryFusion = true;
    compilation.emplace(options, sources, "/nonexistent/memory.fsl");
    unsigned buffer = pipeline::addSourceText(sources, "/nonexistent/memory.fsl", text);
    ok = compilation->parse(buffer, diagnostics) && compilation->analyze(diagnostics) &&
         compilation->schedule(diagnostics) && compilation->lower(diagnostics);
  }

  const ir::Dim &dim(const std::string &name) const {
    const ir::Fusion &fusion = *compilation->program()->fusions.front();
    for (const ir::Dim &dim : fusion.dims)
      if (dim.name == name)
        return dim;
    FAIL("no dimension " << name);
    return fusion.dims.front();
  }
};

} // namespace

TEST_CASE("a compilation holds the Fusion IR, the lowered program and the sources") {
  Compiled compiled(kScale, {});
  REQUIRE(compiled.ok);
  CHECK(compiled.collected.diagnostics.empty());
  const pipeline::Compilation &compilation = *compiled.compilation;
  REQUIRE(compilation.program()->fusions.size() == 1);
  const ir::Fusion &fusion = *compilation.program()->fusions.front();
  CHECK(fusion.name == "scale");
  CHECK(compiled.dim("T").staticExtent == 64);
  CHECK(!compiled.dim("B").staticExtent);
  // The heuristics scheduled it: one checked schedule, one lowered program.
  CHECK(compilation.schedules().schedules.size() >= 1);
  REQUIRE(compilation.programOf(fusion));
  CHECK(!compilation.programOf(fusion)->kernels.empty());
  codegen::GeneratedSources sources = compilation.generate(fusion);
  CHECK(sources.source.find("fsl_scale") != std::string::npos);
  CHECK(sources.header.find("fsl_scale") != std::string::npos);
  // The sources name the input by its file name only.
  CHECK(sources.source.find("/nonexistent") == std::string::npos);
}

TEST_CASE("runtime dimensions drop the file's static declarations") {
  pipeline::Options options;
  options.runtimeDims = {"T"};
  Compiled compiled(kScale, options);
  REQUIRE(compiled.ok);
  CHECK(!compiled.dim("T").staticExtent);
  CHECK(compiled.compilation->droppedStaticDims().at("scale").count("T"));
  CHECK(compiled.compilation->staticDimNames().empty());
}

TEST_CASE("specialized dimensions are static, runtime ones and declared ones alike") {
  pipeline::Options options;
  options.specializeDims = {{"B", 8}, {"T", 128}};
  Compiled compiled(kScale, options);
  REQUIRE(compiled.ok);
  CHECK(compiled.dim("B").staticExtent == 8);
  CHECK(compiled.dim("T").staticExtent == 128);
  // A -D may name both now.
  CHECK(compiled.compilation->staticDimNames() == std::set<std::string>{"B", "T"});
  // Defines give a declared one its value; a specialization takes precedence.
  pipeline::Options defined;
  defined.defines = {{"T", 32}};
  CHECK(Compiled(kScale, defined).dim("T").staticExtent == 32);
  defined.specializeDims = {{"T", 16}};
  CHECK(Compiled(kScale, defined).dim("T").staticExtent == 16);
}

TEST_CASE("a compilation reports its errors and stops at the phase that failed") {
  Compiled compiled("fusion f(x: f32[T]) -> (y: f32[T]) { y = x * z; }\n", {});
  CHECK(!compiled.ok);
  CHECK(!compiled.compilation->program());
  REQUIRE(!compiled.collected.diagnostics.empty());
  CHECK(compiled.collected.diagnostics.front().severity == Severity::Error);
  CHECK(compiled.collected.diagnostics.front().message.find("'z'") != std::string::npos);

  Compiled unparsed("fusion f(", {});
  CHECK(!unparsed.ok);
  CHECK(!unparsed.collected.diagnostics.empty());
}

TEST_CASE("only the wanted fusions are lowered") {
  pipeline::Options options;
  options.onlyFusions = {"second"};
  Compiled compiled("fusion first(x: f32[T]) -> (y: f32[T]) { y = x + 1.0; }\n"
                    "fusion second(x: f32[T]) -> (y: f32[T]) { y = x - 1.0; }\n",
                    options);
  REQUIRE(compiled.ok);
  const auto &fusions = compiled.compilation->program()->fusions;
  REQUIRE(fusions.size() == 2);
  CHECK(!compiled.compilation->programOf(*fusions[0]));
  CHECK(compiled.compilation->programOf(*fusions[1]));
  CHECK(compiled.compilation->programs().size() == 1);
}
