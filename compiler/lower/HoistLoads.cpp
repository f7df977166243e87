// HoistLoads.cpp — see HoistLoads.h.
#include "lower/HoistLoads.h"

#include "kir/Mutator.h"

#include <llvm/ADT/STLExtras.h>

#include <map>
#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

/// A vector copy found in the batch, with the guards around it.
struct Found {
  Stmt copy;
  std::vector<Expr> guards;
};

void collect(const Stmt &s, std::vector<Expr> &guards, std::vector<Found> &found) {
  switch (s->kind) {
  case kir::StmtKind::If:
    guards.push_back(s->condition);
    collect(s->body[0], guards, found);
    guards.pop_back();
    return;
  case kir::StmtKind::Block:
    for (const Stmt &child : s->body)
      collect(child, guards, found);
    return;
  case kir::StmtKind::For:
    if (s->loopKind != kir::LoopKind::Vectorized)
      collect(s->body[0], guards, found);
    return;
  case kir::StmtKind::VectorCopy:
    if (s->source->space == kir::MemorySpace::Global && s->buffer->space == kir::MemorySpace::Local)
      found.push_back({s, guards});
    return;
  // Nothing else of a phase's nest holds the vector loads a batch hoists.
  case kir::StmtKind::Let:
  case kir::StmtKind::Assign:
  case kir::StmtKind::Allocate:
  case kir::StmtKind::Store:
  case kir::StmtKind::StMatrix:
  case kir::StmtKind::AtomicAdd:
  case kir::StmtKind::Reduce:
  case kir::StmtKind::Barrier:
  case kir::StmtKind::GridDependency:
  case kir::StmtKind::Comment:
  case kir::StmtKind::HoldLoads:
  case kir::StmtKind::MBarrierInit:
  case kir::StmtKind::MBarrierArrive:
  case kir::StmtKind::MBarrierArriveExpectTx:
  case kir::StmtKind::MBarrierWait:
  case kir::StmtKind::FenceProxyAsync:
  case kir::StmtKind::TmaLoad:
  case kir::StmtKind::TmaStore:
  case kir::StmtKind::TmaStoreWait:
  case kir::StmtKind::WgmmaFence:
  case kir::StmtKind::Wgmma:
  case kir::StmtKind::WgmmaCommit:
  case kir::StmtKind::WgmmaWait:
  case kir::StmtKind::SetMaxNReg:
  case kir::StmtKind::WarpRole:
    return;
  }
}

class Redirect : public kir::Mutator {
public:
  std::map<const kir::Buffer *, std::pair<kir::BufferPtr, Expr>> arrays; // local -> (array, base)
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if ((s->kind == kir::StmtKind::Allocate || s->kind == kir::StmtKind::VectorCopy) &&
        arrays.count(s->buffer.get()))
      return nullptr;
    return mutateChildren(s);
  }
  Expr mutate(const Expr &e) override {
    if (e->kind == kir::ExprKind::Load) {
      auto found = arrays.find(e->buffer.get());
      if (found != arrays.end())
        return kir::load(found->second.first, found->second.second + mutate(e->operands[0]));
    }
    return mutateChildren(e);
  }
};

} // namespace

std::string batchArrayName(const kir::BufferPtr &local, const char *suffix) {
  llvm::StringRef name = local->name;
  name.consume_back("_vec");
  return name.str() + suffix;
}

std::optional<std::vector<int>> staticBatchLoops(const Plan &plan, bool requireUnrolled) {
  std::vector<int> serial = plan.serialLoops();
  if (plan.vectorLoop < 0 || !plan.vectorAccessesExact || serial.empty() ||
      serial.back() != plan.vectorLoop)
    return std::nullopt;
  serial.pop_back();
  for (int loop : serial) {
    const PlannedLoop &l = plan.loops[loop];
    // Unrolled means fully: a batch loaded ahead into an array that a loop unrolled by N
    // (`unroll Vp by 4`) reads is indexed by the loop's variable, so the array goes to
    // local memory (seen on the H200: 2.7 times the bytes from DRAM, issue 17).
    if (!l.extent.isStatic())
      return std::nullopt;
    bool fullyUnrolled = l.unrolled && (!l.unrollFactor || *l.unrollFactor >= *l.extent.value);
    if (requireUnrolled && !fullyUnrolled && *l.extent.value != 1)
      return std::nullopt;
  }
  return serial;
}

Hoisted hoistBatchLoads(const LowerContext &cx, const Stmt &nest,
                        const std::function<bool(const kir::BufferPtr &, int64_t)> &select,
                        const std::function<std::string(const kir::BufferPtr &)> &name,
                        const std::string &comment) {
  Hoisted result;
  result.nest = nest;
  const Plan &plan = cx.plan;
  std::vector<int> batch = staticBatchLoops(plan, false).value_or(std::vector<int>{});
  int64_t count = 1;
  for (int loop : batch)
    count *= *plan.loops[loop].extent.value;
  std::vector<Expr> guards;
  std::vector<Found> found;
  collect(nest, guards, found);
  // Fresh loop variables for the new nest, and the batch iteration's linear index.
  std::map<const kir::Var *, kir::VarPtr> fresh;
  Expr linear, freshLinear;
  for (int loop : batch) {
    const kir::VarPtr &v = cx.loopVars[loop];
    fresh[v.get()] = kir::makeVar(v->name, v->dtype);
    Expr extent = kir::index(*plan.loops[loop].extent.value);
    linear = linear ? linear * extent + kir::var(v) : kir::var(v);
    freshLinear =
        freshLinear ? freshLinear * extent + kir::var(fresh[v.get()]) : kir::var(fresh[v.get()]);
  }
  if (!linear)
    linear = freshLinear = kir::index(0);
  auto renamed = [&](const Expr &e) {
    return kir::substitute(e, [&](const kir::VarPtr &v) -> Expr {
      auto f = fresh.find(v.get());
      return f == fresh.end() ? nullptr : kir::var(f->second);
    });
  };
  Redirect redirect;
  std::vector<Stmt> copies;
  for (const Found &f : found) {
    const kir::BufferPtr &local = f.copy->buffer;
    int64_t width = f.copy->lanes;
    int64_t bytes = count * width * ir::dtypeBytes(local->dtype);
    if (!select(f.copy->source, bytes))
      continue;
    result.bytes += bytes;
    auto array = std::make_shared<kir::Buffer>(*local);
    array->name = name(local);
    array->shape = {count * width};
    result.allocations.push_back(kir::allocate(
        array, comment + ": " + std::to_string(count) +
                   (count == 1 ? " vector of " : " vectors of ") + std::to_string(width) + " x " +
                   ir::dtypeName(local->dtype).str()));
    redirect.arrays[local.get()] = {array, linear * kir::index(width)};
    Stmt copy = kir::vectorCopy(array, freshLinear * kir::index(width), f.copy->source,
                                renamed(f.copy->sourceIndex), width);
    Expr guard;
    for (const Expr &g : f.guards)
      guard = guard && renamed(g);
    copies.push_back(guard ? kir::ifThen(guard, copy) : copy);
  }
  if (copies.empty())
    return result;
  Stmt loads = kir::block(std::move(copies));
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    const PlannedLoop &loop = plan.loops[*it];
    kir::Origin origin{comment + " over " + loop.name, loop.origin.range};
    loads = kir::forLoop(fresh[cx.loopVars[*it].get()], kir::index(*loop.extent.value),
                         kir::LoopKind::Unrolled, loads, origin);
  }
  result.loads = loads;
  result.nest = redirect.mutate(nest);
  return result;
}

} // namespace fsl::lower
