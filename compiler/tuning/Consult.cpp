// Consult.cpp — the entries of a tuning database that match a fusion, turned into
// schedule blocks beside the heuristics' choice for the other sizes.
#include "tuning/Consult.h"

#include "schedule/FromAst.h"
#include "support/Diagnostics.h"
#include "tuning/GuardCarving.h"

#include <llvm/ADT/STLExtras.h>

#include <optional>

namespace fsl::tuning {
namespace {

/// An entry that applies to the fusion: its header for the fusion, and the conditions of
/// its guard on runtime sizes (those on static sizes hold).
struct Match {
  const Entry *entry = nullptr;
  sched::ScheduleHeader header;
  std::vector<sched::SizeGuard> runtimeGuards;
};

/// Why `entry` does not apply to a declaration with `knobs` (empty: it may), before its
/// sizes are compared.
std::string mismatchOf(const Entry &entry, const heuristics::Knobs &knobs) {
  const ast::ScheduleDecl &decl = *entry.decl;
  if (!decl.isAuto && !knobs.ranges.empty())
    return "an explicit schedule, and the declaration sets knobs the heuristics must honour";
  if (decl.isAuto && decl.autoKind && !knobs.kind.empty() && decl.autoKind->text != knobs.kind)
    return "auto(" + decl.autoKind->text + "), and the declaration asks for auto(" + knobs.kind +
           ")";
  return "";
}

std::optional<Match> matchOf(const Entry &entry, const ir::Fusion &fusion) {
  Match match;
  match.entry = &entry;
  match.header = sched::headerOf(*entry.decl, fusion);
  // A guard on a dimension the fusion lacks: an entry for another fusion of that name.
  if (match.header.when.size() != entry.decl->when.size())
    return std::nullopt;
  for (const sched::SizeGuard &guard : match.header.when) {
    const std::optional<int64_t> &size = fusion.dims[guard.dim].staticExtent;
    if (!size)
      match.runtimeGuards.push_back(guard);
    else if (!guard.holds(*size))
      return std::nullopt;
  }
  return match;
}

/// The declaration's knobs over the entry's: what the user wrote is never overridden.
heuristics::Knobs mergedKnobs(heuristics::Knobs entryKnobs, const heuristics::Knobs &declared) {
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  if (declared.Field) {                                                                            \
    entryKnobs.Field = declared.Field;                                                             \
    if (auto at = declared.ranges.find(Name); at != declared.ranges.end())                         \
      entryKnobs.ranges[Name] = at->second;                                                        \
  }
#include "heuristics/Knobs.def"
  if (entryKnobs.kind.empty())
    entryKnobs.kind = declared.kind;
  return entryKnobs;
}

std::string locationOf(const Database &database, const Entry &entry) {
  return database.path() + ":" + std::to_string(entry.line);
}

/// The blocks `match` gives under the guard `when`; empty after reporting why not.
std::vector<sched::ScheduleBlock> blocksOf(const Database &database, const Match &match,
                                           const ir::Fusion &fusion,
                                           const heuristics::Knobs &declared,
                                           std::vector<sched::SizeGuard> when,
                                           std::vector<std::vector<sched::SizeGuard>> otherGuards,
                                           DiagnosticEngine &diagnostics, Heuristic heuristic) {
  const Entry &entry = *match.entry;
  std::vector<sched::ScheduleBlock> blocks;
  if (!entry.decl->isAuto) {
    sched::ScheduleHeader header = match.header;
    header.when = std::move(when);
    header.chosenByHeuristics = true; // not written in the main file
    sched::ScheduleBlock block = sched::blockOf(*entry.decl, std::move(header));
    block.comments.clear(); // the entry's comments are its target and measurement
    blocks.push_back(std::move(block));
  } else {
    heuristics::Knobs knobs = mergedKnobs(heuristics::knobsOf(*entry.decl, match.header), declared);
    knobs.when = std::move(when);
    knobs.otherGuards = std::move(otherGuards);
    heuristics::Choice choice = heuristic(knobs);
    if (choice.blocks.empty()) {
      diagnostics.report(DiagId::TuningEntryDeclined, entry.decl->fusion.range, fusion.name,
                         choice.why);
      return {};
    }
    // Under a runtime range, the heuristic's own launch-time variants (inner_persistent's
    // `when T < 132` beside its fallback, both under the entry's `T == 1024`) may overlap
    // each other or hold for no size of the range: each keeps the sizes the ones before it
    // leave, in disjoint pieces, as the heuristics' variants are carved around the ranges.
    std::vector<std::vector<sched::SizeGuard>> taken;
    for (sched::ScheduleBlock &block : choice.blocks) {
      std::vector<sched::SizeGuard> guard = block.header.when;
      for (std::vector<sched::SizeGuard> &piece : carve(guard, taken)) {
        sched::ScheduleBlock copy = block;
        copy.header.when = std::move(piece);
        blocks.push_back(std::move(copy));
      }
      taken.push_back(std::move(guard));
    }
    if (blocks.empty()) {
      diagnostics.report(DiagId::TuningEntryDeclined, entry.decl->fusion.range, fusion.name,
                         "its schedule's variants hold for none of its sizes");
      return {};
    }
  }
  std::vector<std::string> origin = {"from the tuning database " + locationOf(database, entry) +
                                     " (target " + entry.target + ")"};
  origin.insert(origin.end(), entry.measurement.begin(), entry.measurement.end());
  blocks.front().reasons.insert(blocks.front().reasons.begin(), origin.begin(), origin.end());
  return blocks;
}

} // namespace

heuristics::Choice consult(const Database &database, const ir::Fusion &fusion, const Target &target,
                           const heuristics::Knobs &knobs, DiagnosticEngine &diagnostics,
                           Heuristic heuristic) {
  std::vector<std::string> targetNames = target.aliases;
  targetNames.insert(targetNames.begin(), target.name);
  std::vector<Match> ranged;
  std::vector<std::string> passedOver; // entries of the fusion that could not apply, and why
  for (const Entry *entry : database.entriesFor(fusion.name, targetNames)) {
    std::optional<Match> match = matchOf(*entry, fusion);
    if (!match)
      continue;
    if (std::string why = mismatchOf(*entry, knobs); !why.empty()) {
      passedOver.push_back("entry " + locationOf(database, *entry) + " not used: " + why);
      continue;
    }
    if (!match->runtimeGuards.empty()) {
      // A range outside the declaration's own guard has no sizes here.
      if (satisfiable(conjunction(knobs.when, match->runtimeGuards)))
        ranged.push_back(std::move(*match));
      continue;
    }
    // Static sizes only: the first such entry is the schedule.
    std::vector<sched::ScheduleBlock> blocks = blocksOf(database, *match, fusion, knobs, knobs.when,
                                                        knobs.otherGuards, diagnostics, heuristic);
    if (blocks.empty())
      return {{},
              "the tuning database's entry " + locationOf(database, *entry) +
                  " could not be applied"};
    return {std::move(blocks), ""};
  }
  // Each runtime range is a variant; the heuristics add none that overlaps one.
  std::vector<std::vector<sched::SizeGuard>> rangeGuards;
  for (const Match &match : ranged)
    rangeGuards.push_back(conjunction(knobs.when, match.runtimeGuards));
  std::vector<sched::ScheduleBlock> blocks;
  for (size_t i = 0; i < ranged.size(); ++i) {
    std::vector<std::vector<sched::SizeGuard>> others = knobs.otherGuards;
    for (size_t j = 0; j < ranged.size(); ++j)
      if (j != i)
        others.push_back(rangeGuards[j]);
    std::vector<sched::ScheduleBlock> variant = blocksOf(
        database, ranged[i], fusion, knobs, rangeGuards[i], others, diagnostics, heuristic);
    if (variant.empty())
      return {{},
              "the tuning database's entry " + locationOf(database, *ranged[i].entry) +
                  " could not be applied"};
    std::move(variant.begin(), variant.end(), std::back_inserter(blocks));
  }
  // The heuristics are asked as without the entries: their variants are then carved
  // around the ranges below. Told of the ranges, the row heuristics would leave out every
  // variant that overlaps one (one `when H == 4096` entry would turn every other runtime H
  // into the loop over the row).
  heuristics::Choice choice = heuristic(knobs);
  if (choice.blocks.empty())
    return choice;
  std::vector<std::string> origin = {
      ranged.empty()
          ? "chosen by the heuristics: no entry of the tuning database " + database.path() +
                " for '" + fusion.name + "' on " + target.name + " matches its sizes"
          : "chosen by the heuristics for the sizes no entry of the tuning database " +
                database.path() + " covers"};
  origin.insert(origin.end(), passedOver.begin(), passedOver.end());
  choice.blocks.front().reasons.insert(choice.blocks.front().reasons.begin(), origin.begin(),
                                       origin.end());
  // A heuristic's own variant (auto(matmul)'s `when M >= 512`) may cover a range's sizes:
  // it keeps the rest of its sizes, in disjoint pieces. The unguarded fallback applies
  // where no guard does, so it stays whole.
  for (sched::ScheduleBlock &block : choice.blocks) {
    if (block.header.when.empty()) {
      blocks.push_back(std::move(block));
      continue;
    }
    for (std::vector<sched::SizeGuard> &piece : carve(block.header.when, rangeGuards)) {
      sched::ScheduleBlock copy = block;
      copy.header.when = std::move(piece);
      blocks.push_back(std::move(copy));
    }
  }
  return {std::move(blocks), ""};
}

} // namespace fsl::tuning
