// Knobs.cpp — the knobs of an `= auto` declaration, read as Knobs.def lists them.
#include "heuristics/Knobs.h"

#include "ast/AST.h"

#include <llvm/Support/Casting.h>

namespace fsl::heuristics {
namespace {

template <typename T> T valueOf(const ast::LiteralExpr &literal);
template <> bool valueOf<bool>(const ast::LiteralExpr &literal) { return literal.boolValue; }
template <> int64_t valueOf<int64_t>(const ast::LiteralExpr &literal) { return literal.intValue; }

} // namespace

Knobs knobsOf(const ast::ScheduleDecl &decl, const sched::ScheduleHeader &header) {
  Knobs knobs;
  if (decl.autoKind)
    knobs.kind = decl.autoKind->text;
  knobs.when = header.when;
  knobs.declRange = header.range;
  knobs.fusionRange = header.fusionRange;
  for (const ast::Knob &knob : decl.knobs) {
    const auto &literal = llvm::cast<ast::LiteralExpr>(*knob.value);
    knobs.ranges[knob.name.text] = knob.range;
    // sched::checkAutoSchedule refuses the other knobs before the heuristics run.
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  if (knob.name.text == Name)                                                                      \
    knobs.Field = valueOf<Type>(literal);
#include "heuristics/Knobs.def"
  }
  return knobs;
}

std::vector<std::pair<std::string, bool>> knobsSet(const Knobs &knobs, FamilySet families) {
  using namespace family_sets;
  std::vector<std::pair<std::string, bool>> set;
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  if ((families & (Families)) != 0)                                                                \
    set.emplace_back(Name, knobs.Field.has_value());
#include "heuristics/Knobs.def"
  return set;
}

std::vector<std::pair<std::string, bool>> knobsOutside(const Knobs &knobs, FamilySet families) {
  using namespace family_sets;
  std::vector<std::pair<std::string, bool>> set;
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  if ((families & (Families)) == 0)                                                                \
    set.emplace_back(Name, knobs.Field.has_value());
#include "heuristics/Knobs.def"
  return set;
}

std::string knobNames(Family family) {
  using namespace family_sets;
  std::vector<std::string> names;
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  if (contains(Families, family))                                                                  \
    names.push_back(Name);
#include "heuristics/Knobs.def"
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return text;
}

} // namespace fsl::heuristics
