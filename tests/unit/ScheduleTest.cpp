// ScheduleTest.cpp — propagation by name, a property test (random legal directive
// sequences never lose or invent iterations), and typed directives: converted from the
// AST with their ranges, built without one, printed back with their notes.
#include "TestSupport.h"

#include "schedule/FromAst.h"
#include "schedule/Printer.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

#include <limits>
#include <map>
#include <random>

using namespace fsl;
using fsl::test::Parsed;

namespace {

const char *kFusion =
    "fusion p<A = 24, B = 36, C = 10>(x: f32[A, B, C], w: f32[B]) -> (y: f32[A, C]) {\n"
    "    let t = x * w;\n"
    "    y = sum(t, over B);\n"
    "}\n";

/// Builds the schedule `directives` of fusion p; fails the test on any diagnostic.
struct Built {
  Parsed parsed;
  std::unique_ptr<Program> program;
  std::unique_ptr<sched::Schedule> schedule;
  explicit Built(const std::string &directives)
      : parsed(std::string(kFusion) + "schedule p {\n" + directives + "}\n") {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
    schedule = sched::buildSchedule(*decl, *program->fusions[0], parsed.diagnostics);
    REQUIRE_MESSAGE(schedule, directives, parsed.firstMessage());
  }
  const sched::TensorSchedule &tensor(const char *name) {
    return schedule->tensors.at(schedule->findTensor(name));
  }
};

std::vector<std::string> names(const sched::TensorSchedule &tensor) {
  std::vector<std::string> result;
  for (const sched::Loop &loop : tensor.loops)
    result.push_back(loop.name);
  return result;
}

} // namespace

TEST_CASE("a directive reaches every tensor that has the loop; t.D only t") {
  Built all("    split B by 4 -> (Bo, Bi);\n");
  CHECK(names(all.tensor("x")) == std::vector<std::string>{"A", "Bo", "Bi", "C"});
  CHECK(names(all.tensor("w")) == std::vector<std::string>{"Bo", "Bi"});
  CHECK(names(all.tensor("y")) == std::vector<std::string>{"A", "C", "Bo", "Bi"});
  CHECK(all.tensor("y").loops[2].isReduction);
  Built one("    split w.B by 4 -> (Bo, Bi);\n");
  CHECK(names(one.tensor("w")) == std::vector<std::string>{"Bo", "Bi"});
  CHECK(names(one.tensor("x")) == std::vector<std::string>{"A", "B", "C"});
}

TEST_CASE("split extents, remainders and contiguity") {
  Built built("    split C by 4 -> (Co, Ci);\n    split A into 5 -> (Ao, Ai);\n");
  const sched::TensorSchedule &x = built.tensor("x");
  CHECK(x.loops[0].extent.text == "5");
  CHECK(x.loops[1].extent.text == "5"); // ceil(24 / 5)
  CHECK_FALSE(x.loops[1].exact);
  REQUIRE(names(x) == std::vector<std::string>{"Ao", "Ai", "B", "Co", "Ci"});
  CHECK(x.loops[3].extent.text == "3"); // ceil(10 / 4)
  CHECK(x.loops[4].extent.text == "4");
  CHECK(x.loops[4].contiguous);
  CHECK_FALSE(x.loops[3].contiguous);
}

TEST_CASE("property: random legal directive sequences cover every dimension exactly") {
  std::mt19937 random(20261129);
  // How many of each directive the trials applied: the property means little if the
  // generator stopped producing one kind.
  int splits = 0, merges = 0, reorders = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::string directives;
    int fresh = 0;
    int steps = 1 + static_cast<int>(random() % 7);
    for (int step = 0; step < steps; ++step) {
      Built current(directives);
      // Pick a tensor and act on its loops (other tensors follow by name).
      const auto &tensors = current.schedule->tensors;
      const sched::TensorSchedule &tensor = tensors[random() % tensors.size()];
      const auto &loops = tensor.loops;
      if (loops.empty())
        continue;
      int choice = static_cast<int>(random() % 3);
      if (choice == 0) {
        const sched::Loop &loop = loops[random() % loops.size()];
        int factor = 1 + static_cast<int>(random() % 7);
        std::string outer = "L" + std::to_string(fresh++), inner = "L" + std::to_string(fresh++);
        ++splits;
        directives += "    split " + loop.name + (random() % 2 ? " by " : " into ") +
                      std::to_string(factor) + " -> (" + outer + ", " + inner + ");\n";
      } else if (choice == 1 && loops.size() >= 2) {
        size_t a = random() % loops.size(), b = random() % loops.size();
        if (a == b || loops[a].isReduction != loops[b].isReduction)
          continue;
        // Merging loops that also appear separately elsewhere with mixed reduction-ness
        // is illegal; check every tensor that has both.
        bool legal = true;
        for (const sched::TensorSchedule &other : tensors) {
          int i = other.findLoop(loops[a].name), j = other.findLoop(loops[b].name);
          if (i >= 0 && j >= 0 && other.loops[i].isReduction != other.loops[j].isReduction)
            legal = false;
        }
        if (!legal)
          continue;
        ++merges;
        directives += "    merge (" + loops[a].name + ", " + loops[b].name + ") -> L" +
                      std::to_string(fresh++) + ";\n";
      } else {
        std::vector<std::string> order = names(tensor);
        std::shuffle(order.begin(), order.end(), random);
        ++reorders;
        directives += "    reorder (" + llvm::join(order, ", ") + ");\n";
      }
    }
    Built result(directives);
    for (const sched::TensorSchedule &tensor : result.schedule->tensors) {
      int64_t rootProduct = 1;
      std::vector<ir::DimId> rootDims = tensor.value->dims;
      rootDims.insert(rootDims.end(), tensor.value->reduced.begin(), tensor.value->reduced.end());
      for (ir::DimId dim : rootDims)
        rootProduct *= *result.program->fusions[0]->dims[dim].staticExtent;
      int64_t loopProduct = 1;
      bool exact = true;
      std::map<ir::DimId, int> coverage;
      for (const sched::Loop &loop : tensor.loops) {
        REQUIRE(loop.extent.isStatic());
        loopProduct *= *loop.extent.value;
        exact &= loop.exact;
        for (ir::DimId dim : loop.roots)
          ++coverage[dim];
      }
      INFO("tensor ", tensor.name, " after\n", directives);
      // Every root dimension is iterated by some loop, and no iteration is lost.
      for (ir::DimId dim : rootDims)
        CHECK(coverage[dim] >= 1);
      CHECK(loopProduct >= rootProduct);
      if (exact)
        CHECK(loopProduct == rootProduct);
    }
  }
  CHECK(splits >= 50);
  CHECK(merges >= 20);
  CHECK(reorders >= 50);
}

TEST_CASE("typed directives print as the user wrote them, and keep their ranges") {
  const char *directives = "    split B by 4 -> (Bo, Bi);\n"
                           "    split x.A into 3 -> (Ao, Ai);\n"
                           "    merge (Ao, Ai) -> AA;\n"
                           "    reorder (C, AA);\n"
                           "    parallelize AA -> BIDx, Bi -> TIDx, y.C -> TIDy;\n"
                           "    vectorize x.C;\n"
                           "    unroll Bo by 2;\n"
                           "    unroll Bo;\n"
                           "    unswitch C;\n"
                           "    rfactor y.Bo;\n"
                           "    inline t;\n"
                           "    inline all;\n"
                           "    compute_at t AA;\n"
                           "    compute_with t;\n"
                           "    persistent t in shared;\n"
                           "    cache t in registers;\n"
                           "    launch_bounds 256;\n"
                           "    maxrregcount 64;\n"
                           "    pdl;\n"
                           "    mma over K: tile (128, 256, 64), warp (64, 256), instruction "
                           "wgmma(64, 256, 16);\n"
                           "    pipeline 4 stages via tma;\n"
                           "    warp_specialize producer(regs 40), consumers(2, regs 232);\n"
                           "    tiles persistent swizzle 8;\n"
                           "    tiles split_k 2;\n"
                           "    tiles stream_k;\n"
                           "    cluster (2, 1) multicast;\n"
                           "    epilogue via shared tma_store;\n";
  Parsed parsed(std::string(kFusion) + "schedule p {\n" + directives + "}\n");
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
  sched::ScheduleBlock block = sched::blockOf(*decl, sched::headerOf(*decl, *program->fusions[0]));
  REQUIRE(block.directives.size() == decl->directives.size());
  std::string printed;
  for (size_t i = 0; i < block.directives.size(); ++i) {
    printed += "    " + sched::directiveText(block.directives[i]) + "\n";
    // A typed directive points at its own text.
    CHECK(parsed.text(block.directives[i].range) == sched::directiveText(block.directives[i]));
  }
  CHECK(printed == directives);
  const auto &split = std::get<sched::Split>(block.directives[1].op);
  CHECK(parsed.text(split.loop.range) == "x.A");
  CHECK(parsed.text(split.factor.range) == "3");
  CHECK(parsed.text(split.inner.range) == "Ai");
}

TEST_CASE("a block of typed directives builds without a syntax tree; notes by directive") {
  Parsed parsed(kFusion);
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(program, parsed.firstMessage());
  auto loop = [](const char *name) { return sched::LoopRef{std::nullopt, {name, {}}, {}}; };
  sched::ScheduleBlock block;
  block.header.fusion = "p";
  block.directives = {
      {sched::Split{loop("C"), false, {4, {}}, {"Co", {}}, {"Ci", {}}}, {}, {}, false},
      {sched::Parallelize{
           {{loop("A"), sched::Parallel::BIDx}, {loop("Co"), sched::Parallel::TIDx}}},
       {},
       {},
       false},
      {sched::Unroll{loop("B"), std::nullopt}, {}, {}, false},
      {sched::Persistent{{"t", {}}, sched::MemoryKind::Registers}, {}, {}, false},
  };
  std::unique_ptr<sched::Schedule> schedule =
      sched::buildSchedule(block, *program->fusions[0], parsed.diagnostics);
  REQUIRE_MESSAGE(schedule, parsed.firstMessage());
  const sched::TensorSchedule &y = schedule->tensors.at(schedule->findTensor("y"));
  CHECK(names(y) == std::vector<std::string>{"A", "Co", "Ci", "B"});
  REQUIRE(y.loops[1].parallelizedBy);
  CHECK(y.loops[1].parallelizedBy->index == 1);
  CHECK(schedule->notes == std::vector<std::string>{"Co: 3, Ci: 4; the last iteration is partial",
                                                    "A: 24 blocks, static; Co: 3 threads, static",
                                                    "B: 36 iterations",
                                                    "t: 144 values of f32 per thread"});
  // The printer writes the block back with its notes.
  std::string text;
  llvm::raw_string_ostream out(text);
  sched::printBlock(block, schedule->notes, out);
  CHECK(text == "schedule p {\n"
                "    split C by 4 -> (Co, Ci);  // Co: 3, Ci: 4; the last iteration is partial\n"
                "    parallelize A -> BIDx, Co -> TIDx;  // A: 24 blocks, static; Co: 3 threads, "
                "static\n"
                "    unroll B;  // B: 36 iterations\n"
                "    persistent t in registers;  // t: 144 values of f32 per thread\n"
                "}\n");
}

TEST_CASE("a directive given twice is reported at the second, with the first as a note") {
  Parsed parsed(std::string(kFusion) + "schedule p {\n    launch_bounds 128;\n"
                                       "    launch_bounds 256;\n}\n");
  REQUIRE(parsed.file);
  auto program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE(program);
  const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
  CHECK_FALSE(sched::buildSchedule(*decl, *program->fusions[0], parsed.diagnostics));
  REQUIRE(parsed.collected.diagnostics.size() == 1);
  const Diagnostic &duplicate = parsed.collected.diagnostics[0];
  CHECK(parsed.text(duplicate.range) == "launch_bounds 256;");
  REQUIRE(duplicate.notes.size() == 1);
  CHECK(parsed.text(duplicate.notes[0].range) == "launch_bounds 128;");
}

TEST_CASE("extents are combined with checked arithmetic, never wrapped") {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  // ceilDiv never forms n + d - 1: the largest extent divides without overflow.
  CHECK(*sched::Extent::ceilDiv(sched::Extent::of(max), 2).value == int64_t(1) << 62);
  CHECK(*sched::Extent::ceilDiv(sched::Extent::of(max), max).value == 1);
  CHECK(*sched::Extent::ceilDiv(sched::Extent::of(7), 2).value == 4);
  // mul refuses a product past 64 bits (2^32 x 2^32 used to be 0 threads a block).
  sched::Extent big = sched::Extent::of(int64_t(1) << 32);
  CHECK_FALSE(sched::Extent::mul(big, big));
  CHECK(*sched::Extent::mul(big, sched::Extent::of(2))->value == int64_t(1) << 33);
  CHECK_FALSE(sched::Extent::mul(sched::Extent::of(max), sched::Extent::of(2)));
  // Runtime extents stay expressions; evaluating them is checked too.
  std::optional<sched::Extent> runtime =
      sched::Extent::mul(sched::Extent::ofDim(0, "T"), sched::Extent::of(int64_t(1) << 40));
  REQUIRE(runtime);
  CHECK_FALSE(runtime->isStatic());
  CHECK(runtime->expr->evaluate({3}) == int64_t(3) << 40);
  CHECK_FALSE(runtime->expr->evaluate({int64_t(1) << 30}));
  sched::Extent halves = sched::Extent::ceilDiv(sched::Extent::ofDim(0, "T"), 2);
  CHECK(halves.expr->evaluate({max}) == int64_t(1) << 62);
}
