// RegisterPressure.cpp — the row inputs read beside a kept buffer, and the registers it
// needs (RegisterPressure.h).
#include "ir/RegisterPressure.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/MathExtras.h>

#include <limits>

#include <map>
#include <set>

namespace fsl::ir {
namespace {

/// The inputs along `inner` that reductions read and those that values after a reduction
/// (one reading a reduction's result, or a value that does) read, through pointwise values
/// but not through `kept` buffers (the later phases read those from registers or shared
/// memory).
struct RowInputReads {
  std::set<const Value *> byReductions, late;
};

RowInputReads rowInputReads(const Fusion &fusion, DimId inner,
                            const std::set<const Value *> &kept) {
  std::map<const Value *, std::set<const Value *>> inputsOf;
  std::set<const Value *> lateValues;
  RowInputReads reads;
  for (const auto &owned : fusion.values) {
    const Value *value = owned.get();
    std::set<const Value *> &inputs = inputsOf[value];
    if (value->op == Op::Input && llvm::is_contained(value->dims, inner))
      inputs.insert(value);
    bool isLate = false;
    for (const Value *operand : value->operands) {
      isLate |= isReduction(operand->op) || lateValues.count(operand) != 0;
      if (isReduction(operand->op) || kept.count(operand))
        continue;
      const std::set<const Value *> &reached = inputsOf[operand];
      inputs.insert(reached.begin(), reached.end());
    }
    if (isReduction(value->op))
      reads.byReductions.insert(inputs.begin(), inputs.end());
    if (isLate) {
      lateValues.insert(value);
      reads.late.insert(inputs.begin(), inputs.end());
    }
  }
  return reads;
}

} // namespace

int64_t lateRowInputBytes(const Fusion &fusion, DimId inner, const std::set<const Value *> &kept) {
  int64_t bytes = 0;
  for (const Value *input : rowInputReads(fusion, inner, kept).late)
    bytes += dtypeBytes(input->dtype);
  return bytes;
}

int64_t rowInputsReadTwice(const Fusion &fusion, DimId inner) {
  RowInputReads reads = rowInputReads(fusion, inner, {});
  return llvm::count_if(reads.byReductions,
                        [&](const Value *input) { return reads.late.count(input) != 0; });
}

int64_t liveBufferRegistersPerValue(const Fusion &fusion, const std::set<const Value *> &kept) {
  std::map<const Value *, std::vector<const Value *>> users;
  for (const auto &value : fusion.values)
    for (const Value *operand : value->operands)
      users[operand].push_back(value.get());
  std::set<const Value *> stored;
  for (const Output &output : fusion.outputs)
    stored.insert(output.value);
  // Whether every use of `buffer` but reductions reaches, through pointwise values,
  // another kept buffer before anything else (an output, a value no buffer follows).
  auto handedOff = [&](const Value *buffer) {
    if (stored.count(buffer))
      return false;
    std::vector<const Value *> stack = {buffer};
    std::set<const Value *> seen;
    bool reachesBuffer = false;
    while (!stack.empty()) {
      const Value *value = stack.back();
      stack.pop_back();
      for (const Value *user : users[value]) {
        if (isReduction(user->op) || !seen.insert(user).second)
          continue;
        if (kept.count(user)) {
          reachesBuffer = true;
          continue;
        }
        if (stored.count(user) || users[user].empty())
          return false;
        stack.push_back(user);
      }
    }
    return reachesBuffer;
  };
  int64_t registers = 0;
  for (const Value *buffer : kept)
    if (!handedOff(buffer))
      registers += (dtypeBytes(buffer->dtype) + 3) / 4;
  return registers;
}

int64_t persistentRegistersNeeded(int64_t values, int64_t registersPerValue,
                                  int64_t lateInputBytes) {
  // A late input's value takes bytes / 4 registers; half of them count (RegisterPressure.h).
  int64_t buffer = 0, late = 0;
  if (llvm::MulOverflow(values, registersPerValue, buffer) ||
      llvm::MulOverflow(values, lateInputBytes, late))
    return std::numeric_limits<int64_t>::max();
  return buffer + late / 8 + kIndexRegisters;
}

int64_t columnPartialsRegistersNeeded(int64_t columns, int64_t columnReductions,
                                      int64_t prefetchedBytes) {
  // A partial column is a value of one register; a prefetched byte counts as 4 late
  // input bytes do (a register for 2 bytes).
  int64_t asLateBytes = 0;
  if (llvm::MulOverflow(prefetchedBytes, int64_t{4}, asLateBytes))
    return std::numeric_limits<int64_t>::max();
  return persistentRegistersNeeded(columns, columnReductions, asLateBytes);
}

RowWalkInputs rowWalkInputs(const Fusion &fusion, DimId rows, DimId columns) {
  RowWalkInputs inputs;
  std::map<const Value *, std::set<const Value *>> tensorsOf;
  std::set<const Value *> held;
  for (const auto &owned : fusion.values) {
    const Value *value = owned.get();
    std::set<const Value *> &tensors = tensorsOf[value];
    if (value->op == Op::Input && llvm::is_contained(value->dims, columns) &&
        llvm::is_contained(value->dims, rows)) {
      tensors.insert(value);
      inputs.rowTensorBytes += dtypeBytes(value->dtype);
    }
    for (const Value *operand : value->operands)
      if (!isReduction(operand->op))
        tensors.insert(tensorsOf[operand].begin(), tensorsOf[operand].end());
    if (isReduction(value->op) && value->reduced == std::vector<DimId>{columns})
      held.insert(tensors.begin(), tensors.end());
  }
  for (const Value *tensor : held)
    inputs.heldBytes += dtypeBytes(tensor->dtype);
  inputs.heldTensors = static_cast<int64_t>(held.size());
  return inputs;
}

} // namespace fsl::ir
