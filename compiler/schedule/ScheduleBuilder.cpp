// ScheduleBuilder.cpp — tensors and root loops from the Fusion IR, then one function per
// directive kind, each applied to every tensor that has the loops it names.
#include "schedule/ScheduleBuilder.h"

#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/BitVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/MathExtras.h>

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

  // Persistent buffers: a reduction consumes the value and a later use needs it again.
  size_t count = fusion.values.size();
  std::vector<llvm::BitVector> ancestors(count, llvm::BitVector(count));
  for (const auto &value : fusion.values)
    for (const ir::Value *operand : value->operands) {
      ancestors[value->id] |= ancestors[operand->id];
      ancestors[value->id].set(operand->id);
    }
  for (TensorSchedule &tensor : tensors) {
    unsigned id = tensor.value->id;
    for (const auto &reduction : fusion.values) {
      if (!ir::isReduction(reduction->op) || !ancestors[reduction->id].test(id))
        continue;
      for (const auto &user : fusion.values)
        if (user.get() != reduction.get() && ancestors[user->id].test(reduction->id) &&
            std::count(user->operands.begin(), user->operands.end(), tensor.value))
          tensor.isPersistentBuffer = true;
    }
  }
  return tensors;
}

namespace {

class Builder {
public:
  Builder(const ast::ScheduleDecl &decl, const ir::Fusion &fusion, DiagnosticEngine &diagnostics)
      : fusion_(fusion), diagnostics_(diagnostics) {
    schedule_ = std::make_unique<Schedule>();
    schedule_->decl = &decl;
    schedule_->fusion = &fusion;
    schedule_->tensors = rootTensors(fusion);
  }

  std::unique_ptr<Schedule> build() {
    unsigned errorsBefore = diagnostics_.errorCount();
    for (const ast::DirectivePtr &directive : schedule_->decl->directives)
      apply(*directive);
    if (diagnostics_.errorCount() != errorsBefore)
      return nullptr;
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
  int tensorNamed(const ast::Name &name) {
    int index = schedule_->findTensor(name.text);
    if (index < 0)
      diagnostics_.report(DiagId::ScheduleUnknownTensor, name.range, name.text, fusion_.name,
                          tensorNames());
    return index;
  }

  bool matchesTensor(const TensorSchedule &tensor, const std::string &name) {
    return tensor.name == name || llvm::is_contained(tensor.aliases, name);
  }

  /// Tensors that have loop `ref.dim` (restricted to `ref.tensor` when given).
  std::vector<unsigned> targets(const ast::DimRef &ref, bool report = true) {
    std::vector<unsigned> result;
    if (ref.tensor && tensorNamed(*ref.tensor) < 0)
      return result;
    for (unsigned i = 0; i < tensors().size(); ++i) {
      if (ref.tensor && !matchesTensor(tensors()[i], ref.tensor->text))
        continue;
      if (tensors()[i].findLoop(ref.dim.text) >= 0)
        result.push_back(i);
    }
    if (result.empty() && report) {
      if (ref.tensor)
        diagnostics_.report(DiagId::ScheduleUnknownLoop, ref.dim.range, ref.tensor->text,
                            ref.dim.text,
                            loopNames(tensors()[schedule_->findTensor(ref.tensor->text)]));
      else
        diagnostics_.report(DiagId::ScheduleUnknownLoop, ref.dim.range, fusion_.name, ref.dim.text,
                            allLoopNames());
    }
    return result;
  }

  /// Refuses to transform a loop at or outside a compute_at position.
  bool transformable(const ast::Directive &directive, const char *what, unsigned tensorIndex,
                     int loopIndex) {
    const TensorSchedule &tensor = tensors()[tensorIndex];
    if (!tensor.computeAtPosition || loopIndex > static_cast<int>(*tensor.computeAtPosition))
      return true;
    diagnostics_
        .report(DiagId::TransformInsideComputeAt, directive.range, what,
                tensor.loops[loopIndex].name, tensor.name)
        .note(DiagId::NoteDirective, tensor.computeAtBy->range, "compute_at is here");
    return false;
  }

  bool nameFree(const ast::Name &name, unsigned tensorIndex) {
    if (tensors()[tensorIndex].findLoop(name.text) < 0)
      return true;
    diagnostics_.report(DiagId::LoopNameTaken, name.range, name.text, tensors()[tensorIndex].name);
    return false;
  }

  void note(const ast::Directive &directive, const std::string &text) {
    if (!schedule_->notes.count(&directive))
      schedule_->notes[&directive] = text;
  }

  void apply(const ast::Directive &directive) {
    using K = ast::Directive::Kind;
    switch (directive.kind()) {
    case K::Split:
      return split(llvm::cast<ast::SplitDirective>(directive));
    case K::Merge:
      return merge(llvm::cast<ast::MergeDirective>(directive));
    case K::Reorder:
      return reorder(llvm::cast<ast::ReorderDirective>(directive));
    case K::Parallelize:
      return parallelize(llvm::cast<ast::ParallelizeDirective>(directive));
    case K::Vectorize:
      return annotate(directive, llvm::cast<ast::VectorizeDirective>(directive).dim, "vectorize");
    case K::Unroll:
      return annotate(directive, llvm::cast<ast::UnrollDirective>(directive).dim, "unroll");
    case K::Unswitch:
      return annotate(directive, llvm::cast<ast::UnswitchDirective>(directive).dim, "unswitch");
    case K::Rfactor:
      return rfactor(llvm::cast<ast::RfactorDirective>(directive));
    case K::Inline: {
      const auto &d = llvm::cast<ast::InlineDirective>(directive);
      if (d.tensor) {
        int index = tensorNamed(*d.tensor);
        if (index >= 0)
          setOnce(directive, tensors()[index].inlinedBy, "inlining of '" + d.tensor->text + "'");
      }
      return;
    }
    case K::ComputeAt:
      return computeAt(llvm::cast<ast::ComputeAtDirective>(directive));
    case K::ComputeWith: {
      const auto &d = llvm::cast<ast::ComputeWithDirective>(directive);
      int index = tensorNamed(d.tensor);
      if (index >= 0)
        setOnce(directive, tensors()[index].computeWithBy,
                "compute_with of '" + d.tensor.text + "'");
      return;
    }
    case K::Persistent: {
      const auto &d = llvm::cast<ast::PersistentDirective>(directive);
      int index = tensorNamed(d.tensor);
      if (index >= 0 && setOnce(directive, tensors()[index].persistentBy,
                                "the memory of '" + d.tensor.text + "'"))
        tensors()[index].persistent = d.memory;
      return;
    }
    case K::Cache: {
      const auto &d = llvm::cast<ast::CacheDirective>(directive);
      int index = tensorNamed(d.tensor);
      if (index >= 0 &&
          setOnce(directive, tensors()[index].cacheBy, "the cache of '" + d.tensor.text + "'"))
        tensors()[index].cache = d.memory;
      return;
    }
    case K::LaunchBounds:
      setOnce(directive, schedule_->launchBounds, "launch_bounds");
      return;
    case K::MaxRRegCount:
      setOnce(directive, schedule_->maxRRegCount, "maxrregcount");
      return;
    case K::Pdl:
      setOnce(directive, schedule_->pdl, "pdl");
      return;
    case K::Mma:
      setOnce(directive, schedule_->matmul.mma, "the mma tile");
      return;
    case K::Pipeline:
      setOnce(directive, schedule_->matmul.pipeline, "the pipeline");
      return;
    case K::WarpSpecialize:
      setOnce(directive, schedule_->matmul.warpSpecialize, "warp specialization");
      return;
    case K::Tiles:
      schedule_->matmul.tiles.push_back(&llvm::cast<ast::TilesDirective>(directive));
      return;
    case K::Cluster:
      setOnce(directive, schedule_->matmul.cluster, "the cluster shape");
      return;
    case K::Epilogue:
      setOnce(directive, schedule_->matmul.epilogue, "the epilogue");
      return;
    }
  }

  template <typename T>
  bool setOnce(const ast::Directive &directive, const T *&slot, const std::string &what) {
    if (slot) {
      diagnostics_.report(DiagId::DuplicateDirective, directive.range, what)
          .note(DiagId::NoteDirective, slot->range, "set here");
      return false;
    }
    slot = llvm::cast<T>(&directive);
    return true;
  }

  bool setOnce(const ast::Directive &directive, const ast::Directive *&slot,
               const std::string &what) {
    if (slot) {
      diagnostics_.report(DiagId::DuplicateDirective, directive.range, what)
          .note(DiagId::NoteDirective, slot->range, "set here");
      return false;
    }
    slot = &directive;
    return true;
  }

  void split(const ast::SplitDirective &d) {
    if (d.factor.value < 1) {
      diagnostics_.report(DiagId::SplitFactorNotPositive, d.factor.range, d.factor.value);
      return;
    }
    for (unsigned index : targets(d.dim)) {
      TensorSchedule &tensor = tensors()[index];
      int position = tensor.findLoop(d.dim.dim.text);
      if (!transformable(d, "split", index, position) || !nameFree(d.outer, index) ||
          (d.inner.text != d.outer.text && !nameFree(d.inner, index)))
        return;
      if (d.inner.text == d.outer.text) {
        diagnostics_.report(DiagId::LoopNameTaken, d.inner.range, d.inner.text, tensor.name);
        return;
      }
      Loop original = tensor.loops[position];
      int64_t factor = d.factor.value;
      Loop outer = original, inner = original;
      outer.name = d.outer.text;
      inner.name = d.inner.text;
      outer.parallel = inner.parallel = Parallel::Serial;
      outer.parallelizedBy = inner.parallelizedBy = nullptr;
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
      outer.stride = Extent::mul(original.stride, inner.extent);
      outer.exact = inner.exact = original.exact && (divides || factor == 1);
      tensor.loops[position] = outer;
      tensor.loops.insert(tensor.loops.begin() + position + 1, inner);
      sched::LoopTransform transform;
      transform.kind = sched::LoopTransform::Kind::Split;
      transform.input = original.name;
      transform.outer = outer.name;
      transform.inner = inner.name;
      transform.innerExtent = inner.extent;
      transform.range = d.range;
      tensor.transforms.push_back(transform);
      note(d, llvm::formatv("{0}: {1}, {2}: {3}{4}", outer.name, outer.extent.text, inner.name,
                            inner.extent.text, outer.exact ? "" : "; the last iteration is partial")
                  .str());
    }
  }

  void merge(const ast::MergeDirective &d) {
    std::vector<unsigned> withFirst = targets(d.first), withSecond = targets(d.second);
    if (withFirst.empty() || withSecond.empty())
      return;
    bool merged = false;
    for (unsigned index : withFirst) {
      if (!llvm::is_contained(withSecond, index))
        continue;
      TensorSchedule &tensor = tensors()[index];
      int a = tensor.findLoop(d.first.dim.text), b = tensor.findLoop(d.second.dim.text);
      if (a == b) {
        diagnostics_.report(DiagId::LoopNameTaken, d.second.range, d.second.dim.text, tensor.name);
        return;
      }
      if (!transformable(d, "merge", index, a) || !transformable(d, "merge", index, b))
        return;
      const Loop &first = tensor.loops[a], &second = tensor.loops[b];
      if (first.isReduction != second.isReduction) {
        const Loop &reduction = first.isReduction ? first : second;
        const Loop &iteration = first.isReduction ? second : first;
        diagnostics_
            .report(DiagId::MergeReductionIteration, d.range, reduction.name, iteration.name,
                    tensor.name)
            .note(DiagId::NoteFusionLine, tensor.value->range,
                  "'" + tensor.name + "' reduces over " + fusion_.dims[reduction.roots[0]].name +
                      " here");
        return;
      }
      if (tensor.findLoop(d.result.text) >= 0) {
        diagnostics_.report(DiagId::LoopNameTaken, d.result.range, d.result.text, tensor.name);
        return;
      }
      Loop result = first;
      result.name = d.result.text;
      result.extent = Extent::mul(first.extent, second.extent);
      result.stride = second.stride;
      result.roots.insert(result.roots.end(), second.roots.begin(), second.roots.end());
      result.contiguous = second.contiguous && b == a + 1;
      result.exact = first.exact && second.exact;
      result.parallel = Parallel::Serial;
      result.parallelizedBy = nullptr;
      sched::LoopTransform transform;
      transform.kind = sched::LoopTransform::Kind::Merge;
      transform.input = first.name;
      transform.secondInput = second.name;
      transform.result = result.name;
      transform.innerExtent = second.extent;
      transform.range = d.range;
      tensor.transforms.push_back(transform);
      int low = std::min(a, b), high = std::max(a, b);
      tensor.loops[low] = result;
      tensor.loops.erase(tensor.loops.begin() + high);
      note(d, llvm::formatv("{0}: {1}", result.name, result.extent.text).str());
      merged = true;
    }
    if (!merged)
      diagnostics_.report(DiagId::ScheduleUnknownLoop, d.range, fusion_.name,
                          d.first.dim.text + " and " + d.second.dim.text + " together",
                          allLoopNames());
  }

  void reorder(const ast::ReorderDirective &d) {
    for (const ast::DimRef &ref : d.order)
      if (targets(ref).empty())
        return;
    for (unsigned index = 0; index < tensors().size(); ++index) {
      TensorSchedule &tensor = tensors()[index];
      std::vector<int> positions;
      std::vector<Loop> loops;
      for (const ast::DimRef &ref : d.order) {
        if (ref.tensor && !matchesTensor(tensor, ref.tensor->text))
          continue;
        int position = tensor.findLoop(ref.dim.text);
        if (position < 0)
          continue;
        if (!transformable(d, "reorder", index, position))
          return;
        positions.push_back(position);
        loops.push_back(tensor.loops[position]);
      }
      std::sort(positions.begin(), positions.end());
      for (size_t i = 0; i < positions.size(); ++i)
        tensor.loops[positions[i]] = loops[i];
    }
  }

  void parallelize(const ast::ParallelizeDirective &d) {
    std::vector<std::string> notes;
    for (const ast::ParallelBinding &binding : d.bindings) {
      std::vector<unsigned> found = targets(binding.dim);
      for (unsigned index : found) {
        Loop &loop = tensors()[index].loops[tensors()[index].findLoop(binding.dim.dim.text)];
        loop.parallel = fromAst(binding.type);
        loop.parallelizedBy = &d;
      }
      if (!found.empty()) {
        const Loop &loop =
            tensors()[found[0]].loops[tensors()[found[0]].findLoop(binding.dim.dim.text)];
        bool threads = isThreadIndex(loop.parallel);
        notes.push_back(llvm::formatv("{0}: {1} {2}{3}", loop.name, loop.extent.text,
                                      threads ? "threads" : "blocks",
                                      loop.extent.isStatic() ? ", static" : "")
                            .str());
      }
    }
    note(d, llvm::join(notes, "; "));
  }

  void annotate(const ast::Directive &d, const ast::DimRef &ref, llvm::StringRef what) {
    std::vector<unsigned> found = targets(ref);
    for (unsigned index : found) {
      TensorSchedule &tensor = tensors()[index];
      Loop &loop = tensor.loops[tensor.findLoop(ref.dim.text)];
      if (what == "vectorize") {
        loop.vectorized = true;
        loop.vectorizedBy = &d;
      } else if (what == "unroll") {
        loop.unrolled = true;
        loop.unrolledBy = &d;
        if (const auto &factor = llvm::cast<ast::UnrollDirective>(d).factor)
          loop.unrollFactor = factor->value;
      } else {
        loop.unswitched = true;
      }
    }
    if (found.empty())
      return;
    // The note describes the memory access of the first input or output it touches.
    for (unsigned index : found) {
      const TensorSchedule &tensor = tensors()[index];
      const Loop &loop = tensor.loops[tensor.findLoop(ref.dim.text)];
      if (what == "vectorize" && (tensor.isInput || tensor.isOutput) && loop.extent.isStatic()) {
        note(d, llvm::formatv("{0} x {1} = {2} bytes per access of {3}", *loop.extent.value,
                              ir::dtypeName(tensor.dtype),
                              *loop.extent.value * ir::dtypeBytes(tensor.dtype), tensor.name)
                    .str());
        return;
      }
      if (what != "vectorize") {
        note(d, llvm::formatv("{0}: {1} iterations{2}", loop.name, loop.extent.text,
                              loop.extent.isStatic() ? "" : ", runtime")
                    .str());
        return;
      }
    }
  }

  void rfactor(const ast::RfactorDirective &d) {
    std::vector<unsigned> found = targets(d.dim);
    if (found.empty())
      return;
    bool any = false;
    for (unsigned index : found) {
      TensorSchedule &tensor = tensors()[index];
      if (tensor.loops[tensor.findLoop(d.dim.dim.text)].isReduction) {
        tensor.rfactorBy = &d;
        any = true;
      }
    }
    if (!any)
      diagnostics_.report(DiagId::RfactorNotReduction, d.dim.range, d.dim.dim.text,
                          d.dim.tensor ? "'" + d.dim.tensor->text + "'"
                                       : std::string("any tensor"));
  }

  void computeAt(const ast::ComputeAtDirective &d) {
    int index = tensorNamed(d.tensor);
    if (index < 0)
      return;
    TensorSchedule &tensor = tensors()[index];
    int position = tensor.findLoop(d.at.dim.text);
    if (position < 0) {
      diagnostics_.report(DiagId::ScheduleUnknownLoop, d.at.range, tensor.name, d.at.dim.text,
                          loopNames(tensor));
      return;
    }
    if (setOnce(d, tensor.computeAtBy, "the compute_at position of '" + tensor.name + "'"))
      tensor.computeAtPosition = static_cast<size_t>(position);
  }

  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  std::unique_ptr<Schedule> schedule_;
};

} // namespace

std::unique_ptr<Schedule> buildSchedule(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics) {
  return Builder(decl, fusion, diagnostics).build();
}

/// Why a known knob cannot be honoured whatever the fusion, or nothing. The heuristics
/// refuse the knobs that depend on the fusion (a vector width that does not divide it...).
static std::optional<std::string> refusedKnob(const std::string &knob, const std::string &kind) {
  // Which heuristic plain `auto` runs depends on the fusion's shape, and each reads only
  // its own knobs: a knob there could silently go unused.
  if (kind.empty()) {
    static const std::map<std::string, const char *> owners = {
        {"vector_width", "auto(pointwise), auto(reduction) or auto(inner_persistent)"},
        {"unroll", "auto(pointwise)"},
        {"rfactor", "auto(reduction)"},
        {"static_bdimx", "auto(inner_persistent)"},
        {"compute_with", "auto(inner_persistent)"},
        {"persistent_batch", "auto(inner_persistent)"},
        {"rows_per_block", "auto(inner_persistent)"},
        {"stages", "auto(matmul)"},
        {"split_k", "auto(matmul)"},
        {"swizzle", "auto(matmul)"}};
    auto owner = owners.find(knob);
    return llvm::formatv("plain 'auto' picks its heuristic from the fusion's shape and each "
                         "heuristic reads only its own knobs; name the heuristic: {0}",
                         owner != owners.end() ? owner->second : "auto(kind)")
        .str();
  }
  if (knob == "rfactor")
    return std::string("rfactor is not lowered yet; without the knob auto(reduction) reduces "
                       "each thread's part serially, then across the threads; remove it");
  static const std::map<std::string, const char *> matmul = {
      {"stages", "'pipeline N stages'"},
      {"split_k", "'tiles split_k N'"},
      {"swizzle", "'tiles persistent swizzle N'"}};
  if (auto directive = matmul.find(knob); directive != matmul.end())
    return llvm::formatv("auto(matmul) is not written yet (matrix products are not lowered "
                         "yet), so no heuristic reads it; schedule the product by hand with {0}",
                         directive->second)
        .str();
  return std::nullopt;
}

bool checkAutoSchedule(const ast::ScheduleDecl &decl, DiagnosticEngine &diagnostics) {
  // Knobs of each heuristic and the kind of value each takes.
  static const std::map<std::string, std::map<std::string, const char *>> kinds = {
      {"pointwise", {{"vector_width", "int"}, {"unroll", "int"}}},
      {"reduction", {{"vector_width", "int"}, {"rfactor", "bool"}}},
      {"inner_persistent",
       {{"static_bdimx", "bool"},
        {"compute_with", "bool"},
        {"vector_width", "int"},
        {"persistent_batch", "int"},
        {"rows_per_block", "int"}}},
      {"matmul", {{"stages", "int"}, {"split_k", "int"}, {"swizzle", "int"}}},
  };
  unsigned errorsBefore = diagnostics.errorCount();
  std::string kind = decl.autoKind ? decl.autoKind->text : "";
  auto found = kinds.find(kind);
  if (decl.autoKind && found == kinds.end()) {
    diagnostics.report(DiagId::UnknownAutoKind, decl.autoKind->range, kind);
    return false;
  }
  // A knob given twice: the heuristics would read only the last.
  std::map<std::string, llvm::SMRange> seen;
  for (const ast::Knob &knob : decl.knobs)
    if (auto [first, inserted] = seen.emplace(knob.name.text, knob.range); !inserted)
      diagnostics.report(DiagId::DuplicateDirective, knob.range, "knob '" + knob.name.text + "'")
          .note(DiagId::NoteDirective, first->second, "set here");
  for (const ast::Knob &knob : decl.knobs) {
    // Without a kind, a knob must belong to some heuristic.
    const char *type = nullptr;
    std::vector<std::string> names;
    for (const auto &[name, knobs] : kinds) {
      if (found != kinds.end() && name != kind)
        continue;
      for (const auto &[knobName, knobType] : knobs) {
        names.push_back(knobName);
        if (knobName == knob.name.text)
          type = knobType;
      }
    }
    if (!type) {
      diagnostics.report(DiagId::UnknownKnob, knob.name.range, knob.name.text,
                         kind.empty() ? "any" : kind, llvm::join(names, ", "));
      continue;
    }
    const auto &literal = llvm::cast<ast::LiteralExpr>(*knob.value);
    bool isBool = literal.literalKind == ast::LiteralExpr::LiteralKind::Bool;
    bool isInt = literal.literalKind == ast::LiteralExpr::LiteralKind::Int;
    if (std::string(type) == "bool" && !isBool)
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "true or false");
    else if (std::string(type) == "int" && (!isInt || literal.intValue < 1))
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "a positive integer");
    else if (knob.name.text == "vector_width" && !llvm::isPowerOf2_64(literal.intValue))
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "a power of two");
    else if (auto reason = refusedKnob(knob.name.text, kind))
      diagnostics.report(DiagId::AutoKnobUnsupported, knob.range, knob.name.text, *reason);
  }
  return diagnostics.errorCount() == errorsBefore;
}

} // namespace fsl::sched
