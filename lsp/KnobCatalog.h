// KnobCatalog.h — the knobs of `= auto(kind) { ... }` as completion and hover show them,
// read from heuristics/Knobs.def (the one list the compiler checks knobs against).
#pragma once

#include "heuristics/Family.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace fsl::lsp {

struct KnobInfo {
  std::string name;
  std::string type;  // bool or int
  std::string range; // what the language accepts before any heuristic runs
  heuristics::FamilySet families = 0;
  std::string doc;
  std::string refusedWhy; // non-empty: accepted by the grammar, refused by every heuristic
};

const std::vector<KnobInfo> &knobCatalog();
const KnobInfo *findKnob(llvm::StringRef name);
/// "`vector_width` (int, a power of two): elements an access. Read by auto(pointwise), ..."
std::string describeKnob(const KnobInfo &knob);

} // namespace fsl::lsp
