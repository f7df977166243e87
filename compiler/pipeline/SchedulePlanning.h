// SchedulePlanning.h — the schedules of the main file's fusions: the user's, and those
// the heuristics choose for `= auto` declarations (and for fusions without one), built
// into schedules and checked against the target.
#pragma once

#include "pipeline/PinnedSizes.h"
#include "schedule/ScheduleBlock.h"
#include "schedule/ScheduleIR.h"

#include <llvm/Support/SMLoc.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsl {
class DiagnosticEngine;
struct Program;
struct Target;
namespace ast {
class ScheduleDecl;
}
namespace ir {
struct Fusion;
}
namespace tuning {
class Database;
}
} // namespace fsl

namespace fsl::pipeline {

/// A schedule block of the main file: a user's, or one the heuristics chose.
struct PlannedSchedule {
  /// The declaration it comes from (several blocks may replace one `= auto`); null for a
  /// block chosen for a fusion that has no schedule.
  const ast::ScheduleDecl *decl = nullptr;
  const ir::Fusion *fusion = nullptr;
  /// An `= auto` declaration the heuristics did not replace has only its header.
  sched::ScheduleBlock block;
  /// Once built and checked; against the fusion with the dimensions its guard pins
  /// static (PinnedSizes.h), so `built->fusion` may be a copy of `fusion`.
  const sched::Schedule *built = nullptr;
};

/// An `= auto` declaration (or a fusion without any schedule) no heuristic could
/// schedule: why, and where it is reported.
struct DeclinedSchedule {
  std::string why;
  llvm::SMRange at;
};

struct SchedulePlan {
  std::vector<PlannedSchedule> planned;                          // in source order, then the chosen
  std::vector<std::unique_ptr<sched::Schedule>> schedules;       // built from `planned`, checked
  std::map<std::string, std::vector<DeclinedSchedule>> declined; // by fusion
  /// The fusions with guard-pinned dimensions static that `schedules` are built against.
  PinnedFusions pinned;
};

/// The typed block of every schedule declaration of the main file; an `= auto` one is
/// replaced by the blocks the heuristics choose (and, with `everyFusion`, each fusion
/// without a schedule gets theirs), so everything after sees explicit schedules. With a
/// tuning database, its matching entries come before the heuristics (tuning/Consult.h).
SchedulePlan planSchedules(const Program &program, const Target &target, bool everyFusion,
                           DiagnosticEngine &diagnostics,
                           const tuning::Database *database = nullptr);

/// Builds and checks every planned block, then the guards of each fusion's schedules.
void buildSchedules(SchedulePlan &plan, const Program &program, const Target &target,
                    DiagnosticEngine &diagnostics);

/// The main file with every schedule printed from its typed block (each directive
/// followed by the note its build derived); the blocks chosen for fusions without a
/// schedule are appended (--emit=schedule).
std::string formatWithSchedules(const Program &program, const SchedulePlan &plan);

} // namespace fsl::pipeline
