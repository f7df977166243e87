// ScheduleTest.cpp — propagation by name, and a property test: random legal directive
// sequences never lose or invent iterations.
#include "TestSupport.h"

#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <llvm/ADT/StringExtras.h>

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
  int schedulesChecked = 0;
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
        directives += "    merge (" + loops[a].name + ", " + loops[b].name + ") -> L" +
                      std::to_string(fresh++) + ";\n";
      } else {
        std::vector<std::string> order = names(tensor);
        std::shuffle(order.begin(), order.end(), random);
        directives += "    reorder (" + llvm::join(order, ", ") + ");\n";
      }
    }
    Built result(directives);
    ++schedulesChecked;
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
  CHECK(schedulesChecked == 150);
}
