// EarlyLoads.cpp — the `early-loads` and `prefetch` passes.
//
// early-loads: inputs that only phases after the first read (a norm's weight,
// LayerNorm's shift) are loaded before phase 0 when the batch is a short unrolled run of
// whole vectors and they cost at most 64 bytes a thread: their loads then overlap the
// row's instead of waiting behind the block reduction.
//
// prefetch: when a phase's batch loops are unrolled, static and at most 32 iterations,
// every vector of the batch is loaded before any is used, so all loads are in flight
// together (a store to an inout tensor would otherwise order the next iteration's loads
// after it).
#include "lower/HoistLoads.h"
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <llvm/ADT/StringExtras.h>

#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

std::set<const kir::Buffer *> globalReads(const Stmt &s) {
  std::set<const kir::Buffer *> read;
  kir::forEachExpr(s, [&](const Expr &e) {
    if (e->kind == kir::ExprKind::Load && e->buffer->space == kir::MemorySpace::Global)
      read.insert(e->buffer.get());
  });
  kir::forEachStmt(s, [&](const Stmt &st) {
    if (st->kind == kir::StmtKind::VectorCopy && st->source->space == kir::MemorySpace::Global)
      read.insert(st->source.get());
  });
  return read;
}

/// Bytes a thread of the first phase's loads and the early loads from which the early loads
/// are held above the first phase (EarlyLoads::holdsEarlyLoads).
constexpr int64_t kHeldLoadBytes = 128;

class EarlyLoads : public kir::Mutator {
public:
  explicit EarlyLoads(const LowerContext &cx) : cx_(cx) {}
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::Block ||
        !llvm::any_of(s->body, [](const Stmt &c) { return labelOf(c) == labels::PhaseNest; }))
      return mutateChildren(s);
    std::vector<Stmt> body = s->body;
    std::vector<size_t> nests;
    for (size_t i = 0; i < body.size(); ++i)
      if (labelOf(body[i]) == labels::PhaseNest)
        nests.push_back(i);
    std::set<const kir::Buffer *> readFirst = globalReads(body[nests[0]]);
    const int64_t budgetBytes = 64;
    int64_t used = 0;
    std::set<const kir::Buffer *> early;
    std::vector<Stmt> hoisted;
    for (size_t n = 1; n < nests.size(); ++n) {
      Hoisted h = hoistBatchLoads(
          cx_, body[nests[n]],
          [&](const kir::BufferPtr &global, int64_t bytes) {
            if (global->written || readFirst.count(global.get()) || early.count(global.get()) ||
                used + bytes > budgetBytes)
              return false;
            used += bytes;
            early.insert(global.get());
            return true;
          },
          [](const kir::BufferPtr &local) { return batchArrayName(local, "_early"); },
          "early loads");
      if (!h.loads)
        continue;
      body[nests[n]] = h.nest;
      hoisted.insert(hoisted.end(), h.allocations.begin(), h.allocations.end());
      hoisted.push_back(h.loads);
    }
    if (hoisted.empty())
      return s;
    // Before phase 0 (its heading comment and accumulators).
    size_t at = nests[0];
    while (at > 0 && (body[at - 1]->kind == kir::StmtKind::Comment ||
                      (body[at - 1]->kind == kir::StmtKind::Let && body[at - 1]->mutableVar)))
      --at;
    hoisted.insert(hoisted.begin(),
                   kir::comment("Early loads: read after a block reduction, loaded now so that "
                                "their latency overlaps the row's loads and reductions."));
    if (holdsEarlyLoads(body, nests, readFirst, used))
      hoisted.push_back(kir::withComment(
          kir::holdLoads(), "the early loads stay here: ptxas would move them below the "
                            "row's reduction"));
    body.insert(body.begin() + at, hoisted.begin(), hoisted.end());
    return withBody(s, std::move(body));
  }

private:
  /// Whether the early loads are held above the first phase (HoldLoads). ptxas moves loads
  /// down to their first use when many registers are in flight: in rms_norm at H = 4096
  /// (4 + 4 vectors of 16 bytes a thread) the weight's went below the row's reduction, and
  /// at T = 1024 their latency then followed the row's (docs/performance.md, run X2: held,
  /// 0.86-0.94x the time at T = 1024, H = 4096-8192, level elsewhere). Held only in the form
  /// measured to pay: two phases (the loads used right after one block reduction), a first
  /// phase that reads one tensor and stores nothing, and 128 bytes a thread or more of its
  /// loads and the early ones. Where the first phase also stores (rms_norm_add's sum) the
  /// hold ran level or up to 22 % slower; across two reductions (layer_norm) ptxas gave the
  /// kernel 7-18 more registers and a block less an SM (up to 19 % slower at T = 1024);
  /// first phases reading several tensors (the backward fusions) were not measured.
  bool holdsEarlyLoads(const std::vector<Stmt> &body, const std::vector<size_t> &nests,
                       const std::set<const kir::Buffer *> &readFirst, int64_t earlyBytes) const {
    if (nests.size() != 2 || readFirst.size() != 1)
      return false;
    bool stores = false;
    kir::forEachStmt(body[nests[0]], [&](const Stmt &st) {
      if ((st->kind == kir::StmtKind::Store || st->kind == kir::StmtKind::VectorCopy ||
           st->kind == kir::StmtKind::AtomicAdd) &&
          st->buffer && st->buffer->space == kir::MemorySpace::Global)
        stores = true;
    });
    if (stores)
      return false;
    int64_t rowBytes = 0;
    hoistBatchLoads(
        cx_, body[nests[0]],
        [&](const kir::BufferPtr &, int64_t bytes) {
          rowBytes += bytes;
          return true;
        },
        [](const kir::BufferPtr &local) { return local->name; }, "prefetch");
    return rowBytes + earlyBytes >= kHeldLoadBytes;
  }

  const LowerContext &cx_;
};

class Prefetch : public kir::Mutator {
public:
  explicit Prefetch(const LowerContext &cx) : cx_(cx) {}
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (labelOf(s) != labels::PhaseNest)
      return mutateChildren(s);
    Hoisted h = hoistBatchLoads(
        cx_, s, [](const kir::BufferPtr &, int64_t) { return true; },
        [](const kir::BufferPtr &local) { return local->name; }, "prefetch");
    if (!h.loads)
      return s;
    std::vector<Stmt> body = h.allocations;
    body.push_back(h.loads);
    body.insert(body.end(), h.nest->body.begin(), h.nest->body.end());
    return withBody(h.nest, std::move(body));
  }

private:
  const LowerContext &cx_;
};

} // namespace

bool earlyLoads(LowerContext &context) {
  const Plan &plan = context.plan;
  if (plan.phases.size() < 2 || !staticBatchLoops(plan, true))
    return true;
  context.kernel.body = EarlyLoads(context).mutate(context.kernel.body);
  return true;
}

bool prefetchBatches(LowerContext &context) {
  std::optional<std::vector<int>> batch = staticBatchLoops(context.plan, true);
  if (!batch || batch->empty())
    return true;
  int64_t count = 1;
  for (int loop : *batch) {
    if (!context.plan.loops[loop].unrolled) // (staticBatchLoops: fully, or of extent 1)
      return true;
    count *= *context.plan.loops[loop].extent.value;
  }
  if (count > 32)
    return true;
  context.kernel.body = Prefetch(context).mutate(context.kernel.body);
  return true;
}

} // namespace fsl::lower
