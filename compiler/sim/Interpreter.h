// Interpreter.h — the simulator's machine, internal to compiler/sim: one kernel launch,
// its state (the cluster's CTAs with their variables, memory, mbarriers and warps) and
// the operations on it. Each group of declarations below is defined in the file its
// comment names; Simulator.h describes what the machine does.
#pragma once

#include "kir/IR.h"
#include "sim/Expressions.h"
#include "sim/Fault.h"
#include "sim/Simulator.h"
#include "sim/SlotTable.h"
#include "support/Internal.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fsl::sim {

using kir::Buffer;
using kir::DType;
using kir::ExprKind;
using kir::ExprNode;
using kir::MemorySpace;
using kir::StmtKind;
using kir::StmtNode;
using kir::Swizzle;
using kir::Var;

inline int64_t bytesOf(DType type) { return static_cast<int64_t>(ir::dtypeBytes(type)); }

/// "128B swizzle", "no swizzle": how a fault names a swizzle.
llvm::StringRef swizzleName(Swizzle swizzle);

using Mask = std::vector<int>; // active threads (of a warp, or a warpgroup's), ascending ids

/// One kernel launch.
class Interpreter {
public:
  Interpreter(const kir::Kernel &kernel, Memory &memory, int64_t misalign,
              const SimulatorLimits &limits)
      : kernel_(kernel), memory_(memory), misalign_(misalign), limits_(limits) {}

  /// Runs every block of the grid, cluster by cluster (Launch.cpp).
  void run();

private:
  // --- The state of a block ---------------------------------------------------------------

  struct Cta;

  /// One 64-bit mbarrier: arrivals and transaction bytes still expected in the current
  /// phase, and the phase number (its parity is what waits test).
  struct MBarrier {
    int64_t expected = 0;
    int64_t pending = 0;
    int64_t tx = 0;
    int64_t phase = 0;
    const Buffer *buffer = nullptr;
    int64_t index = 0;
    int cta = 0;           // the rank of its CTA in the cluster
    int id = 0;            // its component of a warp's `clock` (numbered across the cluster)
    int64_t initEpoch = 0; // the cluster barriers completed before its init (`epoch_`)
    /// What the warps that arrived in the current phase knew, and what those of the last
    /// completed phase knew: a wait that sees that phase complete learns it.
    std::vector<int64_t> gathered, released;
    /// The same for the warps' `epochs`: what happened before the arrivals.
    std::vector<int64_t> gatheredEpochs, releasedEpochs;
  };

  /// The lanes of one warp: bit l is thread 32 w + l (linear ids).
  using LaneMask = uint32_t;

  /// A statement a warp is inside of, and where in it the warp is.
  enum class FrameKind { Block, Loop, Branch };
  struct Frame {
    FrameKind kind;
    const StmtNode *stmt;
    LaneMask mask;                     // the lanes that run it
    LaneMask otherwise = 0;            // Branch: the lanes of the else branch
    int64_t next = 0;                  // Block: child; Loop: iteration; Branch: 0 then, 1 else
    std::array<int64_t, 32> extents{}; // Loop: each lane's trip count
  };

  /// What a warp waits for.
  enum class Wait {
    None,
    Barrier,    // every warp at this __syncthreads
    Reduce,     // every warp at this block reduction
    Named,      // `expected` threads at named barrier `at->barrierId`
    MBarrier,   // `conditions`
    Wgmma,      // the four warps of its warpgroup at this wgmma
    SetMaxNReg, // the four warps of its warpgroup at this setmaxnreg
    Registers,  // `want` registers per thread from the block's pool (setmaxnreg.inc)
    Cluster,    // every warp of every CTA of the cluster at a cluster barrier
  };

  /// One mbarrier phase a wait needs complete: the current phase's parity must differ.
  struct Condition {
    MBarrier *barrier;
    int64_t parity;
    bool passed = false;
  };

  /// A warp of the block being run: where it is in the body, and what it waits for.
  struct Warp {
    int id = 0;
    int cta = 0;        // the rank of its CTA in the cluster
    int first = 0;      // the linear id of lane 0
    LaneMask lanes = 0; // the lanes that exist (the last warp may have fewer than 32)
    std::vector<Frame> stack;
    bool started = false, done = false;
    Wait wait = Wait::None;
    const StmtNode *at = nullptr; // the statement it waits at
    LaneMask waiting = 0;         // its lanes there
    int64_t expected = 0;         // Named: the threads the barrier expects
    std::vector<Condition> conditions;
    int64_t registers = 0, want = 0; // per thread: held, and wanted by a pending inc
    bool registersKnown = false;     // `registers` is a count, not the launch's estimate
    /// Per mbarrier id: how many of its phases this warp knows to be complete, by its own
    /// waits or from the warps it met at a barrier or through an mbarrier. Data a TMA load
    /// brought in is readable only once the warp knows the load's phase complete.
    std::vector<int64_t> clock;
    /// A vector clock over the warps of the cluster (by clusterWarp): how far into each
    /// warp's run this one knows everything to have happened, through the barriers it met
    /// and the mbarrier phases it saw complete; its own entry counts its synchronisations.
    /// Two shared-memory accesses by different warps that it does not order race (Races.cpp).
    std::vector<int64_t> epochs;
  };

  static void merge(std::vector<int64_t> &into, const std::vector<int64_t> &from) {
    if (into.size() < from.size())
      into.resize(from.size(), 0);
    for (size_t i = 0; i < from.size(); ++i)
      into[i] = std::max(into[i], from[i]);
  }

  // --- Memory, and the CTAs of the cluster ---------------------------------------------

  struct LocalStorage {
    int64_t elements = 0;
    std::vector<double> data;       // threads x elements
    std::vector<uint8_t> allocated; // per thread
    /// Per element of each thread (once a wgmma wrote the buffer): the products issued on
    /// it that no wgmma.wait_group of the thread's warp has retired. The thread reading or
    /// writing the element then is a fault; another product on it is not (they chain).
    std::vector<int32_t> wgmmaWrites;
  };
  /// An accumulator element a wgmma writes until the wait that retires its group.
  struct AccumulatorWrite {
    LocalStorage *local;
    int64_t at; // thread * elements + index
  };
  /// The TMA load that last wrote a shared element: readable by a warp whose clock holds
  /// `phase` for mbarrier `barrier` (the load's phase completed and seen).
  struct Tag {
    int barrier = -1; // none: written by a thread, or never
    int64_t phase = 0;
  };
  /// A shared-memory access by a warp, in its `epochs` entry at the time.
  struct Access {
    int warp = -1; // clusterWarp; none
    int64_t epoch = 0;
    const StmtNode *stmt = nullptr;
  };
  /// The accesses of a shared element that a later access must be ordered after: the last
  /// write by a thread, and each warp's last read since.
  struct AccessHistory {
    Access write;
    std::vector<Access> reads;
  };
  struct SharedStorage {
    int64_t offset = 0; // bytes into the block's dynamic (or static) shared memory
    int64_t elements = 0;
    int64_t bytes = 0;
    bool dynamic = true;
    std::vector<double> data;
    std::vector<Tag> tags;              // per element, once a TMA load wrote the buffer
    std::vector<AccessHistory> history; // per element
    /// Per element (once a TMA store read the buffer): the TMA stores that read it and that
    /// no cp.async.bulk.wait_group.read has retired yet. Writing it then is a fault.
    std::vector<int32_t> storeReads;
    /// Per element (once a wgmma read the buffer): the wgmma operand reads of groups that no
    /// wgmma.wait_group has retired yet. Writing it then is a fault.
    std::vector<int32_t> wgmmaReads;
  };
  /// A bulk async-group of one thread: the shared elements its TMA store reads, which the
  /// GPU may read until a wait_group.read retires the group.
  struct BulkGroup {
    struct Read {
      const Buffer *buffer;
      SharedStorage *shared;
      int64_t at;
    };
    std::vector<Read> reads;
    const StmtNode *stmt = nullptr;
  };

  /// One CTA (block) of the cluster being run: its threads' variables, its local and
  /// shared memory, its mbarriers and its warps.
  struct Cta {
    int rank = 0; // in the cluster, x fastest
    std::array<int64_t, 3> blockIdx{0, 0, 0};
    std::vector<double> values; // threads x slots
    std::vector<uint8_t> bound;
    std::unordered_map<const Buffer *, LocalStorage> locals;
    std::unordered_map<const Buffer *, SharedStorage> shared;
    int64_t staticSharedEnd = 0;
    std::map<std::pair<const Buffer *, int64_t>, MBarrier> mbarriers; // nodes stay put
    std::vector<Warp> warps;
    int64_t registerPool = 0; // registers given up by setmaxnreg.dec, not yet taken
    bool finished = false;    // every warp has finished: the CTA has exited
    /// The half of the reduction scratch the last block reduction read (-1: a block
    /// barrier since), and its accumulator: device.cuh's block reductions have no barrier
    /// after them, so the next one must take the other half.
    int64_t lastReductionSlot = -1;
    const kir::Var *lastReduced = nullptr;
    /// What other CTAs did to this one's mbarriers (an arrival; a multicast load's data and
    /// bytes) that may still be in flight on the GPU: no wait of this CTA has seen the phase
    /// it counts in complete and, for an arrival, no cluster barrier has followed it. The
    /// CTA must not exit before (finishCta).
    struct Unseen {
      const MBarrier *barrier;
      int64_t phase; // the phase it counts in
      int from;      // the CTA that did it
      bool async;    // a multicast load's bytes (else an arrival)
    };
    std::vector<Unseen> unseen;
    /// Each thread's committed bulk groups (TMA stores), oldest first.
    std::map<int, std::deque<BulkGroup>> bulkGroups;
    /// A warpgroup's wgmma operand reads: those of its uncommitted products (`open`), then
    /// one entry a committed group, oldest first, until a wgmma.wait_group retires it.
    std::map<int, std::vector<BulkGroup::Read>> openWgmmaReads;
    std::map<int, std::deque<std::vector<BulkGroup::Read>>> wgmmaGroups;
    /// Each warp's accumulator writes the same way (each warp's wait retires its own
    /// threads' registers): uncommitted, then one entry a committed group.
    std::map<int, std::vector<AccumulatorWrite>> openWgmmaWrites;
    std::map<int, std::deque<std::vector<AccumulatorWrite>>> wgmmaWriteGroups;
  };

  /// Writes of one statement by all its threads: two threads writing different values to
  /// one element is a race the GPU resolves arbitrarily.
  struct Write {
    double *target;
    double value;
    int thread;
    const Buffer *buffer;
    int64_t index;
  };

  /// One thread's accumulators of a reduction: `var`, then `carried`.
  using Accumulators = std::vector<double>;

  /// A TMA load or store on its way through its steps (Tma.cpp).
  struct TmaTransfer;

  // --- Launch.cpp: the launch's shape, the variables' slots, each CTA's start ------------

  void checkParameters();
  int64_t launchValue(const kir::Expr &e, const char *what);
  void configureLaunch();
  void assignSlots();
  void configureCluster();
  void runCluster(std::array<int64_t, 3> origin);
  void enterCta(Cta &cta);
  void startCta(int rank, std::array<int64_t, 3> blockIdx);

  // --- WarpScheduler.cpp: warps run one at a time until they wait; their meetings --------

  void schedule();
  bool runnable(Warp &warp);
  void runWarp(Warp &warp);
  const Mask &lanesOf(const Warp &warp, LaneMask mask);
  int threadsWaiting(Wait kind, const StmtNode *s, int group = -1) const;
  std::vector<Warp *> warpsWaiting(Wait kind, const StmtNode *s, int group = -1);
  void await(Warp &warp, Wait kind, const StmtNode &s, LaneMask mask);
  void release(const std::vector<Warp *> &met);
  int firstWaiting(const Warp &warp) const;
  std::vector<Warp *> warpsAtClusterBarrier();

  // --- FaultReport.cpp: where a fault happened, and why a deadlocked warp waits ----------

  [[noreturn]] void fault(int thread, const llvm::Twine &message) const;
  std::string waitReason(const Warp &warp);
  std::string warpList(const std::vector<std::pair<int, int>> &ids) const;
  [[noreturn]] void deadlock();

  /// Runs `f`, adding the block and thread to a fault from the expression evaluator.
  template <typename F> auto located(int thread, F &&f) {
    try {
      return f();
    } catch (const Fault &inner) {
      if (inner.located)
        throw;
      fault(thread, inner.what());
    }
  }

  // --- Statements.cpp: statements over a warp's lanes; a thread's values -----------------

  bool enter(Warp &warp, const StmtNode &s, LaneMask mask);
  const StmtNode &child(const StmtNode &s, size_t i);
  int64_t hardwareExtent(kir::Axis axis);
  int64_t hardwareIndex(kir::Axis axis, int t);
  bool enterFor(Warp &warp, const StmtNode &s, LaneMask mask);
  void execLet(const StmtNode &s, const Mask &mask);
  void execStore(const StmtNode &s, const Mask &mask);
  void execVectorCopy(const StmtNode &s, const Mask &mask);
  /// stmatrix: the warp's registers into 8 x 8 matrices in shared memory, all 32 lanes.
  void execStMatrix(const Warp &warp, const StmtNode &s, LaneMask mask);
  void execAtomicAdd(const StmtNode &s, const Mask &mask);
  double builtin(int t, kir::Builtin which);
  class ThreadScope;
  double value(const kir::Expr &e, int t);
  int64_t integer(const kir::Expr &e, int t, const char *what);
  int64_t uniform(const kir::Expr &e, const Mask &mask, const char *what);

  // A thread's variables: every statement reads and writes them, so they stay inline.

  std::array<int64_t, 3> threadIdx(int t) const {
    return {t % block_[0], (t / block_[0]) % block_[1], t / (block_[0] * block_[1])};
  }

  void setVariable(int t, const Var &v, double value) {
    int slot = slotTable_.find(&v);
    FSL_INTERNAL_ASSERT(slot >= 0, "a variable without a slot");
    size_t at = static_cast<size_t>(t) * slots_ + slot;
    values_[at] = value;
    bound_[at] = 1;
  }

  double variable(int t, const Var &v) {
    if (v.builtin != kir::Builtin::None)
      return builtin(t, v.builtin);
    int slot = slotTable_.find(&v);
    size_t at = slot < 0 ? 0 : static_cast<size_t>(t) * slots_ + slot;
    if (slot < 0 || !bound_[at])
      fail("variable " + v.name + " is read before it is set");
    return values_[at];
  }

  // --- Memory.cpp: global, shared (with its swizzles) and local memory; checked access ---

  std::vector<double> &globalData(const Buffer &buffer);
  std::vector<double> &globalAt(const Buffer &buffer, int t);
  SharedStorage &sharedOf(const Buffer &buffer, int t);
  double &element(const Buffer &buffer, int64_t index, int t, bool store);
  void checkVisible(const Buffer &buffer, const SharedStorage &shared, int64_t at, int warp, int t);
  void checkVectorAlignment(const Buffer &buffer, int64_t index, int64_t lanes, int t);
  void commit(std::vector<Write> &writes);
  void execAllocate(const StmtNode &s, const Mask &mask);
  void allocateShared(const StmtNode &s, const Mask &mask);
  int64_t swizzledElement(const Buffer &buffer, const SharedStorage &shared, int64_t relative,
                          Swizzle swizzle);
  void checkSwizzleBase(const Buffer &buffer, const SharedStorage &shared, Swizzle swizzle, int t);

  // --- Races.cpp: shared-memory accesses of different warps that nothing orders --------

  int clusterWarp(const Warp &warp) const;
  void startEpochs(Warp &warp);
  void joinEpochs(const std::vector<Warp *> &met);
  void trackShared(const Buffer &buffer, SharedStorage &shared, int64_t at, int t, bool store);
  void trackAsyncWrite(const Buffer &buffer, SharedStorage &shared, int64_t at, int t, bool peer);
  void checkNoAsyncRead(const Buffer &buffer, const SharedStorage &shared, int64_t at, int t);
  void retireBulkGroups(int t, int64_t pending);
  void commitWgmmaGroup(const Warp &warp);
  void retireWgmmaGroups(const Warp &warp, int64_t pending);
  /// True while a wgmma updates its accumulators (its own access is not a fault).
  bool wgmmaWritingAccumulators_ = false;
  std::string statementName(const StmtNode *s) const;
  [[noreturn]] void race(const Buffer &buffer, int64_t at, int t, bool store, const Access &other,
                         bool otherStore);

  // --- Reductions.cpp: warp and block reductions in the GPU's order ----------------------

  Accumulators total(const StmtNode &s, const std::vector<int> &group, bool warp);
  void reduceGroup(const StmtNode &s, const std::vector<int> &group, bool warp);
  bool execReduce(Warp &warp, const StmtNode &s, LaneMask lanes);

  // --- Barriers.cpp: __syncthreads, named barriers, cluster barriers ----------------------

  bool execBarrier(Warp &warp, const StmtNode &s, LaneMask lanes);

  // --- Cluster.cpp: what CTAs of a cluster do to each other, and their exit --------------

  Cta &reach(int64_t rank, int t, const char *what);
  SharedStorage &peerShared(Cta &peer, const Buffer &buffer, int t);
  void finishCta(Cta &cta);

  // --- MBarriers.cpp: mbarrier init, arrivals, transaction bytes, phases and waits -------

  std::string barrierName(const Buffer &buffer, int64_t index);
  std::string barrierName(const MBarrier &barrier);
  MBarrier *findBarrier(const Buffer &buffer, int64_t index, int t, Cta *in = nullptr);
  MBarrier &liveBarrier(const Buffer &buffer, int64_t index, int t, Cta *in = nullptr);
  void settle(MBarrier &barrier);
  void arrive(MBarrier &barrier, int t);
  bool execMBarrier(Warp &warp, const StmtNode &s, const Mask &mask);
  void initBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t);
  void arriveBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t);
  void waitBarrier(Warp &warp, const StmtNode &s, const Buffer &buffer, int64_t index, int t);
  bool passConditions(Warp &warp);

  // --- Tma.cpp: TMA loads (multicast too) and stores of tensor-map boxes -----------------

  void tma(const StmtNode &s, int t, bool load);
  void checkTmaStatement(const StmtNode &s, int t, bool load, const char *op);
  void readTmaBox(TmaTransfer &x);
  void checkTensorMap(const TmaTransfer &x);
  void placeTmaBox(TmaTransfer &x);
  void findTmaDestinations(TmaTransfer &x);
  void copyTmaBox(TmaTransfer &x);
  void completeTmaBytes(TmaTransfer &x);

  // --- Wgmma.cpp: wgmma m64nNk16 over a warpgroup: operands, products, fragments ---------

  double operand(const Buffer &buffer, int64_t start, bool mnMajor, int64_t blockBytes, int64_t mn,
                 int64_t k, int t, const char *which);
  void checkBlocks(const Buffer &buffer, bool mnMajor, int64_t blockBytes, int64_t extent,
                   int64_t start, int t, const char *which);
  void execWgmma(const StmtNode &s, const Mask &mask);
  bool arriveWgmma(Warp &warp, const StmtNode &s, LaneMask lanes);

  // --- SetMaxNReg.cpp: registers moved between warpgroups through the block's pool -------

  bool execSetMaxNReg(Warp &warp, const StmtNode &s, LaneMask lanes);
  bool takeRegisters(Warp &warp, int64_t want);

  // --- The launch's state ------------------------------------------------------------------

  const kir::Kernel &kernel_;
  Memory &memory_;
  int64_t misalign_;
  const SimulatorLimits &limits_;

  std::array<int64_t, 3> grid_{1, 1, 1}, block_{1, 1, 1};
  int threads_ = 1;
  int64_t dynamicShared_ = 0;
  std::unordered_map<const Var *, int> slotOf_;
  SlotTable slotTable_; // slotOf_, for the lookups
  std::unordered_set<const Var *> mutable_;
  int slots_ = 0;
  int64_t steps_ = 0;
  const StmtNode *current_ = nullptr; // the statement being run, for reports

  // The cluster being run (one CTA without a cluster): its CTAs in rank order, the one
  // whose warp runs, the mbarriers of all of them by id, and the cluster barriers completed.
  std::array<int64_t, 3> cluster_{1, 1, 1};
  std::vector<Cta> ctas_;
  Cta *cta_ = nullptr;
  double *values_ = nullptr; // cta_->values, cta_->bound: the hottest reads
  uint8_t *bound_ = nullptr;
  std::vector<MBarrier *> barrierById_;
  int64_t epoch_ = 0;
  Mask lanes_;                   // lanesOf's
  int64_t initialRegisters_ = 0; // per thread, at launch
  int64_t residentBlocks_ = 1;   // blocks an SM whose share of registers a block gets
};

} // namespace fsl::sim
