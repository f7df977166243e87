// Statements.cpp — the statements of the body run over a warp's active lanes: dispatch by
// kind, loops (parallel ones checked against the launch), lets and assignments, stores
// and vector copies; and a thread's expression values (hardware indices, uniform values).
#include "sim/Interpreter.h"

#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <bit>
#include <cmath>

namespace fsl::sim {

/// Starts statement `s` for the `mask` lanes of `warp`: a compound statement becomes a
/// frame the warp continues from, a leaf runs at once. False when the warp now waits (it
/// continues after `s` once released).
bool Interpreter::enter(Warp &warp, const StmtNode &s, LaneMask mask) {
  if (!mask)
    return true;
  current_ = &s;
  steps_ += std::popcount(mask);
  if (steps_ > limits_.maxThreadSteps)
    fault(-1, llvm::formatv("the launch ran {0} thread statements, over the limit of {1} "
                            "(a runaway loop?)",
                            steps_, limits_.maxThreadSteps));
  switch (s.kind) {
  case StmtKind::Block:
    warp.stack.push_back({FrameKind::Block, &s, mask});
    return true;
  case StmtKind::For:
    return enterFor(warp, s, mask);
  case StmtKind::If:
  case StmtKind::WarpRole: {
    child(s, 0);
    LaneMask then = 0;
    for (LaneMask m = mask; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (value(s.condition, warp.first + lane) != 0)
        then |= LaneMask(1) << lane;
    }
    warp.stack.push_back({FrameKind::Branch, &s, then, mask & ~then});
    return true;
  }
  case StmtKind::Let:
  case StmtKind::Assign:
    execLet(s, lanesOf(warp, mask));
    return true;
  case StmtKind::Allocate:
    execAllocate(s, lanesOf(warp, mask));
    return true;
  case StmtKind::Store:
    execStore(s, lanesOf(warp, mask));
    return true;
  case StmtKind::VectorCopy:
    execVectorCopy(s, lanesOf(warp, mask));
    return true;
  case StmtKind::StMatrix:
    execStMatrix(warp, s, mask);
    return true;
  case StmtKind::AtomicAdd:
    execAtomicAdd(s, lanesOf(warp, mask));
    return true;
  case StmtKind::Reduce:
    return execReduce(warp, s, mask);
  case StmtKind::Barrier:
    return execBarrier(warp, s, mask);
  case StmtKind::GridDependency:
    // The trigger's predicate (which blocks let the next kernel launch) changes no result,
    // but it is evaluated in every lane as the GPU does, so an expression the CUDA printer
    // emits is one the simulator has computed.
    if (s.condition)
      for (LaneMask m = mask; m; m &= m - 1)
        (void)value(s.condition, warp.first + std::countr_zero(m));
    return true;
  case StmtKind::HoldLoads:
    // fsl_hold_loads_above: its branch is taken where a block's index is not below the
    // grid's size, which no block's is; the GPU would trap there, and so does this.
    if (hardwareIndex(kir::Axis::BIDx, warp.first) >= hardwareExtent(kir::Axis::BIDx))
      fail("hold_loads: blockIdx.x is not below gridDim.x");
    return true;
  case StmtKind::Comment:
  case StmtKind::FenceProxyAsync:
  case StmtKind::WgmmaFence:
    // Ordering only: every operation here completes before the next statement runs.
    return true;
  case StmtKind::WgmmaCommit:
    commitWgmmaGroup(warp);
    return true;
  case StmtKind::WgmmaWait:
    // The products ran at their issue; what the wait orders is their operand reads.
    retireWgmmaGroups(warp, s.pending);
    return true;
  case StmtKind::TmaStoreWait:
    for (int t : lanesOf(warp, mask))
      retireBulkGroups(t, s.pending);
    return true;
  case StmtKind::MBarrierInit:
  case StmtKind::MBarrierArrive:
  case StmtKind::MBarrierArriveExpectTx:
  case StmtKind::MBarrierWait:
    return execMBarrier(warp, s, lanesOf(warp, mask));
  case StmtKind::TmaLoad:
  case StmtKind::TmaStore:
    for (int t : lanesOf(warp, mask))
      tma(s, t, s.kind == StmtKind::TmaLoad);
    return true;
  case StmtKind::Wgmma:
    return arriveWgmma(warp, s, mask);
  case StmtKind::SetMaxNReg:
    return execSetMaxNReg(warp, s, mask);
  }
  FSL_UNREACHABLE("statement kind");
}

const StmtNode &Interpreter::child(const StmtNode &s, size_t i) {
  if (s.body.size() <= i || !s.body[i])
    fail(kir::stmtKindName(s.kind) + " without its body");
  return *s.body[i];
}

int64_t Interpreter::hardwareExtent(kir::Axis axis) {
  switch (axis) {
  case kir::Axis::BIDx:
    return grid_[0];
  case kir::Axis::BIDy:
    return grid_[1];
  case kir::Axis::BIDz:
    return grid_[2];
  case kir::Axis::TIDx:
    return block_[0];
  case kir::Axis::TIDy:
    return block_[1];
  case kir::Axis::TIDz:
    return block_[2];
  case kir::Axis::Warpgroup:
    if (block_[0] % 128 != 0)
      fault(-1, llvm::formatv("a loop over warpgroups needs blockDim.x a multiple of 128, "
                              "not {0}",
                              block_[0]));
    return block_[0] / 128;
  }
  FSL_UNREACHABLE("axis");
}

int64_t Interpreter::hardwareIndex(kir::Axis axis, int t) {
  std::array<int64_t, 3> tid = threadIdx(t);
  switch (axis) {
  case kir::Axis::BIDx:
    return cta_->blockIdx[0];
  case kir::Axis::BIDy:
    return cta_->blockIdx[1];
  case kir::Axis::BIDz:
    return cta_->blockIdx[2];
  case kir::Axis::TIDx:
    return tid[0];
  case kir::Axis::TIDy:
    return tid[1];
  case kir::Axis::TIDz:
    return tid[2];
  case kir::Axis::Warpgroup:
    return tid[0] / 128;
  }
  FSL_UNREACHABLE("axis");
}

bool Interpreter::enterFor(Warp &warp, const StmtNode &s, LaneMask mask) {
  if (!s.var)
    fail("a loop without an index variable");
  const StmtNode &body = child(s, 0);
  if (s.loopKind == kir::LoopKind::Parallel) {
    // No loop: the index is the hardware's, and the launch must cover the extent
    // exactly (fewer would skip iterations, more would run past them unguarded).
    int64_t hardware = hardwareExtent(s.axis);
    for (int t : lanesOf(warp, mask)) {
      int64_t extent = integer(s.extent, t, "a loop extent");
      if (extent != hardware)
        fault(t, llvm::formatv("loop {0} over {1} has extent {2}, but the launch gives {3}",
                               s.var->name, kir::axisName(s.axis), extent, hardware));
      setVariable(t, *s.var, static_cast<double>(hardwareIndex(s.axis, t)));
    }
    return enter(warp, body, mask);
  }
  // Serial, unrolled and vector loops: each lane runs its own trip count (runWarp).
  Frame frame{FrameKind::Loop, &s, mask};
  for (LaneMask m = mask; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    frame.extents[lane] = integer(s.extent, warp.first + lane, "a loop extent");
  }
  warp.stack.push_back(frame);
  return true;
}

void Interpreter::execLet(const StmtNode &s, const Mask &mask) {
  if (!s.var)
    fail(kir::stmtKindName(s.kind) + " without a variable");
  if (s.kind == StmtKind::Assign && !mutable_.count(s.var.get()))
    fault(mask.front(), "assignment to " + s.var->name + ", which is not declared mutable");
  std::vector<double> results;
  results.reserve(mask.size());
  for (int t : mask)
    results.push_back(inRegister(value(s.value, t), s.var->dtype));
  for (size_t k = 0; k < mask.size(); ++k)
    setVariable(mask[k], *s.var, results[k]);
}

void Interpreter::execStore(const StmtNode &s, const Mask &mask) {
  if (!s.buffer)
    fail("a store without a buffer");
  const Buffer &buffer = *s.buffer;
  std::vector<Write> writes;
  writes.reserve(mask.size());
  for (int t : mask) {
    int64_t at = integer(s.index, t, "a store index");
    double stored = eval::roundTo(value(s.value, t), buffer.dtype);
    writes.push_back({&element(buffer, at, t, true), stored, t, &buffer, at});
  }
  commit(writes);
}

/// The lanes add to the counter one after another (each sees the adds before it), each
/// writing the count it found. A counter read before any write (NaN: a workspace the
/// launcher does not zero) is a fault.
void Interpreter::execAtomicAdd(const StmtNode &s, const Mask &mask) {
  if (!s.buffer || !s.source)
    fail("an atomic add without its buffers");
  std::vector<Write> writes;
  for (int t : mask) {
    int64_t at = integer(s.sourceIndex, t, "a counter index");
    double &counter = element(*s.source, at, t, true);
    if (std::isnan(counter))
      fault(t, llvm::formatv("an atomic add to {0}[{1}], which holds no count (its memory "
                             "was never zeroed)",
                             s.source->name, at));
    double old = counter;
    counter = old + exactInteger(value(s.value, t), "an atomic add's value");
    int64_t to = integer(s.index, t, "an atomic add's result index");
    writes.push_back({&element(*s.buffer, to, t, true), old, t, s.buffer.get(), to});
  }
  commit(writes);
}

void Interpreter::execVectorCopy(const StmtNode &s, const Mask &mask) {
  if (!s.buffer || !s.source)
    fail("a vector copy without its buffers");
  const Buffer &to = *s.buffer, &from = *s.source;
  int64_t lanes = s.lanes;
  for (const Buffer *b : {&to, &from}) {
    int64_t bytes = lanes * bytesOf(b->dtype);
    if (lanes < 1 || bytes > 16 || (bytes & (bytes - 1)) != 0)
      fault(mask.front(), llvm::formatv("a vector access of {0} x {1} ({2} bytes); the GPU "
                                        "has 1, 2, 4, 8 and 16",
                                        lanes, ir::dtypeName(b->dtype), bytes));
  }
  std::vector<Write> writes;
  for (int t : mask) {
    int64_t src = integer(s.sourceIndex, t, "a vector source index");
    int64_t dst = integer(s.index, t, "a vector destination index");
    checkVectorAlignment(from, src, lanes, t);
    checkVectorAlignment(to, dst, lanes, t);
    for (int64_t l = 0; l < lanes; ++l) {
      double v = eval::roundTo(element(from, src + l, t, false), to.dtype);
      writes.push_back({&element(to, dst + l, t, true), v, t, &to, dst + l});
    }
  }
  commit(writes);
}

void Interpreter::execStMatrix(const Warp &warp, const StmtNode &s, LaneMask mask) {
  if (!s.buffer || !s.source)
    fail("stmatrix without its buffers");
  const Buffer &to = *s.buffer, &from = *s.source;
  int t0 = warp.first;
  // .sync.aligned: every lane of the warp executes the same stmatrix.
  if (mask != ~LaneMask(0))
    fault(t0, llvm::formatv("stmatrix reached by {0} of the 32 lanes of warp {1}; all 32 "
                            "execute it together",
                            std::popcount(mask), warp.id));
  if (to.space != kir::MemorySpace::Shared || bytesOf(to.dtype) != 2 || bytesOf(from.dtype) != 2 ||
      (s.lanes != 1 && s.lanes != 2 && s.lanes != 4))
    fault(t0, llvm::formatv("stmatrix of {0} matrices of {1} into {2}: 1, 2 or 4 of a 16-bit "
                            "type into shared memory",
                            s.lanes, ir::dtypeName(to.dtype), to.name));
  std::vector<Write> writes;
  for (int64_t j = 0; j < s.lanes; ++j)
    for (int i = 0; i < 8; ++i) {
      // Row i of matrix j: its address from lane 8 j + i, its 8 elements from lanes
      // 4 i .. 4 i + 3, two each, in their registers of matrix j.
      int addressing = t0 + int(8 * j) + i;
      int64_t row = integer(s.index, addressing, "a stmatrix row index");
      checkVectorAlignment(to, row, 8, addressing);
      for (int c = 0; c < 4; ++c) {
        int holder = t0 + 4 * i + c;
        int64_t src = integer(s.sourceIndex, holder, "a stmatrix source index") + 2 * j;
        for (int e = 0; e < 2; ++e) {
          double v = eval::roundTo(element(from, src + e, holder, false), to.dtype);
          writes.push_back({&element(to, row + 2 * c + e, addressing, true), v, addressing, &to,
                            row + 2 * c + e});
        }
      }
    }
  commit(writes);
}

double Interpreter::builtin(int t, kir::Builtin which) {
  std::array<int64_t, 3> tid = threadIdx(t);
  switch (which) {
  case kir::Builtin::None:
    break;
  case kir::Builtin::ThreadIdxX:
    return static_cast<double>(tid[0]);
  case kir::Builtin::ThreadIdxY:
    return static_cast<double>(tid[1]);
  case kir::Builtin::ThreadIdxZ:
    return static_cast<double>(tid[2]);
  case kir::Builtin::BlockIdxX:
    return static_cast<double>(cta_->blockIdx[0]);
  case kir::Builtin::BlockIdxY:
    return static_cast<double>(cta_->blockIdx[1]);
  case kir::Builtin::BlockIdxZ:
    return static_cast<double>(cta_->blockIdx[2]);
  case kir::Builtin::BlockDimX:
    return static_cast<double>(block_[0]);
  case kir::Builtin::BlockDimY:
    return static_cast<double>(block_[1]);
  case kir::Builtin::BlockDimZ:
    return static_cast<double>(block_[2]);
  case kir::Builtin::GridDimX:
    return static_cast<double>(grid_[0]);
  }
  FSL_UNREACHABLE("a hardware index");
}

/// An expression evaluated in thread `thread`: its variables, its view of memory.
class Interpreter::ThreadScope : public Scope {
public:
  ThreadScope(Interpreter &machine, int thread) : machine_(machine), thread_(thread) {}
  double variable(const Var &v) override { return machine_.variable(thread_, v); }
  double load(const Buffer &buffer, int64_t index) override {
    return machine_.element(buffer, index, thread_, /*store=*/false);
  }

private:
  Interpreter &machine_;
  int thread_;
};

double Interpreter::value(const kir::Expr &e, int t) {
  if (!e)
    fault(t, "a statement lacks an expression it needs");
  return located(t, [&] {
    ThreadScope scope(*this, t);
    return evaluate(*e, scope);
  });
}

int64_t Interpreter::integer(const kir::Expr &e, int t, const char *what) {
  double v = value(e, t);
  return located(t, [&] { return exactInteger(v, what); });
}

/// An expression every thread of `mask` must agree on (a barrier's thread count, a
/// shared allocation's offset, a wgmma operand address).
int64_t Interpreter::uniform(const kir::Expr &e, const Mask &mask, const char *what) {
  int64_t first = integer(e, mask.front(), what);
  for (int t : mask)
    if (int64_t other = integer(e, t, what); other != first)
      fault(t, llvm::formatv("{0} is {1} here but {2} in thread {3} of the same block", what, other,
                             first, mask.front()));
  return first;
}

} // namespace fsl::sim
