// KernelIR.h — one CUDA kernel, before it is written as text.
//
// The kernel iterates a reference loop nest (the output's loops from the schedule):
// loops bound to blocks and threads select an element group, serial loops (unrolled or
// not) and at most one vector loop walk it. The work is cut into phases at reductions:
// a phase computes values element by element, accumulates reductions per thread, and
// is followed by the block reductions it finished. Operations stay high level (a vector
// load, a block reduction, a persistent buffer), so the CUDA emitter and the CPU
// simulator read the same structure and agree by construction.
#pragma once

#include "ir/FusionIR.h"
#include "schedule/ScheduleIR.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl::kir {

struct KernelLoop {
  std::string name;
  sched::Extent extent;
  sched::Parallel parallel = sched::Parallel::Serial;
  bool vectorized = false;
  bool unrolled = false;
  bool unswitched = false; // a fast path without predicates, and a predicated remainder
  ir::DimId root = 0;
  sched::Extent stride; // steps of the root dimension per iteration
  bool exact = true;    // no iteration past the root's extent
};

struct Phase {
  /// Values computed for each element, operands first.
  std::vector<const ir::Value *> values;
  /// Reductions accumulated per thread in this phase.
  std::vector<const ir::Value *> reductions;
  /// Outputs stored in this phase.
  std::vector<const ir::Output *> stores;
  /// Values kept in the persistent register buffer for later phases.
  std::vector<const ir::Value *> saves;
};

struct Kernel {
  std::string name;
  const ir::Fusion *fusion = nullptr;
  const sched::Schedule *schedule = nullptr;
  std::vector<KernelLoop> loops; // outermost first
  std::vector<Phase> phases;
  /// Reductions whose result comes from a block reduction over threadIdx.x.
  std::set<unsigned> blockReduced;
  /// Values read from the persistent buffer in later phases.
  std::set<unsigned> persistent;
  /// Of those, the ones kept in shared memory rather than registers.
  std::set<unsigned> persistentShared;
  /// Elements of the persistent buffer per thread: the serial (and vector) iterations.
  int64_t bufferElements = 1;
  int vectorLoop = -1; // index into loops, or -1
  /// Vector loads and stores of 16 bytes or less are valid: the root extent is static
  /// and divisible by the width, so no vector straddles the end.
  bool vectorAccessesExact = false;
  std::set<ir::DimId> inexactRoots; // roots whose index must be checked against the extent
  /// Inexact roots that no serial loop walks and no reduction reduces (rows split over
  /// blocks and threadIdx.y): a thread past the end reads the last row again and skips its
  /// stores, so no loop needs a bounds check (fewer registers live across branches).
  std::set<ir::DimId> clampedRoots;
  /// The phase whose loop computes each value (a reduction: the phase that accumulates it).
  std::map<unsigned, int> phaseOf;
  /// Divisions by a value that is the same for every element of a row (a reduction, or
  /// computed from reductions and scalars): `a / b` becomes `a * (1 / b)`, one division
  /// a thread instead of one an element. The simulator rounds the same way.
  std::set<unsigned> reciprocalDivisions;
  /// Inputs first read after a block reduction (a norm's weight) that are loaded before
  /// the first phase, so their latency hides behind the row's loads and reductions.
  std::vector<const ir::Value *> earlyInputs;

  std::vector<int> loopsOn(sched::Parallel parallel) const;
  /// Loops that run inside one thread (not bound to blocks or threads), outermost first.
  std::vector<int> serialLoops() const;
  /// Threads per block when static.
  std::optional<int64_t> staticThreads() const;
};

void printKernel(const Kernel &kernel, llvm::raw_ostream &out);

/// A C identifier for a value: its let or parameter name with its id, or v<id>.
std::string valueName(const ir::Value &value);

} // namespace fsl::kir
