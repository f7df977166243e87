// ScheduleBuilder.cpp — tensors and root loops from the Fusion IR, then one function per
// directive kind, each applied to every tensor that has the loops it names.
#include "schedule/ScheduleBuilder.h"

#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/BitVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/FormatVariadic.h>

#include <map>

namespace fsl::sched {
namespace {

bool isTensorValue(const ir::Fusion &fusion, const ir::Value &value) {
  if (value.op == ir::Op::Scalar || value.op == ir::Op::Constant)
    return false;
  if (value.op == ir::Op::Input || !value.name.empty() || ir::isReduction(value.op))
    return true;
  for (const ir::Output &output : fusion.outputs)
    if (output.value == &value)
      return true;
  return false;
}

Extent rootExtent(const ir::Fusion &fusion, ir::DimId dim) {
  const ir::Dim &d = fusion.dims[dim];
  return d.staticExtent ? Extent::of(*d.staticExtent) : Extent::ofDim(dim, d.name);
}

} // namespace

std::vector<TensorSchedule> rootTensors(const ir::Fusion &fusion) {
  std::vector<TensorSchedule> tensors;
  std::map<unsigned, unsigned> tensorOfValue;
  for (const auto &valuePtr : fusion.values) {
    const ir::Value &value = *valuePtr;
    if (!isTensorValue(fusion, value))
      continue;
    TensorSchedule tensor;
    tensor.value = &value;
    tensor.dtype = value.dtype;
    tensor.isInput = value.op == ir::Op::Input;
    std::vector<ir::DimId> layout;
    std::vector<std::string> outputNames;
    const ir::Output *firstOutput = nullptr;
    for (const ir::Output &output : fusion.outputs)
      if (output.value == &value) {
        outputNames.push_back(output.name);
        if (!firstOutput)
          firstOutput = &output;
      }
    tensor.isOutput = firstOutput != nullptr;
    if (tensor.isInput) {
      tensor.name = fusion.params[value.paramIndex].name;
      layout = fusion.params[value.paramIndex].dims;
    } else if (firstOutput) {
      tensor.name = !value.name.empty() ? value.name : firstOutput->name;
      layout = firstOutput->dims;
      // A reduction stored as an output: its reduced loops come innermost.
      layout.insert(layout.end(), value.reduced.begin(), value.reduced.end());
    } else {
      tensor.name = !value.name.empty()
                        ? value.name
                        : (ir::opName(value.op) + "%" + std::to_string(value.id)).str();
    }
    for (const std::string &name : outputNames)
      if (name != tensor.name)
        tensor.aliases.push_back(name);
    if (!tensor.isInput)
      for (const std::string &name : value.aliases)
        if (name != tensor.name && !llvm::is_contained(tensor.aliases, name))
          tensor.aliases.push_back(name);
    if (layout.empty()) {
      layout = value.dims;
      layout.insert(layout.end(), value.reduced.begin(), value.reduced.end());
      std::sort(layout.begin(), layout.end());
    }
    for (size_t i = 0; i < layout.size(); ++i) {
      ir::DimId dim = layout[i];
      Loop loop;
      loop.name = fusion.dims[dim].name;
      loop.extent = rootExtent(fusion, dim);
      loop.isReduction = std::count(value.reduced.begin(), value.reduced.end(), dim) != 0;
      loop.roots = {dim};
      loop.contiguous = i + 1 == layout.size();
      tensor.loops.push_back(loop);
    }
    tensorOfValue[value.id] = static_cast<unsigned>(tensors.size());
    tensors.push_back(std::move(tensor));
  }

  // Producers: the nearest tensors among each tensor's operands (through inlined values).
  for (unsigned index = 0; index < tensors.size(); ++index) {
    std::vector<const ir::Value *> stack(tensors[index].value->operands.begin(),
                                         tensors[index].value->operands.end());
    std::set<unsigned> seen;
    while (!stack.empty()) {
      const ir::Value *operand = stack.back();
      stack.pop_back();
      if (!seen.insert(operand->id).second)
        continue;
      if (auto it = tensorOfValue.find(operand->id); it != tensorOfValue.end()) {
        tensors[index].producers.push_back(it->second);
        tensors[it->second].consumers.push_back(index);
        continue;
      }
      stack.insert(stack.end(), operand->operands.begin(), operand->operands.end());
    }
  }

  // Persistent buffers: a reduction consumes the value and a later use needs it again,
  // i.e. some user of the tensor has, among its ancestors, a reduction that descends
  // from the tensor. Reachability is kept per value as a set of reductions (reductions
  // below it, reductions above it), not as a value-by-value matrix: a fusion of 40,000
  // lets has few reductions, and its check stays linear.
  std::vector<unsigned> reductionIndex(fusion.values.size(), ~0u);
  unsigned reductions = 0;
  for (const auto &value : fusion.values)
    if (ir::isReduction(value->op))
      reductionIndex[value->id] = reductions++;
  if (reductions != 0) {
    size_t count = fusion.values.size();
    std::vector<llvm::BitVector> above(count, llvm::BitVector(reductions));
    std::vector<llvm::BitVector> below(count, llvm::BitVector(reductions));
    std::vector<std::vector<const ir::Value *>> users(count);
    for (const auto &value : fusion.values)
      for (const ir::Value *operand : value->operands) {
        above[value->id] |= above[operand->id];
        if (reductionIndex[operand->id] != ~0u)
          above[value->id].set(reductionIndex[operand->id]);
        users[operand->id].push_back(value.get());
      }
    // Operands precede their users: one backward pass propagates `below`.
    for (size_t id = count; id-- > 0;)
      for (const ir::Value *operand : fusion.values[id]->operands) {
        below[operand->id] |= below[id];
        if (reductionIndex[id] != ~0u)
          below[operand->id].set(reductionIndex[id]);
      }
    for (TensorSchedule &tensor : tensors)
      for (const ir::Value *user : users[tensor.value->id])
        if (below[tensor.value->id].anyCommon(above[user->id]))
          tensor.isPersistentBuffer = true;
  }
  return tensors;
}

namespace {

class Builder {
public:
  Builder(const ScheduleBlock &block, const ir::Fusion &fusion, DiagnosticEngine &diagnostics)
      : block_(block), fusion_(fusion), diagnostics_(diagnostics) {
    schedule_ = std::make_unique<Schedule>();
    schedule_->header = block.header;
    schedule_->fusion = &fusion;
    schedule_->tensors = rootTensors(fusion);
    schedule_->notes.resize(block.directives.size());
  }

  std::unique_ptr<Schedule> build() {
    unsigned errorsBefore = diagnostics_.errorCount();
    // The fusion's own static sizes first: no directive is to blame for those.
    for (const TensorSchedule &tensor : tensors())
      if (!iterationsFit(tensor, schedule_->header.fusionRange, "at the fusion's sizes"))
        break;
    for (size_t index = 0; index < block_.directives.size(); ++index) {
      current_ = Origin{index, block_.directives[index].range};
      std::visit([&](const auto &op) { apply(op); }, block_.directives[index].op);
    }
    if (diagnostics_.errorCount() != errorsBefore)
      return nullptr;
    placementNotes();
    return std::move(schedule_);
  }

private:
  std::vector<TensorSchedule> &tensors() { return schedule_->tensors; }

  std::string allLoopNames() {
    std::vector<std::string> names;
    for (const TensorSchedule &tensor : tensors())
      for (const Loop &loop : tensor.loops)
        if (!llvm::is_contained(names, loop.name))
          names.push_back(loop.name);
    return llvm::join(names, ", ");
  }

  std::string tensorNames() {
    std::vector<std::string> names;
    for (const TensorSchedule &tensor : tensors()) {
      if (tensor.name.find('%') == std::string::npos && !llvm::is_contained(names, tensor.name))
        names.push_back(tensor.name);
      for (const std::string &alias : tensor.aliases)
        if (!llvm::is_contained(names, alias))
          names.push_back(alias);
    }
    return llvm::join(names, ", ");
  }

  /// The tensor a name refers to (an inout name means its input), or -1 after an error.
  int tensorNamed(const Name &name) {
    int index = schedule_->findTensor(name.text);
    if (index < 0)
      diagnostics_.report(DiagId::ScheduleUnknownTensor, name.range, name.text, fusion_.name,
                          tensorNames());
    return index;
  }

  bool matchesTensor(const TensorSchedule &tensor, const std::string &name) {
    return tensor.name == name || llvm::is_contained(tensor.aliases, name);
  }

  /// Tensors that have loop `ref.loop` (restricted to `ref.tensor` when given).
  std::vector<unsigned> targets(const LoopRef &ref, bool report = true) {
    std::vector<unsigned> result;
    if (ref.tensor && tensorNamed(*ref.tensor) < 0)
      return result;
    for (unsigned i = 0; i < tensors().size(); ++i) {
      if (ref.tensor && !matchesTensor(tensors()[i], ref.tensor->text))
        continue;
      if (tensors()[i].findLoop(ref.loop.text) >= 0)
        result.push_back(i);
    }
    if (result.empty() && report) {
      if (ref.tensor)
        diagnostics_.report(DiagId::ScheduleUnknownLoop, ref.loop.range, ref.tensor->text,
                            ref.loop.text,
                            loopNames(tensors()[schedule_->findTensor(ref.tensor->text)]));
      else
        diagnostics_.report(DiagId::ScheduleUnknownLoop, ref.loop.range, fusion_.name,
                            ref.loop.text, allLoopNames());
    }
    return result;
  }

  /// Refuses to transform a loop at or outside a compute_at position.
  bool transformable(const char *what, unsigned tensorIndex, int loopIndex) {
    const TensorSchedule &tensor = tensors()[tensorIndex];
    if (!tensor.computeAtPosition || loopIndex > static_cast<int>(*tensor.computeAtPosition))
      return true;
    diagnostics_
        .report(DiagId::TransformInsideComputeAt, current_.range, what,
                tensor.loops[loopIndex].name, tensor.name)
        .note(DiagId::NoteDirective, tensor.computeAtBy->range, "compute_at is here");
    return false;
  }

  bool nameFree(const Name &name, unsigned tensorIndex) {
    if (tensors()[tensorIndex].findLoop(name.text) < 0)
      return true;
    diagnostics_.report(DiagId::LoopNameTaken, name.range, name.text,
                        userName(tensors()[tensorIndex], fusion_));
    return false;
  }

  /// The current directive's note, unless an earlier tensor already gave it one.
  void note(const std::string &text) {
    std::string &slot = schedule_->notes[current_.index];
    if (slot.empty())
      slot = text;
  }

  static const Origin &originOf(const Origin &origin) { return origin; }
  template <typename T> static const Origin &originOf(const Applied<T> &applied) {
    return applied.origin;
  }

  /// Sets `slot` from the current directive unless an earlier one did (reported).
  template <typename T> bool setOnce(std::optional<T> &slot, T value, const std::string &what) {
    if (slot) {
      diagnostics_.report(DiagId::DuplicateDirective, current_.range, what)
          .note(DiagId::NoteDirective, originOf(*slot).range, "set here");
      return false;
    }
    slot = std::move(value);
    return true;
  }

  template <typename T> Applied<T> applied(const T &op) const { return Applied<T>{op, current_}; }

  /// Whether the static extents of `tensor`'s loops multiply to a 64-bit integer; if not,
  /// reports it at `range`. Lowering indexes every element as a sum of loop indices times
  /// strides in int64_t, and the checker and the lowering multiply static extents
  /// (threads, buffer elements, batches): after this holds, no product of a tensor's
  /// extents overflows.
  bool iterationsFit(const TensorSchedule &tensor, llvm::SMRange range, llvm::StringRef when) {
    std::optional<int64_t> product = 1;
    std::vector<std::string> factors;
    for (const Loop &loop : tensor.loops)
      if (loop.extent.isStatic()) {
        factors.push_back(loop.name + " " + loop.extent.text);
        if (product)
          product = llvm::checkedMul(*product, *loop.extent.value);
      }
    if (product)
      return true;
    diagnostics_.report(DiagId::SizeOverflow, range,
                        "the static iteration count of '" + userName(tensor, fusion_) + "' " +
                            when.str(),
                        llvm::join(factors, " x "), "use smaller sizes or split factors");
    return false;
  }

  /// The same after the current directive changed `tensor`, reported once a directive.
  bool iterationsFitAfterDirective(const TensorSchedule &tensor, const char *directive) {
    if (overflowReported_ == current_.index)
      return false;
    if (iterationsFit(tensor, current_.range, std::string("after this ") + directive))
      return true;
    overflowReported_ = current_.index;
    return false;
  }

  // One function per directive kind, called through std::visit: a kind without one
  // does not compile.

  void apply(const Split &d) {
    if (d.factor.value < 1) {
      diagnostics_.report(DiagId::SplitFactorNotPositive, d.factor.range, d.factor.value);
      return;
    }
    for (unsigned index : targets(d.loop)) {
      TensorSchedule &tensor = tensors()[index];
      int position = tensor.findLoop(d.loop.loop.text);
      if (!transformable("split", index, position) || !nameFree(d.outer, index) ||
          (d.inner.text != d.outer.text && !nameFree(d.inner, index)))
        return;
      if (d.inner.text == d.outer.text) {
        diagnostics_.report(DiagId::LoopNameTaken, d.inner.range, d.inner.text,
                            userName(tensor, fusion_));
        return;
      }
      Loop original = tensor.loops[position];
      int64_t factor = d.factor.value;
      Loop outer = original, inner = original;
      outer.name = d.outer.text;
      inner.name = d.inner.text;
      outer.parallel = inner.parallel = Parallel::Serial;
      outer.parallelizedBy = inner.parallelizedBy = std::nullopt;
      outer.vectorized = inner.vectorized = outer.unrolled = inner.unrolled = false;
      outer.contiguous = false;
      bool divides = original.extent.isStatic() && *original.extent.value % factor == 0;
      if (d.factorIsOuter) {
        outer.extent = Extent::of(factor);
        inner.extent = Extent::ceilDiv(original.extent, factor);
      } else {
        inner.extent = Extent::of(factor);
        outer.extent = Extent::ceilDiv(original.extent, factor);
      }
      inner.stride = original.stride;
      std::optional<Extent> stride = Extent::mul(original.stride, inner.extent);
      if (!stride) {
        if (overflowReported_ != current_.index)
          diagnostics_.report(DiagId::SizeOverflow, current_.range,
                              "the stride of '" + outer.name + "' in '" +
                                  userName(tensor, fusion_) + "'",
                              original.stride.text + " x " + inner.extent.text + " elements",
                              "use smaller split factors");
        overflowReported_ = current_.index;
        return;
      }
      outer.stride = *stride;
      outer.exact = inner.exact = original.exact && (divides || factor == 1);
      inner.innerPiece = true;
      if (original.innerPiece && !divides && factor != 1 && !outer.overrunningSplit)
        outer.overrunningSplit = inner.overrunningSplit = current_.range;
      tensor.loops[position] = outer;
      tensor.loops.insert(tensor.loops.begin() + position + 1, inner);
      LoopTransform transform;
      transform.kind = LoopTransform::Kind::Split;
      transform.input = original.name;
      transform.outer = outer.name;
      transform.inner = inner.name;
      transform.innerExtent = inner.extent;
      transform.range = current_.range;
      tensor.transforms.push_back(transform);
      if (!iterationsFitAfterDirective(tensor, "split"))
        return;
      note(llvm::formatv("{0}: {1}, {2}: {3}{4}", outer.name, outer.extent.text, inner.name,
                         inner.extent.text, outer.exact ? "" : "; the last iteration is partial")
               .str());
    }
  }

  void apply(const Merge &d) {
    std::vector<unsigned> withFirst = targets(d.first), withSecond = targets(d.second);
    if (withFirst.empty() || withSecond.empty())
      return;
    bool merged = false;
    for (unsigned index : withFirst) {
      if (!llvm::is_contained(withSecond, index))
        continue;
      TensorSchedule &tensor = tensors()[index];
      int a = tensor.findLoop(d.first.loop.text), b = tensor.findLoop(d.second.loop.text);
      if (a == b) {
        diagnostics_.report(DiagId::LoopNameTaken, d.second.range, d.second.loop.text,
                            userName(tensor, fusion_));
        return;
      }
      if (!transformable("merge", index, a) || !transformable("merge", index, b))
        return;
      const Loop &first = tensor.loops[a], &second = tensor.loops[b];
      if (first.isReduction != second.isReduction) {
        const Loop &reduction = first.isReduction ? first : second;
        const Loop &iteration = first.isReduction ? second : first;
        diagnostics_
            .report(DiagId::MergeReductionIteration, current_.range, reduction.name, iteration.name,
                    userName(tensor, fusion_))
            .note(DiagId::NoteFusionLine, tensor.value->range,
                  "'" + userName(tensor, fusion_) + "' reduces over " +
                      fusion_.dims[reduction.roots[0]].name + " here");
        return;
      }
      if (tensor.findLoop(d.result.text) >= 0) {
        diagnostics_.report(DiagId::LoopNameTaken, d.result.range, d.result.text,
                            userName(tensor, fusion_));
        return;
      }
      std::optional<Extent> extent = Extent::mul(first.extent, second.extent);
      if (!extent) {
        if (overflowReported_ != current_.index)
          diagnostics_.report(
              DiagId::SizeOverflow, current_.range,
              "the extent of '" + d.result.text + "' in '" + userName(tensor, fusion_) + "'",
              first.extent.text + " x " + second.extent.text, "merge smaller loops");
        overflowReported_ = current_.index;
        return;
      }
      Loop result = first;
      result.name = d.result.text;
      result.extent = *extent;
      result.stride = second.stride;
      result.roots.insert(result.roots.end(), second.roots.begin(), second.roots.end());
      result.contiguous = second.contiguous && b == a + 1;
      result.exact = first.exact && second.exact;
      result.parallel = Parallel::Serial;
      result.parallelizedBy = std::nullopt;
      LoopTransform transform;
      transform.kind = LoopTransform::Kind::Merge;
      transform.input = first.name;
      transform.secondInput = second.name;
      transform.result = result.name;
      transform.innerExtent = second.extent;
      transform.range = current_.range;
      tensor.transforms.push_back(transform);
      int low = std::min(a, b), high = std::max(a, b);
      tensor.loops[low] = result;
      tensor.loops.erase(tensor.loops.begin() + high);
      note(llvm::formatv("{0}: {1}", result.name, result.extent.text).str());
      merged = true;
    }
    if (!merged)
      diagnostics_.report(DiagId::ScheduleUnknownLoop, current_.range, fusion_.name,
                          d.first.loop.text + " and " + d.second.loop.text + " together",
                          allLoopNames());
  }

  void apply(const Reorder &d) {
    for (const LoopRef &ref : d.order)
      if (targets(ref).empty())
        return;
    for (unsigned index = 0; index < tensors().size(); ++index) {
      TensorSchedule &tensor = tensors()[index];
      std::vector<int> positions;
      std::vector<Loop> loops;
      for (const LoopRef &ref : d.order) {
        if (ref.tensor && !matchesTensor(tensor, ref.tensor->text))
          continue;
        int position = tensor.findLoop(ref.loop.text);
        if (position < 0)
          continue;
        if (!transformable("reorder", index, position))
          return;
        positions.push_back(position);
        loops.push_back(tensor.loops[position]);
      }
      std::sort(positions.begin(), positions.end());
      for (size_t i = 0; i < positions.size(); ++i)
        tensor.loops[positions[i]] = loops[i];
    }
  }

  void apply(const Parallelize &d) {
    std::vector<std::string> notes;
    for (const Binding &binding : d.bindings) {
      std::vector<unsigned> found = targets(binding.loop);
      for (unsigned index : found) {
        Loop &loop = tensors()[index].loops[tensors()[index].findLoop(binding.loop.loop.text)];
        loop.parallel = binding.parallel;
        loop.parallelizedBy = current_;
      }
      if (!found.empty()) {
        const Loop &loop =
            tensors()[found[0]].loops[tensors()[found[0]].findLoop(binding.loop.loop.text)];
        bool threads = isThreadIndex(loop.parallel);
        notes.push_back(llvm::formatv("{0}: {1} {2}{3}", loop.name, loop.extent.text,
                                      threads ? "threads" : "blocks",
                                      loop.extent.isStatic() ? ", static" : "")
                            .str());
      }
    }
    note(llvm::join(notes, "; "));
  }

  void apply(const Vectorize &d) {
    std::vector<unsigned> found = targets(d.loop);
    for (unsigned index : found) {
      Loop &loop = tensors()[index].loops[tensors()[index].findLoop(d.loop.loop.text)];
      loop.vectorized = true;
      loop.vectorizedBy = current_;
    }
    // The note describes the memory access of the first input or output it touches.
    for (unsigned index : found) {
      const TensorSchedule &tensor = tensors()[index];
      const Loop &loop = tensor.loops[tensor.findLoop(d.loop.loop.text)];
      if ((tensor.isInput || tensor.isOutput) && loop.extent.isStatic()) {
        // A width that overflows is refused by the checker (vectorize-too-wide).
        if (std::optional<int64_t> bytes =
                llvm::checkedMul<int64_t>(*loop.extent.value, ir::dtypeBytes(tensor.dtype)))
          note(llvm::formatv("{0} x {1} = {2} bytes per access of {3}", *loop.extent.value,
                             ir::dtypeName(tensor.dtype), *bytes, tensor.name)
                   .str());
        return;
      }
    }
  }

  void apply(const Unroll &d) {
    std::vector<unsigned> found = targets(d.loop);
    for (unsigned index : found) {
      Loop &loop = tensors()[index].loops[tensors()[index].findLoop(d.loop.loop.text)];
      loop.unrolled = true;
      loop.unrolledBy = current_;
      if (d.factor)
        loop.unrollFactor = d.factor->value;
    }
    iterationsNote(found, d.loop);
  }

  void apply(const Unswitch &d) {
    std::vector<unsigned> found = targets(d.loop);
    for (unsigned index : found)
      tensors()[index].loops[tensors()[index].findLoop(d.loop.loop.text)].unswitched = true;
    iterationsNote(found, d.loop);
  }

  void apply(const Prefetch &d) {
    std::vector<unsigned> found = targets(d.loop);
    for (unsigned index : found)
      tensors()[index].loops[tensors()[index].findLoop(d.loop.loop.text)].prefetchedBy = current_;
    iterationsNote(found, d.loop);
  }

  /// `Hp: 8 iterations`, from the first tensor that has the loop.
  void iterationsNote(const std::vector<unsigned> &found, const LoopRef &ref) {
    if (found.empty())
      return;
    const TensorSchedule &tensor = tensors()[found[0]];
    const Loop &loop = tensor.loops[tensor.findLoop(ref.loop.text)];
    note(llvm::formatv("{0}: {1} iterations{2}", loop.name, loop.extent.text,
                       loop.extent.isStatic() ? "" : ", runtime")
             .str());
  }

  void apply(const Rfactor &d) {
    std::vector<unsigned> found = targets(d.loop);
    if (found.empty())
      return;
    bool any = false;
    for (unsigned index : found) {
      TensorSchedule &tensor = tensors()[index];
      if (tensor.loops[tensor.findLoop(d.loop.loop.text)].isReduction) {
        tensor.rfactorBy = current_;
        any = true;
      }
    }
    if (!any)
      diagnostics_.report(DiagId::RfactorNotReduction, d.loop.loop.range, d.loop.loop.text,
                          d.loop.tensor ? "'" + d.loop.tensor->text + "'"
                                        : std::string("any tensor"));
  }

  void apply(const Inline &d) {
    if (!d.tensor) {
      setOnce(schedule_->inlineAll, current_, "inline all");
      return;
    }
    int index = tensorNamed(*d.tensor);
    if (index >= 0)
      setOnce(tensors()[index].inlinedBy, current_, "inlining of '" + d.tensor->text + "'");
  }

  void apply(const ComputeAt &d) {
    int index = tensorNamed(d.tensor);
    if (index < 0)
      return;
    TensorSchedule &tensor = tensors()[index];
    int position = tensor.findLoop(d.at.loop.text);
    if (position < 0) {
      diagnostics_.report(DiagId::ScheduleUnknownLoop, d.at.range, tensor.name, d.at.loop.text,
                          loopNames(tensor));
      return;
    }
    if (setOnce(tensor.computeAtBy, current_, "the compute_at position of '" + tensor.name + "'"))
      tensor.computeAtPosition = static_cast<size_t>(position);
  }

  void apply(const ComputeWith &d) {
    int index = tensorNamed(d.tensor);
    if (index >= 0)
      setOnce(tensors()[index].computeWithBy, current_, "compute_with of '" + d.tensor.text + "'");
  }

  void apply(const Persistent &d) {
    int index = tensorNamed(d.tensor);
    if (index >= 0 &&
        setOnce(tensors()[index].persistentBy, current_, "the memory of '" + d.tensor.text + "'"))
      tensors()[index].persistent = d.memory;
  }

  void apply(const Cache &d) {
    int index = tensorNamed(d.tensor);
    if (index >= 0 &&
        setOnce(tensors()[index].cacheBy, current_, "the cache of '" + d.tensor.text + "'"))
      tensors()[index].cache = d.memory;
  }

  void apply(const LaunchBounds &d) {
    setOnce(schedule_->launchBounds, applied(d), "launch_bounds");
  }
  void apply(const MaxRRegCount &d) {
    setOnce(schedule_->maxRRegCount, applied(d), "maxrregcount");
  }
  void apply(const Pdl &) { setOnce(schedule_->pdl, current_, "pdl"); }
  void apply(const GridSync &) { setOnce(schedule_->gridSync, current_, "grid_sync"); }
  void apply(const FastExp &) { setOnce(schedule_->fastExp, current_, "fast_exp"); }
  void apply(const FastTanh &) { setOnce(schedule_->fastTanh, current_, "fast_tanh"); }
  void apply(const FastDiv &) { setOnce(schedule_->fastDiv, current_, "fast_div"); }
  void apply(const ReduceForm &d) {
    setOnce(schedule_->reduceForm, applied(d), "the reduction form (reduce one_pass|two_pass)");
  }
  void apply(const Mma &d) { setOnce(schedule_->matmul.mma, applied(d), "the mma tile"); }
  void apply(const Pipeline &d) { setOnce(schedule_->matmul.pipeline, applied(d), "the pipeline"); }
  void apply(const WarpSpecialize &d) {
    setOnce(schedule_->matmul.warpSpecialize, applied(d), "warp specialization");
  }
  // Every tile order is kept: the checker says which combinations conflict.
  void apply(const Tiles &d) { schedule_->matmul.tiles.push_back(applied(d)); }
  void apply(const Cluster &d) {
    setOnce(schedule_->matmul.cluster, applied(d), "the cluster shape");
  }
  void apply(const Epilogue &d) { setOnce(schedule_->matmul.epilogue, applied(d), "the epilogue"); }

  /// Notes that need the final loop nests, replacing any other: a persistent buffer's
  /// size per thread, and whom compute_with joins.
  void placementNotes() {
    for (const TensorSchedule &tensor : tensors()) {
      if (tensor.persistentBy)
        schedule_->notes[tensor.persistentBy->index] = persistentNote(tensor);
      if (tensor.computeWithBy && !tensor.consumers.empty())
        schedule_->notes[tensor.computeWithBy->index] =
            "with its first consumer, " + tensors()[tensor.consumers[0]].name;
    }
  }

  static std::string persistentNote(const TensorSchedule &tensor) {
    int64_t perThread = 1;
    for (const Loop &loop : tensor.loops) {
      if (isBlockIndex(loop.parallel) || isThreadIndex(loop.parallel))
        continue;
      if (!loop.extent.isStatic())
        return tensor.name + ": runtime size per thread";
      perThread *= *loop.extent.value;
    }
    return llvm::formatv("{0}: {1} values of {2} per thread", tensor.name, perThread,
                         ir::dtypeName(tensor.dtype))
        .str();
  }

  const ScheduleBlock &block_;
  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  std::unique_ptr<Schedule> schedule_;
  Origin current_; // the directive being applied
  /// The directive whose overflow was reported (one report a directive, not a tensor).
  size_t overflowReported_ = SIZE_MAX;
};

} // namespace

std::unique_ptr<Schedule> buildSchedule(const ScheduleBlock &block, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics) {
  return Builder(block, fusion, diagnostics).build();
}

} // namespace fsl::sched
