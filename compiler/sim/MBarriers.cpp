// MBarriers.cpp — mbarriers: init, arrivals (on this CTA's barrier or a peer's), expected
// transaction bytes, phase completion, and the waits on a phase's parity, which pass on
// what the arriving warps knew (`clock`).
#include "sim/Interpreter.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::sim {

std::string Interpreter::barrierName(const Buffer &buffer, int64_t index) {
  return llvm::formatv("{0}[{1}]", buffer.name, index).str();
}

/// "full[0]", and " of CTA 1" for a barrier of another CTA of the cluster.
std::string Interpreter::barrierName(const MBarrier &barrier) {
  return barrierName(*barrier.buffer, barrier.index) +
         (barrier.cta != cta_->rank ? " of CTA " + std::to_string(barrier.cta) : "");
}

/// The mbarrier at element `index` of `buffer` in CTA `in` (this one when null), as
/// thread `t` of this CTA addresses it.
Interpreter::MBarrier *Interpreter::findBarrier(const Buffer &buffer, int64_t index, int t,
                                                Cta *in) {
  if (buffer.space != MemorySpace::Shared || buffer.dtype != DType::I64)
    fault(t, "mbarrier " + buffer.name + " must be an i64 (u64) slot in shared memory");
  element(buffer, index, t, false); // allocated and in bounds
  Cta &cta = in ? *in : *cta_;
  if (&cta != cta_) {
    if (!cta.shared.count(&buffer))
      return nullptr; // the peer has not come that far: no init either
    peerShared(cta, buffer, t);
  }
  auto it = cta.mbarriers.find({&buffer, index});
  return it == cta.mbarriers.end() ? nullptr : &it->second;
}

Interpreter::MBarrier &Interpreter::liveBarrier(const Buffer &buffer, int64_t index, int t,
                                                Cta *in) {
  MBarrier *barrier = findBarrier(buffer, index, t, in);
  if (!in || in == cta_) {
    if (!barrier)
      fault(t, "mbarrier " + barrierName(buffer, index) + " is used before mbarrier.init");
    return *barrier;
  }
  // Another CTA's barrier: its init must be ordered before this use by a cluster barrier.
  if (!barrier || barrier->initEpoch == epoch_)
    fault(t, llvm::formatv("mbarrier {0} of CTA {1} is used by CTA {2} {3} (a missing cluster "
                           "barrier after mbarrier.init)",
                           barrierName(buffer, index), in->rank, cta_->rank,
                           barrier ? "with no cluster barrier since its init"
                                   : "before its mbarrier.init"));
  return *barrier;
}

/// The phase completes when its arrivals and its transaction bytes are all in.
void Interpreter::settle(MBarrier &barrier) {
  if (barrier.pending == 0 && barrier.tx == 0) {
    ++barrier.phase;
    barrier.pending = barrier.expected;
    barrier.released = std::move(barrier.gathered);
    barrier.gathered.clear();
    barrier.releasedEpochs = std::move(barrier.gatheredEpochs);
    barrier.gatheredEpochs.clear();
  }
}

void Interpreter::arrive(MBarrier &barrier, int t) {
  if (barrier.pending == 0)
    fault(t, llvm::formatv("mbarrier {0}: an arrival beyond the {1} its phase expects",
                           barrierName(barrier), barrier.expected));
  // What the arriving warp knows is known to whoever sees this phase complete.
  Warp &warp = cta_->warps[t / 32];
  merge(barrier.gathered, warp.clock);
  // What it did before the arrival is ordered before what the waiters do after; what it
  // does next is not.
  merge(barrier.gatheredEpochs, warp.epochs);
  ++warp.epochs[clusterWarp(warp)];
  --barrier.pending;
  // Bytes may complete before the arrival that expects them (a peer's multicast), but
  // once every arrival is in the count cannot be negative.
  if (barrier.pending == 0 && barrier.tx < 0)
    fault(t, llvm::formatv("mbarrier {0}: the last arrival of its phase finds {1} transaction "
                           "bytes more completed than expected",
                           barrierName(barrier), -barrier.tx));
  settle(barrier);
}

bool Interpreter::execMBarrier(Warp &warp, const StmtNode &s, const Mask &mask) {
  if (!s.buffer)
    fail(kir::stmtKindName(s.kind) + " without its barrier");
  if (s.ctaRank && s.kind != StmtKind::MBarrierArrive)
    fault(mask.front(), kir::stmtKindName(s.kind) + " with a CTA rank (only mbarrier.arrive)");
  const Buffer &buffer = *s.buffer;
  if (s.kind == StmtKind::MBarrierWait)
    warp.conditions.clear();
  for (int t : mask) {
    int64_t index = s.index ? integer(s.index, t, "an mbarrier index") : 0;
    if (s.kind == StmtKind::MBarrierInit)
      initBarrier(s, buffer, index, t);
    else if (s.kind == StmtKind::MBarrierWait)
      waitBarrier(warp, s, buffer, index, t);
    else
      arriveBarrier(s, buffer, index, t);
  }
  if (s.kind != StmtKind::MBarrierWait || passConditions(warp))
    return true;
  LaneMask waiting = 0;
  for (int t : mask)
    waiting |= LaneMask(1) << (t - warp.first);
  await(warp, Wait::MBarrier, s, waiting);
  return false;
}

void Interpreter::initBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t) {
  int64_t count = integer(s.count, t, "an mbarrier arrival count");
  if (findBarrier(buffer, index, t))
    fault(t, "second mbarrier.init of the live barrier " + barrierName(buffer, index) +
                 " (is the init executed by more than one thread?)");
  if (count < 1 || count >= (int64_t(1) << 20))
    fault(t, llvm::formatv("mbarrier.init of {0} with {1} arrivals (1 .. 2^20-1)",
                           barrierName(buffer, index), count));
  MBarrier &barrier = cta_->mbarriers[{&buffer, index}];
  barrier.expected = barrier.pending = count;
  barrier.buffer = &buffer;
  barrier.index = index;
  barrier.cta = cta_->rank;
  barrier.initEpoch = epoch_;
  barrier.id = static_cast<int>(barrierById_.size());
  barrierById_.push_back(&barrier);
}

/// mbarrier.arrive (on the barrier at the same offset in CTA `ctaRank` of the cluster,
/// if it has one), or mbarrier.arrive.expect_tx with the byte count in `count`.
void Interpreter::arriveBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t) {
  Cta *in = s.ctaRank ? &reach(integer(s.ctaRank, t, "an mbarrier.arrive CTA rank"), t,
                               "an mbarrier arrival")
                      : nullptr;
  MBarrier &barrier = liveBarrier(buffer, index, t, in);
  if (in && in != cta_)
    in->unseen.push_back({&barrier, barrier.phase, cta_->rank, /*async=*/false});
  if (s.kind == StmtKind::MBarrierArriveExpectTx) {
    int64_t bytes = integer(s.count, t, "an expected transaction byte count");
    if (bytes < 0)
      fault(t, llvm::formatv("mbarrier {0} expects {1} bytes", barrierName(buffer, index), bytes));
    barrier.tx += bytes; // expect first, then arrive: the phase waits for the bytes
  }
  arrive(barrier, t);
}

/// Adds thread `t`'s wait to the conditions its warp waits for.
void Interpreter::waitBarrier(Warp &warp, const StmtNode &s, const Buffer &buffer, int64_t index,
                              int t) {
  MBarrier &barrier = liveBarrier(buffer, index, t);
  int64_t parity = integer(s.count, t, "an mbarrier wait parity");
  if (parity != 0 && parity != 1)
    fault(t, llvm::formatv("mbarrier wait parity {0}", parity));
  for (const Condition &c : warp.conditions)
    if (c.barrier == &barrier && c.parity == parity)
      return;
  warp.conditions.push_back({&barrier, parity});
}

/// Whether every condition `warp` waits for holds (each, once it held, stays passed, as a
/// thread leaves its try_wait loop when it sees its phase complete).
bool Interpreter::passConditions(Warp &warp) {
  bool all = true;
  for (Condition &c : warp.conditions) {
    if (c.passed)
      continue;
    // try_wait.parity(p) succeeds once the phase of parity p has completed, that is
    // while the current (incomplete) phase has the other parity; a fresh barrier is in
    // phase 0, so a wait on parity 1 passes at once (PTX ISA, mbarrier.test_wait/try_wait,
    // "phaseParity"). The phase seen complete is the one before the current.
    MBarrier &barrier = *c.barrier;
    if ((barrier.phase & 1) == c.parity) {
      all = false;
      continue;
    }
    c.passed = true;
    if (barrier.phase > 0) {
      // What peers did to this CTA in the phases seen complete has landed.
      std::erase_if(ctas_[warp.cta].unseen, [&](const Cta::Unseen &u) {
        return u.barrier == &barrier && u.phase < barrier.phase;
      });
      merge(warp.clock, barrier.released);
      merge(warp.epochs, barrier.releasedEpochs);
      if (warp.clock.size() <= static_cast<size_t>(barrier.id))
        warp.clock.resize(barrier.id + 1, 0);
      warp.clock[barrier.id] = std::max(warp.clock[barrier.id], barrier.phase);
    }
  }
  return all;
}

} // namespace fsl::sim
