// WarpScheduler.cpp — the warps of a cluster run one at a time, round robin: a warp's walk
// through the body, what makes a waiting warp runnable again, the meetings of warps (who
// waits where, their release), and the deadlock when none can move (FaultReport.cpp says
// why).
//
// Every warp of the cluster (of the block, without a cluster) is a task: an explicit
// stack of statement cursors (Frame) that runWarp advances until the warp finishes or
// has to wait for other warps. A single thread runs all of them, one at a time, so the
// simulation stays deterministic. `cta_` is the CTA of the warp that runs.
#include "sim/Interpreter.h"

#include "support/Internal.h"

#include <bit>

namespace fsl::sim {

/// Runs the warps of the cluster round robin (CTA by CTA, each CTA's by warp id), each
/// until it finishes or waits, until all have finished; a pass in which no warp can move
/// is a deadlock.
void Interpreter::schedule() {
  for (;;) {
    bool moved = false, finished = true;
    for (Cta &cta : ctas_) {
      if (cta.finished)
        continue;
      enterCta(cta);
      bool done = true;
      for (Warp &warp : cta.warps) {
        if (runnable(warp)) {
          runWarp(warp);
          moved = true;
        }
        done = done && warp.done;
      }
      if (done)
        finishCta(cta);
      finished = finished && done;
    }
    if (finished)
      return;
    if (!moved)
      deadlock();
  }
}

/// Whether `warp` can continue now. A warp waiting at a meeting (a barrier, a block
/// reduction, a warpgroup's wgmma or setmaxnreg) is released by the warp that completes
/// it; one waiting on an mbarrier or for registers checks its condition here.
bool Interpreter::runnable(Warp &warp) {
  if (warp.done)
    return false;
  switch (warp.wait) {
  case Wait::None:
    return true;
  case Wait::MBarrier:
    if (!passConditions(warp))
      return false;
    warp.wait = Wait::None;
    return true;
  case Wait::Registers:
    if (!takeRegisters(warp, warp.want))
      return false;
    warp.wait = Wait::None;
    return true;
  case Wait::Barrier:
  case Wait::Reduce:
  case Wait::Named:
  case Wait::Wgmma:
  case Wait::SetMaxNReg:
  case Wait::Cluster:
    return false;
  }
  FSL_UNREACHABLE("wait kind");
}

void Interpreter::runWarp(Warp &warp) {
  if (!warp.started) {
    warp.started = true;
    if (!enter(warp, *kernel_.body, warp.lanes))
      return;
  }
  while (!warp.stack.empty()) {
    // `frame` dies with a push, so take what enter needs before calling it.
    Frame &frame = warp.stack.back();
    const StmtNode &s = *frame.stmt;
    const StmtNode *next = nullptr;
    LaneMask mask = 0;
    switch (frame.kind) {
    case FrameKind::Block:
      while (!next && frame.next < static_cast<int64_t>(s.body.size()))
        next = s.body[frame.next++].get();
      mask = frame.mask;
      break;
    case FrameKind::Loop: {
      // Each lane runs its own trip count; a lane whose count is done leaves the mask
      // of the remaining iterations.
      int64_t i = frame.next++;
      for (LaneMask m = frame.mask; m; m &= m - 1)
        if (int lane = std::countr_zero(m); i < frame.extents[lane])
          mask |= LaneMask(1) << lane;
      for (LaneMask m = mask; m; m &= m - 1)
        setVariable(warp.first + std::countr_zero(m), *s.var, static_cast<double>(i));
      if (mask)
        next = s.body[0].get();
      break;
    }
    case FrameKind::Branch:
      if (frame.next == 0) {
        next = s.body[0].get();
        mask = frame.mask;
      } else if (frame.next == 1 && s.kind == StmtKind::If && s.body.size() > 1) {
        next = s.body[1].get();
        mask = frame.otherwise;
      }
      ++frame.next;
      break;
    }
    if (!next) {
      warp.stack.pop_back();
      continue;
    }
    if (!enter(warp, *next, mask))
      return;
  }
  warp.done = true;
}

/// The threads of `mask` in `warp`, ascending. The vector is reused by the next call:
/// a leaf uses it and is done before another leaf runs.
const Mask &Interpreter::lanesOf(const Warp &warp, LaneMask mask) {
  lanes_.clear();
  for (LaneMask m = mask; m; m &= m - 1)
    lanes_.push_back(warp.first + std::countr_zero(m));
  return lanes_;
}

/// The threads of the warps that wait for `kind` at `s`: in the block (group < 0) or in
/// warpgroup `group`.
int Interpreter::threadsWaiting(Wait kind, const StmtNode *s, int group) const {
  int threads = 0;
  for (const Warp &w : cta_->warps)
    if (w.wait == kind && w.at == s && (group < 0 || w.id / 4 == group))
      threads += std::popcount(w.waiting);
  return threads;
}

/// The warps that wait for `kind` at `s` (in warpgroup `group`, if not negative).
std::vector<Interpreter::Warp *> Interpreter::warpsWaiting(Wait kind, const StmtNode *s,
                                                           int group) {
  std::vector<Warp *> found;
  for (Warp &w : cta_->warps)
    if (w.wait == kind && w.at == s && (group < 0 || w.id / 4 == group))
      found.push_back(&w);
  return found;
}

void Interpreter::await(Warp &warp, Wait kind, const StmtNode &s, LaneMask mask) {
  warp.wait = kind;
  warp.at = &s;
  warp.waiting = mask;
}

/// The warps of a completed barrier know what each of them knew (see `clock`), and go on.
void Interpreter::release(const std::vector<Warp *> &met) {
  std::vector<int64_t> known;
  for (const Warp *w : met)
    merge(known, w->clock);
  for (Warp *w : met) {
    w->wait = Wait::None;
    if (!known.empty())
      w->clock = known;
  }
  joinEpochs(met);
}

/// The first thread of `warp` at the statement it waits at.
int Interpreter::firstWaiting(const Warp &warp) const {
  return warp.first + std::countr_zero(warp.waiting ? warp.waiting : warp.lanes);
}

/// The warps of the cluster at a cluster barrier (any statement: the hardware has one).
std::vector<Interpreter::Warp *> Interpreter::warpsAtClusterBarrier() {
  std::vector<Warp *> found;
  for (Cta &cta : ctas_)
    for (Warp &w : cta.warps)
      if (w.wait == Wait::Cluster)
        found.push_back(&w);
  return found;
}

} // namespace fsl::sim
