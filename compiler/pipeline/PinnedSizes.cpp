// PinnedSizes.cpp — the dimensions a guard pins, and the fusion copied with them static.
#include "pipeline/PinnedSizes.h"

#include <llvm/ADT/DenseMap.h>

namespace fsl::pipeline {

std::map<ir::DimId, int64_t> pinnedSizes(const ir::Fusion &fusion,
                                         const std::vector<sched::SizeGuard> &when) {
  std::map<ir::DimId, int64_t> pinned;
  std::map<ir::DimId, bool> contradicted;
  for (const sched::SizeGuard &guard : when) {
    if (guard.comparison != sched::Comparison::Eq || guard.modulus != 0 ||
        guard.dim >= fusion.dims.size() || fusion.dims[guard.dim].staticExtent)
      continue;
    // `H == 0` is an empty tensor, which no static extent describes.
    if (guard.bound < 1)
      contradicted[guard.dim] = true;
    auto [at, inserted] = pinned.emplace(guard.dim, guard.bound);
    if (!inserted && at->second != guard.bound)
      contradicted[guard.dim] = true;
  }
  // `H == 4100 && H % 8 == 0` holds for no size either: H stays a runtime size, as the
  // heuristics plan it (PinnedHeuristics.h).
  for (const sched::SizeGuard &guard : when)
    if (auto size = pinned.find(guard.dim); size != pinned.end() && !guard.holds(size->second))
      contradicted[guard.dim] = true;
  for (const auto &[dim, yes] : contradicted)
    pinned.erase(dim);
  return pinned;
}

std::unique_ptr<ir::Fusion> withStaticSizes(const ir::Fusion &fusion,
                                            const std::map<ir::DimId, int64_t> &sizes) {
  auto copy = std::make_unique<ir::Fusion>();
  copy->name = fusion.name;
  copy->dims = fusion.dims;
  copy->params = fusion.params;
  copy->outputs = fusion.outputs;
  copy->range = fusion.range;
  llvm::DenseMap<const ir::Value *, const ir::Value *> copied;
  auto remap = [&](const ir::Value *value) { return value ? copied.lookup(value) : nullptr; };
  for (const auto &value : fusion.values) {
    copy->values.push_back(std::make_unique<ir::Value>(*value));
    copied[value.get()] = copy->values.back().get();
  }
  for (auto &value : copy->values)
    for (const ir::Value *&operand : value->operands)
      operand = remap(operand);
  for (ir::Param &param : copy->params)
    param.value = remap(param.value);
  for (ir::Output &output : copy->outputs)
    output.value = remap(output.value);
  for (const auto &[dim, size] : sizes)
    copy->dims[dim].staticExtent = size;
  return copy;
}

const ir::Fusion &PinnedFusions::under(const ir::Fusion &fusion,
                                       const std::vector<sched::SizeGuard> &when) {
  std::map<ir::DimId, int64_t> sizes = pinnedSizes(fusion, when);
  if (sizes.empty())
    return fusion;
  std::unique_ptr<ir::Fusion> &copy = copies_[{&fusion, sizes}];
  if (!copy)
    copy = withStaticSizes(fusion, sizes);
  return *copy;
}

} // namespace fsl::pipeline
