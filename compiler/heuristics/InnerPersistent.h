// InnerPersistent.h — auto(inner_persistent), for RMSNorm, LayerNorm, Softmax: as
// nvFuser's inner persistent scheduler — static blockDim.x (the row split inner by the
// thread count) when the row length is static, a persistent batch sized to a register
// budget, several rows per block when rows are short, wider blocks when there are fewer
// rows than SMs (a `when` variant), the buffer computed with its first consumer, kept in
// registers, shared memory or recomputed by size. The row split is InnerRows.h's.
#pragma once

#include "heuristics/InnerRows.h"

namespace fsl::heuristics {

using InnerPersistentParams = RowParams;

/// What auto(inner_persistent) chooses for `shape` on `target`.
InnerPersistentParams chooseInnerPersistent(const FusionShape &shape, const Target &target,
                                            const Knobs &knobs);

/// The persistent buffers of `shape`: in one pass, softmax's exp(x - max) is none.
std::vector<const BufferShape *> keptBuffers(const FusionShape &shape, bool onePass);

/// The most vectors of a row a thread keeps: the register budget's share of each buffer
/// (TunedConstants.h).
int64_t persistentBatchLimit(int64_t vectors, int64_t vector, int64_t numBuffers);

/// What a thread holds beside a kept buffer (ir/RegisterPressure.h): the registers a value
/// of the buffers live together take, and the bytes an element of the row inputs read after
/// a reduction.
struct RegisterShare {
  int64_t liveRegistersPerValue = 0;
  int64_t lateInputBytes = 0;
};

/// Where `buffer` is kept with rows split as `split`: registers, else shared memory, else
/// recomputed. `scratchBytes`: the block reduction's a thread.
BufferPlacement placeBuffer(const BufferShape &buffer, const RegisterShare &share,
                            const RowSplit &split, int64_t numBuffers, int64_t scratchBytes,
                            const Target &target, const Knobs &knobs);

/// Every buffer of `buffers` placed with rows split as `split`, each beside the others'
/// registers (FusionShape's liveRegistersPerValue) and the row inputs read after a
/// reduction; where some are recomputed, the others are placed again beside every such
/// input (lateRowInputBytesNoneKept), which the recomputed ones read again.
std::vector<BufferPlacement> placeBuffers(const FusionShape &shape,
                                          const std::vector<const BufferShape *> &buffers,
                                          const RowSplit &split, int64_t scratchBytes,
                                          const Target &target, const Knobs &knobs);

} // namespace fsl::heuristics
