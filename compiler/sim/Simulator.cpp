// Simulator.cpp — the kernel's loops, executed.
#include "sim/Simulator.h"

#include <llvm/Support/FormatVariadic.h>

#include <cmath>

namespace fsl::sim {
namespace {

using sched::Parallel;

/// How the GPU holds a value of `type`: f32 registers for the narrow float types.
double asComputed(double value, ir::DType type) {
  if (type == ir::DType::BF16 || type == ir::DType::F16)
    return eval::roundTo(eval::roundTo(value, ir::DType::F32), type);
  return eval::roundTo(value, type);
}

double identity(ir::Op op) {
  return op == ir::Op::ReduceMax ? -INFINITY : op == ir::Op::ReduceMin ? INFINITY : 0.0;
}

double combine(ir::Op op, double a, double b) {
  if (op == ir::Op::ReduceMax)
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  if (op == ir::Op::ReduceMin)
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  return a + b;
}

struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Machine {
public:
  Machine(const kir::Kernel &kernel, const eval::EvalRequest &request, std::vector<int64_t> extents,
          int64_t misalign)
      : kernel_(kernel), fusion_(*kernel.fusion), request_(request), extents_(std::move(extents)),
        misalign_(misalign) {}

  eval::EvalResult run() {
    const kir::Kernel &k = kernel_;
    // Memory: one buffer per parameter; outputs get their own, except inout write-backs,
    // which share their parameter's buffer.
    memory_.resize(fusion_.params.size());
    for (size_t i = 0; i < fusion_.params.size(); ++i) {
      const ir::Param &param = fusion_.params[i];
      memory_[i] = request_.params[i];
      if (param.dims.empty() && memory_[i].empty())
        memory_[i] = {*param.defaultValue};
      for (double &element : memory_[i])
        element = eval::roundTo(element, param.dtype);
    }
    outputBuffer_.resize(fusion_.outputs.size());
    for (size_t o = 0; o < fusion_.outputs.size(); ++o) {
      const ir::Output &output = fusion_.outputs[o];
      if (output.isInout) {
        outputBuffer_[o] = static_cast<int>(output.paramIndex);
      } else {
        outputBuffer_[o] = static_cast<int>(memory_.size());
        memory_.emplace_back(eval::elementCount(output.dims, extents_), NAN);
      }
    }
    for (size_t i = 0; i < k.loops.size(); ++i)
      extentOf_.push_back(k.loops[i].extent.expr->evaluate(extents_));

    std::vector<int> blockLoops, threadLoops;
    for (size_t i = 0; i < k.loops.size(); ++i) {
      if (sched::isBlockIndex(k.loops[i].parallel))
        blockLoops.push_back(static_cast<int>(i));
      else if (sched::isThreadIndex(k.loops[i].parallel))
        threadLoops.push_back(static_cast<int>(i));
    }
    std::vector<std::vector<int64_t>> threads = combinations(threadLoops);
    for (const std::vector<int64_t> &block : combinations(blockLoops))
      runBlock(blockLoops, block, threadLoops, threads);

    eval::EvalResult result;
    result.extents = extents_;
    for (size_t o = 0; o < fusion_.outputs.size(); ++o)
      result.outputs.push_back(memory_[outputBuffer_[o]]);
    return result;
  }

private:
  std::vector<std::vector<int64_t>> combinations(const std::vector<int> &loops) const {
    std::vector<std::vector<int64_t>> all = {{}};
    for (int loop : loops) {
      std::vector<std::vector<int64_t>> next;
      for (const auto &prefix : all)
        for (int64_t i = 0; i < extentOf_[loop]; ++i) {
          next.push_back(prefix);
          next.back().push_back(i);
        }
      all = std::move(next);
    }
    return all;
  }

  struct Thread {
    std::vector<int64_t> loopIndex; // per kernel loop (serial ones set while iterating)
    std::map<unsigned, std::vector<double>> buffer; // persistent values per serial iteration
    std::map<unsigned, double> accumulator;
    std::map<unsigned, double> reduced;
  };

  void runBlock(const std::vector<int> &blockLoops, const std::vector<int64_t> &block,
                const std::vector<int> &threadLoops,
                const std::vector<std::vector<int64_t>> &threads) {
    std::vector<Thread> state(threads.size());
    for (size_t t = 0; t < threads.size(); ++t) {
      state[t].loopIndex.assign(kernel_.loops.size(), 0);
      for (size_t i = 0; i < blockLoops.size(); ++i)
        state[t].loopIndex[blockLoops[i]] = block[i];
      for (size_t i = 0; i < threadLoops.size(); ++i)
        state[t].loopIndex[threadLoops[i]] = threads[t][i];
    }
    for (size_t p = 0; p < kernel_.phases.size(); ++p) {
      const kir::Phase &phase = kernel_.phases[p];
      for (Thread &thread : state) {
        for (const ir::Value *reduction : phase.reductions)
          thread.accumulator[reduction->id] = identity(reduction->op);
        iterate(thread, static_cast<int>(p), 0, 0);
      }
      // The barrier after the phase: every thread has arrived (phases are uniform).
      for (const ir::Value *reduction : phase.reductions)
        finishReduction(*reduction, state, threadLoops);
    }
  }

  void finishReduction(const ir::Value &reduction, std::vector<Thread> &state,
                       const std::vector<int> &threadLoops) {
    // Threads that differ only in the threadIdx.x loop of a reduced root combine.
    int xLoop = -1;
    for (int loop : threadLoops)
      if (kernel_.loops[loop].parallel == Parallel::TIDx &&
          std::count(reduction.reduced.begin(), reduction.reduced.end(), kernel_.loops[loop].root))
        xLoop = loop;
    std::map<std::vector<int64_t>, double> groups;
    auto key = [&](const Thread &thread) {
      std::vector<int64_t> k = thread.loopIndex;
      if (xLoop >= 0)
        k[xLoop] = 0;
      return k;
    };
    for (Thread &thread : state) {
      auto [it, inserted] = groups.emplace(key(thread), thread.accumulator[reduction.id]);
      if (!inserted)
        it->second = combine(reduction.op, it->second, thread.accumulator[reduction.id]);
    }
    double count = 1;
    if (reduction.op == ir::Op::ReduceMean)
      count = static_cast<double>(eval::elementCount(reduction.reduced, extents_));
    for (Thread &thread : state) {
      double total = groups[key(thread)];
      if (reduction.op == ir::Op::ReduceMean)
        total = total / count;
      thread.reduced[reduction.id] = asComputed(total, reduction.dtype);
    }
  }

  /// Walks the serial loops from position `depth`; `linear` numbers the iterations.
  void iterate(Thread &thread, int phase, size_t depth, int64_t linear) {
    std::vector<int> serial = kernel_.serialLoops();
    if (depth == serial.size()) {
      element(thread, phase, linear);
      return;
    }
    int loop = serial[depth];
    for (int64_t i = 0; i < extentOf_[loop]; ++i) {
      thread.loopIndex[loop] = i;
      iterate(thread, phase, depth + 1, linear * extentOf_[loop] + i);
    }
  }

  int64_t rootIndex(const Thread &thread, ir::DimId root) const {
    int64_t index = 0;
    for (size_t i = 0; i < kernel_.loops.size(); ++i)
      if (kernel_.loops[i].root == root)
        index += thread.loopIndex[i] * kernel_.loops[i].stride.expr->evaluate(extents_);
    return index;
  }

  /// Row-major offset of the current element in a tensor with declared `dims`; `clamp`
  /// reads the last row for a clamped root past its end, as the GPU's loads do.
  int64_t offset(const Thread &thread, const std::vector<ir::DimId> &dims, const std::string &name,
                 int64_t size, bool clamp = false) const {
    int64_t result = 0;
    for (ir::DimId dim : dims) {
      int64_t index = rootIndex(thread, dim);
      if (clamp && kernel_.clampedRoots.count(dim))
        index = std::min(index, extents_[dim] - 1);
      if (index >= extents_[dim])
        throw Fault(llvm::formatv("out-of-bounds access of {0}: {1} index {2} >= {3}", name,
                                  fusion_.dims[dim].name, index, extents_[dim]));
      result = result * extents_[dim] + index;
    }
    if (result >= size)
      throw Fault(
          llvm::formatv("out-of-bounds access of {0} at element {1} of {2}", name, result, size));
    return result;
  }

  /// Vector accesses start on a multiple of the vector width.
  void checkVectorAlignment(const Thread &thread, const std::vector<ir::DimId> &dims, int64_t at,
                            const std::string &name, ir::DType dtype) const {
    if (kernel_.vectorLoop < 0 || !kernel_.vectorAccessesExact || dims.empty())
      return;
    const kir::KernelLoop &vector = kernel_.loops[kernel_.vectorLoop];
    if (dims.back() != vector.root || thread.loopIndex[kernel_.vectorLoop] != 0)
      return;
    int64_t width = *vector.extent.value;
    if ((at + misalign_) % width != 0)
      throw Fault(llvm::formatv("vector access of {0} at element {1} is not aligned to {2} bytes",
                                name, at + misalign_, width * ir::dtypeBytes(dtype)));
  }

  void element(Thread &thread, int phase, int64_t linear) {
    for (ir::DimId root : kernel_.inexactRoots)
      if (rootIndex(thread, root) >= extents_[root])
        return; // predicated off: past the end of a non-divisible split
    std::map<unsigned, double> values;
    auto valueOf = [&](const ir::Value *value) { return values.at(value->id); };
    for (const ir::Value *value : kernel_.phases[phase].values) {
      double result = 0;
      int valuePhase = kernel_.phaseOf.at(value->id);
      if (ir::isReduction(value->op) && valuePhase < phase) {
        result = thread.reduced.at(value->id);
      } else if (kernel_.persistent.count(value->id) && valuePhase < phase) {
        result = thread.buffer.at(value->id).at(linear);
      } else if (value->op == ir::Op::Input) {
        const ir::Param &param = fusion_.params[value->paramIndex];
        const std::vector<double> &data = memory_[value->paramIndex];
        int64_t at =
            offset(thread, param.dims, param.name, static_cast<int64_t>(data.size()), true);
        checkVectorAlignment(thread, param.dims, at, param.name, param.dtype);
        result = data[at];
      } else if (value->op == ir::Op::Scalar) {
        result = memory_[value->paramIndex].at(0);
      } else if (value->op == ir::Op::Constant) {
        result = eval::roundTo(value->constant, value->dtype);
      } else if (value->op == ir::Op::Cast) {
        result = asComputed(valueOf(value->operands[0]), value->dtype);
      } else if (kernel_.reciprocalDivisions.count(value->id)) {
        // a * (1 / b), each step rounded as the GPU's registers round it.
        ir::DType registers = value->dtype == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32;
        double reciprocal = asComputed(1.0 / valueOf(value->operands[1]), registers);
        result = asComputed(valueOf(value->operands[0]) * reciprocal, value->dtype);
      } else {
        std::vector<double> args;
        for (const ir::Value *operand : value->operands)
          args.push_back(valueOf(operand));
        result = asComputed(eval::applyOp(value->op, args.data()), value->dtype);
      }
      values[value->id] = result;
    }
    for (const ir::Value *saved : kernel_.phases[phase].saves) {
      std::vector<double> &buffer = thread.buffer[saved->id];
      buffer.resize(kernel_.bufferElements, NAN);
      buffer.at(linear) = values.at(saved->id);
    }
    for (const ir::Value *reduction : kernel_.phases[phase].reductions) {
      double &acc = thread.accumulator[reduction->id];
      acc = asComputed(combine(reduction->op, acc, valueOf(reduction->operands[0])),
                       reduction->dtype);
    }
    for (const ir::Output *output : kernel_.phases[phase].stores) {
      bool pastTheEnd = false; // a clamped row past the end stores nothing
      for (ir::DimId dim : output->dims)
        pastTheEnd |= kernel_.clampedRoots.count(dim) && rootIndex(thread, dim) >= extents_[dim];
      if (pastTheEnd)
        continue;
      size_t index = static_cast<size_t>(output - fusion_.outputs.data());
      std::vector<double> &data = memory_[outputBuffer_[index]];
      int64_t at = offset(thread, output->dims, output->name, static_cast<int64_t>(data.size()));
      checkVectorAlignment(thread, output->dims, at, output->name, output->dtype);
      double value = ir::isReduction(output->value->op) ? thread.reduced.at(output->value->id)
                                                        : values.at(output->value->id);
      data[at] = eval::roundTo(value, output->dtype);
    }
  }

  const kir::Kernel &kernel_;
  const ir::Fusion &fusion_;
  const eval::EvalRequest &request_;
  std::vector<int64_t> extents_;
  int64_t misalign_;
  std::vector<int64_t> extentOf_;
  std::vector<std::vector<double>> memory_;
  std::vector<int> outputBuffer_;
};

} // namespace

llvm::Expected<eval::EvalResult> simulate(const kir::Kernel &kernel,
                                          const eval::EvalRequest &request, int64_t misalign) {
  const ir::Fusion &fusion = *kernel.fusion;
  // Sizes and inputs are checked as the evaluator checks them.
  eval::EvalRequest probe = request;
  llvm::Expected<eval::EvalResult> shapes = eval::evaluate(fusion, probe);
  if (!shapes)
    return shapes.takeError();
  try {
    return Machine(kernel, request, shapes->extents, misalign).run();
  } catch (const Fault &fault) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), fault.what());
  }
}

} // namespace fsl::sim
