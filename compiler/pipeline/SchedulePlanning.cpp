// SchedulePlanning.cpp — the schedules of the main file's fusions, planned, built and
// checked.
#include "pipeline/SchedulePlanning.h"

#include "ast/Printer.h"
#include "check/Checker.h"
#include "heuristics/Heuristics.h"
#include "pipeline/PinnedHeuristics.h"
#include "schedule/FromAst.h"
#include "schedule/Printer.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "tuning/Consult.h"
#include "tuning/GuardCarving.h"

#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

#include <set>

namespace fsl::pipeline {
namespace {

/// The main file's fusions by name: files with thousands of fusions are planned in
/// linear time.
class FusionIndex {
public:
  explicit FusionIndex(const Program &program) {
    for (const auto &fusion : program.fusions)
      byName_.emplace(fusion->name, fusion.get());
  }
  const ir::Fusion *find(const std::string &name) const {
    auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : it->second;
  }

private:
  std::map<std::string, const ir::Fusion *> byName_;
};

std::vector<sched::ScheduleBlock> heuristicSchedules(SchedulePlan &plan, const ir::Fusion &fusion,
                                                     const Target &target,
                                                     const heuristics::Knobs &knobs,
                                                     DiagnosticEngine &diagnostics,
                                                     const tuning::Database *database) {
  auto heuristic = [&](const heuristics::Knobs &asked) {
    return chooseUnderGuard(fusion, target, asked, plan.pinned, &diagnostics);
  };
  heuristics::Choice choice =
      database ? tuning::consult(*database, fusion, target, knobs, diagnostics, heuristic)
               : heuristic(knobs);
  if (choice.blocks.empty())
    plan.declined[fusion.name].push_back(
        {choice.why, knobs.declRange.isValid() ? knobs.declRange : fusion.range});
  if (!knobs.when.empty() || knobs.otherGuards.empty())
    return std::move(choice.blocks);
  // The user's other guarded schedules of the fusion win for their sizes: a launch-time
  // variant of the heuristics' own (auto(matmul)'s `when M < 9`) keeps the rest of its
  // sizes, in disjoint pieces, and none where they cover it. The unguarded fallback
  // applies where no guard does, so it stays whole. (The row heuristics leave out a
  // variant that overlaps one already; for them this changes nothing.)
  std::vector<sched::ScheduleBlock> blocks;
  for (sched::ScheduleBlock &block : choice.blocks) {
    if (block.header.when.empty()) {
      blocks.push_back(std::move(block));
      continue;
    }
    std::vector<std::vector<sched::SizeGuard>> pieces =
        tuning::carve(block.header.when, knobs.otherGuards);
    bool whole = pieces.size() == 1 && pieces.front().size() == block.header.when.size();
    for (std::vector<sched::SizeGuard> &piece : pieces) {
      sched::ScheduleBlock copy = block;
      copy.header.when = std::move(piece);
      if (!whole)
        copy.reasons.push_back("Cut around another guarded schedule of '" + fusion.name +
                               "', which applies to the rest of this variant's sizes.");
      blocks.push_back(std::move(copy));
    }
  }
  return blocks;
}

} // namespace

SchedulePlan planSchedules(const Program &program, const Target &target, bool everyFusion,
                           DiagnosticEngine &diagnostics, const tuning::Database *database) {
  SchedulePlan plan;
  FusionIndex fusions(program);
  // The guards of each fusion's schedules: the heuristics add no variant that overlaps
  // one of the others.
  std::map<std::string, std::vector<std::pair<const ast::ScheduleDecl *, sched::ScheduleHeader>>>
      headers;
  for (const ast::DeclPtr &decl : program.main->decls)
    if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get()))
      if (const ir::Fusion *fusion = fusions.find(schedule->fusion.text))
        headers[fusion->name].emplace_back(schedule, sched::headerOf(*schedule, *fusion));
  std::set<std::string> scheduled;
  for (const ast::DeclPtr &decl : program.main->decls) {
    const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get());
    if (!schedule)
      continue;
    scheduled.insert(schedule->fusion.text);
    const ir::Fusion *fusion = fusions.find(schedule->fusion.text);
    if (!fusion)
      continue; // sema reported it
    sched::ScheduleHeader header = sched::headerOf(*schedule, *fusion);
    // A guard on an unknown dimension stays as written: it is reported with the guards.
    bool guardsKnown = header.when.size() == schedule->when.size();
    if (!schedule->isAuto) {
      plan.planned.push_back({schedule, fusion, sched::blockOf(*schedule, header)});
      continue;
    }
    std::vector<sched::ScheduleBlock> chosen;
    if (sched::checkAutoSchedule(*schedule, diagnostics) && guardsKnown) {
      heuristics::Knobs knobs = heuristics::knobsOf(*schedule, header);
      for (const auto &[other, otherHeader] : headers[fusion->name])
        if (other != schedule && !otherHeader.when.empty())
          knobs.otherGuards.push_back(otherHeader.when);
      chosen = heuristicSchedules(plan, *fusion, target, knobs, diagnostics, database);
    }
    if (chosen.empty()) {
      sched::ScheduleBlock unexpanded;
      unexpanded.header = header;
      plan.planned.push_back({schedule, fusion, std::move(unexpanded)});
      continue;
    }
    // The user's comments above `= auto` stay above what replaces it.
    chosen.front().comments = schedule->comments.leading;
    for (sched::ScheduleBlock &block : chosen)
      plan.planned.push_back({schedule, fusion, std::move(block)});
  }
  if (everyFusion)
    for (const auto &fusion : program.fusions)
      if (!scheduled.count(fusion->name))
        for (sched::ScheduleBlock &block :
             heuristicSchedules(plan, *fusion, target, heuristics::Knobs(), diagnostics, database))
          plan.planned.push_back({nullptr, fusion.get(), std::move(block)});
  return plan;
}

void buildSchedules(SchedulePlan &plan, const Program &program, const Target &target,
                    DiagnosticEngine &diagnostics) {
  std::map<std::string, std::vector<const sched::ScheduleHeader *>> byFusion;
  for (PlannedSchedule &planned : plan.planned) {
    byFusion[planned.fusion->name].push_back(&planned.block.header);
    if (planned.block.header.isAuto)
      continue; // knobs were checked when the heuristics were asked
    std::unique_ptr<sched::Schedule> built;
    {
      llvm::TimeTraceScope scope("Build schedule", planned.fusion->name);
      // A guard that pins a runtime size (`when H == 4096`): built as for that static size.
      built = sched::buildSchedule(planned.block,
                                   plan.pinned.under(*planned.fusion, planned.block.header.when),
                                   diagnostics);
    }
    bool legal = false;
    if (built) {
      llvm::TimeTraceScope scope("Check schedule", planned.fusion->name);
      legal = checkSchedule(*built, target, diagnostics);
    }
    if (legal) {
      planned.built = built.get();
      plan.schedules.push_back(std::move(built));
    }
  }
  // Overlaps cannot be told while a guard names an unknown dimension.
  std::map<std::string, std::vector<const PlannedSchedule *>> plannedOf;
  for (const PlannedSchedule &planned : plan.planned)
    plannedOf[planned.fusion->name].push_back(&planned);
  FusionIndex fusions(program);
  for (const auto &[name, headers] : byFusion) {
    bool known = true;
    std::set<const ast::ScheduleDecl *> checked; // an `= auto` may give several blocks
    for (const PlannedSchedule *planned : plannedOf[name])
      if (planned->decl && checked.insert(planned->decl).second)
        known &= sched::checkGuardDims(*planned->decl, *planned->fusion, diagnostics);
    if (known)
      checkGuards(*fusions.find(name), headers, diagnostics);
  }
}

std::string formatWithSchedules(const Program &program, const SchedulePlan &plan) {
  auto text = [](const PlannedSchedule &planned) {
    std::string printed;
    llvm::raw_string_ostream out(printed);
    sched::printBlock(planned.block,
                      planned.built ? planned.built->notes : std::vector<std::string>(), out);
    return printed;
  };
  std::vector<std::string> appended;
  std::map<const ast::Decl *, std::vector<const PlannedSchedule *>> byDecl;
  for (const PlannedSchedule &planned : plan.planned)
    if (!planned.decl)
      appended.push_back(text(planned));
    else if (!planned.block.header.isAuto)
      byDecl[planned.decl].push_back(&planned);
  auto replace = [&](const ast::Decl &decl) {
    std::vector<std::string> blocks;
    if (auto it = byDecl.find(&decl); it != byDecl.end())
      for (const PlannedSchedule *planned : it->second)
        blocks.push_back(text(*planned));
    return blocks;
  };
  return ast::formatFile(*program.main, replace, appended);
}

} // namespace fsl::pipeline
