// CompilerFacts.cpp — lookups into the compilation's results.
#include "lsp/CompilerFacts.h"

#include "kir/IR.h"
#include "kir/Printer.h"
#include "sema/Sema.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

namespace fsl::lsp {

std::vector<const pipeline::PlannedSchedule *> plannedFrom(const Analysis &analysis,
                                                           const ast::ScheduleDecl &decl) {
  std::vector<const pipeline::PlannedSchedule *> result;
  if (const pipeline::SchedulePlan *plan = analysis.schedules())
    for (const pipeline::PlannedSchedule &planned : plan->planned)
      if (planned.decl && planned.decl->range.Start.getPointer() == decl.range.Start.getPointer())
        result.push_back(&planned);
  return result;
}

std::vector<const pipeline::PlannedSchedule *> plannedFor(const Analysis &analysis,
                                                          llvm::StringRef fusion) {
  std::vector<const pipeline::PlannedSchedule *> result;
  if (const pipeline::SchedulePlan *plan = analysis.schedules())
    for (const pipeline::PlannedSchedule &planned : plan->planned)
      if (planned.block.header.fusion == fusion)
        result.push_back(&planned);
  return result;
}

static bool contains(llvm::SMRange range, llvm::SMLoc loc) {
  return range.Start.isValid() && loc.getPointer() >= range.Start.getPointer() &&
         loc.getPointer() <= range.End.getPointer();
}

const ast::ScheduleDecl *scheduleAt(const Analysis &analysis, llvm::SMLoc loc) {
  if (!analysis.syntax())
    return nullptr;
  for (const ast::DeclPtr &decl : analysis.syntax()->decls)
    if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get()))
      if (contains(schedule->range, loc))
        return schedule;
  return nullptr;
}

std::string fusionAt(const Analysis &analysis, llvm::SMLoc loc) {
  if (!analysis.syntax())
    return "";
  for (const ast::DeclPtr &decl : analysis.syntax()->decls) {
    if (!contains(decl->range, loc))
      continue;
    if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get()))
      return fusion->name.text;
    if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get()))
      return schedule->fusion.text;
  }
  return "";
}

const ir::Fusion *fusionIR(const Analysis &analysis, llvm::StringRef name) {
  if (const Program *program = analysis.program())
    for (const auto &fusion : program->fusions)
      if (fusion->name == name)
        return fusion.get();
  return nullptr;
}

std::string describeLoop(const sched::Schedule &schedule, llvm::StringRef name) {
  for (const sched::TensorSchedule &tensor : schedule.tensors) {
    int index = tensor.findLoop(name);
    if (index < 0)
      continue;
    const sched::Loop &loop = tensor.loops[index];
    std::string text = loop.name + ": " + loop.extent.text;
    std::vector<std::string> facts;
    if (loop.parallel != sched::Parallel::Serial)
      facts.push_back(sched::parallelName(loop.parallel).str());
    else
      facts.push_back("serial");
    if (loop.isReduction)
      facts.push_back("reduction");
    if (loop.vectorized)
      facts.push_back("vectorized");
    if (loop.unrolled)
      facts.push_back(loop.unrollFactor ? "unrolled by " + std::to_string(*loop.unrollFactor)
                                        : "unrolled fully");
    if (loop.unswitched)
      facts.push_back("unswitched");
    facts.push_back(loop.extent.isStatic() ? "static" : "runtime extent");
    if (!loop.exact)
      facts.push_back("with a remainder");
    return text + " (" + llvm::join(facts, ", ") + ") in " + tensor.name + "'s loop nest";
  }
  return "";
}

static std::string shapeText(ir::DType dtype, const std::vector<ir::DimId> &dims,
                             const ir::Fusion &fusion) {
  std::vector<std::string> names;
  for (ir::DimId dim : dims)
    names.push_back(dim < fusion.dims.size() ? fusion.dims[dim].name : "?");
  std::string text = ir::dtypeName(dtype).str();
  if (!names.empty())
    text += "[" + llvm::join(names, ", ") + "]";
  return text;
}

std::string describeValue(const ir::Fusion &fusion, llvm::StringRef name, std::string &role) {
  for (const ir::Param &param : fusion.params)
    if (param.name == name) {
      role = param.isInout ? "inout parameter" : "parameter";
      return shapeText(param.dtype, param.dims, fusion);
    }
  for (const ir::Output &output : fusion.outputs)
    if (output.name == name) {
      role = "output";
      return shapeText(output.dtype, output.dims, fusion);
    }
  for (const auto &value : fusion.values)
    if (value->name == name || llvm::is_contained(value->aliases, name)) {
      role = "let";
      return shapeText(value->dtype, value->dims, fusion);
    }
  return "";
}

std::string describeDim(const ir::Fusion &fusion, llvm::StringRef name) {
  std::optional<ir::DimId> id = fusion.findDim(name);
  if (!id)
    return "";
  const ir::Dim &dim = fusion.dims[*id];
  if (dim.staticExtent)
    return llvm::formatv("{0} = {1} (static)", dim.name, *dim.staticExtent).str();
  return dim.name + " (a runtime size, taken from the tensors at each call)";
}

static std::string exprsText(const std::array<kir::Expr, 3> &exprs) {
  std::vector<std::string> parts;
  for (const kir::Expr &e : exprs)
    parts.push_back(e ? kir::toString(e) : "1");
  return "(" + llvm::join(parts, ", ") + ")";
}

std::string describeKernels(const Analysis &analysis, const ir::Fusion &fusion) {
  const pipeline::Compilation *compilation = analysis.compilation();
  const kir::Program *program =
      analysis.lowered() && compilation ? compilation->programOf(fusion) : nullptr;
  if (!program)
    return "";
  std::string text;
  llvm::raw_string_ostream out(text);
  for (const kir::Variant &variant : program->variants) {
    out << "- " << (variant.guardText.empty() ? "always" : "when " + variant.guardText) << ":\n";
    for (unsigned launch : variant.launches) {
      if (launch >= program->kernels.size())
        continue;
      const kir::Kernel &kernel = program->kernels[launch];
      const kir::LaunchShape &shape = kernel.launch;
      out << "  - `" << kernel.name << "`: grid " << exprsText(shape.grid)
          << (shape.gridFromOccupancy ? " (at most; persistent)" : "") << ", block "
          << exprsText(shape.block);
      std::array<std::optional<int64_t>, 3> block;
      int64_t threads = 1;
      bool staticThreads = true;
      for (const kir::Expr &e : shape.block) {
        std::optional<int64_t> value = e ? kir::evaluateStatic(e) : std::optional<int64_t>(1);
        staticThreads = staticThreads && value;
        if (value)
          threads *= *value;
      }
      if (staticThreads)
        out << " = " << threads << " threads";
      if (shape.cluster[0] || shape.cluster[1] || shape.cluster[2])
        out << ", cluster " << exprsText(shape.cluster);
      out << ", dynamic shared memory "
          << (shape.sharedBytes ? kir::toString(shape.sharedBytes) : std::string("0")) << " bytes";
      std::vector<std::string> registers;
      if (shape.maxRegisters)
        registers.push_back("at most " + std::to_string(*shape.maxRegisters) + " a thread");
      if (shape.maxThreads)
        registers.push_back(
            "__launch_bounds__(" + std::to_string(*shape.maxThreads) +
            (shape.minBlocksPerSm ? ", " + std::to_string(*shape.minBlocksPerSm) : std::string()) +
            ")");
      if (!shape.registerNote.empty())
        registers.push_back(shape.registerNote);
      out << ", registers: "
          << (registers.empty()
                  ? std::string("left to ptxas (`fslc --resource-usage` reports them)")
                  : llvm::join(registers, "; "))
          << "\n";
    }
  }
  return text;
}

} // namespace fsl::lsp
