// Pointwise.cpp — auto(pointwise): the choice, then its directives.
#include "heuristics/Pointwise.h"

#include "heuristics/SizeMath.h"
#include "heuristics/TunedConstants.h"
#include "heuristics/Vectors.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

namespace fsl::heuristics {

PointwiseParams choosePointwise(const FusionShape &shape, const Target &, const Knobs &knobs) {
  PointwiseParams params;
  // Its loops would put a reduced dimension on blocks: a reduction needs its heuristic.
  if (shape.family != Family::Pointwise) {
    params.declined = "auto(pointwise) schedules fusions without reductions, and '" + shape.name +
                      "' reduces over " + llvm::join(shape.firstReducedNames, ", ") +
                      ": use auto(" + familyName(shape.family) + ")";
    return params;
  }
  if (shape.layoutError) {
    params.declined = *shape.layoutError;
    return params;
  }
  const DimShape &d = shape.inner;
  VectorChoice vector = chooseVectorWidth(shape, knobs, params.verdicts);
  params.vector = vector.width;
  params.vectorWhy = vector.why;
  params.threads = tuned::kPointwiseThreads;
  // unroll = N: each thread makes N accesses a block's width apart (so each stays
  // coalesced), in an unrolled loop: fewer blocks, more loads in flight a thread.
  params.unroll = knobs.unroll.value_or(1);
  if (knobs.unroll) {
    int64_t unroll = params.unroll;
    // The accesses a thread has: with a static row, ceil(vectors / 128); more would be
    // predicated off. At most the 32 of a batch the prefetch pass loads ahead.
    std::optional<int64_t> accesses;
    if (d.extent)
      accesses = ceilDiv(ceilDiv(*d.extent, params.vector), params.threads);
    if (accesses && unroll > *accesses)
      params.verdicts.refuse(
          "unroll",
          llvm::formatv("{0} = {1} in accesses of {2} element{3} gives each of the 128 "
                        "threads {4} access{5}; use unroll = {4}{6}",
                        d.name, *d.extent, params.vector, params.vector == 1 ? "" : "s", *accesses,
                        *accesses == 1 ? "" : "es", *accesses == 1 ? "" : " or less")
              .str());
    else if (unroll > tuned::kMaxUnroll)
      params.verdicts.refuse(
          "unroll", llvm::formatv("an unrolled batch is at most {0} accesses a thread (the "
                                  "prefetch pass loads up to {0} ahead; more only lengthens the "
                                  "code); use unroll = {0} or less",
                                  tuned::kMaxUnroll)
                        .str());
    else
      params.verdicts.honour("unroll");
  }
  return params;
}

std::vector<sched::ScheduleBlock> pointwiseBlocks(const FusionShape &shape,
                                                  const PointwiseParams &params,
                                                  const BlockContext &context) {
  const DimShape &d = shape.inner;
  const Knobs &knobs = *context.knobs;
  int64_t vector = params.vector, unroll = params.unroll;
  llvm::SMRange decl = context.decl();
  Block block;
  block.reasons.push_back(
      "auto(pointwise): " + params.vectorWhy + "; 128 threads a block, " +
      (unroll > 1
           ? llvm::formatv("{0} accesses each, 128 accesses apart (unroll = {0})", unroll).str()
           : std::string(knobs.unroll ? "one access each (unroll = 1)" : "one access each")) +
      ".");
  if (vector > 1)
    block.split(d.name, vector, d.name + "o", d.name + "v", context.at("vector_width"));
  std::string base = vector > 1 ? d.name + "o" : d.name;
  // Short static rows (RoPE's head of 128: 16 accesses) would leave most of a block's 128
  // threads idle: a row takes the next power of two of its accesses on threadIdx.x and
  // rows fill the block on threadIdx.y (neighbouring rows are neighbouring in memory, so
  // a warp's accesses stay contiguous).
  std::optional<int64_t> rowThreads;
  if (!shape.rows.empty() && d.extent && unroll == 1 &&
      ceilDiv(*d.extent, vector) <= params.threads / 2) {
    rowThreads = 1;
    while (*rowThreads < ceilDiv(*d.extent, vector))
      *rowThreads *= 2;
  }
  if (rowThreads) {
    const std::string &t = shape.rows[0].name;
    int64_t rows = params.threads / *rowThreads;
    block.reasons.back() = "auto(pointwise): " + params.vectorWhy +
                           llvm::formatv("; {0} threads a row ({1} = {2}), {3} rows a block on "
                                         "threadIdx.y: 128 threads a block, one access each.",
                                         *rowThreads, d.name, *d.extent, rows)
                               .str();
    block.split(base, *rowThreads, d.name + "b", d.name + "x", decl);
    block.split(t, rows, t + "b", t + "y", decl);
    block.parallelize({{t + "b", sched::Parallel::BIDx},
                       {d.name + "b", sched::Parallel::BIDy},
                       {t + "y", sched::Parallel::TIDy},
                       {d.name + "x", sched::Parallel::TIDx}},
                      decl);
    if (vector > 1)
      block.vectorize(d.name + "v", context.at("vector_width"));
    return {context.finish(std::move(block), knobs.when)};
  }
  if (unroll > 1) {
    block.split(base, params.threads, d.name + "q", d.name + "x", decl);
    block.split(d.name + "q", unroll, d.name + "b", d.name + "u", context.at("unroll"));
  } else {
    block.split(base, params.threads, d.name + "b", d.name + "x", decl);
  }
  if (shape.rows.empty())
    block.parallelize(
        {{d.name + "b", sched::Parallel::BIDx}, {d.name + "x", sched::Parallel::TIDx}}, decl);
  else
    block.parallelize({{shape.rows[0].name, sched::Parallel::BIDx},
                       {d.name + "b", sched::Parallel::BIDy},
                       {d.name + "x", sched::Parallel::TIDx}},
                      decl);
  if (vector > 1)
    block.vectorize(d.name + "v", context.at("vector_width"));
  if (unroll > 1)
    block.unroll(d.name + "u", context.at("unroll"));
  return {context.finish(std::move(block), knobs.when)};
}

} // namespace fsl::heuristics
