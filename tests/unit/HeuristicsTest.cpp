// HeuristicsTest.cpp — the heuristics' choices, pinned for given sizes, types and targets.
#include "TestSupport.h"

#include "heuristics/Heuristics.h"
#include "ir/RegisterPressure.h"
#include "schedule/FromAst.h"
#include "schedule/Printer.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>
#include <limits>
#include <tuple>

#include <llvm/Support/FormatVariadic.h>

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

const char *kRmsNormAdd =
    "fusion f<H = SIZE>(x: bf16[T, H], r: inout bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {\n"
    "    let h = f32(x) + f32(r);\n    r = bf16(h);\n"
    "    y = bf16(h * rsqrt(mean(h * h, over H) + 1e-6) * f32(w));\n}\n";

std::string choose(const std::string &text, heuristics::Knobs knobs = {}) {
  Parsed parsed(text);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  heuristics::Choice choice = heuristics::chooseSchedules(*program->fusions[0], h200(), knobs);
  return choice.blocks.empty() ? "why: " + choice.why : sched::formatBlocks(choice.blocks);
}

std::string rmsNormAdd(int h, heuristics::Knobs knobs = {}) {
  std::string text = kRmsNormAdd;
  text.replace(text.find("SIZE"), 4, std::to_string(h));
  return choose(text, knobs);
}

} // namespace

TEST_CASE("inner persistent, H = 4096 bf16: 16-byte vectors, 128 static threads x 4, registers") {
  std::string text = rmsNormAdd(4096);
  CHECK(text.find("schedule f {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 128 -> (Hp, Hx);\n"
                  "    parallelize T -> BIDx, Hx -> TIDx;\n    vectorize Hv;\n    unroll Hp;\n"
                  "    persistent h in registers;\n    compute_with h;\n}") != std::string::npos);
  // Fewer rows than SMs: one row over 256 threads x 2.
  CHECK(text.find("schedule f when T < 132 {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 256 "
                  "-> (Hp, Hx);") != std::string::npos);
  CHECK(text.find("// persistent h in registers: 32 values of f32 a thread fit registers.") !=
        std::string::npos);
}

TEST_CASE("inner persistent, H = 16384: 256 threads x 8; 512 x 4 below the SM count") {
  std::string text = rmsNormAdd(16384);
  CHECK(
      text.find("schedule f {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 256 -> (Hp, Hx);") !=
      std::string::npos);
  CHECK(text.find("// persistent h in registers: 64 values") != std::string::npos);
  CHECK(text.find("schedule f when T < 132 {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 512 "
                  "-> (Hp, Hx);") != std::string::npos);
}

TEST_CASE("inner persistent, H = 8192: 256 threads x 4; 512 x 2 below the SM count") {
  std::string text = rmsNormAdd(8192);
  CHECK(
      text.find("schedule f {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 256 -> (Hp, Hx);") !=
      std::string::npos);
  CHECK(text.find(
            "when T < 132 {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 512 -> (Hp, Hx);") !=
        std::string::npos);
}

TEST_CASE(
    "inner persistent, H = 1024: a warp a row, 4 rows a block; 128 threads below the SM count") {
  std::string text = rmsNormAdd(1024);
  CHECK(text.find("schedule f {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 32 -> (Hp, Hx);\n"
                  "    split T by 4 -> (Tb, Ty);") != std::string::npos);
  CHECK(text.find(
            "when T < 132 {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 128 -> (Hp, Hx);") !=
        std::string::npos);
}

TEST_CASE("softmax with short rows: a warp a row, four rows a block") {
  std::string text =
      choose("fusion f<H = 1024>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n    let xf = f32(x);\n"
             "    let e = exp(xf - max(xf, over H));\n    y = bf16(e / sum(e, over H));\n}\n");
  CHECK(text.find("// persistent e in registers") != std::string::npos);
  CHECK(text.find("schedule f {\n    split H by 8 -> (Ho, Hv);\n    split Ho by 32 -> (Hp, Hx);\n"
                  "    split T by 4 -> (Tb, Ty);\n"
                  "    parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;") != std::string::npos);
}

TEST_CASE("short rows share a block; a vector width divides H") {
  std::string text = rmsNormAdd(200); // 25 vectors of 8: one warp a row, 4 rows a block
  CHECK(text.find("split Ho by 32 -> (Hp, Hx);") != std::string::npos);
  CHECK(text.find("split T by 4 -> (Tb, Ty);") != std::string::npos);
  CHECK(text.find("parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;") != std::string::npos);
  std::string odd = rmsNormAdd(1000); // 1000 = 8 x 125
  CHECK(odd.find("split H by 8 -> (Ho, Hv);") != std::string::npos);
  std::string four = rmsNormAdd(1004); // 1004 = 4 x 251: 8 does not divide
  CHECK(four.find("split H by 4 -> (Ho, Hv);") != std::string::npos);
}

TEST_CASE("knobs: static_bdimx = false splits the batch outer; compute_with = false drops it") {
  heuristics::Knobs knobs;
  knobs.staticBdimx = false;
  knobs.computeWith = false;
  std::string text = rmsNormAdd(4096, knobs);
  CHECK(text.find("split Ho into 4 -> (Hp, Hx);") != std::string::npos);
  CHECK(text.find("compute_with") == std::string::npos);
  CHECK(text.find("static_bdimx = false") != std::string::npos);
}

TEST_CASE("the register budget moves large buffers to shared memory") {
  heuristics::Knobs knobs;
  knobs.persistentBatch = 32; // 32 x 8 = 256 values a thread: too many registers
  std::string text = rmsNormAdd(32768, knobs);
  CHECK(text.find("persistent h in shared;") != std::string::npos);
}

TEST_CASE("f32 rows get 4-wide vectors; runtime rows get scalar accesses") {
  CHECK(choose("fusion f<H = 4096>(x: f32[T, H]) -> (y: f32[T, H]) {\n    let e = exp(x);\n"
               "    y = e / sum(e, over H);\n}\n")
            .find("split H by 4 -> (Ho, Hv);") != std::string::npos);
  std::string pointwise = choose("fusion f(x: bf16[T, H]) -> (y: bf16[T, H]) {\n    y = x;\n}\n");
  CHECK(pointwise.find("vectorize") == std::string::npos);
  CHECK(pointwise.find("parallelize T -> BIDx, Hb -> BIDy, Hx -> TIDx;") != std::string::npos);
}

TEST_CASE("classification and what the heuristics decline") {
  CHECK(choose("fusion f(x: f32[T, H]) -> (y: f32[H]) {\n    y = sum(x, over T);\n}\n")
            .find("auto(reduction), outer") != std::string::npos);
  // A matrix product: auto(matmul), as examples/linear_bias_gelu.fsl (docs/performance.md).
  std::string matmul = choose("fusion f(a: bf16[M, K], b: bf16[N, K]) -> (c: f32[M, N]) {\n"
                              "    c = sum(f32(a) * f32(b), over K);\n}\n");
  CHECK(matmul.find("warp_specialize producer(regs 40), consumers(2, regs 232);") !=
        std::string::npos);
  CHECK(matmul.find("when M >= 65 && M < 512") != std::string::npos);
}

namespace {

/// The first fusion's schedules for the knobs of the file's first `= auto` block, and the
/// diagnostics the heuristics report, as `knob text: message [id]`.
struct Chosen {
  std::string text;
  std::vector<std::string> diagnostics;
};

Chosen chooseWithKnobs(const std::string &source) {
  Parsed parsed(source);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  const ast::ScheduleDecl *decl = nullptr;
  for (const ast::DeclPtr &d : program->main->decls)
    if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(d.get()); schedule && !decl)
      decl = schedule;
  REQUIRE(decl);
  size_t before = parsed.collected.diagnostics.size();
  const ir::Fusion &fusion = *program->fusions[0];
  heuristics::Choice choice = heuristics::chooseSchedules(
      fusion, h200(), heuristics::knobsOf(*decl, sched::headerOf(*decl, fusion)),
      &parsed.diagnostics);
  Chosen chosen{choice.blocks.empty() ? "why: " + choice.why : sched::formatBlocks(choice.blocks),
                {}};
  for (size_t i = before; i < parsed.collected.diagnostics.size(); ++i) {
    const Diagnostic &d = parsed.collected.diagnostics[i];
    chosen.diagnostics.push_back(parsed.text(d.range) + ": " + messageWithId(d));
  }
  return chosen;
}

const char *kNorm =
    "fusion f<H = SIZE>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n"
    "    let h = f32(x);\n    y = bf16(h * rsqrt(mean(h * h, over H) + 1e-6));\n}\n";

std::string norm(int h, const std::string &knobs) {
  std::string text = kNorm;
  text.replace(text.find("SIZE"), 4, std::to_string(h));
  return text + "schedule f = auto(inner_persistent) {\n" + knobs + "}\n";
}

} // namespace

TEST_CASE("knobs: a refused knob is reported at the knob, and nothing is chosen") {
  Chosen chosen = chooseWithKnobs("fusion f<H = 4096>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                                  "    y = x;\n}\n"
                                  "schedule f = auto(pointwise) {\n    vector_width = 8;\n}\n");
  REQUIRE(chosen.diagnostics.size() == 1);
  CHECK(chosen.diagnostics[0] ==
        "vector_width = 8;: knob 'vector_width' cannot be honoured: 8 x 4-byte elements are 32 "
        "bytes, over the 16 bytes of one access; use vector_width = 4 or less "
        "[auto-knob-unsupported]");
  CHECK(chosen.text == "why: knob 'vector_width' cannot be honoured: 8 x 4-byte elements are 32 "
                       "bytes, over the 16 bytes of one access; use vector_width = 4 or less");
}

TEST_CASE("knobs: without an engine a refusal still leaves no schedule, and says why") {
  heuristics::Knobs knobs;
  knobs.rowsPerBlock = 8; // 8 rows of 256 threads at H = 8192
  CHECK(rmsNormAdd(8192, knobs) ==
        "why: knob 'rows_per_block' cannot be honoured: 8 rows of 256 threads are 2048 threads, "
        "over the 1024 of a block on h200; use rows_per_block = 4 or less");
}

TEST_CASE("knobs: unroll = N gives each thread N accesses, a block apart") {
  Chosen chosen =
      chooseWithKnobs("fusion f<H = 16384>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n"
                      "    y = x;\n}\nschedule f = auto(pointwise) {\n    unroll = 4;\n}\n");
  CHECK(chosen.diagnostics.empty());
  CHECK(chosen.text.find("    split H by 8 -> (Ho, Hv);\n    split Ho by 128 -> (Hq, Hx);\n"
                         "    split Hq by 4 -> (Hb, Hu);\n"
                         "    parallelize T -> BIDx, Hb -> BIDy, Hx -> TIDx;\n"
                         "    vectorize Hv;\n    unroll Hu;\n") != std::string::npos);
}

TEST_CASE("knobs: persistent_batch is the batch, on the fewest whole warps, for every row count") {
  Chosen chosen = chooseWithKnobs(norm(4096, "    persistent_batch = 8;\n"));
  CHECK(chosen.diagnostics.empty());
  CHECK(chosen.text.find("split Ho by 64 -> (Hp, Hx);") != std::string::npos);
  CHECK(chosen.text.find("when T < 132") == std::string::npos);
  // Outer split: the batch is exact without whole warps.
  chosen = chooseWithKnobs(norm(1000, "    persistent_batch = 3;\n    static_bdimx = false;\n"));
  CHECK(chosen.diagnostics.empty());
  CHECK(chosen.text.find("split Ho into 3 -> (Hp, Hx);") != std::string::npos);
  // Whole warps cover 128 vectors with at most 4 a thread.
  chosen = chooseWithKnobs(norm(1024, "    persistent_batch = 8;\n"));
  REQUIRE(chosen.diagnostics.size() == 1);
  CHECK(chosen.diagnostics[0].find("persistent_batch = 8;: knob 'persistent_batch' cannot be "
                                   "honoured: a static blockDim.x is whole warps") == 0);
}

TEST_CASE("knobs: each set knob is honoured or refused, never both, never neither") {
  // Every knob of auto(inner_persistent) at once, all honoured.
  Chosen chosen =
      chooseWithKnobs(norm(4096, "    static_bdimx = false;\n    compute_with = false;\n"
                                 "    vector_width = 4;\n    persistent_batch = 2;\n"
                                 "    rows_per_block = 2;\n"));
  CHECK(chosen.diagnostics.empty());
  CHECK(chosen.text.find("split H by 4 -> (Ho, Hv);\n    split Ho into 2 -> (Hp, Hx);\n"
                         "    split T by 2 -> (Tb, Ty);") != std::string::npos);
  CHECK(chosen.text.find("compute_with") == std::string::npos);
  // A knob set directly that the heuristic taken does not read is refused, not dropped.
  heuristics::Knobs knobs;
  knobs.unroll = 2; // a pointwise knob, given to a normalization
  CHECK(rmsNormAdd(4096, knobs) ==
        "why: knob 'unroll' cannot be honoured: auto(inner_persistent) does not read it for 'f'");
  // A heuristic that declines the fusion takes its knobs along: `why` is its reason.
  knobs = {};
  knobs.kind = "reduction";
  knobs.vectorWidth = 4;
  CHECK(choose("fusion f(x: f32[T, H]) -> (y: f32[T, H]) {\n    y = x;\n}\n", knobs) ==
        "why: the reduction heuristics handle fusions that reduce one dimension");
}

TEST_CASE("chosen directives point at the knob that decided them, the others at the block") {
  Parsed parsed(norm(4096, "    vector_width = 4;\n    rows_per_block = 2;\n"));
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
  const ir::Fusion &fusion = *program->fusions[0];
  heuristics::Choice choice = heuristics::chooseSchedules(
      fusion, h200(), heuristics::knobsOf(*decl, sched::headerOf(*decl, fusion)),
      &parsed.diagnostics);
  REQUIRE(choice.blocks.size() == 1);
  const sched::ScheduleBlock &block = choice.blocks[0];
  CHECK(block.header.chosenByHeuristics);
  CHECK(parsed.text(block.header.fusionRange) == "f");
  REQUIRE(block.directives.size() >= 4);
  CHECK(sched::directiveText(block.directives[0]) == "split H by 4 -> (Ho, Hv);");
  CHECK(parsed.text(block.directives[0].range) == "vector_width = 4;");
  CHECK(sched::directiveText(block.directives[2]) == "split T by 2 -> (Tb, Ty);");
  CHECK(parsed.text(block.directives[2].range) == "rows_per_block = 2;");
  CHECK(parsed.text(block.directives[3].range).rfind("schedule f = auto(inner_persistent)", 0) ==
        0);
  CHECK(block.reasons.front() == "auto(inner_persistent).");
}

TEST_CASE("register pressure: the row inputs read beside a kept buffer, and the block's share") {
  // `measure` of the first fusion of `source`, with the values it names kept.
  auto withFusion = [](const std::string &source, std::initializer_list<const char *> names,
                       auto measure) {
    Parsed parsed(source);
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    auto program =
        analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    const ir::Fusion &fusion = *program->fusions[0];
    std::set<const ir::Value *> kept;
    for (const auto &value : fusion.values)
      for (const char *name : names)
        if (value->name == name)
          kept.insert(value.get());
    return measure(fusion, kept);
  };
  auto lateBytes = [&](const std::string &source) {
    return withFusion(source, {"xf"}, [](const ir::Fusion &fusion, const auto &kept) {
      ir::DimId inner = fusion.outputs[0].dims.back();
      return std::pair(ir::lateRowInputBytes(fusion, inner, kept),
                       ir::rowInputsReadTwice(fusion, inner));
    });
  };
  // RMSNorm's weight is read after the mean, beside the kept row; x is the buffer's.
  CHECK(lateBytes("fusion f(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {\n"
                  "    let xf = f32(x);\n"
                  "    y = bf16(xf * rsqrt(mean(xf * xf, over H) + 1e-6) * f32(w));\n}\n") ==
        std::pair<int64_t, int64_t>(2, 1));
  // LayerNorm's gamma (f32 here) and beta: 4 + 2 bytes.
  CHECK(lateBytes("fusion f(x: bf16[T, H], g: f32[H], b: bf16[H]) -> (y: bf16[T, H]) {\n"
                  "    let xf = f32(x);\n    let d = xf - mean(xf, over H);\n"
                  "    y = bf16(d * rsqrt(mean(d * d, over H) + 1e-5) * g + f32(b));\n}\n") ==
        std::pair<int64_t, int64_t>(6, 1));
  // Nothing kept: x is read again after the mean, beside the weight.
  CHECK(lateBytes("fusion f(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {\n"
                  "    y = bf16(f32(x) * rsqrt(mean(f32(x) * f32(x), over H) + 1e-6) * "
                  "f32(w));\n}\n") == std::pair<int64_t, int64_t>(4, 1));
  // Softmax reads nothing but its row.
  CHECK(lateBytes("fusion f(x: bf16[T, S]) -> (y: bf16[T, S]) {\n"
                  "    let xf = f32(x);\n    let e = exp(xf - max(xf, over S));\n"
                  "    y = bf16(e / sum(e, over S));\n}\n") == std::pair<int64_t, int64_t>(0, 1));
  // Buffers live together: softmax's xf becomes e an element at a time (one register a
  // value), two rows read in the last phase take both (two), an f64 buffer two.
  auto live = [&](const std::string &source) {
    return withFusion(source, {"xf", "e", "zf", "zd"},
                      [](const ir::Fusion &fusion, const auto &kept) {
                        return ir::liveBufferRegistersPerValue(fusion, kept);
                      });
  };
  CHECK(live("fusion f(x: bf16[T, S]) -> (y: bf16[T, S]) {\n"
             "    let xf = f32(x);\n    let e = exp(xf - max(xf, over S));\n"
             "    y = bf16(e / sum(e, over S));\n}\n") == 1);
  CHECK(live("fusion f(x: bf16[T, H], z: bf16[T, H]) -> (y: bf16[T, H]) {\n"
             "    let xf = f32(x);\n    let zf = f32(z);\n"
             "    y = bf16(xf / sum(xf, over H) + zf / sum(zf, over H));\n}\n") == 2);
  CHECK(live("fusion f(x: bf16[T, H], z: f64[T, H]) -> (y: bf16[T, H]) {\n"
             "    let xf = f32(x);\n    let zd = z * 2.0;\n"
             "    y = bf16(xf / sum(xf, over H) + f32(zd / sum(zd, over H)));\n}\n") == 3);

  // 64 values with a bf16 weight: 64 + 16 + 8 index registers.
  CHECK(ir::persistentRegistersNeeded(64, 1, 2) == 88);
  CHECK(ir::persistentRegistersNeeded(64, 1, 0) == 72);
  CHECK(ir::persistentRegistersNeeded(24, 2, 0) == 56);

  // An inner-outer row walk: its [rows, columns] inputs, and those the row reductions read,
  // which a thread holds across them (add + RMSNorm's grad_h, read after them, is not).
  auto walk = [&](const std::string &source) {
    return withFusion(source, {}, [](const ir::Fusion &fusion, const auto &) {
      ir::DimId rows = fusion.outputs[0].dims[0], columns = fusion.outputs[0].dims[1];
      ir::RowWalkInputs inputs = ir::rowWalkInputs(fusion, rows, columns);
      return std::tuple(inputs.rowTensorBytes, inputs.heldBytes, inputs.heldTensors);
    });
  };
  CHECK(walk("fusion f(h: bf16[T, H], w: bf16[H], r: f32[T], dy: bf16[T, H], dh: bf16[T, H])\n"
             "    -> (dx: bf16[T, H], dw: bf16[H]) {\n"
             "    let g = f32(w) * f32(dy);\n"
             "    dx = bf16(r * (g - f32(h) * r * r * mean(g * f32(h), over H)) + f32(dh));\n"
             "    dw = bf16(sum(f32(dy) * f32(h) * r, over T));\n}\n") ==
        std::tuple<int64_t, int64_t, int64_t>(6, 4, 2));
  // The lower bound the checker warns by: 64 partial columns and 8 of index math; with a
  // prefetch of x and grad_y (4 bytes / 2 a column) 32 columns need 104.
  CHECK(ir::columnPartialsRegistersNeeded(64, 1, 0) == 72);
  CHECK(ir::columnPartialsRegistersNeeded(32, 1, 4) == 104);
  CHECK(ir::columnPartialsRegistersNeeded(32, 2, 0) == 72);
  CHECK(ir::columnPartialsRegistersNeeded(int64_t{1} << 62, 4, 4) ==
        std::numeric_limits<int64_t>::max());

  // The SM's registers in four sub-partitions: a block of 18 warps puts 5 on one of them.
  Target t = h200();
  CHECK(t.registersPerThreadOfBlock(256) == 255);
  CHECK(t.registersPerThreadOfBlock(512) == 128);
  CHECK(t.registersPerThreadOfBlock(576) == 96);
  CHECK(t.registersPerThreadOfBlock(640) == 96);
  CHECK(t.registersPerThreadOfBlock(768) == 80);
  CHECK(t.registersPerThreadOfBlock(896) == 72);
  CHECK(t.registersPerThreadOfBlock(1024) == 64);
  CHECK(t.registersPerThreadOfBlock(320) == 168);
}
