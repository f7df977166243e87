// ScheduleBlock.h — one schedule block as the builder takes it: which fusion, under which
// `when` guard, and the directives in order.
//
// Blocks come from the user's schedule declarations (schedule/FromAst.h) or from the
// heuristics (heuristics/Heuristics.h); either way ScheduleBuilder applies them and the
// printer writes them back for --emit=schedule, with the comments kept around them.
#pragma once

#include "ir/FusionIR.h"
#include "schedule/Directive.h"

#include <map>
#include <string>
#include <vector>

namespace fsl::sched {

enum class Comparison { Lt, Le, Gt, Ge, Eq, Ne };
llvm::StringRef comparisonSpelling(Comparison comparison);

/// `T < 132` in a `when` guard, on a dimension of the fusion.
struct SizeGuard {
  ir::DimId dim = 0;
  std::string dimName;
  Comparison comparison = Comparison::Lt;
  int64_t bound = 0;
  llvm::SMRange range;
  /// `H % 8 == 0`: the comparison is of the remainder by `modulus` (a power of two, and
  /// then only `== 0` or `!= 0`); 0: of the size itself.
  int64_t modulus = 0;
  /// Whether a size `value` of the dimension satisfies the guard.
  bool holds(int64_t value) const;
};

/// For each dimension the guards compare, sizes that stand for all others: every set
/// of sizes on which each guard gives the same answer has one of them (sorted, >= 1).
/// Deciding whether guards overlap or cover every size needs only these points.
std::map<std::string, std::vector<int64_t>>
sizeCandidates(const std::vector<const std::vector<SizeGuard> *> &guards);

/// The largest power of two the guards make `dim`'s size a multiple of (1: none).
int64_t guaranteedDivisor(const std::vector<SizeGuard> &when, ir::DimId dim);

/// `T < 132 && H >= 1024` (empty when there is no guard).
std::string guardText(const std::vector<SizeGuard> &when);

/// The header of a schedule block: what the schedule-wide rules and lowering read.
struct ScheduleHeader {
  std::string fusion;
  /// The fusion's name in the header: where schedule-wide diagnostics point.
  llvm::SMRange fusionRange;
  /// The whole declaration (for a schedule chosen for a fusion that has none, the fusion).
  llvm::SMRange range;
  std::vector<SizeGuard> when; // a conjunction; empty: always
  /// An `= auto` declaration the heuristics did not replace: it has no directives, and
  /// takes part only in the guard rules.
  bool isAuto = false;
  /// Chosen by the heuristics (for `= auto`, or for a fusion without a schedule).
  bool chosenByHeuristics = false;
};

struct ScheduleBlock {
  ScheduleHeader header;
  std::vector<Directive> directives;
  // Text around the block, for --emit=schedule.
  std::vector<std::string> comments;    // the user's lines above it (`// ...` or empty)
  std::vector<std::string> reasons;     // the heuristics' reasons, printed as `// ` lines
  std::vector<std::string> endComments; // the user's lines after the last directive
  std::string trailingComment;          // the user's comment after the closing brace
};

} // namespace fsl::sched
