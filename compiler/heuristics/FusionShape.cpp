// FusionShape.cpp — the facts of a fusion the heuristics read, gathered once.
#include "heuristics/FusionShape.h"

#include "ir/OnePass.h"
#include "ir/RegisterPressure.h"
#include "schedule/ScheduleBuilder.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <map>
#include <set>

namespace fsl::heuristics {
namespace {

DimShape dimShape(const ir::Fusion &fusion, ir::DimId id) {
  return {id, fusion.dims[id].name, fusion.dims[id].staticExtent};
}

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

/// "'yt' is [H, T], with T outer" for the first input or output that has `dim` but not as
/// its innermost (contiguous) dimension; none when every one that has it ends with it.
std::optional<std::string> outerIn(const ir::Fusion &fusion, ir::DimId dim) {
  auto layout = [&](const std::vector<ir::DimId> &dims) {
    std::vector<std::string> names;
    for (ir::DimId each : dims)
      names.push_back(fusion.dims[each].name);
    return "[" + llvm::join(names, ", ") + "]";
  };
  auto outer = [&](const std::vector<ir::DimId> &dims) {
    return llvm::is_contained(dims, dim) && dims.back() != dim;
  };
  for (const ir::Param &param : fusion.params)
    if (outer(param.dims))
      return "'" + param.name + "' is " + layout(param.dims) + ", with " + fusion.dims[dim].name +
             " outer";
  for (const ir::Output &output : fusion.outputs)
    if (outer(output.dims))
      return "'" + output.name + "' is " + layout(output.dims) + ", with " + fusion.dims[dim].name +
             " outer";
  return std::nullopt;
}

/// The dimensions `output` is reduced over: a reduction's own, or, for pointwise
/// operations on reductions' results (`bf16(sum(x, over V))`, `i32(argmax(x, over V))`),
/// those of the reductions it is computed from that it does not keep. A row reduction
/// followed by a cast is still a row reduction, read along its row.
std::vector<ir::DimId> reducedBehind(const ir::Output &output) {
  if (ir::isReduction(output.value->op))
    return output.value->reduced;
  std::vector<ir::DimId> reduced;
  std::vector<const ir::Value *> stack = {output.value};
  std::set<const ir::Value *> seen;
  while (!stack.empty()) {
    const ir::Value *value = stack.back();
    stack.pop_back();
    if (!seen.insert(value).second)
      continue;
    if (!ir::isReduction(value->op)) {
      stack.insert(stack.end(), value->operands.begin(), value->operands.end());
      continue;
    }
    for (ir::DimId dim : value->reduced)
      if (!llvm::is_contained(output.dims, dim) && !llvm::is_contained(reduced, dim))
        reduced.push_back(dim);
  }
  return reduced;
}

/// The contiguous dimension and the others of the reference layout.
void layoutOf(const ir::Fusion &fusion, const ir::Output &reference, FusionShape &shape) {
  std::vector<ir::DimId> dims = reference.dims;
  std::vector<ir::DimId> reduced = reducedBehind(reference);
  dims.insert(dims.end(), reduced.begin(), reduced.end());
  // The largest input's layout decides when the output is reduced; otherwise the
  // output's own (a transposed input is read across its rows).
  if (!reduced.empty())
    for (const ir::Param &param : fusion.params)
      if (param.dims.size() >= dims.size())
        dims = param.dims;
  if (dims.empty() || dims.size() > 2) {
    shape.layoutError = "the heuristics handle fusions of one or two dimensions for now";
    return;
  }
  shape.inner = dimShape(fusion, dims.back());
  for (ir::DimId row : llvm::ArrayRef(dims).drop_back())
    shape.rows.push_back(dimShape(fusion, row));
  shape.innerBytes = widestElement(fusion, dims.back());
  shape.innerOuterIn = outerIn(fusion, dims.back());
}

/// Whether no output has the row's dimension `inner` (nor is an inout): every output is a
/// row's (a loss, a logsumexp, argmax's token).
bool noOutputAlongRow(const ir::Fusion &fusion, ir::DimId inner) {
  return llvm::none_of(fusion.outputs, [&](const ir::Output &output) {
    return llvm::is_contained(output.dims, inner) || output.isInout;
  });
}

/// Whether every reduction's result reaches only values without the reduced dimension
/// `inner` (row outputs: argmax's token, a row's sum), and no output has it. With
/// `onePass`, the values a one-pass pair absorbs (exp(x - max), (x - mean)^2) do not count:
/// the pair's accumulators stand for them (cross-entropy's loss and logsumexp).
bool rowOutputsOnly(const ir::Fusion &fusion, ir::DimId inner, bool onePass) {
  // An inout row (written back by every block of a grid loop) is left to one block a row.
  if (!noOutputAlongRow(fusion, inner))
    return false;
  std::set<unsigned> absorbed;
  if (onePass)
    absorbed = ir::absorbedValueIds(fusion);
  for (const auto &reduction : fusion.values) {
    if (!ir::isReduction(reduction->op))
      continue;
    std::set<unsigned> reached{reduction->id};
    for (const auto &value : fusion.values)
      if (llvm::any_of(value->operands,
                       [&](const ir::Value *operand) { return reached.count(operand->id); })) {
        reached.insert(value->id);
        if (llvm::is_contained(value->dims, inner) && !absorbed.count(value->id))
          return false;
      }
  }
  return true;
}

/// Whether the fusion computes `op` in f32, and whether every output it reaches is stored
/// in a 16-bit float type.
ApproximableFunction approximableFacts(const ir::Fusion &fusion, ir::Op op) {
  std::vector<bool> reaches(fusion.values.size(), false); // depends on an f32 `op`
  bool any = false;
  for (const auto &value : fusion.values) { // operands come first
    bool computed = value->op == op && value->dtype == ir::DType::F32;
    any |= computed;
    for (const ir::Value *operand : value->operands)
      computed |= reaches[operand->id];
    reaches[value->id] = computed;
  }
  bool narrow = any;
  for (const ir::Output &output : fusion.outputs)
    if (reaches[output.value->id] && output.dtype != ir::DType::BF16 &&
        output.dtype != ir::DType::F16)
      narrow = false;
  return {any, narrow};
}

/// Computing `value` from the nearest tensors involves exp, log, tanh, erf, sigmoid or pow.
bool expensive(const ir::Value *value, const std::vector<sched::TensorSchedule> &tensors) {
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

/// Whether `value` follows the first reduction of a one-pass pair and feeds no
/// reduction but pairs' second ones (softmax's exp(x - max)).
bool bufferOnlyInTwoPasses(const ir::Fusion &fusion, const std::vector<ir::OnePassPair> &pairs,
                           const ir::Value *value) {
  std::set<const ir::Value *> firsts, seconds;
  for (const ir::OnePassPair &pair : pairs) {
    firsts.insert(pair.first);
    seconds.insert(pair.second);
  }
  bool afterFirst = false;
  std::vector<const ir::Value *> stack = {value};
  std::set<const ir::Value *> seen;
  while (!stack.empty()) {
    const ir::Value *v = stack.back();
    stack.pop_back();
    for (const ir::Value *operand : v->operands)
      if (seen.insert(operand).second) {
        afterFirst |= firsts.count(operand) != 0;
        stack.push_back(operand);
      }
  }
  if (!afterFirst)
    return false;
  // The reductions that read it, directly or through pointwise values.
  std::set<const ir::Value *> reached = {value};
  for (const auto &user : fusion.values)
    for (const ir::Value *operand : user->operands)
      if (reached.count(operand) && !ir::isReduction(operand->op) && !reached.count(user.get())) {
        if (ir::isReduction(user->op) && !seconds.count(user.get()))
          return false;
        reached.insert(user.get());
      }
  return true;
}

/// Persistent-buffer candidates: values a reduction consumes and a later use needs.
/// The persistent buffers (their values go to `kept`), in the order of the fusion.
void bufferFacts(const ir::Fusion &fusion, const std::vector<ir::OnePassPair> &pairs,
                 FusionShape &shape, std::set<const ir::Value *> &kept) {
  std::vector<sched::TensorSchedule> tensors = sched::rootTensors(fusion);
  for (const sched::TensorSchedule &tensor : tensors) {
    // A reduction's result is one value a row, in a register: no buffer.
    if (!tensor.isPersistentBuffer || tensor.isOutput ||
        tensor.name.find('%') != std::string::npos || ir::isReduction(tensor.value->op))
      continue;
    // A value over the rows alone (LayerNorm's backward reads its rstd: f32[T]) is one
    // register a row wherever it is placed: no buffer of the row.
    if (!llvm::is_contained(tensor.value->dims, shape.inner.id))
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
    const ir::Value &value = *tensor.value;
    BufferShape buffer;
    buffer.name = tensor.name;
    buffer.dtypeName = std::string(ir::dtypeName(tensor.dtype));
    buffer.registersPerValue = (ir::dtypeBytes(tensor.dtype) + 3) / 4;
    buffer.keptInTwoPasses = !afterReduction || expensive(tensor.value, tensors);
    buffer.onlyInTwoPasses = bufferOnlyInTwoPasses(fusion, pairs, tensor.value);
    buffer.castOfInput = value.op == ir::Op::Cast && value.operands.size() == 1 &&
                         value.operands[0]->op == ir::Op::Input;
    shape.buffers.push_back(std::move(buffer));
    kept.insert(tensor.value);
  }
}

Family classify(const ir::Fusion &fusion) {
  bool reduces = false;
  for (const auto &value : fusion.values)
    reduces |= ir::isReduction(value->op);
  if (!reduces)
    return Family::Pointwise;
  for (const sched::TensorSchedule &tensor : sched::rootTensors(fusion))
    if (tensor.isPersistentBuffer)
      return Family::InnerPersistent;
  return Family::Reduction;
}

std::optional<MatmulShape> matmulOf(const ir::Fusion &fusion) {
  for (const auto &value : fusion.values) {
    if (value->op != ir::Op::MatMul)
      continue;
    const ir::Value &product = *value;
    MatmulShape shape;
    ir::DimId m = product.lhsLayout->rowDim, n = product.rhsLayout->rowDim;
    shape.m = dimShape(fusion, m);
    shape.n = dimShape(fusion, n);
    shape.k = dimShape(fusion, product.reduced.at(0));
    shape.lhsInput = product.lhsLayout->inputName;
    shape.rhsInput = product.rhsLayout->inputName;
    shape.rhsKContiguous = product.rhsLayout->contractedIsInner;
    shape.lhsKContiguous = product.lhsLayout->contractedIsInner;
    shape.twoProducts =
        llvm::count_if(fusion.values, [](const auto &v) { return v->op == ir::Op::MatMul; }) == 2;
    shape.fusedEpilogue = llvm::any_of(fusion.values, [](const auto &v) {
      return v->op != ir::Op::Input && v->op != ir::Op::Cast && v->op != ir::Op::MatMul &&
             v->op != ir::Op::Scalar && v->op != ir::Op::Constant;
    });
    if (fusion.outputs.size() == 1 && fusion.outputs[0].dims.size() == 2 &&
        fusion.outputs[0].dims[0] == m && fusion.outputs[0].dims[1] == n)
      shape.outputBytes = ir::dtypeBytes(fusion.outputs[0].dtype);
    return shape;
  }
  return std::nullopt;
}

} // namespace

FusionShape shapeOf(const ir::Fusion &fusion) {
  FusionShape shape;
  shape.name = fusion.name;
  shape.f32Exp = approximableFacts(fusion, ir::Op::Exp);
  shape.f32Tanh = approximableFacts(fusion, ir::Op::Tanh);
  shape.f32Div = approximableFacts(fusion, ir::Op::Div);
  shape.matmul = matmulOf(fusion);
  if (shape.matmul)
    return shape;
  const ir::Output *reference = referenceOutput(fusion);
  shape.hasOutput = reference != nullptr;
  if (!reference)
    return shape;
  shape.family = classify(fusion);
  std::set<ir::DimId> reduced;
  for (const auto &value : fusion.values)
    if (ir::isReduction(value->op)) {
      if (shape.firstReducedNames.empty())
        for (ir::DimId dim : value->reduced)
          shape.firstReducedNames.push_back(fusion.dims[dim].name);
      reduced.insert(value->reduced.begin(), value->reduced.end());
    }
  for (ir::DimId dim : reduced)
    shape.reduced.push_back(dimShape(fusion, dim));
  layoutOf(fusion, *reference, shape);
  if (shape.layoutError || reduced.empty())
    return shape;
  std::vector<ir::OnePassPair> pairs = ir::findOnePassPairs(fusion);
  for (const ir::OnePassPair &pair : pairs)
    shape.onePassPairs.push_back(
        {pair.kind == ir::OnePassKind::MaxExpSum,
         pair.first->name.empty() ? "max" : pair.first->name,
         pair.second->name.empty() ? std::string(ir::opName(pair.second->op)) : pair.second->name});
  std::set<const ir::Value *> kept;
  bufferFacts(fusion, pairs, shape, kept);
  shape.scratchBytesTwoPass = ir::reductionScratchBytesPerThread(fusion, false);
  shape.scratchBytesOnePass = ir::reductionScratchBytesPerThread(fusion, true);
  shape.noOutputAlongRow = noOutputAlongRow(fusion, shape.inner.id);
  shape.rowOutputsOnly = rowOutputsOnly(fusion, shape.inner.id, /*onePass=*/false);
  shape.rowOutputsOnlyOnePass = rowOutputsOnly(fusion, shape.inner.id, /*onePass=*/true);
  shape.rowInputsReadTwice = ir::rowInputsReadTwice(fusion, shape.inner.id);
  shape.lateRowInputBytes = ir::lateRowInputBytes(fusion, shape.inner.id, kept);
  shape.lateRowInputBytesNoneKept = ir::lateRowInputBytes(fusion, shape.inner.id, {});
  shape.liveRegistersPerValue = ir::liveBufferRegistersPerValue(fusion, kept);
  return shape;
}

} // namespace fsl::heuristics
