// NextRowLoads.cpp — the `next-row` pass: `prefetch L` on the inner-outer row walk.
//
// A block of the inner-outer form walks its rows one after another (BuildLoopNests'
// makeColumnRows): each row's vectors are loaded, reduced across the block, then loaded
// again by the phases after the reduction. Row r + 1's loads are issued only after row
// r's barrier, so a block has at most one row's bytes in flight, and none while it
// reduces and stores. With `prefetch L`, L the walk:
//
//   allocate x_next[...]; x_next = row 0's vectors          before the walk
//   for L:
//     allocate x_row[...]; x_row = x_next                    registers, renamed by ptxas
//     if (L + 1 < extent) x_next = row L + 1's vectors       in flight during this row
//     phase 0 (reads x_row) ... block reductions ... phase 1 (reads x_row) ...
//
// The first phase's vector loads of every input the walk does not write become the row's
// arrays; a later phase that loads the same elements (the same index under the same
// guards) reads the arrays instead of memory. Inputs whose index does not depend on L (a
// weight along H) are loaded once, before the walk, into arrays of their own.
#include "lower/HoistLoads.h"
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

/// Structural equality of two expressions (the same variables, buffers and constants).
bool sameExpr(const Expr &a, const Expr &b) {
  if (a == b)
    return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->var != b->var ||
      a->buffer != b->buffer || a->operands.size() != b->operands.size())
    return false;
  switch (a->kind) {
  case kir::ExprKind::Const:
    if (a->constant != b->constant)
      return false;
    break;
  case kir::ExprKind::Unary:
    if (a->unary != b->unary)
      return false;
    break;
  case kir::ExprKind::Binary:
    if (a->binary != b->binary)
      return false;
    break;
  case kir::ExprKind::Var:
  case kir::ExprKind::Select:
  case kir::ExprKind::Cast:
  case kir::ExprKind::Load:
    break;
  }
  for (size_t i = 0; i < a->operands.size(); ++i)
    if (!sameExpr(a->operands[i], b->operands[i]))
      return false;
  return true;
}

/// A phase's vector load from global memory, with the guards around it.
struct GlobalLoad {
  Expr sourceIndex;
  std::vector<Expr> guards;
};

/// The global vector loads of a phase nest, by the global buffer they read.
void collectLoads(const Stmt &s, std::vector<Expr> &guards,
                  std::map<const kir::Buffer *, std::vector<GlobalLoad>> &loads) {
  if (!s)
    return;
  if (s->kind == kir::StmtKind::If) {
    guards.push_back(s->condition);
    collectLoads(s->body[0], guards, loads);
    guards.pop_back();
    if (s->body.size() > 1)
      collectLoads(s->body[1], guards, loads);
    return;
  }
  if (s->kind == kir::StmtKind::VectorCopy && s->source->space == kir::MemorySpace::Global &&
      s->buffer->space == kir::MemorySpace::Local) {
    loads[s->source.get()].push_back({s->sourceIndex, guards});
    return;
  }
  for (const Stmt &child : s->body)
    collectLoads(child, guards, loads);
}

std::map<const kir::Buffer *, std::vector<GlobalLoad>> loadsOf(const Stmt &nest) {
  std::vector<Expr> guards;
  std::map<const kir::Buffer *, std::vector<GlobalLoad>> loads;
  collectLoads(nest, guards, loads);
  return loads;
}

/// The conjuncts of a condition (`a && b && c`: a, b, c).
std::vector<Expr> conjuncts(const Expr &e) {
  if (e->kind == kir::ExprKind::Binary && e->binary == kir::BinaryOp::And) {
    std::vector<Expr> all = conjuncts(e->operands[0]);
    for (const Expr &c : conjuncts(e->operands[1]))
      all.push_back(c);
    return all;
  }
  return {e};
}

/// Whether `a` and `b` read a variable in common.
bool sharesVariable(const Expr &a, const Expr &b) {
  std::set<const kir::Var *> inA;
  std::function<void(const Expr &, std::set<const kir::Var *> *)> walkVars;
  bool shared = false;
  walkVars = [&](const Expr &e, std::set<const kir::Var *> *collect) {
    if (!e)
      return;
    if (e->kind == kir::ExprKind::Var) {
      if (collect)
        collect->insert(e->var.get());
      else
        shared |= inA.count(e->var.get()) != 0;
    }
    for (const Expr &operand : e->operands)
      walkVars(operand, collect);
  };
  walkVars(a, &inA);
  walkVars(b, nullptr);
  return shared;
}

/// Whether `e` is a sum of products of `row` and non-negative terms (constants, loop
/// indices and sizes, their sums, products and quotients), so it only grows with `row`.
bool growsWith(const Expr &e, const kir::VarPtr &row) {
  switch (e->kind) {
  case kir::ExprKind::Const:
    return e->constant >= 0;
  case kir::ExprKind::Var:
    return true; // loop indices and sizes are never negative
  case kir::ExprKind::Binary:
    if (e->binary == kir::BinaryOp::Add || e->binary == kir::BinaryOp::Mul)
      return growsWith(e->operands[0], row) && growsWith(e->operands[1], row);
    if (e->binary == kir::BinaryOp::Div)
      return !kir::uses(e, row) && growsWith(e->operands[0], row) && growsWith(e->operands[1], row);
    return false;
  case kir::ExprKind::Unary:
  case kir::ExprKind::Select:
  case kir::ExprKind::Cast:
  case kir::ExprKind::Load:
    return false;
  }
  return false;
}

/// `a < b` (or `<=`) with `a` growing with `row` and `b` not naming it: false at a row,
/// false at every later one.
bool increasingBound(const Expr &e, const kir::VarPtr &row) {
  return e->kind == kir::ExprKind::Binary &&
         (e->binary == kir::BinaryOp::Lt || e->binary == kir::BinaryOp::Le) &&
         growsWith(e->operands[0], row) && !kir::uses(e->operands[1], row);
}

bool sameLoads(const std::vector<GlobalLoad> &a, const std::vector<GlobalLoad> &b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](const auto &pair) {
           const GlobalLoad &x = std::get<0>(pair), &y = std::get<1>(pair);
           return sameExpr(x.sourceIndex, y.sourceIndex) &&
                  llvm::equal(x.guards, y.guards, sameExpr);
         });
}

/// The vector copies into the arrays of `targets` write the mapped arrays instead.
class Retarget : public kir::Mutator {
public:
  std::map<const kir::Buffer *, kir::BufferPtr> targets;
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    Stmt out = mutateChildren(s);
    if (!out || out->kind != kir::StmtKind::VectorCopy)
      return out;
    auto found = targets.find(out->buffer.get());
    if (found == targets.end())
      return out;
    auto copy = std::make_shared<kir::StmtNode>(*out);
    copy->buffer = found->second;
    return copy;
  }
};

/// Loads from arrays named as the row's read the row's arrays (a later phase's hoisted
/// copies, whose loads were dropped).
class ReadRowArrays : public kir::Mutator {
public:
  std::map<std::string, kir::BufferPtr> arrays;
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    Expr out = mutateChildren(e);
    if (out->kind != kir::ExprKind::Load)
      return out;
    auto found = arrays.find(out->buffer->name);
    if (found == arrays.end() || found->second == out->buffer)
      return out;
    return kir::load(found->second, out->operands[0]);
  }
};

class NextRowLoads : public kir::Mutator {
public:
  NextRowLoads(const LowerContext &cx, int loop) : cx_(cx), loop_(loop) {}
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::For || s->var != cx_.loopVars[loop_])
      return mutateChildren(s);
    return walk(s);
  }

private:
  const kir::VarPtr &rowVar() const { return cx_.loopVars[loop_]; }

  /// The walk's body with the first phase's loads one row ahead; `s` itself otherwise.
  Stmt walk(const Stmt &s) {
    std::vector<Stmt> body =
        s->body[0]->kind == kir::StmtKind::Block ? s->body[0]->body : std::vector<Stmt>{s->body[0]};
    std::vector<size_t> nests;
    for (size_t i = 0; i < body.size(); ++i)
      if (labelOf(body[i]) == labels::PhaseNest)
        nests.push_back(i);
    // The first phase that loads; the inputs the walk writes keep their loads.
    std::set<const kir::Buffer *> written;
    kir::forEachStmt(s, [&](const Stmt &st) {
      if ((st->kind == kir::StmtKind::Store || st->kind == kir::StmtKind::VectorCopy) &&
          st->buffer && st->buffer->space == kir::MemorySpace::Global)
        written.insert(st->buffer.get());
    });
    size_t first = 0;
    std::map<const kir::Buffer *, std::vector<GlobalLoad>> firstLoads;
    for (; first < nests.size(); ++first) {
      firstLoads = loadsOf(body[nests[first]]);
      for (const kir::Buffer *w : written)
        firstLoads.erase(w);
      if (!firstLoads.empty())
        break;
    }
    if (first == nests.size())
      return s;
    // Whose index moves with the row, or whose guards tie the row to the loaded elements
    // (a conjunct naming the row and a variable of the index): loaded a row ahead.
    std::set<const kir::Buffer *> byRow;
    for (const auto &[buffer, loads] : firstLoads)
      for (const GlobalLoad &load : loads) {
        bool tied = kir::uses(load.sourceIndex, rowVar());
        for (const Expr &guard : load.guards)
          for (const Expr &conjunct : conjuncts(guard))
            tied |= kir::uses(conjunct, rowVar()) && sharesVariable(conjunct, load.sourceIndex);
        if (tied)
          byRow.insert(buffer);
      }

    // Row-invariant inputs: loaded once before the walk. A condition on the rows (a bound of
    // a row dimension, which the elements loaded do not depend on) is kept at the first row
    // where it only grows with the row (`Tb * 16 + Ts < T`: false at the first row, false at
    // every later one): the loads stay conditional, which on the H200 kept ptxas from moving
    // them into the walk (unconditional, the kernels ran 5-19 % slower, run P5). Any other
    // condition on the rows is dropped: where the walk merges dimensions with a partial
    // split (`... % 2 * 4 + Si < 7`) a first row out of bounds can have later ones in.
    Hoisted once = hoistBatchLoads(
        cx_, body[nests[first]],
        [&](const kir::BufferPtr &g, int64_t) {
          return firstLoads.count(g.get()) && !byRow.count(g.get());
        },
        [](const kir::BufferPtr &local) { return batchArrayName(local, "_once"); },
        "loaded once for the block's rows");
    Hoisted row = hoistBatchLoads(
        cx_, once.nest, [&](const kir::BufferPtr &g, int64_t) { return byRow.count(g.get()) != 0; },
        [](const kir::BufferPtr &local) { return batchArrayName(local, "_row"); }, "this row");
    body[nests[first]] = row.nest;

    // The later phases read the arrays where they load the same elements.
    ReadRowArrays readRow;
    for (const Hoisted *h : {&once, &row})
      for (const Stmt &allocation : h->allocations)
        readRow.arrays[allocation->buffer->name] = allocation->buffer;
    for (size_t n = first + 1; n < nests.size(); ++n) {
      std::map<const kir::Buffer *, std::vector<GlobalLoad>> later = loadsOf(body[nests[n]]);
      Hoisted h = hoistBatchLoads(
          cx_, body[nests[n]],
          [&](const kir::BufferPtr &g, int64_t) {
            return firstLoads.count(g.get()) && later.count(g.get()) &&
                   sameLoads(firstLoads.at(g.get()), later.at(g.get()));
          },
          [](const kir::BufferPtr &local) { return batchArrayName(local, "_row"); }, // as phase 0's
          "this row");
      if (!h.loads)
        continue;
      // Phase 0's arrays of the same local name: an input named alike in both phases.
      for (const Stmt &allocation : h.allocations) {
        std::string name = allocation->buffer->name;
        if (!readRow.arrays.count(name)) {
          std::string once = name.substr(0, name.size() - 4) + "_once";
          if (readRow.arrays.count(once))
            readRow.arrays[name] = readRow.arrays[once];
        }
      }
      if (!llvm::all_of(h.allocations,
                        [&](const Stmt &a) { return readRow.arrays.count(a->buffer->name) != 0; }))
        continue;
      body[nests[n]] = readRow.mutate(h.nest);
    }

    std::vector<Stmt> before, top;
    Expr first0 = kir::index(0), next = kir::var(rowVar()) + kir::index(1);
    auto atRow = [&](const Stmt &st, const Expr &r) {
      return kir::substitute(
          st, [&](const kir::VarPtr &v) -> Expr { return v == rowVar() ? r : nullptr; });
    };
    if (once.loads) {
      before.push_back(kir::comment("The block's rows read these inputs alike: loaded once."));
      before.insert(before.end(), once.allocations.begin(), once.allocations.end());
      before.push_back(withoutRowConditions(once.loads));
    }
    if (row.loads) {
      Retarget toNext;
      for (const Stmt &allocation : row.allocations) {
        auto array = std::make_shared<kir::Buffer>(*allocation->buffer);
        llvm::StringRef name = array->name;
        name.consume_back("_row");
        array->name = name.str() + "_next";
        toNext.targets[allocation->buffer.get()] = array;
        before.push_back(kir::allocate(array, "prefetch: the next row's vectors"));
        // This row's: the next row's of the previous iteration, copied a vector at a time
        // (16 bytes or the widest that divides the array), which ptxas renames.
        top.push_back(allocation);
        int64_t elements = array->shape.front(), bytes = ir::dtypeBytes(array->dtype);
        int64_t lanes = std::max<int64_t>(1, 16 / bytes);
        while (lanes > 1 && elements % lanes != 0)
          lanes /= 2;
        kir::VarPtr v = kir::makeVar("v", ir::DType::I64);
        top.push_back(kir::withComment(
            kir::forLoop(
                v, kir::index(elements / lanes), kir::LoopKind::Unrolled,
                kir::block({kir::vectorCopy(allocation->buffer, kir::var(v) * kir::index(lanes),
                                            array, kir::var(v) * kir::index(lanes), lanes)})),
            "this row's vectors, loaded during the previous row"));
      }
      Stmt loadNext = toNext.mutate(row.loads);
      before.push_back(kir::withComment(atRow(loadNext, first0), "the block's first row"));
      top.push_back(kir::ifThen(next < cx_.extentOf(cx_.plan.loops[loop_].extent),
                                atRow(loadNext, next), nullptr,
                                "prefetch: the next row's vectors, in flight during this row"));
    }
    body.insert(body.begin(), top.begin(), top.end());
    Stmt walked = withBody(s, {kir::block(std::move(body))});
    before.push_back(walked);
    return kir::block(std::move(before));
  }

  /// `s` with the conjuncts of its If conditions that name the row taken at the first row
  /// where they only grow with it (increasingBound), dropped otherwise (an If left without
  /// any becomes its body).
  Stmt withoutRowConditions(const Stmt &s) {
    class Drop : public kir::Mutator {
    public:
      explicit Drop(const kir::VarPtr &row) : row_(row) {}
      using Mutator::mutate;
      Stmt mutate(const Stmt &st) override {
        Stmt out = mutateChildren(st);
        if (!out || out->kind != kir::StmtKind::If || out->body.size() != 1)
          return out;
        Expr kept;
        for (Expr conjunct : conjuncts(out->condition)) {
          if (kir::uses(conjunct, row_)) {
            if (!increasingBound(conjunct, row_))
              continue;
            conjunct = kir::substitute(conjunct, [&](const kir::VarPtr &v) -> Expr {
              return v == row_ ? kir::index(0) : nullptr;
            });
          }
          kept = kept ? kept && conjunct : conjunct;
        }
        if (!kept)
          return out->body[0];
        return kir::ifThen(kept, out->body[0], nullptr, out->comment);
      }

    private:
      const kir::VarPtr &row_;
    };
    return Drop(rowVar()).mutate(s);
  }

  const LowerContext &cx_;
  int loop_;
};

} // namespace

bool prefetchNextRow(LowerContext &context) {
  const Plan &plan = context.plan;
  for (int loop : plan.rowLoops)
    if (plan.loops[loop].prefetchedBy)
      context.kernel.body = NextRowLoads(context, loop).mutate(context.kernel.body);
  return true;
}

} // namespace fsl::lower
