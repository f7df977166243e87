// Knobs.h — the knobs of `= auto(kind) { ... }` as the heuristics read them, generated
// from Knobs.def.
#pragma once

#include "heuristics/Family.h"
#include "schedule/ScheduleBlock.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fsl::ast {
class ScheduleDecl;
}

namespace fsl::heuristics {

/// The knobs of `= auto(kind) { ... }`. sched::checkAutoSchedule (schedule/FromAst.h)
/// checks names and types and refuses the knobs no heuristic can honour (rfactor, any
/// knob of plain `auto`); the heuristics honour each knob set here
/// exactly or refuse it (never ignore it). Unset knobs are the heuristic's choice.
struct Knobs {
  std::string kind; // empty: chosen from the fusion's shape
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc) std::optional<Type> Field;
#include "heuristics/Knobs.def"
  std::vector<sched::SizeGuard> when; // the auto block's own guard
  /// The guards of the fusion's other guarded schedules: a variant the heuristic adds
  /// (`when T < sm_count`) must apply to none of their sizes.
  std::vector<std::vector<sched::SizeGuard>> otherGuards;
  std::map<std::string, llvm::SMRange> ranges; // knob name -> where it is written
  /// The `= auto` declaration and the fusion's name in it: the chosen blocks' directives
  /// point at the declaration (or at the knob that decided them), schedule-wide
  /// diagnostics at the name. Unset: at the fusion, which has no schedule.
  llvm::SMRange declRange, fusionRange;
};

/// The knobs of an `= auto` declaration whose header is `header` (from sched::headerOf).
Knobs knobsOf(const ast::ScheduleDecl &decl, const sched::ScheduleHeader &header);

/// Each knob that applies to some family of `families`, in Knobs.def's order, and whether
/// `knobs` sets it.
std::vector<std::pair<std::string, bool>> knobsSet(const Knobs &knobs, FamilySet families);
/// The same for the knobs no family of `families` reads (what such a heuristic refuses).
std::vector<std::pair<std::string, bool>> knobsOutside(const Knobs &knobs, FamilySet families);

/// "tile_n, stages and pingpong": the knobs `family` reads, in Knobs.def's order.
std::string knobNames(Family family);

} // namespace fsl::heuristics
