// KnobCatalog.cpp — Knobs.def expanded into a table.
#include "lsp/KnobCatalog.h"

#include <llvm/ADT/StringRef.h>

namespace fsl::lsp {
namespace {

std::string rangeText(llvm::StringRef range) {
  if (range == "Positive")
    return "an integer >= 1";
  if (range == "PowerOfTwo")
    return "a power of two";
  return "true or false";
}

std::string typeText(llvm::StringRef type) { return type == "bool" ? "bool" : "int"; }

} // namespace

const std::vector<KnobInfo> &knobCatalog() {
  using namespace heuristics::family_sets;
  static const std::vector<KnobInfo> catalog = {
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  KnobInfo{Name, typeText(#Type), rangeText(#Range), Families, Doc, ""},
#define FSL_KNOB_REFUSED(Name, Type, Range, Families, Why, Doc)                                    \
  KnobInfo{Name, typeText(#Type), rangeText(#Range), Families, Doc, Why},
#include "heuristics/Knobs.def"
  };
  return catalog;
}

const KnobInfo *findKnob(llvm::StringRef name) {
  for (const KnobInfo &knob : knobCatalog())
    if (knob.name == name)
      return &knob;
  return nullptr;
}

std::string describeKnob(const KnobInfo &knob) {
  std::string text = "`" + knob.name + "` (" + knob.type + ", " + knob.range + "): " + knob.doc +
                     ". Read by " + heuristics::familiesText(knob.families) + ".";
  if (!knob.refusedWhy.empty())
    text += " Refused for now: " + knob.refusedWhy + ".";
  return text;
}

} // namespace fsl::lsp
