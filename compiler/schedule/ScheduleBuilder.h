// ScheduleBuilder.h — applies a schedule block's directives to a fusion, in order.
//
// Directives name loops; each applies to every tensor that has the named loop (or to
// one tensor, `t.H`). Mistakes that make a directive meaningless where it stands
// (unknown loops or tensors, clashing names, merging reduction with iteration loops,
// transforming inside a compute_at position, a directive given twice) are reported
// here, at the directive; whole-schedule legality is compiler/check's job. The block is
// typed (ScheduleBlock.h): the user's come from the AST through schedule/FromAst.h, the
// heuristics build theirs, and both go through this one builder.
#pragma once

#include "schedule/ScheduleIR.h"

#include <memory>

namespace fsl {

class DiagnosticEngine;

namespace ast {
class ScheduleDecl;
}

namespace sched {

/// Builds the schedule of `block` for `fusion`: the loop nests, the placement and
/// memory decisions, and a note per directive. Returns null if errors were reported.
std::unique_ptr<Schedule> buildSchedule(const ScheduleBlock &block, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics);

/// The same for an explicit schedule declaration, converted by blockOf (FromAst.h).
std::unique_ptr<Schedule> buildSchedule(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics);

/// The tensors of `fusion` with their unscheduled loop nests (one loop per dimension).
std::vector<TensorSchedule> rootTensors(const ir::Fusion &fusion);

} // namespace sched
} // namespace fsl
