// Heuristics.cpp — the entry point: the fusion's shape, its family (named or classified),
// that family's choice and directives, and the refusal of every knob no family read.
#include "heuristics/Heuristics.h"

#include "heuristics/FastMath.h"
#include "heuristics/FusionShape.h"
#include "heuristics/InnerOuter.h"
#include "heuristics/InnerPersistent.h"
#include "heuristics/Matmul.h"
#include "heuristics/Pointwise.h"
#include "heuristics/Reduction.h"

namespace fsl::heuristics {
namespace {

/// A family's choice turned into blocks, its verdicts after `verdicts`.
template <typename Params, typename Blocks>
Choice blocksOf(const Params &params, Blocks blocks, KnobVerdicts &verdicts) {
  if (!params.declined.empty())
    return {{}, params.declined};
  verdicts.append(params.verdicts);
  return {blocks(params), ""};
}

} // namespace

Choice chooseSchedules(const ir::Fusion &fusion, const Target &target, const Knobs &knobs,
                       DiagnosticEngine *diagnostics) {
  BlockContext context;
  context.knobs = &knobs;
  context.header.fusion = fusion.name;
  // Without an `= auto` declaration, the choice is for the fusion itself.
  context.header.fusionRange = knobs.fusionRange.isValid() ? knobs.fusionRange : fusion.range;
  context.header.range = knobs.declRange.isValid() ? knobs.declRange : fusion.range;
  context.header.chosenByHeuristics = true;
  const FusionShape shape = shapeOf(fusion);
  KnobVerdicts verdicts;
  std::string kind;
  auto dispatch = [&]() -> Choice {
    // The approximate functions, for every family (FastMath.h).
    FastMathChoice fastExp = chooseFastExp(shape, knobs, verdicts);
    context.fastExp = fastExp.on;
    context.fastExpReason = fastExp.reason;
    FastMathChoice fastTanh = chooseFastTanh(shape, knobs, verdicts);
    context.fastTanh = fastTanh.on;
    context.fastTanhReason = fastTanh.reason;
    FastMathChoice fastDiv = chooseFastDiv(shape, knobs, verdicts);
    context.fastDiv = fastDiv.on;
    context.fastDivReason = fastDiv.reason;
    if (shape.matmul) {
      kind = familyName(Family::Matmul);
      if (!knobs.kind.empty() && knobs.kind != kind)
        return {{},
                "auto(" + knobs.kind +
                    ") on a fusion with a matrix product (auto(matmul) schedules it)"};
      return blocksOf(
          chooseMatmul(shape, target, knobs),
          [&](const MatmulParams &params) { return matmulBlocks(shape, params, context); },
          verdicts);
    }
    if (!shape.hasOutput)
      return {{}, "the fusion has no output"};
    kind = knobs.kind.empty() ? familyName(plainAutoFamily(fusion)) : knobs.kind;
    auto rows = [&](const RowParams &params) { return rowBlocks(shape, params, context); };
    switch (familyNamed(kind).value_or(Family::Matmul)) {
    case Family::Pointwise:
      return blocksOf(
          choosePointwise(shape, target, knobs),
          [&](const PointwiseParams &params) { return pointwiseBlocks(shape, params, context); },
          verdicts);
    case Family::Reduction:
      return blocksOf(chooseReduction(shape, target, knobs), rows, verdicts);
    case Family::InnerPersistent:
      return blocksOf(chooseInnerPersistent(shape, target, knobs), rows, verdicts);
    case Family::InnerOuter:
      return blocksOf(
          chooseInnerOuter(fusion, target, knobs),
          [&](const InnerOuterParams &params) { return innerOuterBlocks(params, context); },
          verdicts);
    case Family::Matmul: // without a matrix product
      break;
    }
    return {{}, "auto(" + kind + ") is not implemented yet"};
  };
  Choice choice = dispatch();
  // A heuristic that declines the fusion takes the knobs with it: `why` says why.
  if (choice.blocks.empty())
    return choice;
  // Whatever the heuristic did not use is refused, so no knob is ever ignored.
  using namespace family_sets;
  for (const auto &[name, set] : knobsSet(knobs, Pointwise | Reduction | InnerPersistent))
    if (set && !verdicts.honoured.count(name))
      verdicts.refuse(name, verdicts.unused.empty()
                                ? "auto(" + kind + ") does not read it for '" + fusion.name + "'"
                                : verdicts.unused);
  if (verdicts.refused.empty())
    return choice;
  for (const auto &[name, reason] : verdicts.refused) {
    auto at = knobs.ranges.find(name);
    if (diagnostics)
      diagnostics->report(DiagId::AutoKnobUnsupported,
                          at != knobs.ranges.end() ? at->second : llvm::SMRange(), name, reason);
  }
  return {{},
          "knob '" + verdicts.refused.front().first +
              "' cannot be honoured: " + verdicts.refused.front().second};
}

Family plainAutoFamily(const ir::Fusion &fusion) {
  FusionShape shape = shapeOf(fusion);
  if (shape.matmul)
    return Family::Matmul;
  // A row reduction next to a column reduction (a norm's backward).
  if (innerOuterMismatch(fusion).empty())
    return Family::InnerOuter;
  return shape.family;
}

} // namespace fsl::heuristics
