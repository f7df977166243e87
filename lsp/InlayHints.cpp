// InlayHints.cpp — the built schedules' notes at the ends of their directives.
#include "lsp/InlayHints.h"

#include "sema/Sema.h"

namespace fsl::lsp {

llvm::json::Array inlayHints(const Analysis &analysis, const mlir::lsp::Range &range) {
  llvm::json::Array hints;
  const pipeline::SchedulePlan *plan = analysis.schedules();
  if (!plan)
    return hints;
  for (const pipeline::PlannedSchedule &planned : plan->planned) {
    // The heuristics' blocks have no text of their own to annotate.
    if (!planned.built || planned.block.header.chosenByHeuristics)
      continue;
    const std::vector<std::string> &notes = planned.built->notes;
    for (size_t i = 0; i < planned.block.directives.size() && i < notes.size(); ++i) {
      const sched::Directive &directive = planned.block.directives[i];
      if (notes[i].empty() || !analysis.inMainFile(directive.range.End))
        continue;
      mlir::lsp::Position at = analysis.rangeOf(directive.range).end;
      if (at < range.start || range.end < at)
        continue;
      mlir::lsp::InlayHint hint(mlir::lsp::InlayHintKind::Type, at);
      hint.label = notes[i];
      hint.paddingLeft = true;
      hints.push_back(mlir::lsp::toJSON(hint));
    }
  }
  return hints;
}

} // namespace fsl::lsp
