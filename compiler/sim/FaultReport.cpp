// FaultReport.cpp — how a fault names where it happened (block, CTA of the cluster,
// thread), and the deadlock report: each waiting warp's reason, warps with the same
// reason listed together.
#include "sim/Interpreter.h"

#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <bit>

namespace fsl::sim {

void Interpreter::fault(int thread, const llvm::Twine &message) const {
  std::string where = llvm::formatv("block ({0}, {1}, {2})", cta_->blockIdx[0], cta_->blockIdx[1],
                                    cta_->blockIdx[2]);
  if (ctas_.size() > 1)
    where += llvm::formatv(" (CTA {0} of its cluster)", cta_->rank).str();
  if (thread >= 0) {
    std::array<int64_t, 3> tid = threadIdx(thread);
    where += llvm::formatv(", thread ({0}, {1}, {2})", tid[0], tid[1], tid[2]).str();
  }
  throw Fault(where + ": " + message.str(), true);
}

/// Why `warp` (of `cta_`) cannot go on, once no warp can.
std::string Interpreter::waitReason(const Warp &warp) {
  // Whether every warp not waiting at this statement has finished: then the meeting is a
  // barrier in divergent code rather than a cycle of waits.
  auto othersFinished = [&] {
    for (const Warp &w : cta_->warps)
      if (!w.done && !(w.wait == warp.wait && w.at == warp.at))
        return false;
    return true;
  };
  const char *divergent = othersFinished() ? " (a barrier in divergent code)" : "";
  const StmtNode &s = *warp.at;
  switch (warp.wait) {
  case Wait::None:
    break;
  case Wait::Cluster: {
    int arrived = 0;
    for (const Warp *w : warpsAtClusterBarrier())
      arrived += std::popcount(w->waiting);
    bool othersDone = true; // then the barrier is in divergent code
    for (const Cta &cta : ctas_)
      for (const Warp &w : cta.warps)
        othersDone = othersDone && (w.done || w.wait == Wait::Cluster);
    const char *group = s.barrierKind == kir::BarrierKind::Grid ? "grid" : "cluster";
    return llvm::formatv("{3} barrier reached by {0} of the {1} threads of the {3}{2}", arrived,
                         threads_ * static_cast<int64_t>(ctas_.size()),
                         othersDone ? " (a barrier in divergent code)" : "", group);
  }
  case Wait::Barrier:
    return llvm::formatv("__syncthreads reached by {0} of {1} threads{2}",
                         threadsWaiting(Wait::Barrier, &s), threads_, divergent);
  case Wait::Reduce:
    return llvm::formatv("block reduction of {0} reached by {1} of {2} threads{3}", s.var->name,
                         threadsWaiting(Wait::Reduce, &s), threads_, divergent);
  case Wait::Named: {
    int arrived = 0;
    for (const Warp &w : cta_->warps)
      if (w.wait == Wait::Named && w.at->barrierId == s.barrierId)
        arrived += std::popcount(w.waiting);
    return llvm::formatv("named barrier {0} expects {1} threads but {2} arrive together",
                         s.barrierId, warp.expected, arrived);
  }
  case Wait::MBarrier:
    for (const Condition &c : warp.conditions)
      if (!c.passed)
        return llvm::formatv("wait on {0} parity {1} can never complete (pending arrivals {2}, "
                             "tx bytes {3})",
                             barrierName(*c.barrier), c.parity, c.barrier->pending, c.barrier->tx);
    break;
  case Wait::Wgmma:
    return llvm::formatv("wgmma reached by {0} of the 128 threads of warpgroup {1}",
                         threadsWaiting(Wait::Wgmma, &s, warp.id / 4), warp.id / 4);
  case Wait::SetMaxNReg:
    return llvm::formatv("setmaxnreg reached by {0} of the 128 threads of warpgroup {1}",
                         threadsWaiting(Wait::SetMaxNReg, &s, warp.id / 4), warp.id / 4);
  case Wait::Registers: {
    int64_t wanted = 0;
    for (const Warp &w : cta_->warps)
      wanted += 32 * (w.wait == Wait::Registers ? w.want : w.registers);
    return llvm::formatv(
        "setmaxnreg.inc {0} waits for {1} registers but the block's pool holds {2}: its warps "
        "would hold {3} registers, the block has {4} ({5} per thread at launch, {6} per SM{7})",
        warp.want, 32 * (warp.want - warp.registers), cta_->registerPool, wanted,
        32 * initialRegisters_ * static_cast<int64_t>(cta_->warps.size()), initialRegisters_,
        limits_.registersPerSm,
        residentBlocks_ > 1
            ? llvm::formatv(" shared by the {0} blocks __launch_bounds__ asks for", residentBlocks_)
                  .str()
            : std::string());
  }
  }
  FSL_UNREACHABLE("a deadlock reason for a warp that does not wait");
}

/// "warp 3", "warps 4-7, 9"; in a cluster of several CTAs, "CTA 0 warps 0-3, CTA 1 warp 4".
/// `ids`: (CTA rank, warp id) pairs in order.
std::string Interpreter::warpList(const std::vector<std::pair<int, int>> &ids) const {
  std::string text;
  for (size_t k = 0; k < ids.size();) {
    size_t end = k;
    while (end < ids.size() && ids[end].first == ids[k].first)
      ++end;
    text += k ? ", " : "";
    if (ctas_.size() > 1)
      text += "CTA " + std::to_string(ids[k].first) + " ";
    text += end - k == 1 ? "warp " : "warps ";
    for (size_t i = k; i < end;) {
      size_t j = i;
      while (j + 1 < end && ids[j + 1].second == ids[j].second + 1)
        ++j;
      text += (i > k ? ", " : "") + std::to_string(ids[i].second) +
              (j > i ? "-" + std::to_string(ids[j].second) : std::string());
      i = j + 1;
    }
    k = end;
  }
  return text;
}

/// No warp can move: each waiting warp's reason, warps with the same reason together
/// (across the CTAs of the cluster); the fault is located at the first one.
void Interpreter::deadlock() {
  std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>> reasons;
  std::vector<std::pair<int, int>> finished;
  for (Cta &cta : ctas_) {
    enterCta(cta); // waitReason's
    for (const Warp &warp : cta.warps) {
      if (warp.done) {
        finished.push_back({cta.rank, warp.id});
        continue;
      }
      std::string reason = waitReason(warp);
      auto it = std::find_if(reasons.begin(), reasons.end(),
                             [&](const auto &r) { return r.first == reason; });
      if (it == reasons.end())
        reasons.push_back({std::move(reason), {{cta.rank, warp.id}}});
      else
        it->second.push_back({cta.rank, warp.id});
    }
  }
  FSL_INTERNAL_ASSERT(!reasons.empty(), "a deadlock without a waiting warp");
  std::string message = "deadlock: ";
  for (size_t i = 0; i < reasons.size(); ++i)
    message += (i ? "; " : "") + reasons[i].first + " in " + warpList(reasons[i].second);
  if (!finished.empty())
    message += "; " + warpList(finished) + (finished.size() == 1 ? " has" : " have") + " finished";
  auto [rank, id] = reasons.front().second.front();
  enterCta(ctas_[rank]);
  fault(firstWaiting(cta_->warps[id]), message);
}

} // namespace fsl::sim
