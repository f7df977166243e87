// Candidates.cpp — the values each knob is tried at.
#include "tuning/Candidates.h"

#include <string_view>

namespace fsl::tuning {
namespace {

struct KnobValues {
  const char *knob;
  std::vector<const char *> values;
};

/// The values worth measuring for each knob of a family's heuristic. Matmul: the tile
/// heights other than the usual 128 (one, three or two 128-row consumer warpgroups), the
/// widths the lowering takes (128 to 256 in steps a wave of tiles fills; 160 and 176 for
/// shapes whose waves the wider tiles fill badly; 320, w's tile in two TMA boxes, and with
/// tile_m = 256 the pair 256 x 160), the pipeline
/// depths shared memory allows (2 to 6 for large tiles; 8 to 16 small stages for few rows,
/// where the product streams w and cuBLAS keeps 11 to 16 stages in flight), the operands
/// swapped or not (the heuristics swap them below 64 rows only), the tile orders and
/// clusters, the output tile in pieces of 32 or 64 columns (a stage more beside it). Rows: vector
/// widths of 4 to 16 bytes, batches and rows a block around the heuristics' usual choice.
std::vector<KnobValues> valuesFor(heuristics::Family family) {
  using heuristics::Family;
  switch (family) {
  case Family::Matmul:
    return {{"tile_m", {"64", "192", "256"}},
            {"tile_n", {"128", "160", "176", "192", "224", "256", "320"}},
            {"stages", {"2", "3", "4", "5", "6", "8", "12", "16"}},
            {"swap_ab", {"true", "false"}},
            {"pingpong", {"true", "false"}},
            {"cluster_m", {"1", "2", "4"}},
            {"cluster_n", {"2", "4"}},
            {"split_k", {"1", "2", "4"}},
            {"stream_k", {"true", "false"}},
            {"swizzle", {"1", "4", "8", "16"}},
            {"epilogue_piece", {"32", "64"}}};
  case Family::InnerPersistent:
    return {{"vector_width", {"2", "4", "8"}},   {"persistent_batch", {"1", "2", "4", "8"}},
            {"rows_per_block", {"1", "2", "4"}}, {"static_bdimx", {"true", "false"}},
            {"one_pass", {"true", "false"}},     {"recompute", {"true", "false"}},
            {"grid_sync", {"true", "false"}}};
  case Family::Reduction:
    return {{"vector_width", {"2", "4", "8"}}, {"one_pass", {"true", "false"}}};
  case Family::Pointwise:
    return {{"vector_width", {"2", "4", "8"}}, {"unroll", {"1", "2", "4"}}};
  case Family::InnerOuter:
    return {{"vector_width", {"4", "8"}},
            {"persistent_batch", {"1", "2", "4", "8"}},
            {"rows_per_block", {"1", "2", "4", "8"}},
            {"blocks_per_sm", {"1", "2", "4", "8"}},
            {"prefetch_rows", {"true", "false"}},
            {"grid_sync", {"true", "false"}}};
  }
  return {};
}

/// Matmul tile shapes, both sides at once. One knob alone leaves the other side to the
/// heuristics (`tile_m = 64` takes the width they choose for 64 rows, `tile_n` alone 128
/// rows), and the pairs round times `tile_m` with `tile_n` only where both did well alone:
/// 64 x 160 at 320 x 4096 x 4096 (1.16x the heuristics' tiles by hand in run S28A, 1.14x as
/// a tile shape in run S29I) was never timed so (neither side alone was among the fastest;
/// docs/performance.md run S29G). The heights other than
/// 128 with the widths their register budgets allow (192 rows up to 192 columns, 256 up to
/// 160); 64 rows also 64 and 96 wide, which put twice or 1.3x the CTAs of 64 x 128 to work
/// at few rows (64 x 64 tiles with 12 stages ran 1.10x the heuristics' 64 x 128 at
/// 128 x 4096 x 4096 in run S31B; the cost model prunes them where their waves do not fit).
std::vector<KnobSettings> tileShapes(heuristics::Family family) {
  if (family != heuristics::Family::Matmul)
    return {};
  const std::vector<std::pair<const char *, std::vector<const char *>>> shapes = {
      {"64", {"64", "96", "128", "160", "192", "256"}},
      {"192", {"128", "160", "192"}},
      {"256", {"128", "160"}}};
  std::vector<KnobSettings> candidates;
  for (const auto &[rows, widths] : shapes)
    for (const char *width : widths)
      candidates.push_back({{"tile_m", rows}, {"tile_n", width}});
  return candidates;
}

/// Swapped tiles (w's columns on wgmma's 64-row side) of more rows than the heuristics
/// swap, in the grids cuBLAS launches for few rows of a short N (docs/performance.md, run
/// S32A: 128 CTAs of 384 threads): two consumer warpgroups on halves of 64, 80, 128 or 160
/// rows of a by 64 columns, and 64 or 80 rows by 128 columns, a warpgroup on each 64. The
/// cost model prunes them where the rows fill more waves than the heuristics' tiles.
std::vector<KnobSettings> swappedShapes(heuristics::Family family) {
  if (family != heuristics::Family::Matmul)
    return {};
  std::vector<KnobSettings> candidates;
  for (const char *rows : {"64", "80", "128", "160"})
    candidates.push_back({{"swap_ab", "true"}, {"tile_m", rows}, {"consumers", "2"}});
  for (const char *rows : {"64", "80"})
    candidates.push_back({{"swap_ab", "true"}, {"tile_m", rows}, {"tile_n", "128"}});
  return candidates;
}

} // namespace

std::vector<KnobSettings> candidateKnobs(heuristics::Family family) {
  std::vector<KnobSettings> candidates = {{}};
  for (const KnobValues &knob : valuesFor(family)) {
    for (const char *value : knob.values)
      candidates.push_back({{knob.knob, value}});
    // The tile shapes right after the widths alone: the ids follow this order, and the
    // runner times candidates of equal estimate (or without one) by id until its budget
    // runs out, where the tiles matter more than the knobs after them.
    if (std::string_view(knob.knob) == "tile_n")
      for (KnobSettings &shape : tileShapes(family))
        candidates.push_back(std::move(shape));
    if (std::string_view(knob.knob) == "swap_ab")
      for (KnobSettings &shape : swappedShapes(family))
        candidates.push_back(std::move(shape));
  }
  return candidates;
}

std::vector<KnobSettings> pairedKnobs(heuristics::Family family) {
  std::vector<KnobValues> knobs = valuesFor(family);
  std::vector<KnobSettings> pairs;
  for (size_t first = 0; first < knobs.size(); ++first)
    for (size_t second = first + 1; second < knobs.size(); ++second)
      for (const char *firstValue : knobs[first].values)
        for (const char *secondValue : knobs[second].values)
          pairs.push_back({{knobs[first].knob, firstValue}, {knobs[second].knob, secondValue}});
  return pairs;
}

std::string knobBlockText(const KnobSettings &knobs) {
  if (knobs.empty())
    return "";
  std::string text = "{";
  for (const auto &[name, value] : knobs)
    text += " " + name + " = " + value + ";";
  return text + " }";
}

} // namespace fsl::tuning
