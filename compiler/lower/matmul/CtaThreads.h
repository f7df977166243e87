// CtaThreads.h — the threads of a matmul CTA: its thread and warpgroup indices, the
// consumer warpgroups (and their groups with two), the CTA's rank in its cluster; and
// the expressions every component asks of them (which thread issues an asynchronous
// operation, where a warpgroup's tile starts, the consumers' barrier).
#pragma once

#include "lower/matmul/MatmulPlan.h"

#include <string>

namespace fsl::lower {

struct CtaThreads {
  kir::VarPtr tid, warpgroup;
  /// The consumer warpgroup (0 .. W - 1): warpgroup - 1 with a producer, else warpgroup.
  kir::VarPtr consumer;
  /// Two consumer groups: the warpgroup's group and its place in it (null with one).
  kir::VarPtr group, member;
  /// cluster (C, 1): the CTA's rank in its cluster (null without a cluster).
  kir::VarPtr clusterRank;
  /// Whether warpgroup 0 is a producer (the fix-up kernel has consumers only).
  bool producerWarpgroup = false;

  /// Whether the thread is `thread` of the CTA.
  kir::Expr isThread(int64_t thread) const;
  /// The thread that issues a CTA-wide asynchronous operation of the consumers: the first
  /// thread of the consumer group (of the consumers without groups).
  kir::Expr firstConsumerThread(const MatmulPlan &plan) const;
  kir::Expr firstThreadOfGroup(const MatmulPlan &plan) const;
  /// One thread of each warpgroup.
  kir::Expr warpgroupLeader() const;
  /// The consumer warpgroup's position in the CTA tile: row-major over (BM / WM) x (BN / WN).
  kir::Expr warpgroupRow(const MatmulPlan &plan) const;
  kir::Expr warpgroupColumn(const MatmulPlan &plan) const;
  /// The consumers' barrier: the block's, or named barrier 1 over the consumer threads
  /// when a producer warpgroup does not take part.
  kir::Stmt consumerBarrier(const MatmulPlan &plan, const std::string &comment) const;
};

} // namespace fsl::lower
