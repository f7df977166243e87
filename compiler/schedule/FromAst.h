// FromAst.h — schedule declarations of the syntax tree as typed schedule blocks.
//
// The only part of compiler/schedule that reads the AST: each directive becomes a typed
// Directive (Directive.h) keeping the ranges of what was written, and the comments
// around it, so that --emit=schedule can print the block back from the Schedule IR.
// `= auto` declarations have their kind and knobs checked here; the heuristics read the
// knobs (heuristics::knobsOf) and return typed blocks of their own.
#pragma once

#include "schedule/ScheduleBlock.h"

namespace fsl {

class DiagnosticEngine;

namespace ast {
class ScheduleDecl;
}

namespace sched {

/// The header of `decl`, a schedule of `fusion`. A guard on a dimension the fusion does
/// not have is left out of `when` (checkGuardDims reports it).
ScheduleHeader headerOf(const ast::ScheduleDecl &decl, const ir::Fusion &fusion);

/// Reports each guard of `decl` on a dimension `fusion` does not have (`unknown-dim`),
/// and each divisibility condition other than `D % 2^k == 0` or `!= 0`
/// (`invalid-when-modulus`); false if there was one. The driver reports them with the other guard
/// rules, once every schedule is built.
bool checkGuardDims(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                    DiagnosticEngine &diagnostics);

/// The block of an explicit (not `= auto`) declaration: `header` (from headerOf), its
/// directives in order, and the comments around them.
ScheduleBlock blockOf(const ast::ScheduleDecl &decl, ScheduleHeader header);

/// Checks an `= auto(kind) { knobs }` schedule's kind and knobs.
bool checkAutoSchedule(const ast::ScheduleDecl &decl, DiagnosticEngine &diagnostics);

} // namespace sched
} // namespace fsl
