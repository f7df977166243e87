// Lower.cpp — the pass pipeline and the program of a fusion.
#include "lower/Lower.h"

#include "kir/Printer.h"
#include "kir/Simplify.h"
#include "kir/Verifier.h"
#include "lower/Passes.h"
#include "lower/Pointwise.h"
#include "lower/matmul/Matmul.h"
#include "lower/matmul/PartialTiles.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/TimeProfiler.h>
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
      {"cache-inputs", cacheInputs},
      {"next-row", prefetchNextRow},
      {"early-loads", earlyLoads},
      {"prefetch", prefetchBatches},
      {"unswitch", unswitchNests},
      {"launch-shape", computeLaunchShape},
      {"simplify", simplifyIndices},
  };
  return passes;
}

const std::vector<PassInfo> &gridRowsPassList() {
  static const std::vector<PassInfo> passes = {
      {"build-grid-rows", buildGridRows},
      {"simplify", simplifyIndices},
  };
  return passes;
}

const std::vector<PassInfo> &arrivalsZeroPassList() {
  static const std::vector<PassInfo> passes = {
      {"zero-arrivals", buildArrivalsZero},
      {"simplify", simplifyIndices},
  };
  return passes;
}

const std::vector<PassInfo> &matmulPassList() {
  static const std::vector<PassInfo> passes = {
      {"matmul-tile-scheduler", buildMatmulTileScheduler},
      {"matmul-main-loop", buildMatmulMainLoop},
      {"matmul-epilogue", buildMatmulEpilogue},
      {"simplify", simplifyIndices},
  };
  return passes;
}

} // namespace lower

std::vector<std::string> loweringPassNames() {
  std::vector<std::string> names;
  for (const auto *list : {&lower::passList(), &lower::gridRowsPassList(),
                           &lower::arrivalsZeroPassList(), &lower::matmulPassList()})
    for (const lower::PassInfo &pass : *list)
      if (!llvm::is_contained(names, pass.name))
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

/// The verifier after a pass, then --print-after.
void afterPass(const char *name, const kir::Kernel &kernel, const PrintAfter &print) {
  std::string broken = kir::verifyKernel(kernel);
  if (!broken.empty()) {
    std::string message = "Kernel IR invalid after pass '" + std::string(name) + "': " + broken;
    internalError(__FILE__, __LINE__, "verifyKernel", message.c_str());
  }
  if (print.out && (print.all || print.passes.count(name))) {
    *print.out << "// ----- Kernel IR after " << name << " -----\n";
    kir::printKernel(kernel, *print.out);
  }
}

/// A kernel's context: its name, origin and comment.
void nameKernel(lower::LowerContext &context, const sched::Schedule &schedule,
                const std::string &name, const std::string &role) {
  context.kernel.name = name;
  context.kernel.origin.range = schedule.header.fusionRange;
  context.kernel.comment = name + ": " + role + schedule.fusion->name;
  if (!schedule.header.when.empty())
    context.kernel.comment += " when " + sched::guardText(schedule.header.when);
}

/// Runs `passes` on `context`, the verifier (and --print-after) after each.
bool runPasses(const std::vector<lower::PassInfo> &passes, lower::LowerContext &context,
               const PrintAfter &print) {
  for (const lower::PassInfo &pass : passes) {
    llvm::TimeTraceScope passScope(pass.name); // --time-trace: one event per pass
    if (!pass.run(context))
      return false;
    afterPass(pass.name, context.kernel, print);
  }
  return true;
}

/// A grid reduction's workspaces: each reduction's partial accumulators (and argmax's
/// indices), one a row and block of the grid loop.
void addGridPartials(lower::Plan &plan, const lower::LowerContext &context, const std::string &name,
                     kir::Program &program) {
  kir::Expr rows = kir::index(1);
  for (ir::DimId dim : plan.gridRowDims)
    rows = rows * context.dimExtent(dim);
  const lower::PlannedLoop &grid = plan.loops[plan.gridLoop];
  kir::Expr elements = rows * context.extentOf(grid.extent);
  auto nameOf = [](const ir::Value *value) {
    return value->name.empty() ? "v" + std::to_string(value->id)
                               : value->name + "_" + std::to_string(value->id);
  };
  // A one-pass pair: one workspace an accumulator, in the order of the block combine's
  // tuple ((max, sum) or (count, mean, M2)), named as the kernels' registers.
  for (const ir::OnePassPair &pair : plan.gridPairs) {
    lower::Plan::GridPartials partials;
    partials.reduction = pair.first;
    partials.pair = pair;
    for (const ir::OnePassAccumulator &member : ir::onePassAccumulators(pair)) {
      auto buffer = std::make_shared<kir::Buffer>();
      buffer->name = name + "_" + nameOf(member.owner) + member.suffix;
      buffer->dtype = pair.accumulator;
      buffer->space = kir::MemorySpace::Global;
      buffer->written = true;
      program.workspaces.push_back(
          {buffer, elements,
           "grid reduction over " + grid.name + ", one pass: the partial " + member.what + " of " +
               nameOf(pair.first) + " a row and block, for " + name + "_rows"});
      partials.tuple.push_back(buffer);
    }
    plan.gridPartials.push_back(partials);
  }
  for (const ir::Value *value : plan.gridReduced) {
    std::string who = nameOf(value);
    // A column reduction stored as an output is named after it (`dweight`).
    for (const ir::Output *output : plan.columnOutputs)
      if (value->name.empty() && output->value == value)
        who = output->name;
    auto workspace = [&](const std::string &suffix, ir::DType dtype, const std::string &what) {
      auto buffer = std::make_shared<kir::Buffer>();
      buffer->name = name + "_" + who + suffix;
      buffer->dtype = dtype;
      buffer->space = kir::MemorySpace::Global;
      buffer->written = true;
      program.workspaces.push_back(
          {buffer, elements,
           "grid reduction over " + grid.name + ": " + what + " of " + who +
               (plan.innerOuter() ? " a block and column, for " : " a row and block, for ") +
               (plan.schedule->gridSync ? "the blocks after the grid barrier" : name + "_rows")});
      return buffer;
    };
    bool isArg = ir::isArgReduction(value->op);
    lower::Plan::GridPartials partials;
    partials.reduction = value;
    partials.values = workspace(
        "_partials", lower::registerType(isArg ? value->operands[0]->dtype : value->dtype),
        "the partial " + ir::opName(value->op).str());
    if (isArg)
      partials.indices = workspace("_partial_indices", ir::DType::I64, "the best value's index");
    plan.gridPartials.push_back(partials);
  }
}

/// The kernels of one schedule, launched in order: one; for a grid reduction the blocks'
/// partial results and the kernel that combines them; for a split-K or stream-K product
/// the kernel that zeroes the tiles' counters, then the product's (with workspaces in
/// `program`).
std::optional<std::vector<kir::Kernel>> lowerKernels(const sched::Schedule &schedule,
                                                     const std::string &name, kir::Program &program,
                                                     const lower::LowerOptions &options,
                                                     DiagnosticEngine &diagnostics,
                                                     const PrintAfter &print) {
  // A schedule built with a dimension static that the fusion has at run time (a guard
  // `when H == 4096` pins it) neither reads nor takes it.
  std::vector<kir::VarPtr> dims = program.dims;
  for (ir::DimId dim = 0; dim < dims.size(); ++dim)
    if (schedule.fusion->dims[dim].staticExtent)
      dims[dim] = nullptr;
  if (lower::hasMatmul(*schedule.fusion)) {
    if (schedule.gridSync) {
      diagnostics.report(DiagId::GridSyncUnsupported, schedule.gridSync->range,
                         "a matrix product's tiles are not a grid reduction (split_k and "
                         "stream_k add their parts in the kernel already)");
      return std::nullopt;
    }
    // A matrix product has a path of its own (lower/matmul/Matmul.h): its loops are the mma
    // tiles, planned from the declarative schedule rather than from loop nests.
    std::unique_ptr<lower::MatmulPlan> matmul =
        lower::planMatmul(schedule, options.smCount, diagnostics);
    if (!matmul)
      return std::nullopt;
    auto extent = [&](ir::DimId dim) {
      return dims[dim] ? kir::var(dims[dim]) : kir::index(*schedule.fusion->dims[dim].staticExtent);
    };
    bool streamK = matmul->tileWalk == lower::TileWalk::StreamK;
    std::vector<kir::Kernel> kernels;
    if (matmul->partialTiles()) {
      // Parts of tiles: f32 slots of a consumer group's accumulators, and a counter a tile.
      auto workspace = [&](const std::string &suffix, ir::DType dtype, kir::Expr elements,
                           std::string comment) {
        auto buffer = std::make_shared<kir::Buffer>();
        buffer->name = name + suffix;
        buffer->dtype = dtype;
        buffer->space = kir::MemorySpace::Global;
        buffer->written = true;
        program.workspaces.push_back({buffer, std::move(elements), std::move(comment)});
        return buffer;
      };
      kir::Expr tiles = lower::outputTiles(*matmul, extent);
      std::string tile = std::to_string(matmul->tileM) + " x " + std::to_string(matmul->tileN);
      kir::Expr slotElements = kir::index(lower::partialSlotElements(*matmul));
      matmul->partials =
          streamK ? workspace("_partials", ir::DType::F32,
                              kir::index(matmul->smCount * 2) * slotElements,
                              "stream_k: two f32 " + tile + " pieces of tiles a CTA of " + name)
                  : workspace("_partials", ir::DType::F32,
                              kir::index(matmul->splitK) * tiles * slotElements,
                              "split_k " + std::to_string(matmul->splitK) + ": the f32 " + tile +
                                  " parts of each tile of " + name);
      matmul->arrivals = workspace("_arrivals", ir::DType::I32, tiles,
                                   "the parts of each tile of " + name + " stored so far");
      lower::LowerContext zero(*matmul, options, diagnostics);
      zero.dimVars = dims;
      nameKernel(zero, schedule, name + "_zero",
                 "the tiles' arrival counters zeroed, before the product, of the schedule of ");
      if (!runPasses(lower::arrivalsZeroPassList(), zero, print))
        return std::nullopt;
      kernels.push_back(std::move(zero.kernel));
    }
    lower::LowerContext products(*matmul, options, diagnostics);
    products.dimVars = dims;
    nameKernel(products, schedule, name,
               matmul->splitK > 1 ? "split_k: parts of K, added by the last, of the schedule of "
               : streamK          ? "stream_k: whole tiles and pieces of tiles, of the schedule of "
                                  : "schedule of ");
    if (!runPasses(lower::matmulPassList(), products, print))
      return std::nullopt;
    kernels.push_back(std::move(products.kernel));
    return kernels;
  }
  std::unique_ptr<lower::Plan> plan = lower::planKernel(schedule, diagnostics, options.plan);
  if (!plan)
    return std::nullopt;
  lower::LowerContext context(*plan, options, diagnostics);
  context.dimVars = dims;
  bool grid = plan->gridLoop >= 0;
  if (grid)
    addGridPartials(*plan, context, name, program);
  nameKernel(context, schedule, name,
             grid && schedule.gridSync
                 ? "the blocks' partial results, added after a grid barrier, of the schedule of "
             : grid ? "the blocks' partial results (a grid reduction) of the schedule of "
                    : "schedule of ");
  if (!runPasses(lower::passList(), context, print))
    return std::nullopt;
  std::vector<kir::Kernel> kernels;
  kernels.push_back(std::move(context.kernel));
  // `grid_sync`: the first kernel finishes the grid reduction after a grid barrier.
  if (grid && !schedule.gridSync) {
    lower::LowerContext rows(*plan, options, diagnostics);
    rows.dimVars = dims;
    nameKernel(rows, schedule, name + "_rows",
               "the blocks' partial results combined a row, then the row outputs, of the "
               "schedule of ");
    if (!runPasses(lower::gridRowsPassList(), rows, print))
      return std::nullopt;
    kernels.push_back(std::move(rows.kernel));
  }
  return kernels;
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
    std::optional<std::vector<kir::Kernel>> kernels =
        lowerKernels(*schedule, name, *program, options, diagnostics, print);
    if (!kernels) {
      ok = false;
      continue;
    }
    kir::Variant variant;
    for (const sched::SizeGuard &guard : schedule->header.when) {
      kir::Expr extent = program->dims[guard.dim]
                             ? kir::var(program->dims[guard.dim])
                             : kir::index(*fusion.dims[guard.dim].staticExtent);
      if (guard.modulus > 0)
        extent = kir::binary(kir::BinaryOp::Mod, extent, kir::index(guard.modulus));
      variant.guard = variant.guard &&
                      kir::binary(comparison(guard.comparison), extent, kir::index(guard.bound));
    }
    variant.guardText = sched::guardText(schedule->header.when);
    for (kir::Kernel &kernel : *kernels) {
      variant.launches.push_back(static_cast<unsigned>(program->kernels.size()));
      program->kernels.push_back(std::move(kernel));
    }
    (variant.guard ? guarded : fallback).push_back(variant);
  }
  if (!ok)
    return nullptr;
  program->variants = guarded;
  program->variants.insert(program->variants.end(), fallback.begin(), fallback.end());
  return program;
}

} // namespace fsl
