// Simulator.h — an interpreter of the Kernel IR (kir/IR.h) on the CPU.
//
// It runs what the CUDA printer emits from the same nodes, block by block, or cluster by
// cluster when the launch has one (below). Within a block every thread has its own
// variables and local buffers. The threads of a warp (32
// consecutive linear thread ids) execute the body in lockstep (SIMT): a statement runs
// over the warp's mask of active threads, an `if` splits the mask, a serial loop drops a
// thread once its own extent is done. That makes the synchronisation mistakes of a kernel
// visible as faults instead of wrong numbers: a block reduction or barrier that only some
// threads reach, a shared buffer past the launch's dynamic shared memory, an mbarrier
// wait that nothing can complete.
//
// Scheduling. Each warp is a task of its own that runs until it has to wait for others:
//   - at __syncthreads and at a block reduction, until every warp of the block is there
//     (the same statement; the last to arrive combines the reduction); a warp that
//     reaches one with some of its threads elsewhere is a divergent barrier at once;
//   - at a named barrier, until its thread count has arrived (from any statement naming
//     that barrier);
//   - at an mbarrier wait, until the phase it waits for completes;
//   - at wgmma and setmaxnreg, until the four warps of its warpgroup are there (the last
//     one issues the wgmma for the warpgroup); at setmaxnreg.inc, until the block's pool
//     of registers given up by setmaxnreg.dec holds what it asks for;
//   - at a cluster barrier, until every warp of every CTA of the cluster is at one.
// Then the next warp runs: round robin by warp id, one warp at a time, so a simulation is
// deterministic. A pass over the warps in which none can move is a deadlock, reported
// with what each waiting warp waits for ("deadlock: wait on empty[0] parity 0 can never
// complete (pending arrivals 2, tx bytes 0) in warp 0; wgmma reached by 64 of the 128
// threads of warpgroup 1 in warps 4-5; warps 1-3 have finished").
//
// Clusters. The CTAs of a cluster (LaunchShape::cluster, at most maxClusterSize blocks)
// run together, each with its own variables, shared memory, mbarriers and warps; their
// warps are scheduled round robin, CTA by CTA in rank order (x fastest); a deadlock report
// names the CTA of each warp ("in CTA 0 warps 0-1, CTA 1 warp 0"), and so does a fault
// ("block (1, 0, 0) (CTA 1 of its cluster)"). A multicast TMA load writes its box into
// each CTA of its mask at the same shared offset and completes its bytes on the mbarrier
// at the same offset in each; an mbarrier.arrive with a CTA rank arrives on that CTA's
// barrier. Both are checked as the GPU needs them, whatever order the simulator runs in:
//   - the peer's barrier must be initialized, with a cluster barrier completed since its
//     init (else the peer may see it uninitialized), and the peer must not have exited;
//   - a CTA must not exit while something a peer did to it may still be in flight: an
//     arrival that neither a wait of this CTA (on the phase it counts in) nor a later
//     cluster barrier has ordered, or a multicast load's bytes that no wait has seen;
//   - transaction bytes may complete before the arrival that expects them (a peer's
//     multicast can land first), but not after the phase's last arrival, and no block may
//     exit with bytes that no arrival expected.
//
// So a warp-specialized pipeline runs: a producer warp waiting on an "empty" mbarrier
// resumes once the consumer warps arrive there. The hardware interleaves warps
// differently (and truly in parallel); the simulator finds the deadlocks and the missing
// waits that show under its own order, plus what the checks below find in any order. One
// such check is independent of the order: every mbarrier counts how many of its phases
// each warp has seen complete (by its own waits, or passed on at barriers and through
// mbarrier arrivals and waits), and a shared element a TMA load wrote may be read only by
// a warp that has seen the load's phase complete. Since the simulated TMA lands at once,
// a read without that wait would otherwise see the right data here and not on the GPU.
//
// Arithmetic is rounded as the CUDA printer's code rounds it (kir/IR.h, "Values"):
// bf16/f16 operations in f32 then rounded to their type, f32 in f32, f64 exactly,
// integers exactly with C division. A variable holds a value of the C type the printer
// declares it with (`float` for bf16 and f16), so assigning to it rounds nothing further:
// a bf16-typed accumulator adds in f32, a bf16 constant is its f32 literal; negation,
// fabs, min, max and a cast to the same type round nothing; a cast from f64 or an integer
// to bf16/f16 rounds once. Warp and block reductions combine in the order of
// fsl_warp_reduce and fsl_block_reduce_x (butterflies, then a tree over the warps), so an
// f32 sum rounds as on the GPU. Not modelled: the contraction of a * b + c into an FMA
// and the last-place differences of the GPU's math functions (expf, rsqrtf...); the
// --simulate tolerance covers those.
//
// Memory never read before written: local and shared buffers start as NaN, outputs start
// as NaN, so a value nobody computed shows up in the result. Two threads of a warp that
// store different values to one element in one statement are a race. So are two accesses
// of a shared element by different warps, one of them a write, that nothing orders
// (Races.cpp): each warp carries a vector clock that barriers, block reductions and
// mbarrier phases (from the arrivals to the waits that see the phase complete) pass on,
// so a missing barrier is found whichever order this schedule happened to run them in.
//
// The Hopper operations run synchronously when issued but are checked as the hardware
// defines them: mbarrier arrival counts, transaction bytes and phase parity; TMA boxes
// with zero fill and the 32/64/128-byte shared-memory swizzles; wgmma tile products with
// the documented accumulator fragment layout across a warpgroup; setmaxnreg by whole
// warpgroups, its registers moved through the block's pool (SimulatorLimits).
//
// How the simulator reads the nodes where IR.h leaves room:
//   - Shared buffers live at their Allocate `index` (bytes into the dynamic shared
//     memory, assumed 1024-byte aligned); without one, in a static area after the previous
//     static ones. Two live buffers may not overlap. The printer makes each a typed
//     pointer: its offset needs its element's alignment; vector copies, TMA and wgmma
//     check the alignment they need where they access it.
//   - Load/Store/VectorCopy index a shared buffer by physical element: a swizzle the code
//     needs is in its index expressions. TMA and wgmma apply the buffer's swizzle to the
//     byte address themselves (swizzleAddress), so they agree with each other.
//   - TmaLoad/TmaStore: the box goes to `buffer` at element `index`, dense row-major
//     (innermost last) before the swizzle; the global tensor is dense with the map's
//     extents. A swizzled map needs an inner box of exactly the swizzle's width. A store
//     copies at its issue, but its shared tile counts as read until the issuing thread's
//     TmaStoreWait retires its group (one group a store, the printer's commit): writing
//     the tile before is a fault, as is a block that exits with stores unretired.
//   - Wgmma: `buffer` is the accumulator (local f32, fragment element i at `index` + i,
//     written until a WgmmaWait of the thread's warp retires the group: the thread's own
//     loads and stores of those elements before it are faults),
//     `offsetA`/`offsetB` are element offsets into the operand buffers. K-major operands
//     are rows of M (or N), one swizzle width apart; MN-major (transposeA/B) operands are
//     rows of K, one swizzle width apart, and must fit one row (M or N <= 64 for bf16 with
//     the 128B swizzle). Operands need a swizzled layout.
//   - MBarrierInit/ArriveExpectTx/Wait read the arrivals, bytes and parity from `count`.
//   - SetMaxNReg: a thread holds the kernel's __maxnreg__ registers at launch, else the
//     most that lets the block fit the SM's register file (168 for 384 threads).
//
// Not modelled (each reported as an error, never computed differently): threads of one
// warp that make progress independently (a warp runs in lockstep, so a lane waiting for
// another lane of its warp deadlocks), shared memory reused by two live buffers, and grid
// reductions. Not checked: races in global memory, and between a multicast TMA load into
// a peer CTA and that CTA's own accesses (its mbarriers are checked instead).
#pragma once

#include "eval/Evaluator.h"
#include "kir/IR.h"

#include <llvm/Support/Error.h>

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace fsl::sim {

/// What the simulated GPU accepts (the H200's limits by default) and how much work a
/// simulation may do before it is stopped.
struct SimulatorLimits {
  /// Dynamic plus static shared memory of one block: 227 KiB on sm_90.
  int64_t maxSharedBytesPerBlock = 232448;
  int64_t maxThreadsPerBlock = 1024;
  std::array<int64_t, 3> maxBlockDim = {1024, 1024, 64};
  std::array<int64_t, 3> maxGridDim = {2147483647, 65535, 65535};
  /// Blocks in a cluster (the portable size; 1: the target has no clusters).
  int64_t maxClusterSize = 8;
  /// Statement executions, counted per thread, over one kernel launch: a runaway loop
  /// extent becomes an error instead of a hang.
  int64_t maxThreadSteps = 4'000'000'000;
  /// The register file of an SM, which bounds a block's registers: what setmaxnreg can
  /// move between warpgroups when the kernel has no __maxnreg__ (header comment).
  int64_t registersPerSm = 65536;
};

/// Runs the variant of `program` whose guard holds for the request's sizes, kernel by
/// kernel. Same inputs and result layout as the reference evaluator's (eval::evaluate).
/// `misalign` places every tensor that many elements past an aligned address, to show
/// misaligned vector and TMA accesses.
///
/// Kernel parameters: a Tensor (and a TensorMap's tensor, unless another parameter or a
/// workspace already binds that buffer) is fusion parameter `fusionParam`, or output
/// `fusionParam` when `isOutput`; an inout output is its parameter's memory. A Scalar is
/// the parameter's value (or default). A Dim is the extent of the program dimension whose
/// variable it is, else of the fusion dimension of its name. A `strided` input lies in a
/// larger buffer, each row padded with NaN (its extent rounded up to 16 elements, plus 16),
/// and a Stride parameter is the stride of that layout: a kernel that indexed it as
/// contiguous reads other elements than the reference. Workspaces (static shapes)
/// start as zeros and live across the variant's launches.
llvm::Expected<eval::EvalResult> simulate(const kir::Program &program,
                                          const eval::EvalRequest &request, int64_t misalign = 0,
                                          const SimulatorLimits &limits = {});

/// The global memory and kernel-parameter values of one launch.
struct Memory {
  /// Global buffers (kernel parameters, workspaces, tensor-map tensors) by buffer.
  std::map<const kir::Buffer *, std::vector<double>> global;
  /// A buffer that uses another's storage: key → a buffer of `global`. Two kernel
  /// buffers can stand for one tensor (an inout tensor read through a TMA tensor map and
  /// written through a plain pointer, say).
  std::map<const kir::Buffer *, const kir::Buffer *> aliases;
  /// Runtime dimensions and scalar parameters.
  std::map<const kir::Var *, double> scalars;
};

/// Runs one kernel (every block of its grid) on `memory`. The lower level of `simulate`,
/// for unit tests of hand-built kernels.
llvm::Error runKernel(const kir::Kernel &kernel, Memory &memory, int64_t misalign = 0,
                      const SimulatorLimits &limits = {});

/// Where element `i` (0 ≤ i < n/2) of the f32 accumulator fragment of thread `t`
/// (0 ≤ t < 128) of a warpgroup lies in the m64nNk16 tile D: {row, column}.
std::array<int64_t, 2> wgmmaAccumulatorPosition(int64_t t, int64_t i);

/// The byte address that byte address `address` of shared memory moves to under
/// `swizzle` (address bits [4, 4+b) XOR bits [7, 7+b); b = 3, 2, 1 for 128, 64, 32 bytes).
int64_t swizzleAddress(int64_t address, kir::Swizzle swizzle);

} // namespace fsl::sim
