// Unswitch.cpp — the `unswitch` pass.
//
// With `unswitch` on a serial loop, a phase's nest is written twice: threads whose last
// iteration is in bounds (indices grow with every loop, so then every iteration is) run
// a copy without any bounds check; the rest run the checked nest.
#include "lower/Passes.h"

#include "kir/Mutator.h"

#include <llvm/ADT/STLExtras.h>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

class StripChecks : public kir::Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (labelOf(s) == labels::RowGuard || labelOf(s) == labels::BoundsCheck)
      return mutate(s->body[0]);
    return mutateChildren(s);
  }
};

class Unswitch : public kir::Mutator {
public:
  explicit Unswitch(Expr fastPath) : fastPath_(std::move(fastPath)) {}
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (labelOf(s) != labels::PhaseNest)
      return mutateChildren(s);
    Stmt fast = StripChecks().mutate(s);
    Stmt checked = kir::withComment(kir::withLabel(s, ""), "the predicated remainder");
    Stmt unchecked = kir::withLabel(fast, "");
    return withBody(s, {kir::ifThen(fastPath_, unchecked, checked,
                                    "unswitch: no iteration of this thread is out of bounds")});
  }

private:
  Expr fastPath_;
};

} // namespace

bool unswitchNests(LowerContext &context) {
  const Plan &plan = context.plan;
  bool unswitch =
      llvm::any_of(plan.serialLoops(), [&](int loop) { return plan.loops[loop].unswitched; });
  if (!unswitch || plan.inexactRoots.empty())
    return true;
  // Every inexact dimension in bounds at the last iteration of this thread's serial loops.
  Expr fastPath;
  for (ir::DimId root : plan.inexactRoots) {
    Expr last = kir::substitute(context.rootIndex[root], [&](const kir::VarPtr &v) -> Expr {
      for (int loop : plan.serialLoops())
        if (context.loopVars[loop] == v)
          return context.extentOf(plan.loops[loop].extent) - kir::index(1);
      return nullptr;
    });
    fastPath = fastPath && (last < context.dimExtent(root));
  }
  context.kernel.body = Unswitch(fastPath).mutate(context.kernel.body);
  return true;
}

} // namespace fsl::lower
