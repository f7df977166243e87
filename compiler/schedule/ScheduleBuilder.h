// ScheduleBuilder.h — applies a schedule block's directives to a fusion, in order.
//
// Directives name loops; each applies to every tensor that has the named loop (or to
// one tensor, `t.H`). Mistakes that make a directive meaningless where it stands
// (unknown loops or tensors, clashing names, merging reduction with iteration loops,
// transforming inside a compute_at position, a directive given twice) are reported
// here, at the directive; whole-schedule legality is compiler/check's job.
#pragma once

#include "schedule/ScheduleIR.h"

#include <memory>

namespace fsl {

class DiagnosticEngine;

namespace sched {

/// Builds the schedule of `decl` (an explicit schedule) for `fusion`. Returns null if
/// errors were reported.
std::unique_ptr<Schedule> buildSchedule(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics);

/// The tensors of `fusion` with their unscheduled loop nests (one loop per dimension).
std::vector<TensorSchedule> rootTensors(const ir::Fusion &fusion);

/// Checks an `= auto(kind) { knobs }` schedule's kind and knobs.
bool checkAutoSchedule(const ast::ScheduleDecl &decl, DiagnosticEngine &diagnostics);

} // namespace sched
} // namespace fsl
