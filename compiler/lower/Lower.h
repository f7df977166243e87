// Lower.h — Schedule IR and Fusion IR to Kernel IR.
//
// Supported today: schedules whose tensors all share one reference loop nest by name
// (the shape of pointwise, row-reduction and inner-persistent normalization kernels):
// loops bound to blocks and threads, serial and unrolled loops, one innermost vector
// loop, splits (no merges), reductions whose kept dimensions are block- or thread-
// parallel, reduced over serial loops and threadIdx.x, persistent buffers in registers
// or recomputed. Anything else is reported as `lowering-unsupported` with the reason.
#pragma once

#include "lower/KernelIR.h"

#include <memory>

namespace fsl {

class DiagnosticEngine;

std::unique_ptr<kir::Kernel> lowerSchedule(const sched::Schedule &schedule,
                                           const std::string &kernelName,
                                           DiagnosticEngine &diagnostics);

} // namespace fsl
