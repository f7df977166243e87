// GuardCarving.cpp — guards less other guards, piece by piece.
#include "tuning/GuardCarving.h"

#include <llvm/ADT/STLExtras.h>

namespace fsl::tuning {
namespace {

sched::SizeGuard negated(sched::SizeGuard guard) {
  using sched::Comparison;
  switch (guard.comparison) {
  case Comparison::Lt:
    guard.comparison = Comparison::Ge;
    break;
  case Comparison::Le:
    guard.comparison = Comparison::Gt;
    break;
  case Comparison::Gt:
    guard.comparison = Comparison::Le;
    break;
  case Comparison::Ge:
    guard.comparison = Comparison::Lt;
    break;
  case Comparison::Eq:
    guard.comparison = Comparison::Ne;
    break;
  case Comparison::Ne:
    guard.comparison = Comparison::Eq;
    break;
  }
  return guard;
}

} // namespace

std::vector<sched::SizeGuard> conjunction(std::vector<sched::SizeGuard> first,
                                          const std::vector<sched::SizeGuard> &second) {
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

bool satisfiable(const std::vector<sched::SizeGuard> &guard) {
  // Each condition compares one dimension: the conjunction holds for some sizes when each
  // dimension has a size all of its conditions accept, and the candidates stand for all.
  for (const auto &[dim, sizes] : sched::sizeCandidates({&guard}))
    if (llvm::none_of(sizes, [&, &dim = dim](int64_t size) {
          return llvm::all_of(guard, [&](const sched::SizeGuard &condition) {
            return condition.dimName != dim || condition.holds(size);
          });
        }))
      return false;
  return true;
}

std::vector<std::vector<sched::SizeGuard>>
carve(const std::vector<sched::SizeGuard> &guard,
      const std::vector<std::vector<sched::SizeGuard>> &removed) {
  std::vector<std::vector<sched::SizeGuard>> pieces = {guard};
  for (const std::vector<sched::SizeGuard> &cut : removed) {
    std::vector<std::vector<sched::SizeGuard>> next;
    for (const std::vector<sched::SizeGuard> &piece : pieces) {
      if (!satisfiable(conjunction(piece, cut))) {
        next.push_back(piece);
        continue;
      }
      std::vector<sched::SizeGuard> prefix = piece;
      for (const sched::SizeGuard &condition : cut) {
        // A condition the piece already has holds on all of it: nothing outside, nothing
        // to add (the declaration's own guard is in both).
        if (llvm::any_of(piece, [&](const sched::SizeGuard &existing) {
              return existing.dimName == condition.dimName &&
                     existing.comparison == condition.comparison &&
                     existing.bound == condition.bound && existing.modulus == condition.modulus;
            }))
          continue;
        std::vector<sched::SizeGuard> outside = prefix;
        outside.push_back(negated(condition));
        if (satisfiable(outside))
          next.push_back(std::move(outside));
        prefix.push_back(condition);
      }
    }
    pieces = std::move(next);
  }
  return pieces;
}

} // namespace fsl::tuning
