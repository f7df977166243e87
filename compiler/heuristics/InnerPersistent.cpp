// InnerPersistent.cpp — auto(inner_persistent): which buffers are kept, the batch the
// register budget allows, and where each buffer lives; the row split is InnerRows.cpp's.
#include "heuristics/InnerPersistent.h"

#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"
#include "ir/RegisterPressure.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::heuristics {

InnerPersistentParams chooseInnerPersistent(const FusionShape &shape, const Target &target,
                                            const Knobs &knobs) {
  return chooseRows(shape, target, knobs, /*persistent=*/true);
}

std::vector<const BufferShape *> keptBuffers(const FusionShape &shape, bool onePass) {
  std::vector<const BufferShape *> kept;
  for (const BufferShape &buffer : shape.buffers)
    if (buffer.keptInTwoPasses && !(onePass && buffer.onlyInTwoPasses))
      kept.push_back(&buffer);
  return kept;
}

int64_t persistentBatchLimit(int64_t vectors, int64_t vector, int64_t numBuffers) {
  if (vectors >= tuned::kLongRowVectors && numBuffers <= 2)
    return tuned::kLongRowBatch;
  return std::clamp<int64_t>(tuned::kRegisterBudget / (vector * numBuffers), 1,
                             tuned::kBatchTarget);
}

BufferPlacement placeBuffer(const BufferShape &buffer, const RegisterShare &share,
                            const RowSplit &split, int64_t numBuffers, int64_t scratchBytes,
                            const Target &target, const Knobs &knobs) {
  int64_t values = split.batch * split.vector;
  int64_t sharedBytes =
      saturatingMul(saturatingMul(values, 4), saturatingMul(split.threads, split.rowsPerBlock));
  sched::MemoryKind memory = sched::MemoryKind::Registers;
  std::string reason =
      llvm::formatv("{0} values of {1} a thread fit registers", values, buffer.dtypeName).str();
  // A block of more than 256 threads leaves each fewer than the 255 registers a thread
  // may have (64 at 1024 threads): a buffer that, with the row inputs read beside it, needs
  // more spills (ir/RegisterPressure.h). At 1024 threads x 128 values ptxas spilled 1.4-2.2
  // KB a thread (H = 128256); at 64 values in 80 registers RMSNorm spilled 240 bytes and
  // ran 1.27-1.38x the recomputed row's time, softmax none and 0.74-0.77x (run S40A).
  int64_t blockThreads = saturatingMul(split.threads, split.rowsPerBlock);
  int64_t threadRegisters = target.registersPerThreadOfBlock(blockThreads);
  int64_t needed = ir::persistentRegistersNeeded(
      values, std::max(buffer.registersPerValue, share.liveRegistersPerValue),
      share.lateInputBytes);
  bool spills = threadRegisters < target.maxRegistersPerThread && needed > threadRegisters;
  if (spills) {
    // Not shared memory: its buffers' index math took 40 registers and spilled 0.9 KB a
    // thread at 768 threads (LayerNorm, H = 49152); recomputing keeps no index at all.
    memory = sched::MemoryKind::Recompute;
    reason = llvm::formatv("{0} values of {1} a thread need about {2} registers, over the {3} "
                           "a thread of {4} has: the inputs are read again",
                           values, buffer.dtypeName, needed, threadRegisters, blockThreads)
                 .str();
  } else if (saturatingMul(values, numBuffers) > 2 * tuned::kRegisterBudget) {
    // Shared memory also holds the reduction scratch, 8 or 16 bytes a thread.
    std::optional<int64_t> blockBytes = llvm::checkedAdd(
        saturatingMul(sharedBytes, numBuffers),
        saturatingMul(scratchBytes, saturatingMul(split.threads, split.rowsPerBlock)));
    if (blockBytes && *blockBytes <= target.sharedMemoryPerBlock) {
      memory = sched::MemoryKind::Shared;
      reason = llvm::formatv("{0} values a thread are too many for registers; {1} bytes a "
                             "block fit shared memory",
                             values, sharedBytes)
                   .str();
    } else {
      memory = sched::MemoryKind::Recompute;
      reason = "too large for registers and shared memory: the inputs are read again";
    }
  }
  return {buffer.name, memory,
          "persistent " + buffer.name + " in " + sched::memoryKindName(memory).str() + ": " +
              reason + ".",
          memory != sched::MemoryKind::Recompute && knobs.computeWith.value_or(true)};
}

std::vector<BufferPlacement> placeBuffers(const FusionShape &shape,
                                          const std::vector<const BufferShape *> &buffers,
                                          const RowSplit &split, int64_t scratchBytes,
                                          const Target &target, const Knobs &knobs) {
  int64_t numBuffers = std::max<int64_t>(1, static_cast<int64_t>(buffers.size()));
  auto placeAll = [&](int64_t lateInputBytes) {
    std::vector<BufferPlacement> placements;
    for (const BufferShape *buffer : buffers)
      placements.push_back(placeBuffer(*buffer, {shape.liveRegistersPerValue, lateInputBytes},
                                       split, numBuffers, scratchBytes, target, knobs));
    return placements;
  };
  std::vector<BufferPlacement> placements = placeAll(shape.lateRowInputBytes);
  auto recomputed = [](const BufferPlacement &p) {
    return p.memory == sched::MemoryKind::Recompute;
  };
  if (llvm::any_of(placements, recomputed) && !llvm::all_of(placements, recomputed) &&
      shape.lateRowInputBytesNoneKept > shape.lateRowInputBytes) {
    std::vector<BufferPlacement> again = placeAll(shape.lateRowInputBytesNoneKept);
    for (size_t i = 0; i < placements.size(); ++i)
      if (!recomputed(placements[i]))
        placements[i] = std::move(again[i]);
  }
  return placements;
}

} // namespace fsl::heuristics
