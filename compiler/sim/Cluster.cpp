// Cluster.cpp — what the CTAs of a cluster do to each other: reaching a peer's shared
// memory (which must be allocated at the same offset, in a CTA that has not exited), and
// the checks when a CTA exits (no peer's arrival or multicast bytes still in flight).
#include "sim/Interpreter.h"

#include <set>

#include <llvm/Support/FormatVariadic.h>

namespace fsl::sim {

/// CTA `rank` of the cluster, whose shared memory thread `t` of this CTA reaches for
/// `what` (a multicast TMA load, a remote arrival): a peer must not have exited.
Interpreter::Cta &Interpreter::reach(int64_t rank, int t, const char *what) {
  if (rank < 0 || rank >= static_cast<int64_t>(ctas_.size()))
    fault(t, llvm::formatv("{0} to CTA {1} of a cluster of {2}", what, rank, ctas_.size()));
  Cta &peer = ctas_[static_cast<size_t>(rank)];
  if (&peer == cta_)
    return peer;
  if (peer.finished)
    fault(t, llvm::formatv("{0} to CTA {1}, which has exited (a missing cluster barrier at the "
                           "end of the kernel)",
                           what, rank));
  return peer;
}

/// Shared buffer `buffer` of CTA `peer`, which an operation of thread `t` reaches at the
/// offset the buffer has in this CTA: the peer must have allocated it there.
Interpreter::SharedStorage &Interpreter::peerShared(Cta &peer, const Buffer &buffer, int t) {
  SharedStorage &own = sharedOf(buffer, t);
  if (&peer == cta_)
    return own;
  auto it = peer.shared.find(&buffer);
  if (it == peer.shared.end())
    fault(t, llvm::formatv("shared buffer {0} of CTA {1} is reached before CTA {1} has "
                           "allocated it (a missing cluster barrier after the allocations "
                           "and mbarrier inits?)",
                           buffer.name, peer.rank));
  if (it->second.offset != own.offset || it->second.bytes != own.bytes)
    fault(t, llvm::formatv("shared buffer {0} is bytes [{1}, {2}) here but [{3}, {4}) in CTA "
                           "{5}; a cluster operation reaches the same offset in every CTA",
                           buffer.name, own.offset, own.offset + own.bytes, it->second.offset,
                           it->second.offset + it->second.bytes, peer.rank));
  return it->second;
}

/// The warps of `cta` (`cta_`) have all finished, so it exits: no peer may reach its
/// shared memory any more, and nothing a peer did to it may still be in flight (see
/// Cta::unseen). Nor may a barrier hold bytes that no arrival expected.
void Interpreter::finishCta(Cta &cta) {
  cta.finished = true;
  for (const auto &[thread, groups] : cta.bulkGroups)
    if (!groups.empty())
      fault(thread,
            llvm::formatv("the block exits while {0} TMA store{1} (`{2}`) may still read "
                          "its shared memory: no cp.async.bulk.wait_group.read retired "
                          "{3} before the end",
                          groups.size(), groups.size() > 1 ? "s" : "",
                          statementName(groups.back().stmt), groups.size() > 1 ? "them" : "it"));
  // A product still in flight when the block exits: its accumulators were read (by the
  // epilogue) or dropped before the products that write them finished.
  std::set<int> issuing;
  for (const auto &[group, groups] : cta.wgmmaGroups)
    for (const std::vector<BulkGroup::Read> &reads : groups)
      if (!reads.empty())
        issuing.insert(group);
  for (const auto &[group, reads] : cta.openWgmmaReads)
    if (!reads.empty())
      issuing.insert(group);
  if (!issuing.empty())
    fault(*issuing.begin() * 128,
          llvm::formatv("the block exits while warpgroup {0} has wgmma products in flight: no "
                        "wgmma.wait_group retired them before the end (the epilogue reads "
                        "accumulators the products may still write)",
                        *issuing.begin()));
  for (const auto &[key, barrier] : cta.mbarriers)
    if (barrier.tx < 0)
      fault(-1, llvm::formatv("the block exits with {0} transaction bytes completed on "
                              "mbarrier {1} that no arrival expected",
                              -barrier.tx, barrierName(barrier)));
  if (cta.unseen.empty())
    return;
  const Cta::Unseen &u = cta.unseen.front();
  fault(-1, llvm::formatv("CTA {0} exits while {1} of CTA {2} on its mbarrier {3} may still be "
                          "in flight: no warp of CTA {0} has waited for the phase it completes{4}",
                          cta.rank, u.async ? "a multicast TMA load" : "an arrival", u.from,
                          barrierName(*u.barrier),
                          u.async ? " (a multicast into a CTA that does not wait for it)"
                                  : ", and no cluster barrier has followed (a missing cluster "
                                    "barrier at the end of the kernel)"));
}

} // namespace fsl::sim
