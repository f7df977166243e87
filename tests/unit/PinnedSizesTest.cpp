// PinnedSizesTest.cpp — guards that pin runtime sizes: which dimensions they pin, the
// fusion copied with them static, and the heuristics planned at the pinned sizes.
#include "TestSupport.h"

#include "pipeline/PinnedHeuristics.h"
#include "pipeline/PinnedSizes.h"
#include "schedule/Printer.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

using namespace fsl;
using fsl::test::Parsed;

namespace {

Target h200() {
  Target t;
  t.name = "h200";
  t.arch = "sm_90a";
  t.smCount = 132;
  t.maxThreadsPerBlock = 1024;
  t.registersPerSm = 65536;
  t.maxRegistersPerThread = 255;
  t.sharedMemoryPerBlock = 232448;
  return t;
}

const char *kRms = "fusion f<DECL>(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {\n"
                   "    let xf = f32(x);\n"
                   "    y = bf16(xf * rsqrt(mean(xf * xf, over H) + 1e-6) * f32(w));\n}\n";

struct Analyzed {
  explicit Analyzed(const std::string &declared) {
    std::string text = kRms;
    text.replace(text.find("<DECL>"), 6, declared);
    parsed = std::make_unique<Parsed>(text);
    REQUIRE_MESSAGE(parsed->file, parsed->firstMessage());
    program = analyze(std::move(parsed->file), parsed->sources, parsed->diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed->firstMessage());
  }
  const ir::Fusion &fusion() const { return *program->fusions[0]; }
  sched::SizeGuard guard(const std::string &dim, sched::Comparison comparison, int64_t bound,
                         int64_t modulus = 0) const {
    return {*fusion().findDim(dim), dim, comparison, bound, llvm::SMRange(), modulus};
  }
  std::unique_ptr<Parsed> parsed;
  std::unique_ptr<Program> program;
};

/// The blocks' directives and guards, without the heuristics' reasons.
std::string bare(std::vector<sched::ScheduleBlock> blocks) {
  for (sched::ScheduleBlock &block : blocks)
    block.reasons.clear();
  return sched::formatBlocks(blocks);
}

} // namespace

TEST_CASE("pinned sizes: `D == N` on a runtime dimension, not a range, a remainder or a static "
          "dimension") {
  using sched::Comparison;
  Analyzed runtime("");
  ir::DimId h = *runtime.fusion().findDim("H"), t = *runtime.fusion().findDim("T");
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 4096)}) ==
        std::map<ir::DimId, int64_t>{{h, 4096}});
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 4096),
                                                 runtime.guard("T", Comparison::Le, 128)}) ==
        std::map<ir::DimId, int64_t>{{h, 4096}});
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("T", Comparison::Eq, 7),
                                                 runtime.guard("H", Comparison::Eq, 64)}) ==
        std::map<ir::DimId, int64_t>{{h, 64}, {t, 7}});
  CHECK(
      pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Le, 4096)}).empty());
  CHECK(
      pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 0, 8)}).empty());
  // An empty row has no static extent; two sizes at once hold for no size.
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 0)}).empty());
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 4096),
                                                 runtime.guard("H", Comparison::Eq, 2048)})
            .empty());
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 4100),
                                                 runtime.guard("H", Comparison::Eq, 0, 8)})
            .empty());
  CHECK(pipeline::pinnedSizes(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 4096),
                                                 runtime.guard("H", Comparison::Eq, 0, 8),
                                                 runtime.guard("H", Comparison::Le, 8192)}) ==
        std::map<ir::DimId, int64_t>{{h, 4096}});
  Analyzed declared("<H = 4096>");
  CHECK(pipeline::pinnedSizes(declared.fusion(), {declared.guard("H", Comparison::Eq, 4096)})
            .empty());
}

TEST_CASE("a fusion with pinned sizes is a copy with them static, sharing no value") {
  Analyzed runtime("");
  const ir::Fusion &fusion = runtime.fusion();
  ir::DimId h = *fusion.findDim("H"), t = *fusion.findDim("T");
  std::unique_ptr<ir::Fusion> copy = pipeline::withStaticSizes(fusion, {{h, 4096}});
  CHECK(copy->name == fusion.name);
  CHECK(copy->dims[h].staticExtent == 4096);
  CHECK_FALSE(copy->dims[t].staticExtent);
  CHECK_FALSE(fusion.dims[h].staticExtent); // the original keeps its runtime size
  REQUIRE(copy->values.size() == fusion.values.size());
  for (size_t i = 0; i < copy->values.size(); ++i) {
    const ir::Value &value = *copy->values[i];
    CHECK(&value != fusion.values[i].get());
    CHECK(value.id == fusion.values[i]->id);
    CHECK(value.op == fusion.values[i]->op);
    for (size_t o = 0; o < value.operands.size(); ++o) {
      REQUIRE(value.operands[o]);
      CHECK(value.operands[o] == copy->values[value.operands[o]->id].get());
    }
  }
  for (size_t p = 0; p < copy->params.size(); ++p)
    if (copy->params[p].value)
      CHECK(copy->params[p].value == copy->values[copy->params[p].value->id].get());
  for (const ir::Output &output : copy->outputs)
    CHECK(output.value == copy->values[output.value->id].get());
}

TEST_CASE("pinned fusions: one copy a fusion and set of sizes; the fusion itself when nothing "
          "is pinned") {
  using sched::Comparison;
  Analyzed runtime("");
  pipeline::PinnedFusions pinned;
  const ir::Fusion &first =
      pinned.under(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 64)});
  const ir::Fusion &again =
      pinned.under(runtime.fusion(),
                   {runtime.guard("T", Comparison::Lt, 9), runtime.guard("H", Comparison::Eq, 64)});
  const ir::Fusion &other =
      pinned.under(runtime.fusion(), {runtime.guard("H", Comparison::Eq, 128)});
  CHECK(&first == &again);
  CHECK(&first != &other);
  CHECK(&first != &runtime.fusion());
  CHECK(*first.dims[*first.findDim("H")].staticExtent == 64);
  CHECK(*other.dims[*other.findDim("H")].staticExtent == 128);
  CHECK(&pinned.under(runtime.fusion(), {runtime.guard("H", Comparison::Le, 64)}) ==
        &runtime.fusion());
}

TEST_CASE("the heuristics under `when H == 4096` choose the static fusion's blocks, under the "
          "guard and disjoint") {
  using sched::Comparison;
  Analyzed runtime(""), declared("<H = 4096>");
  pipeline::PinnedFusions pinned;
  heuristics::Knobs knobs;
  knobs.when = {runtime.guard("H", Comparison::Eq, 4096)};
  heuristics::Choice underGuard =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  heuristics::Choice asStatic = heuristics::chooseSchedules(declared.fusion(), h200(), {});
  REQUIRE(underGuard.blocks.size() == 2);
  REQUIRE(asStatic.blocks.size() == 2);
  // The same directives; the static fusion's `when T < 132` and its unguarded block become
  // `H == 4096 && T < 132` and `H == 4096 && T >= 132`.
  std::string expected = bare(asStatic.blocks);
  expected.replace(expected.find("schedule f when T < 132 {"), 25,
                   "schedule f when H == 4096 && T < 132 {");
  expected.replace(expected.find("schedule f {"), 12, "schedule f when H == 4096 && T >= 132 {");
  CHECK(bare(underGuard.blocks) == expected);
  CHECK(underGuard.blocks[0].reasons.front().find(
            "H is pinned by the guard: planned and lowered as the static size H = 4096") == 0);

  // A knob that needs a static row is honoured; without the pin it is refused.
  knobs.persistentBatch = 2;
  heuristics::Choice batch =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  REQUIRE(batch.blocks.size() == 1);
  CHECK(bare(batch.blocks)
            .find("schedule f when H == 4096 {\n    split H by 8 -> (Ho, Hv);\n"
                  "    split Ho by 256 -> (Hp, Hx);") == 0);
  knobs.when = {runtime.guard("H", Comparison::Le, 4096)};
  heuristics::Choice range =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  CHECK(range.blocks.empty());
  CHECK(range.why.find("knob 'persistent_batch' cannot be honoured: H is a runtime size") == 0);
}

TEST_CASE("the heuristics under a pinning guard: other guards seen at the pinned size, variants "
          "the guard excludes left out") {
  using sched::Comparison;
  Analyzed runtime("");
  pipeline::PinnedFusions pinned;
  heuristics::Knobs knobs;
  // T pinned at 16384 too: the variant for fewer rows than SMs has no size here.
  knobs.when = {runtime.guard("H", Comparison::Eq, 4096),
                runtime.guard("T", Comparison::Eq, 16384)};
  heuristics::Choice many =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  REQUIRE(many.blocks.size() == 1);
  CHECK(sched::guardText(many.blocks[0].header.when) == "H == 4096 && T == 16384");
  // Another schedule for `T < 8` at every H below 8192 meets the pinned sizes' rows below
  // 132: no variant for them.
  knobs.when = {runtime.guard("H", Comparison::Eq, 4096)};
  knobs.otherGuards = {
      {runtime.guard("H", Comparison::Lt, 8192), runtime.guard("T", Comparison::Lt, 8)}};
  heuristics::Choice met =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  REQUIRE(met.blocks.size() == 1);
  CHECK(sched::guardText(met.blocks[0].header.when) == "H == 4096");
  // One for H above 8192 does not: the variants stay.
  knobs.otherGuards = {
      {runtime.guard("H", Comparison::Gt, 8192), runtime.guard("T", Comparison::Lt, 8)}};
  heuristics::Choice apart =
      pipeline::chooseUnderGuard(runtime.fusion(), h200(), knobs, pinned, nullptr);
  CHECK(apart.blocks.size() == 2);
}
