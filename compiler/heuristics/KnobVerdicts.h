// KnobVerdicts.h — which knobs a heuristic honoured and which it refused, and why: no knob
// is ever ignored (heuristics/Heuristics.cpp refuses what no family read).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fsl::heuristics {

struct KnobVerdicts {
  std::set<std::string> honoured;                           // and refused
  std::vector<std::pair<std::string, std::string>> refused; // knob, why
  /// Why the schedule taken reads none of the other knobs (empty: the default message).
  std::string unused;

  void honour(const std::string &knob) { honoured.insert(knob); }
  void refuse(const std::string &knob, const std::string &reason) {
    honoured.insert(knob);
    for (const auto &[name, first] : refused)
      if (name == knob)
        return; // one error a knob: its first reason
    refused.emplace_back(knob, reason);
  }
  /// `other`'s verdicts after these.
  void append(const KnobVerdicts &other) {
    for (const auto &[knob, reason] : other.refused)
      refuse(knob, reason);
    honoured.insert(other.honoured.begin(), other.honoured.end());
    if (!other.unused.empty())
      unused = other.unused;
  }
};

} // namespace fsl::heuristics
