// SlotTable.h — where each thread keeps a variable: the slot of a Var in its row of a
// CTA's values, found by the Var's address.
#pragma once

#include "kir/IR.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace fsl::sim {

/// Variable -> slot by address. Every variable read and write of every thread looks a slot
/// up, the simulator's hottest operation: open addressing with a multiplicative hash
/// costs a fraction of std::unordered_map's division and node walk.
class SlotTable {
public:
  void build(const std::unordered_map<const kir::Var *, int> &slots) {
    bits_ = 4;
    while ((size_t(1) << bits_) < 2 * slots.size())
      ++bits_;
    keys_.assign(size_t(1) << bits_, nullptr);
    values_.assign(keys_.size(), -1);
    for (const auto &[v, slot] : slots) {
      size_t i = home(v);
      while (keys_[i])
        i = (i + 1) & (keys_.size() - 1);
      keys_[i] = v;
      values_[i] = slot;
    }
  }
  /// The slot of `v`, or -1.
  int find(const kir::Var *v) const {
    for (size_t i = home(v);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == v)
        return values_[i];
      if (!keys_[i])
        return -1;
    }
  }

private:
  size_t home(const kir::Var *v) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(v) * 0x9E3779B97F4A7C15ull) >>
                               (64 - bits_));
  }
  int bits_ = 4;
  std::vector<const kir::Var *> keys_ = std::vector<const kir::Var *>(16, nullptr);
  std::vector<int> values_ = std::vector<int>(16, -1);
};

} // namespace fsl::sim
