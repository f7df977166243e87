// LowerSupport.h — lowering a snippet's one fusion and schedule in unit tests.
#pragma once

#include "TestSupport.h"

#include "kir/Printer.h"
#include "lower/Lower.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <llvm/Support/raw_ostream.h>

namespace fsl::test {

/// Lowers the one fusion and the last schedule of `source`; fails the test on any
/// diagnostic or without a kernel.
struct LoweredSnippet {
  Parsed parsed;
  std::unique_ptr<Program> program;
  std::unique_ptr<sched::Schedule> schedule;
  std::unique_ptr<kir::Program> lowered;

  explicit LoweredSnippet(const std::string &source) : parsed(source) {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
    const auto *decl = llvm::cast<ast::ScheduleDecl>(program->main->decls.back().get());
    schedule = sched::buildSchedule(*decl, *program->fusions[0], parsed.diagnostics);
    REQUIRE_MESSAGE(schedule, parsed.firstMessage());
    lowered = lowerFusion(*program->fusions[0], {schedule.get()}, lower::LowerOptions{},
                          parsed.diagnostics);
    REQUIRE_MESSAGE(lowered, parsed.firstMessage());
    REQUIRE(!lowered->kernels.empty());
  }

  const ir::Fusion &fusion() const { return *program->fusions[0]; }
  /// The last kernel: the only one, or a split-K product's after its counters' kernel.
  const kir::Kernel &kernel() const { return lowered->kernels.back(); }
  const kir::Stmt &body() const { return kernel().body; }
  /// The kernel as `--emit=kernel-ir` prints it.
  std::string text() const {
    std::string out;
    llvm::raw_string_ostream stream(out);
    kir::printKernel(kernel(), stream);
    return out;
  }
};

} // namespace fsl::test
