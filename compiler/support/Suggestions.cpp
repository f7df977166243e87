// Suggestions.cpp — the nearest known name by edit distance.
#include "support/Suggestions.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <vector>

namespace fsl {
namespace {

/// Edits from `a` to `b`, ignoring case: insertions, deletions, substitutions and swaps of
/// two neighbours (the optimal string alignment distance). A swap counts once, so that
/// `emti` is nearer `emit` than `MT`, as a typist would think.
unsigned editDistance(llvm::StringRef a, llvm::StringRef b) {
  std::vector<std::vector<unsigned>> d(a.size() + 1, std::vector<unsigned>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      unsigned substitution = llvm::toLower(a[i - 1]) == llvm::toLower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && llvm::toLower(a[i - 1]) == llvm::toLower(b[j - 2]) &&
          llvm::toLower(a[i - 2]) == llvm::toLower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string> nearestName(llvm::StringRef typed,
                                       llvm::ArrayRef<std::string> candidates) {
  // Names are short (options, targets, dimensions): the quadratic table is nothing.
  if (typed.empty() || typed.size() > 256)
    return std::nullopt;
  // One edit in a short name, one in four in a longer one: `cdua` (a swap) and `simplfy`
  // are typos; `sm_75` is not `sm_80` (another GPU), and `W` for `H` (every character
  // replaced) is another name.
  unsigned bound = std::max<unsigned>(1, typed.size() / 4);
  std::optional<std::string> best;
  unsigned bestDistance = bound + 1;
  for (const std::string &candidate : candidates) {
    if (candidate.size() > typed.size() + bound)
      continue;
    unsigned distance = editDistance(typed, candidate);
    if (distance < bestDistance && distance < std::max(typed.size(), candidate.size())) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::string didYouMean(llvm::StringRef typed, llvm::ArrayRef<std::string> candidates) {
  std::optional<std::string> nearest = nearestName(typed, candidates);
  return nearest ? "; did you mean '" + *nearest + "'?" : "";
}

} // namespace fsl
