// Reductions.cpp — warp and block reductions (sum, max, min, argmax/argmin, Welford,
// max-exp-sum) combined in the order of device.cuh's fsl_warp_reduce and
// fsl_block_reduce_x, so an f32 sum rounds as on the GPU; a block reduction is a meeting
// of every warp of the block.
#include "sim/Interpreter.h"

#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace fsl::sim {

namespace {

using Accumulators = std::vector<double>;

/// fsl_arg_better (device.cuh): whether (x, i) beats (b, a) in argmax (`isMax`) or
/// argmin; index -1 is "no element yet".
bool argBetter(bool isMax, double x, double i, double b, double a) {
  if (a < 0)
    return true;
  if (i < 0)
    return false;
  if (std::isnan(x))
    return !(std::isnan(b) && a < i);
  return (isMax ? x > b : x < b) || (x == b && i < a);
}

Accumulators combine(kir::ReduceKind kind, const Accumulators &a, const Accumulators &b,
                     DType type) {
  switch (kind) {
  case kir::ReduceKind::Sum:
    return {inRegister(a[0] + b[0], type)}; // each step in the accumulator's C type
  case kir::ReduceKind::SumPair: // FslSumPairCombine: each sum as Sum's
    return {inRegister(a[0] + b[0], type), inRegister(a[1] + b[1], type)};
  case kir::ReduceKind::Max:
    return {std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::max(a[0], b[0])};
  case kir::ReduceKind::Min:
    return {std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::min(a[0], b[0])};
  case kir::ReduceKind::ArgMax:
  case kir::ReduceKind::ArgMin:
    return argBetter(kind == kir::ReduceKind::ArgMax, b[0], b[1], a[0], a[1]) ? b : a;
  case kir::ReduceKind::Welford: {
    // FslWelfordCombine, each operation rounded to the accumulators' type.
    if (b[0] == 0)
      return a;
    if (a[0] == 0)
      return b;
    auto r = [&](double v) { return inRegister(v, type); };
    double count = r(a[0] + b[0]);
    double share = r(b[0] / count);
    double delta = r(b[1] - a[1]);
    // An infinite mean combines as the sums would (fsl_is_inf in FslWelfordCombine).
    double mean =
        std::isinf(a[1]) || std::isinf(b[1]) ? r(a[1] + b[1]) : r(a[1] + r(delta * share));
    double m2 = r(r(a[2] + b[2]) + r(r(r(delta * delta) * a[0]) * share));
    return {count, mean, m2};
  }
  case kir::ReduceKind::MaxExpSum: {
    // FslMaxExpSumCombine: both sums rescaled to the larger maximum.
    double m = std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::max(a[0], b[0]);
    auto r = [&](double v) { return inRegister(v, type); };
    if (m == -INFINITY)
      return {m, r(a[1] + b[1])};
    double ea = r(std::exp(r(a[0] - m))), eb = r(std::exp(r(b[0] - m)));
    return {m, r(r(a[1] * ea) + r(b[1] * eb))};
  }
  }
  FSL_UNREACHABLE("reduce kind");
}

/// fsl_warp_reduce on the 32 values of a warp (device.cuh): a butterfly of
/// __shfl_xor_sync at offsets 16, 8, 4, 2, 1, each lane combining its value with its
/// partner's. The sum is commutative, so every lane ends with the same total.
Accumulators butterfly(kir::ReduceKind kind, std::vector<Accumulators> lanes, DType type) {
  FSL_INTERNAL_ASSERT(lanes.size() == 32, "a butterfly over a partial warp");
  for (size_t offset = 16; offset > 0; offset >>= 1) {
    std::vector<Accumulators> next(32);
    for (size_t l = 0; l < 32; ++l)
      next[l] = combine(kind, lanes[l], lanes[l ^ offset], type);
    lanes = std::move(next);
  }
  return lanes[0];
}

} // namespace

/// The values of `group` combined in the order of the GPU's reduction, so that an f32
/// sum rounds as it does there: a butterfly for a whole warp (`warp`), and for a row of
/// a block fsl_block_reduce_x's order (warp butterflies, then a shfl_down tree over the
/// warps' partials; without whole warps, a pairwise tree in shared memory). Other groups
/// (a partial last warp, which the GPU does not define) in thread order.
Interpreter::Accumulators Interpreter::total(const StmtNode &s, const std::vector<int> &group,
                                             bool warp) {
  kir::ReduceKind kind = s.reduceKind;
  DType type = s.var->dtype;
  std::vector<Accumulators> values;
  for (int t : group) {
    Accumulators own = {variable(t, *s.var)};
    for (const kir::VarPtr &carried : s.carried)
      own.push_back(variable(t, *carried));
    values.push_back(std::move(own));
  }
  size_t n = values.size();
  if (n == 32)
    return butterfly(kind, values, type);
  if (!warp && n % 32 == 0) {
    size_t warps = n / 32;
    std::vector<Accumulators> partials;
    for (size_t w = 0; w < warps; ++w)
      partials.push_back(butterfly(
          kind, std::vector<Accumulators>(values.begin() + w * 32, values.begin() + (w + 1) * 32),
          type));
    std::vector<Accumulators> lane(32);
    for (size_t l = 0; l < 32; ++l)
      lane[l] = partials[l % warps];
    for (size_t offset = 16; offset > 0; offset >>= 1) {
      std::vector<Accumulators> next = lane;
      for (size_t l = 0; l + offset < warps; ++l)
        next[l] = combine(kind, lane[l], lane[l + offset], type);
      lane = std::move(next);
    }
    return lane[0];
  }
  if (!warp) {
    for (size_t step = 1; step < n; step <<= 1)
      for (size_t x = 0; x + step < n; x += 2 * step)
        values[x] = combine(kind, values[x], values[x + step], type);
    return values[0];
  }
  Accumulators result = values.front();
  for (size_t k = 1; k < n; ++k)
    result = combine(kind, result, values[k], type);
  return result;
}

/// Combines the accumulators of `group` and gives every one the total.
void Interpreter::reduceGroup(const StmtNode &s, const std::vector<int> &group, bool warp) {
  Accumulators result = total(s, group, warp);
  for (int t : group) {
    setVariable(t, *s.var, result[0]);
    for (size_t c = 0; c < s.carried.size(); ++c)
      setVariable(t, *s.carried[c], result[c + 1]);
  }
}

/// A reduction: over the lanes of the warp at once, or over the block once every warp
/// has reached it (a barrier-like meeting; the warp that completes it combines).
bool Interpreter::execReduce(Warp &warp, const StmtNode &s, LaneMask lanes) {
  const Mask &mask = lanesOf(warp, lanes);
  if (!s.var)
    fail("a reduction without an accumulator");
  if (s.scope == kir::ReduceScope::Grid)
    fault(-1, "grid reductions are not simulated yet");
  if (s.carried.size() + 1 != kir::reduceArity(s.reduceKind))
    fail("a reduction without all its accumulators");
  std::vector<const kir::Var *> accumulators = {s.var.get()};
  for (const kir::VarPtr &carried : s.carried)
    accumulators.push_back(carried.get());
  for (const kir::Var *acc : accumulators) {
    if (!mutable_.count(acc))
      fault(mask.front(), "reduction of " + acc->name + ", which is not declared mutable");
    for (int t : mask)
      located(t, [&] { return variable(t, *acc); }); // set before it is combined
  }
  if (s.scratch) {
    // The block reduction goes through this shared scratch on the GPU.
    if (s.scratch->space != MemorySpace::Shared)
      fault(mask.front(), "reduction scratch " + s.scratch->name + " is not in shared memory");
    sharedOf(*s.scratch, mask.front());
  }
  if (s.scope == kir::ReduceScope::Warp) {
    // Shuffles over all lanes of the warp (linear thread ids 32w .. 32w+31).
    if (lanes != warp.lanes)
      fault(mask.front(),
            llvm::formatv("warp reduction of {0} reached by {1} of the {2} "
                          "lanes of warp {3}",
                          s.var->name, std::popcount(lanes), std::popcount(warp.lanes), warp.id));
    reduceGroup(s, mask, /*warp=*/true);
    return true;
  }
  // BlockX: a barrier inside, so every thread of the block must come.
  if (lanes != warp.lanes)
    fault(mask.front(),
          llvm::formatv("block reduction of {0} reached by {1} of {2} threads "
                        "(a barrier in divergent code)",
                        s.var->name, std::popcount(lanes) + threadsWaiting(Wait::Reduce, &s),
                        threads_));
  await(warp, Wait::Reduce, s, lanes);
  std::vector<Warp *> met = warpsWaiting(Wait::Reduce, &s);
  if (met.size() < cta_->warps.size())
    return false;
  // On the GPU each warp writes its partial into the slot's half of the scratch, waits at
  // a barrier, and reads the partials; nothing waits after that. A reduction whose slot is
  // the previous one's with no block barrier between lets a warp that got past the first
  // overwrite a partial that a slower warp has still to read.
  if (s.slot) {
    int64_t slot = uniform(s.slot, mask, "a block reduction's scratch slot");
    if (slot != 0 && slot != 1)
      fault(mask.front(), llvm::formatv("block reduction of {0} in scratch slot {1}; the "
                                        "slots are 0 and 1",
                                        s.var->name, slot));
    if (slot == cta_->lastReductionSlot)
      fault(mask.front(),
            llvm::formatv("block reduction of {0} takes half {1} of the reduction scratch, "
                          "which the block reduction of {2} before it read with no barrier "
                          "since: a warp past that reduction can overwrite a partial another "
                          "warp has still to read (a race on the GPU)",
                          s.var->name, slot, cta_->lastReduced ? cta_->lastReduced->name : "?"));
    cta_->lastReductionSlot = slot;
    cta_->lastReduced = s.var.get();
  }
  // Each (threadIdx.y, threadIdx.z) row combines over threadIdx.x, in the GPU's order.
  for (int64_t row = 0; row < block_[1] * block_[2]; ++row) {
    std::vector<int> group;
    for (int64_t x = 0; x < block_[0]; ++x)
      group.push_back(static_cast<int>(row * block_[0] + x));
    reduceGroup(s, group, /*warp=*/false);
  }
  release(met);
  return true;
}

} // namespace fsl::sim
