// Layout.h — the Hopper data layouts as pure functions of integers: where the 32/64/128-byte
// shared-memory swizzles move a byte, where a wgmma operand element lies in its shared tile,
// and which element of the wgmma accumulator tile a thread's fragment register holds.
//
// One definition for whoever must agree with the hardware (and so with each other): the
// simulator applies them to the bytes TMA writes and wgmma reads; the lowering and the CUDA
// printer write the same maps as index expressions and descriptor fields. A swizzle's span
// (the bytes of one swizzled row) is IR.h's swizzleSpanBytes.
#pragma once

#include "kir/IR.h"

#include <array>
#include <cstdint>

namespace fsl::kir {

/// log2 of the 16-byte chunks a swizzle permutes within a row (CUTLASS's Swizzle<B, 4, 3>:
/// B): 3, 2, 1 for 128, 64, 32 bytes; 0 without a swizzle.
int swizzleBits(Swizzle swizzle);

/// Bytes after which a swizzle's XOR pattern repeats: eight 128-byte rows for 128B (1024),
/// four for 64B (512), two for 32B (256). A swizzled tile starts on such a boundary, and a
/// K-major wgmma descriptor's stride between 8-row groups is this distance.
int64_t swizzleRepeatBytes(Swizzle swizzle);

/// The byte address that byte address `address` of shared memory moves to under `swizzle`
/// (address bits [4, 4+b) XOR bits [7, 7+b); b = swizzleBits).
int64_t swizzleAddress(int64_t address, Swizzle swizzle);

/// The byte offset, before the swizzle, of element (mn, k) of a wgmma operand tile of
/// `elementBytes`-byte elements from the tile's start. K-major: rows of the M (or N)
/// dimension, each one swizzle span wide, K contiguous within the row. M/N-major
/// (`mnMajor`): rows of K one span apart, M (or N) contiguous within the row; wider than
/// one span, span-wide blocks `blockBytes` apart, each with the same rows of K.
int64_t wgmmaOperandByteOffset(Swizzle swizzle, int64_t elementBytes, bool mnMajor,
                               int64_t blockBytes, int64_t mn, int64_t k);

/// Where element `i` (0 ≤ i < n/2) of the f32 accumulator fragment of thread `t`
/// (0 ≤ t < 128) of a warpgroup lies in the m64nNk16 tile D: {row, column}.
std::array<int64_t, 2> wgmmaAccumulatorPosition(int64_t t, int64_t i);

} // namespace fsl::kir
