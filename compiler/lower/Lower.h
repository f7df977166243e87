// Lower.h — Schedule IR and Fusion IR to a Kernel IR program.
//
// Each schedule block of a fusion becomes one kernel: planned (Plan.h), then built and
// rewritten by the passes of Passes.h in order, with the verifier after each; a fusion
// with a matrix product is planned by matmul/MatmulPlan.h and built by the passes of
// matmul/Matmul.h instead. The kernels of one fusion form a program whose variants are the
// schedules' `when` guards, tried in order (guarded ones first), each launching its kernel.
#pragma once

#include "kir/IR.h"
#include "lower/Context.h"
#include "schedule/ScheduleIR.h"

#include <set>

namespace llvm {
class raw_ostream;
}

namespace fsl {

class DiagnosticEngine;

struct PrintAfter {
  std::set<std::string> passes; // --print-after=NAME (repeatable)
  bool all = false;             // --print-after-all
  llvm::raw_ostream *out = nullptr;
};

/// The names of the lowering passes, in order (for option checking and help).
std::vector<std::string> loweringPassNames();

/// The program of one fusion from its schedules (none may be `auto` any more), or null
/// after diagnostics. `schedules` in source order.
std::unique_ptr<kir::Program> lowerFusion(const ir::Fusion &fusion,
                                          const std::vector<const sched::Schedule *> &schedules,
                                          const lower::LowerOptions &options,
                                          DiagnosticEngine &diagnostics,
                                          const PrintAfter &print = {});

} // namespace fsl
