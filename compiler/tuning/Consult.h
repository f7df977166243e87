// Consult.h — `= auto` resolved through a tuning database: an entry whose fusion, target
// and sizes match gives the schedule, the heuristics give the rest (docs/tuning.md).
//
// An entry matches when its fusion and target are the fusion's and target's, and its
// `when` guard holds for the fusion's static sizes; the conditions on runtime sizes are
// kept as the guard of the schedule it gives (a launch-time variant). The first entry
// whose guard names static sizes only replaces the heuristics; otherwise every matching
// entry with runtime conditions gives a variant, and the heuristics schedule the sizes
// none of them covers: their own launch-time variants (a runtime row's vector ranges,
// auto(matmul)'s row ranges) are planned as without the database and cut around the
// entries' ranges.
#pragma once

#include "heuristics/Heuristics.h"
#include "tuning/Database.h"

#include <llvm/ADT/STLFunctionalExtras.h>

namespace fsl::tuning {

/// The heuristics, asked with some knobs (an entry's, or the declaration's).
using Heuristic = llvm::function_ref<heuristics::Choice(const heuristics::Knobs &)>;

/// The schedules of `fusion` on `target` for a declaration with `knobs`: the matching
/// entries' and the heuristics'. The first block of each says where it came from (the
/// database file and line with the entry's measurement, or the heuristics). An `= auto`
/// entry that the heuristics cannot make is `tuning-entry-declined` at the entry, its
/// refused knobs are reported at the entry's knobs, and the choice is then empty.
heuristics::Choice consult(const Database &database, const ir::Fusion &fusion, const Target &target,
                           const heuristics::Knobs &knobs, DiagnosticEngine &diagnostics,
                           Heuristic heuristic);

} // namespace fsl::tuning
