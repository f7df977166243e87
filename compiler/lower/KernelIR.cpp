// KernelIR.cpp — queries and the --emit=kernel-ir printer.
#include "lower/KernelIR.h"

#include "ir/Printer.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::kir {

std::vector<int> Kernel::loopsOn(sched::Parallel parallel) const {
  std::vector<int> result;
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].parallel == parallel)
      result.push_back(static_cast<int>(i));
  return result;
}

std::vector<int> Kernel::serialLoops() const { return loopsOn(sched::Parallel::Serial); }

std::optional<int64_t> Kernel::staticThreads() const {
  int64_t threads = 1;
  for (const KernelLoop &loop : loops)
    if (sched::isThreadIndex(loop.parallel)) {
      if (!loop.extent.isStatic())
        return std::nullopt;
      threads *= *loop.extent.value;
    }
  return threads;
}

std::string valueName(const ir::Value &value) {
  if (!value.name.empty())
    return value.name + "_" + std::to_string(value.id);
  return "v" + std::to_string(value.id);
}

void printKernel(const Kernel &kernel, llvm::raw_ostream &out) {
  const ir::Fusion &fusion = *kernel.fusion;
  out << "kernel " << kernel.name << "\n";
  for (const KernelLoop &loop : kernel.loops) {
    out << "  loop " << loop.name << " extent " << loop.extent.text << " "
        << sched::parallelName(loop.parallel);
    if (loop.vectorized)
      out << " vectorize";
    if (loop.unrolled)
      out << " unroll";
    out << " : " << fusion.dims[loop.root].name << " += " << loop.name << " * " << loop.stride.text;
    if (kernel.clampedRoots.count(loop.root) && !loop.exact)
      out << " (clamped: past the end, reads repeat the last and stores are skipped)";
    else if (!loop.exact)
      out << " (predicated)";
    out << "\n";
  }
  for (unsigned id : kernel.persistent)
    out << "  persistent buffer " << valueName(*fusion.values[id]) << ": " << kernel.bufferElements
        << " elements per thread in "
        << (kernel.persistentShared.count(id) ? "shared memory" : "registers") << "\n";
  for (const ir::Value *input : kernel.earlyInputs)
    out << "  early load " << fusion.params[input->paramIndex].name << " before phase 0\n";
  for (size_t p = 0; p < kernel.phases.size(); ++p) {
    const Phase &phase = kernel.phases[p];
    out << "  phase " << p << "\n";
    for (const ir::Value *value : phase.values) {
      int computedIn = kernel.phaseOf.at(value->id);
      out << "    " << valueName(*value) << " = ";
      if (ir::isReduction(value->op) && computedIn < static_cast<int>(p)) {
        out << "result of " << ir::opName(value->op) << " from phase " << computedIn;
      } else if (kernel.persistent.count(value->id) && computedIn < static_cast<int>(p)) {
        out << "persistent buffer";
      } else {
        out << ir::opName(value->op);
        if (kernel.reciprocalDivisions.count(value->id))
          out << " (times the reciprocal)";
        if (value->op == ir::Op::Input)
          out << " load " << fusion.params[value->paramIndex].name;
        if (value->op == ir::Op::Constant)
          out << " " << value->constantSpelling;
        for (const ir::Value *operand : value->operands)
          out << " " << valueName(*operand);
      }
      out << " : " << ir::dtypeName(value->dtype) << "\n";
    }
    for (const ir::Value *value : phase.saves)
      out << "    save " << valueName(*value) << " to the persistent buffer\n";
    for (const ir::Value *value : phase.reductions)
      out << "    accumulate " << ir::opName(value->op) << " " << valueName(*value)
          << " += " << valueName(*value->operands[0]) << "\n";
    for (const ir::Output *output : phase.stores)
      out << "    store " << output->name << " = " << valueName(*output->value) << "\n";
    for (const ir::Value *value : phase.reductions)
      if (kernel.blockReduced.count(value->id))
        out << "    block reduce " << valueName(*value) << " over threadIdx.x\n";
  }
}

} // namespace fsl::kir
