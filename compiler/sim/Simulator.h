// Simulator.h — runs Kernel IR on the CPU, block by block and thread by thread.
//
// It executes what the generated CUDA executes: the same loops, predicates, phases,
// per-thread accumulators, block reductions over threadIdx.x and persistent register
// buffers, with the arithmetic rounded to each value's type as the GPU computes it
// (f32 for f32, bf16 and f16 values; f64 for f64). An inout parameter and its write-back
// share one buffer, as on the GPU. Outputs start as NaN, so an element the kernel never
// writes shows up. Out-of-bounds accesses and misaligned vector accesses are reported
// as faults instead of being executed.
#pragma once

#include "eval/Evaluator.h"
#include "lower/KernelIR.h"

namespace fsl::sim {

/// Same inputs and result layout as the reference evaluator's. `misalign` places every
/// tensor that many elements past an aligned address (what a caller's sliced tensor
/// does), to show the vector accesses the launcher refuses.
llvm::Expected<eval::EvalResult> simulate(const kir::Kernel &kernel,
                                          const eval::EvalRequest &request, int64_t misalign = 0);

} // namespace fsl::sim
