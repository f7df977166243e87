// Barriers.cpp — the barriers warps meet at: __syncthreads (every warp of the block),
// named barriers (a thread count, from any statement naming the id), and the cluster
// barrier (every warp of every CTA), each passing on what the warps knew (`clock`).
#include "sim/Interpreter.h"

#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <bit>

namespace fsl::sim {

bool Interpreter::execBarrier(Warp &warp, const StmtNode &s, LaneMask lanes) {
  const Mask &mask = lanesOf(warp, lanes);
  switch (s.barrierKind) {
  case kir::BarrierKind::Block: {
    // A warp whose lanes are partly elsewhere is divergent at once; the other warps
    // meet it here.
    if (lanes != warp.lanes)
      fault(mask.front(),
            llvm::formatv("__syncthreads reached by {0} of {1} threads (a "
                          "barrier in divergent code)",
                          std::popcount(lanes) + threadsWaiting(Wait::Barrier, &s), threads_));
    await(warp, Wait::Barrier, s, lanes);
    std::vector<Warp *> met = warpsWaiting(Wait::Barrier, &s);
    if (met.size() < cta_->warps.size())
      return false;
    cta_->lastReductionSlot = -1; // every warp has read the last reduction's partials
    release(met);
    return true;
  }
  case kir::BarrierKind::Named: {
    int64_t expected = uniform(s.threads, mask, "a named barrier's thread count");
    if (s.barrierId < 0 || s.barrierId > 15)
      fault(mask.front(), llvm::formatv("named barrier {0}; the GPU has 0..15", s.barrierId));
    if (expected % 32 != 0 || expected < 32)
      fault(mask.front(), llvm::formatv("named barrier {0} for {1} threads; a multiple of the "
                                        "warp size is needed",
                                        s.barrierId, expected));
    // The hardware barrier is the id: warps meet there from any statement naming it.
    std::vector<Warp *> met;
    int64_t arrived = 0;
    for (Warp &w : cta_->warps)
      if (w.wait == Wait::Named && w.at->barrierId == s.barrierId) {
        if (w.expected != expected)
          fault(mask.front(),
                llvm::formatv("named barrier {0} for {1} threads here but {2} in warp {3}",
                              s.barrierId, expected, w.expected, w.id));
        met.push_back(&w);
        arrived += std::popcount(w.waiting);
      }
    arrived += std::popcount(lanes);
    if (arrived > expected)
      fault(mask.front(), llvm::formatv("named barrier {0} expects {1} threads but {2} arrive",
                                        s.barrierId, expected, arrived));
    await(warp, Wait::Named, s, lanes);
    warp.expected = expected;
    if (arrived < expected)
      return false;
    met.push_back(&warp);
    release(met);
    return true;
  }
  case kir::BarrierKind::Cluster:
  case kir::BarrierKind::Grid: {
    // barrier.cluster.arrive.release + wait.acquire (.aligned: the warp's threads
    // together): every thread of every CTA of the cluster, at whichever cluster barrier
    // (the hardware has one). What each warp knew before is known to all after. A grid
    // barrier (fsl_grid_sync) is the same over every block of a cooperative launch, whose
    // blocks all run together here (configureCluster).
    bool grid = s.barrierKind == kir::BarrierKind::Grid;
    const char *group = grid ? "grid" : "cluster";
    if (grid && !kernel_.launch.cooperative)
      fault(mask.front(), "grid barrier in a kernel launched without the cooperative "
                          "attribute (fsl_grid_sync traps there)");
    if (lanes != warp.lanes) {
      int arrived = std::popcount(lanes);
      for (const Warp *w : warpsAtClusterBarrier())
        arrived += std::popcount(w->waiting);
      fault(mask.front(),
            llvm::formatv("{2} barrier reached by {0} of the {1} threads of the {2} (a "
                          "barrier in divergent code)",
                          arrived, threads_ * static_cast<int64_t>(ctas_.size()), group));
    }
    await(warp, Wait::Cluster, s, lanes);
    std::vector<Warp *> met = warpsAtClusterBarrier();
    if (met.size() < ctas_.size() * cta_->warps.size())
      return false;
    release(met);
    ++epoch_;
    // The arrivals on peers' barriers before it have landed (a multicast load's bytes
    // are asynchronous: only a wait on them tells).
    for (Cta &cta : ctas_)
      std::erase_if(cta.unseen, [](const Cta::Unseen &u) { return !u.async; });
    return true;
  }
  }
  FSL_UNREACHABLE("barrier kind");
}

} // namespace fsl::sim
