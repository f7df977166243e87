// Races.cpp — shared-memory accesses by different warps that nothing orders. The simulator
// runs one warp at a time, so a read of what another warp writes without a barrier in
// between sees whatever this schedule left there; on the GPU the warps run together and
// the read may come first. Each warp keeps a vector clock (`epochs`): barriers and block
// reductions join the clocks of the warps they meet, an mbarrier arrival hands the
// arriving warp's clock to whoever sees its phase complete. Each shared element keeps its
// last write by a thread and the reads since; an access by another warp whose clock does
// not cover them is a race (read after write, write after read, write after write).
//
// Tracked: Load, Store and VectorCopy; a TMA load as a write by the issuing warp at its
// issue, into its own CTA (what reads it is checkVisible's, through the load's mbarrier;
// a multicast into a peer is not checked against the peer's accesses); a TMA store's reads
// by the issuing warp at its issue; a wgmma's operand reads by the first warp of its
// warpgroup (one thread a warpgroup releases a stage). Not tracked: the block reductions'
// scratch, which the simulator combines without memory, and global memory.
#include "sim/Interpreter.h"

#include <llvm/Support/FormatVariadic.h>

namespace fsl::sim {

/// The warp's index among the warps of the cluster (CTA by CTA in rank order).
int Interpreter::clusterWarp(const Warp &warp) const {
  return warp.cta * static_cast<int>(ctas_.front().warps.size()) + warp.id;
}

/// A warp at launch knows nothing of the others; its own run starts at epoch 1.
void Interpreter::startEpochs(Warp &warp) {
  warp.epochs.assign(ctas_.size() * cta_->warps.size(), 0);
  warp.epochs[clusterWarp(warp)] = 1;
}

/// The warps of a completed barrier know what each of them knew; what each does after it
/// is new to all of them.
void Interpreter::joinEpochs(const std::vector<Warp *> &met) {
  std::vector<int64_t> known;
  for (const Warp *w : met)
    merge(known, w->epochs);
  for (Warp *w : met) {
    w->epochs = known;
    ++w->epochs[clusterWarp(*w)];
  }
}

void Interpreter::trackShared(const Buffer &buffer, SharedStorage &shared, int64_t at, int t,
                              bool store) {
  if (shared.history.empty())
    return;
  const Warp &warp = cta_->warps[t / 32];
  int self = clusterWarp(warp);
  AccessHistory &history = shared.history[at];
  auto unordered = [&](const Access &a) {
    return a.warp >= 0 && a.warp != self && warp.epochs[a.warp] < a.epoch;
  };
  if (unordered(history.write))
    race(buffer, at, t, store, history.write, /*otherStore=*/true);
  Access access{self, warp.epochs[self], current_};
  if (store) {
    for (const Access &read : history.reads)
      if (unordered(read))
        race(buffer, at, t, store, read, /*otherStore=*/false);
    history.write = access;
    history.reads.clear();
    return;
  }
  for (Access &read : history.reads)
    if (read.warp == self) {
      read = access;
      return;
    }
  history.reads.push_back(access);
}

/// A TMA load that thread `t` issues writes element `at` of this CTA: after what came
/// before its issue, so the accesses the issuing warp does not know of race with it. Into a
/// `peer` (multicast) it starts the element's history afresh: the peer's own accesses are
/// ordered by the mbarriers of each CTA (Cluster.cpp checks what may be in flight). Its
/// readers are checked against its mbarrier (checkVisible).
void Interpreter::trackAsyncWrite(const Buffer &buffer, SharedStorage &shared, int64_t at, int t,
                                  bool peer) {
  if (shared.history.empty())
    return;
  if (peer) {
    shared.history[at] = AccessHistory{};
    return;
  }
  const Warp &warp = cta_->warps[t / 32];
  int self = clusterWarp(warp);
  AccessHistory &history = shared.history[at];
  auto unordered = [&](const Access &a) {
    return a.warp >= 0 && a.warp != self && warp.epochs[a.warp] < a.epoch;
  };
  if (unordered(history.write))
    race(buffer, at, t, true, history.write, true);
  for (const Access &read : history.reads)
    if (unordered(read))
      race(buffer, at, t, true, read, false);
  history = AccessHistory{};
}

/// A TMA store reads its shared tile after its issue, until a cp.async.bulk.wait_group.read
/// of the issuing thread retires its group; a wgmma reads its operands until a
/// wgmma.wait_group of its warpgroup retires its group. A write to an element either may
/// still read (by any thread, the issuing one too) is a missing wait, or one that leaves
/// too many pending: on the GPU the read would see the new value.
void Interpreter::checkNoAsyncRead(const Buffer &buffer, const SharedStorage &shared, int64_t at,
                                   int t) {
  if (!shared.storeReads.empty() && shared.storeReads[at] != 0)
    fault(t, llvm::formatv("write to shared {0}[{1}] in `{2}` while a TMA store may still read "
                           "it: no cp.async.bulk.wait_group.read of the storing thread has "
                           "retired the store (a missing wait, or one that leaves it pending)",
                           buffer.name, at, statementName(current_)));
  if (!shared.wgmmaReads.empty() && shared.wgmmaReads[at] != 0)
    fault(t, llvm::formatv("write to shared {0}[{1}] in `{2}` while a wgmma may still read it: "
                           "no wgmma.wait_group of its warpgroup has retired its group (a stage "
                           "released before the wait, or a wait that leaves it pending)",
                           buffer.name, at, statementName(current_)));
}

/// wait_group.read `pending` by thread `t`: its bulk groups but the `pending` newest have
/// read their shared tiles. The reads count as the thread's warp's from now on, so that a
/// later write by another warp must be ordered after this wait.
void Interpreter::retireBulkGroups(int t, int64_t pending) {
  auto found = cta_->bulkGroups.find(t);
  if (found == cta_->bulkGroups.end())
    return;
  std::deque<BulkGroup> &groups = found->second;
  while (static_cast<int64_t>(groups.size()) > pending) {
    for (const BulkGroup::Read &read : groups.front().reads) {
      --read.shared->storeReads[read.at];
      trackShared(*read.buffer, *read.shared, read.at, t, /*store=*/false);
    }
    groups.pop_front();
  }
}

/// "store to h_buffer (persistent h in shared memory)": the kind, what it sets, and where
/// it comes from.
std::string Interpreter::statementName(const StmtNode *s) const {
  if (!s)
    return "an unknown statement";
  std::string name = kir::stmtKindName(s->kind).str();
  if (s->var && (s->kind == StmtKind::Let || s->kind == StmtKind::Assign))
    name += " " + s->var->name;
  else if (s->buffer)
    name += " " + s->buffer->name;
  llvm::StringRef note = !s->comment.empty() ? llvm::StringRef(s->comment) : s->origin.text;
  if (!note.empty())
    name += " (" + note.str() + ")";
  return name;
}

void Interpreter::race(const Buffer &buffer, int64_t at, int t, bool store, const Access &other,
                       bool otherStore) {
  // The fault names the kernel, the block and the thread; this names both statements.
  int warps = static_cast<int>(cta_->warps.size());
  std::string otherWarp = llvm::formatv("warp {0}", other.warp % warps);
  if (other.warp / warps != cta_->rank)
    otherWarp += llvm::formatv(" of CTA {0}", other.warp / warps).str();
  fault(t,
        llvm::formatv("race on shared {0}[{1}]: warp {2} {3} it in `{4}` and {5} {6} it in "
                      "`{7}`, with no barrier or mbarrier wait between them (a missing "
                      "barrier?)",
                      buffer.name, at, t / 32, store ? "writes" : "reads", statementName(current_),
                      otherWarp, otherStore ? "wrote" : "read", statementName(other.stmt)));
}

/// wgmma.commit_group by the warpgroup's first warp: the products issued since its last
/// commit form a group (the last of the four warps to reach each wgmma ran it, so by the
/// time the first warp commits, every product before the commit has read its operands'
/// addresses into the group).
void Interpreter::commitWgmmaGroup(const Warp &warp) {
  // Every warp commits its own threads' accumulator writes.
  std::vector<AccumulatorWrite> &writes = cta_->openWgmmaWrites[warp.id];
  cta_->wgmmaWriteGroups[warp.id].push_back(std::move(writes));
  writes.clear();
  if (warp.id % 4 != 0)
    return;
  int group = warp.id / 4;
  std::vector<BulkGroup::Read> &open = cta_->openWgmmaReads[group];
  cta_->wgmmaGroups[group].push_back(std::move(open));
  open.clear();
}

/// wgmma.wait_group `pending` by the warpgroup's first warp: its groups but the `pending`
/// newest have read their operands. The reads count as that warp's from now on, so that
/// a write by another warp (the producer's next load into the stage) must be ordered
/// after this wait, not after the products' issue.
void Interpreter::retireWgmmaGroups(const Warp &warp, int64_t pending) {
  // The warp's own accumulator writes: its registers are final once its wait returns.
  if (auto mine = cta_->wgmmaWriteGroups.find(warp.id); mine != cta_->wgmmaWriteGroups.end()) {
    std::deque<std::vector<AccumulatorWrite>> &groups = mine->second;
    while (static_cast<int64_t>(groups.size()) > pending) {
      for (const AccumulatorWrite &write : groups.front())
        --write.local->wgmmaWrites[write.at];
      groups.pop_front();
    }
  }
  if (warp.id % 4 != 0)
    return;
  auto found = cta_->wgmmaGroups.find(warp.id / 4);
  if (found == cta_->wgmmaGroups.end())
    return;
  std::deque<std::vector<BulkGroup::Read>> &groups = found->second;
  while (static_cast<int64_t>(groups.size()) > pending) {
    for (const BulkGroup::Read &read : groups.front()) {
      --read.shared->wgmmaReads[read.at];
      trackShared(*read.buffer, *read.shared, read.at, warp.first, /*store=*/false);
    }
    groups.pop_front();
  }
}

} // namespace fsl::sim
