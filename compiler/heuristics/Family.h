// Family.h — the heuristic families of `= auto(kind)`: pointwise, reduction,
// inner_persistent, matmul and inner_outer, their names and sets of them.
//
// Header-only: schedule/FromAst.cpp checks knobs by family without linking the heuristics.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsl::heuristics {

/// One heuristic, the kind named in `= auto(kind)`.
enum class Family : uint8_t { Pointwise, Reduction, InnerPersistent, Matmul, InnerOuter };

/// Every family, in the order their names are listed to users.
inline constexpr std::array<Family, 5> kFamilies = {Family::Pointwise, Family::Reduction,
                                                    Family::InnerPersistent, Family::Matmul,
                                                    Family::InnerOuter};

/// The name written in `auto(kind)`.
inline const char *familyName(Family family) {
  switch (family) {
  case Family::Pointwise:
    return "pointwise";
  case Family::Reduction:
    return "reduction";
  case Family::InnerPersistent:
    return "inner_persistent";
  case Family::Matmul:
    return "matmul";
  case Family::InnerOuter:
    return "inner_outer";
  }
  return "";
}

/// The family named `name`, or none.
inline std::optional<Family> familyNamed(std::string_view name) {
  for (Family family : kFamilies)
    if (name == familyName(family))
      return family;
  return std::nullopt;
}

/// A set of families, one bit each (the families a knob applies to).
using FamilySet = unsigned;
inline constexpr FamilySet familyBit(Family family) { return 1u << static_cast<unsigned>(family); }
inline constexpr bool contains(FamilySet set, Family family) {
  return (set & familyBit(family)) != 0;
}

/// "auto(pointwise), auto(reduction) or auto(inner_persistent)": the families of `set`.
inline std::string familiesText(FamilySet set) {
  std::string text;
  unsigned left = 0;
  for (Family family : kFamilies)
    left += contains(set, family);
  for (Family family : kFamilies) {
    if (!contains(set, family))
      continue;
    text += std::string("auto(") + familyName(family) + ")";
    --left;
    text += left > 1 ? ", " : left == 1 ? " or " : "";
  }
  return text;
}

/// The sets Knobs.def writes: `Pointwise | Reduction`.
namespace family_sets {
inline constexpr FamilySet Pointwise = familyBit(Family::Pointwise);
inline constexpr FamilySet Reduction = familyBit(Family::Reduction);
inline constexpr FamilySet InnerPersistent = familyBit(Family::InnerPersistent);
inline constexpr FamilySet Matmul = familyBit(Family::Matmul);
inline constexpr FamilySet InnerOuter = familyBit(Family::InnerOuter);
} // namespace family_sets

} // namespace fsl::heuristics
