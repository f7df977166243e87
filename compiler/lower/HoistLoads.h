// HoistLoads.h — moving a batch's vector loads into a loop nest of their own (shared by
// the `early-loads` and `prefetch` passes).
#pragma once

#include "lower/Context.h"

#include <functional>

namespace fsl::lower {

struct Hoisted {
  /// The allocations of the batch arrays and the nest that fills them.
  std::vector<kir::Stmt> allocations;
  kir::Stmt loads;
  /// The phase's nest, reading the batch arrays instead of loading.
  kir::Stmt nest;
  int64_t bytes = 0;
};

/// In `nest` (a phase's loop nest), the vector copies from global memory inside the
/// batch loops (the serial loops outside the vector loop) that `select` accepts are
/// moved into a new nest of the same loops and guards; each fills an array of one
/// vector per batch iteration, named `name(local buffer)`, that the element loads then
/// read. `select` sees the global buffer and the bytes the array would take.
Hoisted hoistBatchLoads(const LowerContext &cx, const kir::Stmt &nest,
                        const std::function<bool(const kir::BufferPtr &, int64_t)> &select,
                        const std::function<std::string(const kir::BufferPtr &)> &name,
                        const std::string &comment);

/// A batch array's name: the vector's local (`x_0_vec`) without `_vec`, then `suffix`
/// (`x_0_early`, `x_0_row`).
std::string batchArrayName(const kir::BufferPtr &local, const char *suffix);

/// The batch loops of the plan (serial, outside the vector loop, which must be innermost
/// with whole-vector accesses), outermost first, when they have static extents and, with
/// `requireUnrolled`, are unrolled (or of extent 1); none otherwise.
std::optional<std::vector<int>> staticBatchLoops(const Plan &plan, bool requireUnrolled);

} // namespace fsl::lower
