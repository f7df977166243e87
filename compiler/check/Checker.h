// Checker.h — the legality rules of schedules.
//
// Each rule is a registry diagnostic (Diagnostics.def, "Schedules: legality rules")
// reported at the directive that breaks it, with notes at the fusion lines involved.
// docs/schedules.md lists every rule with an example; tests/lit/check has a failing
// case and a legal near miss for each.
#pragma once

#include "schedule/ScheduleIR.h"
#include "support/Target.h"

#include <vector>

namespace fsl {

class DiagnosticEngine;

/// Checks one built schedule for `target`. Returns false if a rule was broken.
bool checkSchedule(const sched::Schedule &schedule, const Target &target,
                   DiagnosticEngine &diagnostics);

/// Checks the `when` guards of all schedules of one fusion (in source order, `= auto`
/// ones the heuristics did not replace included): no two apply to the same sizes, and
/// some schedule applies to every size. Guards name dimensions of the fusion
/// (sched::checkGuardDims reports the others first).
bool checkGuards(const ir::Fusion &fusion,
                 const std::vector<const sched::ScheduleHeader *> &schedules,
                 DiagnosticEngine &diagnostics);

} // namespace fsl
