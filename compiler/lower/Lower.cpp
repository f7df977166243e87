// Lower.cpp — reference nest, support checks, phases and the persistent buffer.
#include "lower/Lower.h"

#include "support/Diagnostics.h"

#include <llvm/ADT/StringExtras.h>

#include <functional>

namespace fsl {
namespace {

using sched::Parallel;

class Lowering {
public:
  Lowering(const sched::Schedule &schedule, DiagnosticEngine &diagnostics)
      : schedule_(schedule), fusion_(*schedule.fusion), diagnostics_(diagnostics) {}

  std::unique_ptr<kir::Kernel> run(const std::string &name) {
    kernel_ = std::make_unique<kir::Kernel>();
    kernel_->name = name;
    kernel_->fusion = &fusion_;
    kernel_->schedule = &schedule_;
    if (!chooseReference() || !checkTensors() || !checkReductions() || !assignPhases())
      return nullptr;
    chooseClampedRoots();
    return std::move(kernel_);
  }

private:
  bool unsupported(const std::string &why) {
    diagnostics_.report(DiagId::LoweringUnsupported, schedule_.decl->fusion.range, why);
    return false;
  }

  /// The output tensor with the most iteration loops sets the kernel's loop nest.
  bool chooseReference() {
    const sched::TensorSchedule *reference = nullptr;
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (tensor.isOutput &&
          (!reference || tensor.value->dims.size() > reference->value->dims.size()))
        reference = &tensor;
    if (!reference)
      return unsupported("no output of the fusion is a tensor");
    // A reduction stored as an output keeps its reduced loops; take any loops the
    // reference lacks from the reductions, so every root has its loops.
    for (const sched::Loop &loop : reference->loops)
      if (!addLoop(loop))
        return false;
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      for (const sched::Loop &loop : tensor.loops)
        if (findLoop(loop.name) < 0 && !addLoop(loop))
          return false;
    for (size_t i = 0; i < kernel_->loops.size(); ++i) {
      const kir::KernelLoop &loop = kernel_->loops[i];
      if (loop.vectorized) {
        if (kernel_->vectorLoop >= 0)
          return unsupported("two vectorized loops");
        kernel_->vectorLoop = static_cast<int>(i);
      }
      if (!loop.exact)
        kernel_->inexactRoots.insert(loop.root);
    }
    if (kernel_->vectorLoop >= 0) {
      const kir::KernelLoop &vector = kernel_->loops[kernel_->vectorLoop];
      if (sched::isBlockIndex(vector.parallel) || sched::isThreadIndex(vector.parallel))
        return unsupported("a vectorized loop bound to " +
                           sched::parallelName(vector.parallel).str());
      // Accesses are whole vectors when the vector loop is innermost among the serial
      // loops, walks its root contiguously and the root's extent divides.
      std::vector<int> serial = kernel_->serialLoops();
      const ir::Dim &root = fusion_.dims[vector.root];
      kernel_->vectorAccessesExact = serial.back() == kernel_->vectorLoop &&
                                     vector.stride.isStatic() && *vector.stride.value == 1 &&
                                     vector.extent.isStatic() && root.staticExtent &&
                                     *root.staticExtent % *vector.extent.value == 0;
    }
    return true;
  }

  int findLoop(const std::string &name) const {
    for (size_t i = 0; i < kernel_->loops.size(); ++i)
      if (kernel_->loops[i].name == name)
        return static_cast<int>(i);
    return -1;
  }

  bool addLoop(const sched::Loop &loop) {
    if (loop.roots.size() != 1)
      return unsupported("merged loop '" + loop.name + "' (merges are not lowered yet)");
    kir::KernelLoop result;
    result.name = loop.name;
    result.extent = loop.extent;
    result.parallel = loop.parallel;
    result.vectorized = loop.vectorized;
    result.unrolled = loop.unrolled;
    result.unswitched = loop.unswitched;
    result.root = loop.roots[0];
    result.stride = loop.stride;
    result.exact = loop.exact;
    kernel_->loops.push_back(result);
    return true;
  }

  /// Every tensor's loops must be loops of the reference nest, alike.
  bool checkTensors() {
    for (const sched::TensorSchedule &tensor : schedule_.tensors) {
      if (tensor.cache)
        return unsupported("cache " + tensor.name + " (caching is not lowered yet)");
      if (tensor.isInput && fusion_.params[tensor.value->paramIndex].isStrided)
        return unsupported("strided parameter " + tensor.name);
      for (const sched::Loop &loop : tensor.loops) {
        int index = findLoop(loop.name);
        const kir::KernelLoop &reference = kernel_->loops[index];
        if (loop.extent.text != reference.extent.text || loop.parallel != reference.parallel ||
            loop.vectorized != reference.vectorized)
          return unsupported("loop '" + loop.name + "' of '" + tensor.name +
                             "' is scheduled differently from the output's");
      }
    }
    if (schedule_.matmul.any())
      return unsupported(
          "matrix-product schedules (mma, pipeline, ...) are lowered by the matmul milestone");
    for (const auto &value : fusion_.values)
      if (value->op == ir::Op::MatMul)
        return unsupported("matrix products are lowered by the matmul milestone");
    return true;
  }

  bool checkReductions() {
    for (const auto &value : fusion_.values) {
      if (!ir::isReduction(value->op))
        continue;
      for (ir::DimId kept : value->dims)
        for (const kir::KernelLoop &loop : kernel_->loops)
          if (loop.root == kept && loop.parallel == Parallel::Serial &&
              !(loop.extent.isStatic() && *loop.extent.value == 1))
            return unsupported("reduction '" + kir::valueName(*value) + "' keeps dimension " +
                               fusion_.dims[kept].name + " on serial loop '" + loop.name +
                               "'; bind the kept dimensions to blocks or threads");
      bool threadReduced = false;
      for (ir::DimId reduced : value->reduced)
        for (const kir::KernelLoop &loop : kernel_->loops) {
          if (loop.root != reduced || loop.parallel == Parallel::Serial)
            continue;
          if (loop.parallel != Parallel::TIDx)
            return unsupported("reduction over " + sched::parallelName(loop.parallel).str() +
                               " (block reductions over threadIdx.x only, for now)");
          threadReduced = true;
        }
      if (threadReduced)
        kernel_->blockReduced.insert(value->id);
    }
    return true;
  }

  bool assignPhases() {
    // The phase of a value: after every reduction it depends on has finished.
    std::map<unsigned, int> phase;
    int last = 0;
    for (const auto &value : fusion_.values) {
      int p = 0;
      for (const ir::Value *operand : value->operands)
        p = std::max(p, phase[operand->id] + (ir::isReduction(operand->op) ? 1 : 0));
      phase[value->id] = p;
      last = std::max(last, p + (ir::isReduction(value->op) ? 1 : 0));
    }
    // Which values later phases read, and how: kept in registers when the schedule says
    // persistent ... in registers, recomputed otherwise.
    std::set<unsigned> registers; // kept: in registers or in shared memory
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (tensor.persistent == ast::MemoryKind::Registers ||
          tensor.persistent == ast::MemoryKind::Shared) {
        registers.insert(tensor.value->id);
        if (tensor.persistent == ast::MemoryKind::Shared)
          kernel_->persistentShared.insert(tensor.value->id);
      }
    kernel_->bufferElements = 1;
    for (int index : kernel_->serialLoops()) {
      const kir::KernelLoop &loop = kernel_->loops[index];
      if (!loop.extent.isStatic()) {
        if (!registers.empty())
          return unsupported("persistent buffer over loop '" + loop.name +
                             "' of runtime extent; split it by a constant");
        continue;
      }
      kernel_->bufferElements *= *loop.extent.value;
    }

    // An inout write-back waits for the last phase that reads its parameter (a value
    // derived from it recomputed after a reduction), so every read sees the old data.
    // Deferring a store can make its phase read other parameters: repeat until no store
    // moves (stores only move later, so this ends).
    std::map<const ir::Output *, int> storePhase;
    for (const ir::Output &output : fusion_.outputs)
      storePhase[&output] = phase[output.value->id] + (ir::isReduction(output.value->op) ? 1 : 0);
    for (bool deferred = true; deferred;) {
      buildPhases(phase, last, registers, storePhase);
      deferred = false;
      for (const ir::Output &output : fusion_.outputs) {
        if (!output.isInout)
          continue;
        const ir::Value *input = fusion_.params[output.paramIndex].value;
        for (int p = last; p > storePhase[&output]; --p)
          if (llvm::is_contained(kernel_->phases[p].values, input)) {
            storePhase[&output] = p;
            deferred = true;
            break;
          }
      }
    }
    kernel_->phaseOf = phase;
    chooseReciprocals();
    chooseEarlyInputs();
    return true;
  }

  /// Each phase's reductions, stores, saves and the values they need.
  void buildPhases(std::map<unsigned, int> &phase, int last, const std::set<unsigned> &registers,
                   const std::map<const ir::Output *, int> &storePhase) {
    kernel_->persistent.clear();
    kernel_->phases.assign(last + 1, {});
    std::set<unsigned> available; // reductions finished and values saved, per phase
    for (int p = 0; p <= last; ++p) {
      kir::Phase &current = kernel_->phases[p];
      std::vector<const ir::Value *> roots;
      for (const auto &value : fusion_.values) {
        if (phase[value->id] != p)
          continue;
        if (ir::isReduction(value->op))
          current.reductions.push_back(value.get());
      }
      for (const ir::Output &output : fusion_.outputs)
        if (storePhase.at(&output) == p)
          current.stores.push_back(&output);
      // Saves: values of this phase that a later phase reads and the schedule keeps.
      for (const auto &value : fusion_.values)
        if (phase[value->id] == p && registers.count(value->id) &&
            usedAfter(value.get(), p, phase)) {
          current.saves.push_back(value.get());
          kernel_->persistent.insert(value->id);
        }
      // What to compute: the closure of everything this phase uses.
      std::set<unsigned> needed;
      std::function<void(const ir::Value *)> need = [&](const ir::Value *value) {
        if (needed.count(value->id))
          return;
        bool fromEarlier = available.count(value->id) != 0;
        if (ir::isReduction(value->op) && phase[value->id] < p)
          fromEarlier = true;
        if (!fromEarlier)
          for (const ir::Value *operand : value->operands)
            need(operand);
        needed.insert(value->id);
      };
      for (const ir::Value *reduction : current.reductions)
        need(reduction->operands[0]);
      for (const ir::Output *output : current.stores)
        need(output->value);
      for (const ir::Value *saved : current.saves)
        need(saved);
      for (const auto &value : fusion_.values)
        if (needed.count(value->id) && !(ir::isReduction(value->op) && phase[value->id] == p))
          current.values.push_back(value.get());
      for (const ir::Value *saved : current.saves)
        available.insert(saved->id);
    }
  }

  /// Inexact roots walked by no serial loop and reduced by no reduction are clamped
  /// rather than checked (see Kernel::clampedRoots): reading a repeated row is harmless
  /// when nothing sums over rows, and its stores are skipped.
  void chooseClampedRoots() {
    for (ir::DimId root : std::set<ir::DimId>(kernel_->inexactRoots)) {
      bool clampable = true;
      for (const kir::KernelLoop &loop : kernel_->loops)
        clampable &= !(loop.root == root && loop.parallel == Parallel::Serial);
      for (const auto &value : fusion_.values)
        clampable &= !(ir::isReduction(value->op) && llvm::is_contained(value->reduced, root));
      if (clampable) {
        kernel_->inexactRoots.erase(root);
        kernel_->clampedRoots.insert(root);
      }
    }
  }

  /// The same for every element a thread visits: built from reductions (their kept
  /// dimensions are bound to blocks and threads), scalars and constants only.
  bool rowInvariant(const ir::Value *value, std::map<unsigned, bool> &memo) const {
    auto found = memo.find(value->id);
    if (found != memo.end())
      return found->second;
    bool invariant;
    if (ir::isReduction(value->op) || value->op == ir::Op::Scalar || value->op == ir::Op::Constant)
      invariant = true;
    else if (value->op == ir::Op::Input)
      invariant = false;
    else {
      invariant = true;
      for (const ir::Value *operand : value->operands)
        invariant = invariant && rowInvariant(operand, memo);
    }
    return memo[value->id] = invariant;
  }

  /// Float divisions by a row-invariant divisor multiply by its reciprocal instead
  /// (softmax's `e / sum(e)`): one IEEE division a thread rather than one an element.
  void chooseReciprocals() {
    std::map<unsigned, bool> memo;
    for (const auto &value : fusion_.values)
      if (value->op == ir::Op::Div && ir::isFloat(value->dtype) &&
          !rowInvariant(value.get(), memo) && rowInvariant(value->operands[1], memo))
        kernel_->reciprocalDivisions.insert(value->id);
  }

  /// Inputs that only phases after the first read (a norm's weight, LayerNorm's shift)
  /// are loaded before phase 0 when the batch is a short unrolled run of whole vectors
  /// and they cost at most 16 registers a thread: their loads then overlap the row's
  /// instead of waiting behind the block reduction.
  void chooseEarlyInputs() {
    if (kernel_->phases.size() < 2 || kernel_->vectorLoop < 0 || !kernel_->vectorAccessesExact)
      return;
    std::vector<int> serial = kernel_->serialLoops();
    if (serial.empty() || serial.back() != kernel_->vectorLoop)
      return;
    int64_t vectors = 1;
    for (size_t i = 0; i + 1 < serial.size(); ++i) {
      const kir::KernelLoop &loop = kernel_->loops[serial[i]];
      if (!loop.extent.isStatic() || (!loop.unrolled && *loop.extent.value != 1))
        return;
      vectors *= *loop.extent.value;
    }
    const kir::KernelLoop &vector = kernel_->loops[kernel_->vectorLoop];
    const int64_t budgetBytes = 64;
    int64_t bytes = 0;
    std::set<unsigned> readFirst;
    for (const ir::Value *value : kernel_->phases[0].values)
      readFirst.insert(value->id);
    for (size_t p = 1; p < kernel_->phases.size(); ++p)
      for (const ir::Value *value : kernel_->phases[p].values) {
        if (value->op != ir::Op::Input || readFirst.count(value->id) ||
            llvm::is_contained(kernel_->earlyInputs, value))
          continue;
        const ir::Param &param = fusion_.params[value->paramIndex];
        if (param.dims.empty() || param.dims.back() != vector.root || param.isInout)
          continue;
        int64_t cost = vectors * *vector.extent.value * ir::dtypeBytes(param.dtype);
        if (bytes + cost > budgetBytes)
          continue;
        bytes += cost;
        kernel_->earlyInputs.push_back(value);
      }
  }

  /// A later phase computes a user of `value`.
  bool usedAfter(const ir::Value *value, int p, std::map<unsigned, int> &phase) {
    for (const auto &user : fusion_.values)
      if (phase[user->id] > p && std::count(user->operands.begin(), user->operands.end(), value))
        return true;
    return false;
  }

  const sched::Schedule &schedule_;
  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  std::unique_ptr<kir::Kernel> kernel_;
};

} // namespace

std::unique_ptr<kir::Kernel> lowerSchedule(const sched::Schedule &schedule,
                                           const std::string &kernelName,
                                           DiagnosticEngine &diagnostics) {
  return Lowering(schedule, diagnostics).run(kernelName);
}

} // namespace fsl
