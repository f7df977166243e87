// Heuristics.cpp — one function per heuristic; each returns commented schedule text.
#include "heuristics/Heuristics.h"

#include "schedule/ScheduleBuilder.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>

namespace fsl::heuristics {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// The output with the most dimensions: its layout is the kernel's.
const ir::Output *referenceOutput(const ir::Fusion &fusion) {
  const ir::Output *best = nullptr;
  for (const ir::Output &output : fusion.outputs)
    if (!best || output.dims.size() + output.value->reduced.size() >
                     best->dims.size() + best->value->reduced.size())
      best = &output;
  return best;
}

/// Widest element among the inputs and outputs whose innermost dimension is `dim`.
unsigned widestElement(const ir::Fusion &fusion, ir::DimId dim) {
  unsigned bytes = 1;
  for (const ir::Param &param : fusion.params)
    if (!param.dims.empty() && param.dims.back() == dim)
      bytes = std::max(bytes, ir::dtypeBytes(param.dtype));
  for (const ir::Output &output : fusion.outputs)
    if (!output.dims.empty() && output.dims.back() == dim)
      bytes = std::max(bytes, ir::dtypeBytes(output.dtype));
  return bytes;
}

/// Vector width: up to 16 bytes, a power of two dividing the static extent.
int64_t vectorWidth(const ir::Fusion &fusion, ir::DimId dim, const Knobs &knobs, std::string &why) {
  const ir::Dim &d = fusion.dims[dim];
  unsigned bytes = widestElement(fusion, dim);
  int64_t width = knobs.vectorWidth.value_or(16 / bytes);
  if (!d.staticExtent) {
    why = d.name + " is a runtime size: scalar accesses (vectors need a static extent they divide)";
    return 1;
  }
  while (width > 1 && *d.staticExtent % width != 0)
    width /= 2;
  why = llvm::formatv("{0} x {1} bytes = {2}-byte accesses", width, bytes, width * bytes).str();
  return width;
}

std::string guard(const std::vector<ast::SizeCondition> &when, const std::string &extra = "") {
  std::vector<std::string> parts;
  for (const ast::SizeCondition &c : when)
    parts.push_back(c.dim.text + " " + ast::binaryOpSpelling(c.op).str() + " " +
                    std::to_string(c.bound.value));
  if (!extra.empty())
    parts.push_back(extra);
  return parts.empty() ? "" : " when " + llvm::join(parts, " && ");
}

struct Block {
  std::vector<std::string> comments;
  std::vector<std::string> directives;
  std::string render(const std::string &fusion, const std::string &when) const {
    std::string text;
    for (const std::string &comment : comments)
      text += "// " + comment + "\n";
    text += "schedule " + fusion + when + " {\n";
    for (const std::string &directive : directives)
      text += "    " + directive + "\n";
    return text + "}\n";
  }
};

/// rows -> BIDx (or Tb -> BIDx, Ty -> TIDy), the row split into Hp x Hx x Hv.
struct RowSplit {
  int64_t vector = 1, threads = 32, batch = 1, rowsPerBlock = 1;
};

void rowDirectives(Block &block, const std::string &row, const std::string &dim,
                   const RowSplit &split, bool staticBdimx, bool unroll) {
  const std::string outer = dim + "o", vec = dim + "v", serial = dim + "p", lanes = dim + "x";
  if (split.vector > 1)
    block.directives.push_back(
        llvm::formatv("split {0} by {1} -> ({2}, {3});", dim, split.vector, outer, vec).str());
  std::string base = split.vector > 1 ? outer : dim;
  if (staticBdimx)
    block.directives.push_back(
        llvm::formatv("split {0} by {1} -> ({2}, {3});", base, split.threads, serial, lanes).str());
  else
    block.directives.push_back(
        llvm::formatv("split {0} into {1} -> ({2}, {3});", base, split.batch, serial, lanes).str());
  std::string binding = llvm::formatv("parallelize {0} -> BIDx, {1} -> TIDx;", row, lanes).str();
  if (split.rowsPerBlock > 1) {
    block.directives.push_back(
        llvm::formatv("split {0} by {1} -> ({0}b, {0}y);", row, split.rowsPerBlock).str());
    binding =
        llvm::formatv("parallelize {0}b -> BIDx, {0}y -> TIDy, {1} -> TIDx;", row, lanes).str();
  }
  block.directives.push_back(binding);
  if (split.vector > 1)
    block.directives.push_back("vectorize " + vec + ";");
  if (unroll && split.batch > 1)
    block.directives.push_back("unroll " + serial + ";");
}

class Chooser {
public:
  Chooser(const ir::Fusion &fusion, const Target &target, const Knobs &knobs)
      : fusion_(fusion), target_(target), knobs_(knobs) {}

  Choice run() {
    for (const auto &value : fusion_.values)
      if (value->op == ir::Op::MatMul)
        return {"",
                "matrix products are scheduled by the matmul heuristic, which is not written yet"};
    const ir::Output *reference = referenceOutput(fusion_);
    if (!reference)
      return {"", "the fusion has no output"};
    std::string kind = knobs_.kind.empty() ? classify(fusion_) : knobs_.kind;
    if (kind == "pointwise")
      return pointwise();
    if (kind == "reduction" || kind == "inner_persistent")
      return reductionLike(kind == "inner_persistent");
    return {"", "auto(" + kind + ") is not implemented yet"};
  }

private:
  /// The contiguous dimension and the others of the reference layout.
  bool layout(ir::DimId &inner, std::vector<ir::DimId> &rows, std::string &why) {
    const ir::Output *reference = referenceOutput(fusion_);
    std::vector<ir::DimId> dims = reference->dims;
    dims.insert(dims.end(), reference->value->reduced.begin(), reference->value->reduced.end());
    // The largest input's layout decides when the output is a reduction.
    for (const ir::Param &param : fusion_.params)
      if (param.dims.size() >= dims.size())
        dims = param.dims;
    if (dims.empty() || dims.size() > 2) {
      why = "the heuristics handle fusions of one or two dimensions for now";
      return false;
    }
    inner = dims.back();
    rows.assign(dims.begin(), dims.end() - 1);
    return true;
  }

  Choice pointwise() {
    ir::DimId inner;
    std::vector<ir::DimId> rows;
    std::string why;
    if (!layout(inner, rows, why))
      return {"", why};
    const ir::Dim &d = fusion_.dims[inner];
    std::string vectorWhy;
    int64_t vector = vectorWidth(fusion_, inner, knobs_, vectorWhy);
    Block block;
    block.comments.push_back("auto(pointwise): " + vectorWhy +
                             "; 128 threads a block, one access each.");
    if (vector > 1)
      block.directives.push_back(
          llvm::formatv("split {0} by {1} -> ({0}o, {0}v);", d.name, vector).str());
    std::string base = vector > 1 ? d.name + "o" : d.name;
    block.directives.push_back(
        llvm::formatv("split {0} by 128 -> ({1}b, {1}x);", base, d.name).str());
    if (rows.empty())
      block.directives.push_back(
          llvm::formatv("parallelize {0}b -> BIDx, {0}x -> TIDx;", d.name).str());
    else
      block.directives.push_back(
          llvm::formatv("parallelize {0} -> BIDx, {1}b -> BIDy, {1}x -> TIDx;",
                        fusion_.dims[rows[0]].name, d.name)
              .str());
    if (vector > 1)
      block.directives.push_back("vectorize " + d.name + "v;");
    return {block.render(fusion_.name, guard(knobs_.when)), ""};
  }

  /// Persistent buffers: values a reduction consumes and a later use needs. One that
  /// itself waits for a reduction is kept only when recomputing it costs a transcendental
  /// function (softmax's exp(x - max)); others are cheap to recompute from the buffer.
  std::vector<const sched::TensorSchedule *>
  buffers(const std::vector<sched::TensorSchedule> &tensors) {
    std::vector<const sched::TensorSchedule *> result;
    for (const sched::TensorSchedule &tensor : tensors) {
      if (!tensor.isPersistentBuffer || tensor.isOutput ||
          tensor.name.find('%') != std::string::npos)
        continue;
      bool afterReduction = false;
      std::vector<const ir::Value *> stack = {tensor.value};
      while (!stack.empty()) {
        const ir::Value *v = stack.back();
        stack.pop_back();
        for (const ir::Value *operand : v->operands) {
          afterReduction |= ir::isReduction(operand->op);
          stack.push_back(operand);
        }
      }
      if (!afterReduction || expensive(tensor.value, tensors))
        result.push_back(&tensor);
    }
    return result;
  }

  /// Computing `value` from the nearest tensors involves exp, log, tanh, erf, sigmoid or pow.
  static bool expensive(const ir::Value *value, const std::vector<sched::TensorSchedule> &tensors) {
    auto isTensor = [&](const ir::Value *v) {
      for (const sched::TensorSchedule &t : tensors)
        if (t.value == v)
          return true;
      return false;
    };
    std::vector<const ir::Value *> stack = {value};
    while (!stack.empty()) {
      const ir::Value *v = stack.back();
      stack.pop_back();
      switch (v->op) {
      case ir::Op::Exp:
      case ir::Op::Log:
      case ir::Op::Tanh:
      case ir::Op::Erf:
      case ir::Op::Sigmoid:
      case ir::Op::Pow:
        return true;
      default:
        break;
      }
      for (const ir::Value *operand : v->operands)
        if (!isTensor(operand))
          stack.push_back(operand);
    }
    return false;
  }

  Choice reductionLike(bool persistent) {
    ir::DimId inner;
    std::vector<ir::DimId> rows;
    std::string why;
    if (!layout(inner, rows, why))
      return {"", why};
    std::set<ir::DimId> reduced;
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op))
        reduced.insert(value->reduced.begin(), value->reduced.end());
    if (reduced.size() != 1)
      return {"", "the reduction heuristics handle fusions that reduce one dimension"};
    ir::DimId r = *reduced.begin();
    if (r != inner)
      return outerReduction(r, inner);
    if (rows.size() != 1)
      return {"", "an inner reduction needs one row dimension"};
    const ir::Dim &d = fusion_.dims[inner];
    const std::string row = fusion_.dims[rows[0]].name;
    std::string vectorWhy;
    int64_t vector = vectorWidth(fusion_, inner, knobs_, vectorWhy);

    std::vector<sched::TensorSchedule> tensors = sched::rootTensors(fusion_);
    std::vector<const sched::TensorSchedule *> kept =
        persistent ? buffers(tensors) : std::vector<const sched::TensorSchedule *>{};
    int64_t numBuffers = std::max<int64_t>(1, static_cast<int64_t>(kept.size()));

    if (!d.staticExtent) {
      // A runtime row length: threads cover it in a loop (dynamic blockDim-free split).
      Block block;
      block.comments.push_back(
          llvm::formatv("auto({0}): {1} is a runtime size: 256 threads loop over the row; "
                        "values are recomputed (no static buffer size).",
                        persistent ? "inner_persistent" : "reduction", d.name)
              .str());
      block.directives.push_back(llvm::formatv("split {0} by 256 -> ({0}p, {0}x);", d.name).str());
      block.directives.push_back(
          llvm::formatv("parallelize {0} -> BIDx, {1}x -> TIDx;", row, d.name).str());
      for (const sched::TensorSchedule *buffer : kept)
        block.directives.push_back("persistent " + buffer->name + " in recompute;");
      return {block.render(fusion_.name, guard(knobs_.when)), ""};
    }

    int64_t vectors = ceilDiv(*d.staticExtent, vector);
    // Register budget for buffers: 64 f32 values a thread keeps occupancy near 50%. The
    // batch is at most 4 vectors a thread: measured on the H200 (docs/performance.md,
    // change 5), 256 threads x 4 beat 128 x 8 at H = 8192 and 512 x 4 beat 256 x 8 at
    // H = 16384 (the larger batch's registers halve the warps an SM holds).
    const int64_t registerBudget = 64, batchTarget = 4;
    int64_t batchLimit = knobs_.persistentBatch.value_or(
        persistent ? std::clamp<int64_t>(registerBudget / (vector * numBuffers), 1, batchTarget)
                   : 16);
    auto choose = [&](int64_t minThreads) {
      RowSplit split;
      split.vector = vector;
      split.threads = std::clamp(roundUp(ceilDiv(vectors, batchLimit), 32),
                                 std::min<int64_t>(minThreads, roundUp(vectors, 32)),
                                 target_.maxThreadsPerBlock);
      split.batch = ceilDiv(vectors, split.threads);
      if (!knobs_.staticBdimx) // the baseline: batch first, threads = what is left
        split.threads = ceilDiv(vectors, split.batch);
      split.rowsPerBlock =
          knobs_.rowsPerBlock.value_or(split.threads < 128 ? 128 / roundUp(split.threads, 32) : 1);
      return split;
    };
    // Short rows: a warp a row when its batch fits, four rows a block, so each reduction
    // is shuffles alone and a block has four rows' loads in flight. Measured on the H200
    // (docs/performance.md, changes 3 and 5): at H = 1024 and T >= 1024, 5-17 % faster
    // than 128 threads a row for every fusion once block reductions are cheap.
    bool warpPerRow = ceilDiv(vectors, 32) <= batchLimit && vectors > 32;
    RowSplit normal = choose(warpPerRow ? 32 : 128);
    // Fewer rows than SMs: a batch of 2, up to 512 threads a row (at least 128). Measured
    // (change 5): 512 x 2 beat 1024 x 1 at H = 8192 by 5-16 %, 256 x 2 beat 512 x 1 at
    // H = 4096 by 1-6 %: half the threads wait at each barrier for the same loads.
    RowSplit wide = choose(std::clamp<int64_t>(roundUp(ceilDiv(vectors, 2), 32), 128, 512));
    wide.rowsPerBlock = 1;

    auto persistentDirectives = [&](Block &block, const RowSplit &split) {
      int64_t values = split.batch * split.vector;
      for (const sched::TensorSchedule *buffer : kept) {
        int64_t sharedBytes = values * 4 * split.threads * split.rowsPerBlock;
        std::string memory = "registers";
        std::string reason = llvm::formatv("{0} values of {1} a thread fit registers", values,
                                           ir::dtypeName(buffer->dtype))
                                 .str();
        if (values * numBuffers > 2 * registerBudget) {
          // Shared memory also holds the reduction scratch, 8 bytes a thread.
          if (sharedBytes * numBuffers + 8 * split.threads * split.rowsPerBlock <=
              target_.sharedMemoryPerBlock) {
            memory = "shared";
            reason = llvm::formatv("{0} values a thread are too many for registers; {1} bytes a "
                                   "block fit shared memory",
                                   values, sharedBytes)
                         .str();
          } else {
            memory = "recompute";
            reason = "too large for registers and shared memory: the inputs are read again";
          }
        }
        block.comments.push_back("persistent " + buffer->name + " in " + memory + ": " + reason +
                                 ".");
        block.directives.push_back("persistent " + buffer->name + " in " + memory + ";");
        if (knobs_.computeWith && memory != "recompute")
          block.directives.push_back("compute_with " + buffer->name + ";");
      }
    };
    auto describe = [&](const RowSplit &split, const char *purpose) {
      return llvm::formatv("{0}: {1} = {2}: {3} vectors ({4}) = {5} threads x {6} serial{7}{8}.",
                           purpose, d.name, *d.staticExtent, vectors, vectorWhy, split.threads,
                           split.batch,
                           knobs_.staticBdimx
                               ? " (blockDim.x static: the row split inner by the thread count)"
                               : " (static_bdimx = false: the batch split outer)",
                           split.rowsPerBlock > 1
                               ? llvm::formatv(", {0} rows a block", split.rowsPerBlock).str()
                               : "")
          .str();
    };
    const char *kind = persistent ? "inner_persistent" : "reduction";
    std::string text;
    bool widen = wide.threads > normal.threads && knobs_.when.empty() && !knobs_.rowsPerBlock;
    if (widen) {
      Block small;
      small.comments.push_back(
          llvm::formatv("auto({0}), fewer rows than the {1} SMs of {2}: wider blocks, more "
                        "warps a row.",
                        kind, target_.smCount, target_.name)
              .str());
      small.comments.push_back(describe(wide, "row split"));
      rowDirectives(small, row, d.name, wide, knobs_.staticBdimx, true);
      persistentDirectives(small, wide);
      text += small.render(fusion_.name, guard({}, row + " < " + std::to_string(target_.smCount))) +
              "\n";
    }
    Block block;
    block.comments.push_back(
        llvm::formatv("auto({0}){1}.", kind,
                      widen ? llvm::formatv(", {0} rows or more", target_.smCount).str() : "")
            .str());
    block.comments.push_back(describe(normal, "row split"));
    rowDirectives(block, row, d.name, normal, knobs_.staticBdimx, true);
    persistentDirectives(block, normal);
    text += block.render(fusion_.name, guard(knobs_.when));
    return {text, ""};
  }

  Choice outerReduction(ir::DimId reduced, ir::DimId inner) {
    const ir::Dim &d = fusion_.dims[inner];
    Block block;
    block.comments.push_back("auto(reduction), outer: each thread reduces one column over " +
                             fusion_.dims[reduced].name +
                             " serially; columns on threads and blocks.");
    block.directives.push_back(llvm::formatv("split {0} by 128 -> ({0}b, {0}x);", d.name).str());
    block.directives.push_back(
        llvm::formatv("parallelize {0}b -> BIDx, {0}x -> TIDx;", d.name).str());
    return {block.render(fusion_.name, guard(knobs_.when)), ""};
  }

  const ir::Fusion &fusion_;
  const Target &target_;
  const Knobs &knobs_;
};

} // namespace

Knobs knobsOf(const ast::ScheduleDecl &decl) {
  Knobs knobs;
  if (decl.autoKind)
    knobs.kind = decl.autoKind->text;
  knobs.when = decl.when;
  for (const ast::Knob &knob : decl.knobs) {
    const auto &literal = llvm::cast<ast::LiteralExpr>(*knob.value);
    if (knob.name.text == "static_bdimx")
      knobs.staticBdimx = literal.boolValue;
    else if (knob.name.text == "compute_with")
      knobs.computeWith = literal.boolValue;
    else if (knob.name.text == "vector_width")
      knobs.vectorWidth = literal.intValue;
    else if (knob.name.text == "persistent_batch")
      knobs.persistentBatch = literal.intValue;
    else if (knob.name.text == "rows_per_block")
      knobs.rowsPerBlock = literal.intValue;
  }
  return knobs;
}

std::string classify(const ir::Fusion &fusion) {
  bool reduces = false;
  for (const auto &value : fusion.values)
    reduces |= ir::isReduction(value->op);
  if (!reduces)
    return "pointwise";
  for (const sched::TensorSchedule &tensor : sched::rootTensors(fusion))
    if (tensor.isPersistentBuffer)
      return "inner_persistent";
  return "reduction";
}

Choice chooseSchedules(const ir::Fusion &fusion, const Target &target, const Knobs &knobs) {
  return Chooser(fusion, target, knobs).run();
}

} // namespace fsl::heuristics
