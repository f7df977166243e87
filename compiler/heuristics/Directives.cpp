// Directives.cpp — finishing a chosen block, and the directives of a row split.
#include "heuristics/Directives.h"

namespace fsl::heuristics {

sched::ScheduleBlock BlockContext::finish(Block block, std::vector<sched::SizeGuard> when) const {
  if (fastExp) {
    block.reasons.push_back(fastExpReason.empty() ? "fast_exp (fast_exp = true): f32 exp as __expf."
                                                  : fastExpReason);
    block.add(sched::FastExp{}, at("fast_exp"));
  }
  if (fastTanh) {
    block.reasons.push_back(fastTanhReason.empty()
                                ? "fast_tanh (fast_tanh = true): f32 tanh as tanh.approx.f32."
                                : fastTanhReason);
    block.add(sched::FastTanh{}, at("fast_tanh"));
  }
  if (fastDiv) {
    block.reasons.push_back(fastDivReason.empty()
                                ? "fast_div (fast_div = true): f32 division as div.full.f32."
                                : fastDivReason);
    block.add(sched::FastDiv{}, at("fast_div"));
  }
  sched::ScheduleBlock chosen;
  chosen.header = header;
  chosen.header.when = std::move(when);
  chosen.directives = std::move(block.directives);
  chosen.reasons = std::move(block.reasons);
  return chosen;
}

RowRanges rowRanges(const BlockContext &context) {
  return {context.at("vector_width"),
          context.at(context.knobs->persistentBatch ? "persistent_batch" : "static_bdimx"),
          context.at("rows_per_block"), context.decl()};
}

void rowDirectives(Block &block, const std::string &row, const std::string &dim,
                   const RowSplit &split, bool staticBdimx, bool unroll, const RowRanges &at) {
  const std::string outer = dim + "o", vec = dim + "v", serial = dim + "p", lanes = dim + "x";
  if (split.vector > 1)
    block.split(dim, split.vector, outer, vec, at.vector);
  std::string base = split.vector > 1 ? outer : dim;
  if (staticBdimx)
    block.split(base, split.threads, serial, lanes, at.threads);
  else
    block.split(base, split.batch, serial, lanes, at.threads, /*factorIsOuter=*/true);
  if (split.rowsPerBlock > 1) {
    block.split(row, split.rowsPerBlock, row + "b", row + "y", at.rows);
    block.parallelize({{row + "b", sched::Parallel::BIDx},
                       {row + "y", sched::Parallel::TIDy},
                       {lanes, sched::Parallel::TIDx}},
                      at.header);
  } else {
    block.parallelize({{row, sched::Parallel::BIDx}, {lanes, sched::Parallel::TIDx}}, at.header);
  }
  if (split.vector > 1)
    block.vectorize(vec, at.vector);
  if (unroll && split.batch > 1 && split.unrollBy > 0 && split.unrollBy < split.batch)
    block.add(sched::Unroll{block.loop(serial, at.header), sched::Count{split.unrollBy, at.header}},
              at.header);
  else if (unroll && split.batch > 1)
    block.unroll(serial, at.header);
}

} // namespace fsl::heuristics
