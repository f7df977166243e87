// CtaThreads.cpp — the expressions of a matmul CTA's threads.
#include "lower/matmul/CtaThreads.h"

#include "lower/matmul/Build.h"

namespace fsl::lower {

kir::Expr CtaThreads::isThread(int64_t thread) const {
  return kir::binary(kir::BinaryOp::Eq, kir::var(tid), kir::index(thread));
}

kir::Expr CtaThreads::firstConsumerThread(const MatmulPlan &plan) const {
  return kir::binary(kir::BinaryOp::Eq, kir::var(tid), firstThreadOfGroup(plan));
}

kir::Expr CtaThreads::firstThreadOfGroup(const MatmulPlan &plan) const {
  if (group)
    return kir::index(128) + kir::var(group) * kir::index(128 * plan.warpgroupsPerTile());
  return kir::index(producerWarpgroup ? 128 : 0);
}

kir::Expr CtaThreads::warpgroupLeader() const {
  return kir::binary(kir::BinaryOp::Eq, kir::var(tid) % kir::index(128), kir::index(0));
}

kir::Expr CtaThreads::warpgroupRow(const MatmulPlan &plan) const {
  return kir::var(member ? member : consumer) / kir::index(plan.warpgroupsN()) *
         kir::index(plan.warpM);
}

kir::Expr CtaThreads::warpgroupColumn(const MatmulPlan &plan) const {
  return kir::var(member ? member : consumer) % kir::index(plan.warpgroupsN()) *
         kir::index(plan.warpN);
}

kir::Stmt CtaThreads::consumerBarrier(const MatmulPlan &plan, const std::string &comment) const {
  if (!producerWarpgroup)
    return kir::withComment(kir::barrier(), comment);
  auto named = [&](int id) {
    return kir::withComment(
        kir::barrierStmt(kir::BarrierKind::Named, id, kir::index(128 * plan.warpgroupsPerTile())),
        comment);
  };
  if (!group)
    return named(1);
  // Named barrier 1 + group: the group's warpgroups only (ids are immediates in the IR).
  return kir::ifThen(kir::binary(kir::BinaryOp::Eq, kir::var(group), kir::index(0)), named(1),
                     named(2), "the group's own named barrier");
}

} // namespace fsl::lower
