// Lower.cpp — the pass pipeline and the program of a fusion.
#include "lower/Lower.h"

#include "kir/Printer.h"
#include "kir/Simplify.h"
#include "kir/Verifier.h"
#include "lower/Passes.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl {
namespace lower {

bool simplifyIndices(LowerContext &context) {
  context.kernel.body = kir::simplify(context.kernel.body);
  return true;
}

const std::vector<PassInfo> &passList() {
  static const std::vector<PassInfo> passes = {
      {"build-loop-nests", buildLoopNests},
      {"bounds", insertBounds},
      {"reciprocal-division", reciprocalDivision},
      {"store-rounding", storeRounding},
      {"vectorize", vectorizeAccesses},
      {"early-loads", earlyLoads},
      {"prefetch", prefetchBatches},
      {"unswitch", unswitchNests},
      {"launch-shape", computeLaunchShape},
      {"simplify", simplifyIndices},
  };
  return passes;
}

} // namespace lower

std::vector<std::string> loweringPassNames() {
  std::vector<std::string> names;
  for (const lower::PassInfo &pass : lower::passList())
    names.push_back(pass.name);
  return names;
}

namespace {

kir::BinaryOp comparison(sched::Comparison comparison) {
  switch (comparison) {
  case sched::Comparison::Lt:
    return kir::BinaryOp::Lt;
  case sched::Comparison::Le:
    return kir::BinaryOp::Le;
  case sched::Comparison::Gt:
    return kir::BinaryOp::Gt;
  case sched::Comparison::Ge:
    return kir::BinaryOp::Ge;
  case sched::Comparison::Eq:
    return kir::BinaryOp::Eq;
  case sched::Comparison::Ne:
    return kir::BinaryOp::Ne;
  }
  FSL_UNREACHABLE("a comparison");
}

std::optional<kir::Kernel> lowerKernel(const sched::Schedule &schedule, const std::string &name,
                                       const std::vector<kir::VarPtr> &dims,
                                       const lower::LowerOptions &options,
                                       DiagnosticEngine &diagnostics, const PrintAfter &print) {
  std::unique_ptr<lower::Plan> plan = lower::planKernel(schedule, diagnostics);
  if (!plan)
    return std::nullopt;
  lower::LowerContext context(*plan, options, diagnostics);
  context.dimVars = dims;
  context.kernel.name = name;
  context.kernel.origin.range = schedule.header.fusionRange;
  context.kernel.comment = name + ": schedule of " + schedule.fusion->name;
  if (!schedule.header.when.empty())
    context.kernel.comment += " when " + sched::guardText(schedule.header.when);
  for (const lower::PassInfo &pass : lower::passList()) {
    if (!pass.run(context))
      return std::nullopt;
    std::string broken = kir::verifyKernel(context.kernel);
    if (!broken.empty()) {
      std::string message =
          "Kernel IR invalid after pass '" + std::string(pass.name) + "': " + broken;
      internalError(__FILE__, __LINE__, "verifyKernel", message.c_str());
    }
    if (print.out && (print.all || print.passes.count(pass.name))) {
      *print.out << "// ----- Kernel IR after " << pass.name << " -----\n";
      kir::printKernel(context.kernel, *print.out);
    }
  }
  return std::move(context.kernel);
}

} // namespace

std::unique_ptr<kir::Program> lowerFusion(const ir::Fusion &fusion,
                                          const std::vector<const sched::Schedule *> &schedules,
                                          const lower::LowerOptions &options,
                                          DiagnosticEngine &diagnostics, const PrintAfter &print) {
  auto program = std::make_unique<kir::Program>();
  program->fusion = &fusion;
  for (const ir::Dim &dim : fusion.dims)
    program->dims.push_back(dim.staticExtent ? nullptr : kir::makeVar(dim.name, ir::DType::I64));
  bool ok = true;
  std::vector<kir::Variant> guarded, fallback;
  for (const sched::Schedule *schedule : schedules) {
    std::string name = fusion.name + "_v" + std::to_string(program->kernels.size());
    std::optional<kir::Kernel> kernel =
        lowerKernel(*schedule, name, program->dims, options, diagnostics, print);
    if (!kernel) {
      ok = false;
      continue;
    }
    kir::Variant variant;
    for (const sched::SizeGuard &guard : schedule->header.when) {
      kir::Expr extent = program->dims[guard.dim]
                             ? kir::var(program->dims[guard.dim])
                             : kir::index(*fusion.dims[guard.dim].staticExtent);
      variant.guard = variant.guard &&
                      kir::binary(comparison(guard.comparison), extent, kir::index(guard.bound));
    }
    variant.guardText = sched::guardText(schedule->header.when);
    variant.launches = {static_cast<unsigned>(program->kernels.size())};
    program->kernels.push_back(std::move(*kernel));
    (variant.guard ? guarded : fallback).push_back(variant);
  }
  if (!ok)
    return nullptr;
  program->variants = guarded;
  program->variants.insert(program->variants.end(), fallback.begin(), fallback.end());
  return program;
}

} // namespace fsl
