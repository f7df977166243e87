// RegisterPressure.h — how many registers a thread needs to keep a persistent buffer in
// registers, as the heuristics decide it (heuristics/InnerPersistent.cpp) and the checker
// warns about it (check/Checker.cpp): one estimate, so that `auto` never picks a buffer
// the checker then says will spill.
//
// A kept row is not all a thread holds: the phase after the reduction reads the row's
// other inputs (RMSNorm's weight, LayerNorm's gamma and beta, or a backward's inputs read
// again) next to it, and ptxas keeps part of those loads in flight. Fitted on ptxas and
// on run S40A (docs/performance.md, H100): counting such inputs at half their registers
// (bf16: a quarter of a register a value) and 8 registers of index math separates the
// kept rows that beat recomputing the row (softmax's 64 values in 72 registers,
// RMSNorm's 64 in 96) from those that spilled and lost (RMSNorm's 64 in 80, LayerNorm's
// 64 in 96, softmax's 64 in 64).
#pragma once

#include "ir/FusionIR.h"

#include <cstdint>
#include <set>

namespace fsl::ir {

/// Registers of index math and a reduction's own values, beside what a thread keeps.
inline constexpr int64_t kIndexRegisters = 8;

/// Bytes a row element of the inputs along `inner` that values after a reduction read other
/// than through a `kept` buffer (RMSNorm's weight: 2, its x being kept as xf; LayerNorm's
/// gamma and beta: 4; softmax: 0; LayerNorm's backward, which keeps no row: x, gamma and
/// grad_y, 6).
int64_t lateRowInputBytes(const Fusion &fusion, DimId inner, const std::set<const Value *> &kept);

/// The inputs along `inner` that a reduction reads (through pointwise values) and that a
/// value after a reduction reads again (softmax's backward: y and grad_y).
int64_t rowInputsReadTwice(const Fusion &fusion, DimId inner);

/// Registers a value of the `kept` buffers that are live together take: every one but
/// those whose uses other than reductions all feed another kept buffer (softmax's xf, which
/// exp(xf - max) turns into e an element at a time, so e takes its registers). A kept
/// buffer's value takes its type's registers (2 for 64-bit types).
int64_t liveBufferRegistersPerValue(const Fusion &fusion, const std::set<const Value *> &kept);

/// Registers a thread needs to keep `values` of buffers of `registersPerValue` each (those
/// live together: liveBufferRegistersPerValue), with the late row inputs of
/// `lateInputBytes` an element read beside them.
int64_t persistentRegistersNeeded(int64_t values, int64_t registersPerValue,
                                  int64_t lateInputBytes);

/// Registers a thread of an inner-outer row walk (a row reduction next to column sums over
/// the rows: the backward norms) needs at least: its `columns` columns of each of
/// `columnReductions` partial sums (f32), 8 of index math, and, where the walk prefetches
/// the next row, a register for each 2 bytes of it (`prefetchedBytes` an element: the
/// [rows, columns] inputs the row reductions read). A lower bound: ptxas (sm_90a) spilled
/// wherever it is over the registers a thread has (948-2016 bytes a thread at H = 65536
/// on 1024 threads), and also below it (the row inputs held beside them: RMSNorm's
/// backward at 45056, 128 bytes).
int64_t columnPartialsRegistersNeeded(int64_t columns, int64_t columnReductions,
                                      int64_t prefetchedBytes);

/// The [rows, columns] inputs an inner-outer row walk reads a row, in bytes an element,
/// and those of them that the row reductions (over `columns`) read, which a thread holds
/// across them (add + RMSNorm's grad_h, read only after them, is not held).
struct RowWalkInputs {
  int64_t rowTensorBytes = 0;
  int64_t heldBytes = 0, heldTensors = 0;
};
RowWalkInputs rowWalkInputs(const Fusion &fusion, DimId rows, DimId columns);

} // namespace fsl::ir
