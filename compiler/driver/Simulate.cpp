// Simulate.cpp — random inputs shared by the simulator and the reference, then a
// per-output comparison.
#include "driver/Simulate.h"

#include "driver/Evaluate.h"
#include "ir/Printer.h"
#include "kir/Mutator.h"
#include "sim/Simulator.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>

namespace fsl {

Tolerance toleranceFor(ir::DType type) {
  switch (type) {
  case ir::DType::BF16:
    return {1e-2, 1e-2};
  case ir::DType::F16:
    return {1e-3, 1e-3};
  case ir::DType::F32:
    return {1e-5, 1e-5};
  case ir::DType::F64:
    return {1e-12, 1e-12};
  case ir::DType::Bool:
  case ir::DType::I32:
  case ir::DType::I64:
    return {0, 0}; // exact
  }
  FSL_UNREACHABLE("dtype");
}

std::string compareOutputs(const ir::Fusion &fusion, const eval::EvalResult &simulated,
                           const eval::EvalResult &reference, std::vector<double> *maxErrors) {
  for (size_t o = 0; o < fusion.outputs.size(); ++o) {
    const ir::Output &output = fusion.outputs[o];
    Tolerance tolerance = toleranceFor(output.dtype);
    double worst = 0;
    for (size_t i = 0; i < reference.outputs[o].size(); ++i) {
      double want = reference.outputs[o][i], got = simulated.outputs[o][i];
      bool ok = std::isnan(want) ? std::isnan(got)
                : std::isinf(want)
                    ? got == want
                    : std::fabs(got - want) <= tolerance.abs + tolerance.rel * std::fabs(want);
      if (!std::isnan(want) && !std::isinf(want))
        worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - want));
      if (!ok)
        return llvm::formatv("output {0} element {1}: simulated {2}, reference {3} (tolerance {4} "
                             "+ {5} x |reference|)",
                             output.name, i, llvm::format("%.9g", got), llvm::format("%.9g", want),
                             llvm::format("%g", tolerance.abs), llvm::format("%g", tolerance.rel))
            .str();
    }
    if (maxErrors)
      maxErrors->push_back(worst);
  }
  return "";
}

namespace {

/// The first variant whose guard holds for these sizes.
const kir::Variant *chooseVariant(const kir::Program &program,
                                  const std::vector<int64_t> &extents) {
  for (const kir::Variant &variant : program.variants) {
    if (!variant.guard)
      return &variant;
    kir::Expr bound = kir::substitute(variant.guard, [&](const kir::VarPtr &v) -> kir::Expr {
      for (size_t d = 0; d < program.dims.size(); ++d)
        if (program.dims[d] == v)
          return kir::index(extents[d]);
      return nullptr;
    });
    if (kir::evaluateStatic(bound).value_or(0) != 0)
      return &variant;
  }
  return nullptr;
}

} // namespace

RunResult simulateAndCompare(const ir::Fusion &fusion, const kir::Program &program,
                             const std::string &assignments, uint64_t seed, int64_t misalign,
                             DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                             const LaunchLimits &limits,
                             const std::vector<const ir::Fusion *> &otherFusions) {
  // The evaluate path parses the sizes and makes the inputs; reuse it silently.
  std::string ignored;
  llvm::raw_string_ostream sink(ignored);
  eval::EvalRequest request;
  if (!makeEvaluationRequest(fusion, assignments, seed, otherFusions, diagnostics, sink, request,
                             RunMode::Simulate))
    return RunResult::Refused;
  llvm::Expected<eval::EvalResult> reference = eval::evaluate(fusion, request);
  if (!reference) {
    diagnostics.report(DiagId::InvalidSimulateArgument, llvm::SMRange(),
                       llvm::toString(reference.takeError()));
    return RunResult::Refused;
  }
  const kir::Variant *variant = chooseVariant(program, reference->extents);
  if (!variant) {
    diagnostics.report(DiagId::InvalidSimulateArgument, llvm::SMRange(),
                       "no schedule of " + fusion.name + " applies to these sizes");
    return RunResult::Refused;
  }
  const kir::Kernel *chosen = &program.kernels[variant->launches.front()];
  sim::SimulatorLimits simulatorLimits;
  simulatorLimits.maxSharedBytesPerBlock = limits.maxSharedBytesPerBlock;
  simulatorLimits.maxThreadsPerBlock = limits.maxThreadsPerBlock;
  simulatorLimits.maxBlockDim = limits.maxBlockDim;
  simulatorLimits.maxGridDim = limits.maxGridDim;
  simulatorLimits.maxClusterSize = limits.maxClusterSize;
  llvm::Expected<eval::EvalResult> simulated =
      sim::simulate(program, request, misalign, simulatorLimits);
  if (!simulated) {
    diagnostics.report(DiagId::SimulationFault, chosen->origin.range,
                       chosen->name + ": " + llvm::toString(simulated.takeError()));
    return RunResult::Failed;
  }
  std::vector<double> maxErrors;
  std::string mismatch = compareOutputs(fusion, *simulated, *reference, &maxErrors);
  std::vector<std::string> sizes;
  for (size_t i = 0; i < fusion.dims.size(); ++i)
    sizes.push_back(fusion.dims[i].name + "=" + std::to_string(reference->extents[i]));
  out << "simulate " << fusion.name << " (" << chosen->name << "): " << llvm::join(sizes, ", ")
      << "; seed " << seed << "\n";
  for (size_t o = 0; o < fusion.outputs.size() && o < maxErrors.size(); ++o)
    out << "  output " << fusion.outputs[o].name << ": "
        << ir::typeString(fusion, fusion.outputs[o].dtype, fusion.outputs[o].dims)
        << "  max |error| " << llvm::format("%.3g", maxErrors[o]) << "\n";
  if (!mismatch.empty()) {
    diagnostics.report(DiagId::SimulationMismatch, chosen->origin.range,
                       chosen->name + ": " + mismatch);
    return RunResult::Failed;
  }
  out << "  matches the float64 reference\n";
  return RunResult::Ok;
}

} // namespace fsl
