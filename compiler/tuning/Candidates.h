// Candidates.h — the knob settings `fslc tune` tries for a fusion: the heuristics' own
// choice (no knob), then each knob of the family's heuristic varied alone over the values
// worth measuring (docs/tuning.md).
//
// One knob at a time keeps the count small (a few dozen a shape) and each candidate one
// readable change from what the heuristics chose; the compiler prunes those a heuristic
// refuses or the checker rejects, and those that come out as the same schedule.
#pragma once

#include "heuristics/Family.h"

#include <string>
#include <utility>
#include <vector>

namespace fsl::tuning {

/// A knob and its value as `.fsl` writes it (`tile_n`, `128`; `pingpong`, `true`).
using KnobSetting = std::pair<std::string, std::string>;
/// The knobs of one candidate; empty: the heuristics' choice.
using KnobSettings = std::vector<KnobSetting>;

/// The candidates for a fusion of `family`, the heuristics' choice first.
std::vector<KnobSettings> candidateKnobs(heuristics::Family family);

/// `{ tile_n = 128; stages = 4; }`, or `` for no knob: what follows `= auto(kind)`.
std::string knobBlockText(const KnobSettings &knobs);

} // namespace fsl::tuning
