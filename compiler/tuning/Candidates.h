// Candidates.h — the knob settings `fslc tune` tries for a fusion: the heuristics' own
// choice (no knob), then each knob of the family's heuristic varied alone over the values
// worth measuring, the matrix products' tile shapes (two knobs that make one change), and
// on request every two knobs varied together (docs/tuning.md).
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

/// The candidates for a fusion of `family`, the heuristics' choice first, then each knob
/// alone, with (matmul) the whole tile shapes after the widths: `tile_m` and `tile_n`
/// together, two knobs that only make a shape as a pair.
std::vector<KnobSettings> candidateKnobs(heuristics::Family family);

/// The second round's candidates (`fslc tune --pairs`): every value of one knob with every
/// value of another, for each two knobs of the family's heuristic, in the order of
/// candidateKnobs. The runner times a pair only where both its knobs' single candidates
/// were among the fastest of the first round (python/fslc/tune.py), so the compiler
/// writes them all and one timing run does both rounds.
std::vector<KnobSettings> pairedKnobs(heuristics::Family family);

/// `{ tile_n = 128; stages = 4; }`, or `` for no knob: what follows `= auto(kind)`.
std::string knobBlockText(const KnobSettings &knobs);

} // namespace fsl::tuning
