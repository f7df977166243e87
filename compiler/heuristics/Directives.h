// Directives.h — the typed directives of a chosen schedule block, each pointing at what
// asked for it (a knob, or the `= auto` declaration), with the block's reasons.
#pragma once

#include "heuristics/Knobs.h"
#include "schedule/ScheduleBlock.h"

#include <string>
#include <utility>
#include <vector>

namespace fsl::heuristics {

/// A schedule block being chosen: its reasons and its directives.
struct Block {
  std::vector<std::string> reasons;
  std::vector<sched::Directive> directives;

  static sched::LoopRef loop(const std::string &name, llvm::SMRange at) {
    return {std::nullopt, {name, at}, at};
  }
  void add(sched::DirectiveOp op, llvm::SMRange at) {
    directives.push_back({std::move(op), at, {}, false});
  }

  /// `split loop by factor -> (outer, inner)`, or `into` when `factorIsOuter`.
  void split(const std::string &name, int64_t factor, const std::string &outer,
             const std::string &inner, llvm::SMRange at, bool factorIsOuter = false) {
    add(sched::Split{loop(name, at), factorIsOuter, {factor, at}, {outer, at}, {inner, at}}, at);
  }
  void parallelize(const std::vector<std::pair<std::string, sched::Parallel>> &bindings,
                   llvm::SMRange at) {
    sched::Parallelize parallelize;
    for (const auto &[name, parallel] : bindings)
      parallelize.bindings.push_back({loop(name, at), parallel});
    add(parallelize, at);
  }
  void vectorize(const std::string &name, llvm::SMRange at) {
    add(sched::Vectorize{loop(name, at)}, at);
  }
  void unroll(const std::string &name, llvm::SMRange at) {
    add(sched::Unroll{loop(name, at), std::nullopt}, at);
  }
  void prefetch(const std::string &name, llvm::SMRange at) {
    add(sched::Prefetch{loop(name, at)}, at);
  }
  void persistent(const std::string &tensor, sched::MemoryKind memory, llvm::SMRange at) {
    add(sched::Persistent{{tensor, at}, memory}, at);
  }
  void computeWith(const std::string &tensor, llvm::SMRange at) {
    add(sched::ComputeWith{{tensor, at}}, at);
  }
  void launchBounds(int64_t threads, llvm::SMRange at) {
    add(sched::LaunchBounds{{threads, at}}, at);
  }
};

/// What every block of one choice shares: its header, where each knob is written, and the
/// fusion-wide fast_exp, fast_tanh and fast_div choices (FastMath.h) each block ends with.
struct BlockContext {
  sched::ScheduleHeader header;
  const Knobs *knobs = nullptr;
  bool fastExp = false;
  std::string fastExpReason; // empty: the knob's
  bool fastTanh = false;
  std::string fastTanhReason; // empty: the knob's
  bool fastDiv = false;
  std::string fastDivReason; // empty: the knob's

  /// Where a directive the knob decided points: the knob when it is written, else the
  /// `= auto` declaration (or the fusion).
  llvm::SMRange at(const std::string &knob) const {
    auto found = knobs->ranges.find(knob);
    return found != knobs->ranges.end() ? found->second : header.range;
  }
  /// The `= auto` declaration (or the fusion).
  llvm::SMRange decl() const { return header.range; }

  /// `block` under `when`, with fast_exp when chosen.
  sched::ScheduleBlock finish(Block block, std::vector<sched::SizeGuard> when) const;
};

/// rows -> BIDx (or Tb -> BIDx, Ty -> TIDy), the row split into Hp x Hx x Hv.
struct RowSplit {
  int64_t vector = 1, threads = 32, batch = 1, rowsPerBlock = 1;
  int64_t unrollBy = 0; // the serial loop unrolled by this many (0: fully)
  /// `maxrregcount`: the registers a thread, so that two blocks fit an SM (0: none).
  int64_t maxRegisters = 0;
};

/// Where each directive of a row split points: the knob that decided it, or the header.
struct RowRanges {
  llvm::SMRange vector, threads, rows, header;
};
RowRanges rowRanges(const BlockContext &context);

/// The directives of `split` for rows `row` of `dim`.
void rowDirectives(Block &block, const std::string &row, const std::string &dim,
                   const RowSplit &split, bool staticBdimx, bool unroll, const RowRanges &at);

} // namespace fsl::heuristics
