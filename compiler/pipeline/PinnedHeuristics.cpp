// PinnedHeuristics.cpp — the heuristics under a guard that pins runtime dimensions.
#include "pipeline/PinnedHeuristics.h"

#include "tuning/GuardCarving.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <optional>

namespace fsl::pipeline {
namespace {

bool sameCondition(const sched::SizeGuard &a, const sched::SizeGuard &b) {
  return a.dimName == b.dimName && a.comparison == b.comparison && a.bound == b.bound &&
         a.modulus == b.modulus;
}

/// `guard` at the pinned sizes: its conditions on other dimensions; none when a condition
/// on a pinned dimension fails there (the guard holds for none of the pinned sizes).
std::optional<std::vector<sched::SizeGuard>> atSizes(const std::vector<sched::SizeGuard> &guard,
                                                     const std::map<ir::DimId, int64_t> &sizes) {
  std::vector<sched::SizeGuard> rest;
  for (const sched::SizeGuard &condition : guard) {
    auto size = sizes.find(condition.dim);
    if (size == sizes.end())
      rest.push_back(condition);
    else if (!condition.holds(size->second))
      return std::nullopt;
  }
  return rest;
}

std::string pinnedText(const ir::Fusion &fusion, const std::map<ir::DimId, int64_t> &sizes) {
  std::vector<std::string> names, values;
  for (const auto &[dim, size] : sizes) {
    names.push_back(fusion.dims[dim].name);
    values.push_back(fusion.dims[dim].name + " = " + std::to_string(size));
  }
  return llvm::join(names, ", ") + (names.size() == 1 ? " is" : " are") +
         " pinned by the guard: planned and lowered as the static " +
         (names.size() == 1 ? "size " : "sizes ") + llvm::join(values, ", ") +
         " (the kernel of the fusion declared so); the launcher takes " + llvm::join(names, ", ") +
         " at run time and picks this variant by " + (names.size() == 1 ? "it." : "them.");
}

} // namespace

heuristics::Choice chooseUnderGuard(const ir::Fusion &fusion, const Target &target,
                                    const heuristics::Knobs &knobs, PinnedFusions &pinned,
                                    DiagnosticEngine *diagnostics) {
  std::map<ir::DimId, int64_t> sizes = pinnedSizes(fusion, knobs.when);
  std::optional<std::vector<sched::SizeGuard>> rest = atSizes(knobs.when, sizes);
  // A guard no size satisfies (`H == 4096 && H % 3 == 0`) keeps the runtime dimension.
  if (sizes.empty() || !rest)
    return heuristics::chooseSchedules(fusion, target, knobs, diagnostics);
  heuristics::Knobs asked = knobs;
  asked.when = std::move(*rest);
  asked.otherGuards.clear();
  for (const std::vector<sched::SizeGuard> &other : knobs.otherGuards)
    if (std::optional<std::vector<sched::SizeGuard>> there = atSizes(other, sizes))
      asked.otherGuards.push_back(std::move(*there));
  heuristics::Choice choice =
      heuristics::chooseSchedules(pinned.under(fusion, knobs.when), target, asked, diagnostics);
  if (choice.blocks.empty())
    return choice;
  // Each block back under the whole guard; the heuristics' own variants keep their
  // conditions after it.
  std::vector<sched::ScheduleBlock> blocks;
  std::vector<std::vector<sched::SizeGuard>> variantGuards;
  std::vector<bool> remaining; // a block for the sizes no variant takes
  for (sched::ScheduleBlock &block : choice.blocks) {
    std::optional<std::vector<sched::SizeGuard>> own = atSizes(block.header.when, sizes);
    if (!own)
      continue;
    std::vector<sched::SizeGuard> when = knobs.when;
    bool extra = false;
    for (const sched::SizeGuard &condition : *own)
      if (llvm::none_of(knobs.when, [&](const sched::SizeGuard &written) {
            return sameCondition(written, condition);
          })) {
        when.push_back(condition);
        extra = true;
      }
    if (extra)
      variantGuards.push_back(when);
    block.header.when = std::move(when);
    remaining.push_back(!extra);
    blocks.push_back(std::move(block));
  }
  // The rest of the guard's sizes, in disjoint pieces beside the variants (two guarded
  // schedules may not overlap).
  std::vector<sched::ScheduleBlock> result;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!remaining[i] || variantGuards.empty()) {
      result.push_back(std::move(blocks[i]));
      continue;
    }
    for (std::vector<sched::SizeGuard> &piece : tuning::carve(knobs.when, variantGuards)) {
      sched::ScheduleBlock copy = blocks[i];
      copy.header.when = std::move(piece);
      result.push_back(std::move(copy));
    }
  }
  for (sched::ScheduleBlock &block : result)
    block.reasons.insert(block.reasons.begin(), pinnedText(fusion, sizes));
  return {std::move(result), ""};
}

} // namespace fsl::pipeline
