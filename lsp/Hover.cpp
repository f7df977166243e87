// Hover.cpp — one text per kind of name; directives, guards and knobs by position.
#include "lsp/Hover.h"

#include "lsp/CompilerFacts.h"
#include "lsp/KnobCatalog.h"

#include "ast/Printer.h"
#include "schedule/Printer.h"

#include <llvm/ADT/StringExtras.h>

namespace fsl::lsp {
namespace {

bool contains(llvm::SMRange range, llvm::SMLoc loc) {
  return range.Start.isValid() && loc.getPointer() >= range.Start.getPointer() &&
         loc.getPointer() <= range.End.getPointer();
}

llvm::StringRef sourceText(llvm::SMRange range) {
  return llvm::StringRef(range.Start.getPointer(),
                         range.End.getPointer() - range.Start.getPointer());
}

std::string code(llvm::StringRef text) { return "```fsl\n" + text.str() + "\n```\n"; }

/// The fusion's header as written, up to its body.
std::string signature(const ast::FusionDecl &fusion) {
  llvm::StringRef text = sourceText(fusion.range);
  return text.take_front(text.find('{')).rtrim().str();
}

std::string scheduleName(const pipeline::PlannedSchedule &planned) {
  std::string guard = sched::guardText(planned.block.header.when);
  std::string text = "schedule " + planned.block.header.fusion;
  if (!guard.empty())
    text += " when " + guard;
  if (planned.block.header.chosenByHeuristics)
    text += " (chosen by the heuristics)";
  return text;
}

std::string fusionHover(const Analysis &analysis, const SymbolIndex &index, const Symbol &symbol) {
  std::string text;
  if (const ast::FusionDecl *decl = index.fusionDecl(symbol))
    text += code(signature(*decl));
  else
    text += "fusion `" + symbol.name + "`\n";
  if (symbol.scope != analysis.path())
    text += "\nDeclared in " + symbol.scope + ".\n";
  const ir::Fusion *fusion = fusionIR(analysis, symbol.name);
  if (!fusion)
    return text + (analysis.program() ? "" : "\n(no Fusion IR: the file has errors)\n");
  std::vector<std::string> dims;
  for (const ir::Dim &dim : fusion->dims)
    dims.push_back(describeDim(*fusion, dim.name));
  text += "\nDimensions: " + llvm::join(dims, "; ") + "\n";
  std::vector<const pipeline::PlannedSchedule *> planned = plannedFor(analysis, symbol.name);
  if (!planned.empty()) {
    text += "\nSchedules:\n";
    for (const pipeline::PlannedSchedule *schedule : planned)
      text += "- " + scheduleName(*schedule) + "\n";
  }
  std::string kernels = describeKernels(analysis, *fusion);
  if (!kernels.empty())
    text += "\nKernels:\n" + kernels;
  return text;
}

std::string fnHover(const SymbolIndex &index, const Symbol &symbol, const Analysis &analysis) {
  const ast::FnDecl *fn = index.fnDecl(symbol);
  if (!fn)
    return "fn `" + symbol.name + "`";
  std::vector<std::string> params;
  for (const ast::Name &param : fn->params)
    params.push_back(param.text);
  std::string text = code("fn " + fn->name.text + "(" + llvm::join(params, ", ") +
                          ") = " + (fn->body ? ast::formatExpr(*fn->body) : "") + ";");
  text += "\nInlined at each call.";
  if (symbol.scope != analysis.path())
    text += " Declared in " + symbol.scope + ".";
  return text;
}

/// What the schedule block around `loc` does with a dimension or loop named `name`.
std::string inScheduleAt(const Analysis &analysis, llvm::SMLoc loc, llvm::StringRef name) {
  const ast::ScheduleDecl *decl = scheduleAt(analysis, loc);
  if (!decl)
    return "";
  std::string text;
  for (const pipeline::PlannedSchedule *planned : plannedFrom(analysis, *decl)) {
    if (!planned->built)
      continue;
    std::string loop = describeLoop(*planned->built, name);
    if (!loop.empty())
      text += "- " + loop +
              (planned->block.header.chosenByHeuristics ? " — " + scheduleName(*planned)
                                                        : std::string()) +
              "\n";
  }
  return text.empty() ? "" : "\nAfter the schedule:\n" + text;
}

std::string symbolHover(const Analysis &analysis, const SymbolIndex &index,
                        const Occurrence &occurrence, llvm::SMLoc loc) {
  const Symbol &symbol = occurrence.symbol;
  switch (symbol.kind) {
  case Symbol::Kind::Fusion:
    return fusionHover(analysis, index, symbol);
  case Symbol::Kind::Fn:
    return fnHover(index, symbol, analysis);
  case Symbol::Kind::FnParam:
    return "parameter `" + symbol.name + "` of fn `" + symbol.scope + "`";
  case Symbol::Kind::Import:
    if (symbol.scope == symbol.name)
      return "import `" + symbol.name + "` (not found: see the diagnostics)";
    return "import `" + symbol.name + "`\n\n" + symbol.scope;
  case Symbol::Kind::Dim: {
    std::string text = "dimension of fusion `" + symbol.scope + "`";
    if (const ir::Fusion *fusion = fusionIR(analysis, symbol.scope))
      text = code(describeDim(*fusion, symbol.name)) + "\n" + text;
    return text + "\n" + inScheduleAt(analysis, loc, symbol.name);
  }
  case Symbol::Kind::Value: {
    const ir::Fusion *fusion = fusionIR(analysis, symbol.scope);
    std::string role;
    std::string shape = fusion ? describeValue(*fusion, symbol.name, role) : "";
    if (shape.empty())
      return "value `" + symbol.name + "` of fusion `" + symbol.scope + "`";
    return code(symbol.name + ": " + shape) + "\n" + role + " of fusion `" + symbol.scope + "`";
  }
  case Symbol::Kind::Loop: {
    std::string text = "loop `" + symbol.name + "` of schedule `" + symbol.scope + "`\n";
    std::string after = inScheduleAt(analysis, loc, symbol.name);
    return text + (after.empty() ? "\n(no checked schedule: the file has errors)" : after);
  }
  }
  return "";
}

/// A directive, a `when` condition or a knob under the cursor.
std::optional<HoverText> scheduleHover(const Analysis &analysis, llvm::SMLoc loc) {
  const ast::ScheduleDecl *decl = scheduleAt(analysis, loc);
  if (!decl)
    return std::nullopt;
  std::vector<const pipeline::PlannedSchedule *> planned = plannedFrom(analysis, *decl);
  for (const ast::Knob &knob : decl->knobs)
    if (contains(knob.range, loc))
      if (const KnobInfo *info = findKnob(knob.name.text))
        return HoverText{describeKnob(*info), knob.range};
  for (const ast::SizeCondition &condition : decl->when) {
    if (!contains(condition.range, loc))
      continue;
    std::vector<std::string> conditions;
    for (const ast::SizeCondition &each : decl->when)
      conditions.push_back(sourceText(each.range).str());
    std::string text = "Variant of `" + decl->fusion.text + "` taken when `" +
                       llvm::join(conditions, " && ") +
                       "` holds (guarded variants are tried in order, then the unguarded one).";
    if (const ir::Fusion *fusion = fusionIR(analysis, decl->fusion.text)) {
      std::string kernels = describeKernels(analysis, *fusion);
      if (!kernels.empty())
        text += "\n\nThe fusion's variants:\n" + kernels;
    }
    return HoverText{text, condition.range};
  }
  for (size_t i = 0; i < decl->directives.size(); ++i) {
    const ast::Directive &directive = *decl->directives[i];
    if (!contains(directive.range, loc))
      continue;
    std::string text = code(sourceText(directive.range));
    for (const pipeline::PlannedSchedule *schedule : planned) {
      if (!schedule->built || schedule->block.header.chosenByHeuristics)
        continue;
      const std::vector<std::string> &notes = schedule->built->notes;
      for (size_t d = 0; d < schedule->block.directives.size() && d < notes.size(); ++d)
        if (schedule->block.directives[d].range.Start.getPointer() ==
                directive.range.Start.getPointer() &&
            !notes[d].empty())
          text += "\n" + notes[d];
    }
    return HoverText{text, directive.range};
  }
  if (decl->isAuto && contains(decl->range, loc)) {
    std::vector<sched::ScheduleBlock> blocks;
    for (const pipeline::PlannedSchedule *schedule : planned)
      blocks.push_back(schedule->block);
    if (blocks.empty())
      return HoverText{"`= auto`: no schedule chosen (the file has errors, or no heuristic "
                       "applies: see the diagnostics)",
                       decl->range};
    return HoverText{"The heuristics chose:\n" + code(sched::formatBlocks(blocks)), decl->range};
  }
  return std::nullopt;
}

} // namespace

std::optional<HoverText> hoverAt(const Analysis &analysis, const SymbolIndex &index,
                                 llvm::SMLoc loc) {
  if (const Occurrence *occurrence = index.at(loc))
    return HoverText{symbolHover(analysis, index, *occurrence, loc), occurrence->range};
  return scheduleHover(analysis, loc);
}

} // namespace fsl::lsp
