// Verifier.h — the invariants every pass must keep, checked after each one.
//
// Variables are bound (loop index, let, kernel parameter, hardware index) before use and
// within scope; local and shared buffers are allocated before use and global ones are
// parameters; accumulators updated by Assign or Reduce are mutable; loop extents and
// indices are integers; vector loops have static extents; parallel loops agree with
// the launch shape; a wgmma operand that is M/N-major and wider than one swizzle span
// says how far apart its span-wide blocks are (and a K-major one has no such distance); a
// remote mbarrier arrival (ctaRank), a multicast TMA load and a cluster barrier appear only
// on their statements and in kernels launched as clusters; a field the statement's kind does
// not use (Stmt.def) holds its default. A failure is a compiler bug,
// reported as an internal error naming the pass that broke it.
#pragma once

#include "kir/IR.h"

#include <string>

namespace fsl::kir {

/// The first broken invariant, or an empty string.
std::string verifyKernel(const Kernel &kernel);

} // namespace fsl::kir
