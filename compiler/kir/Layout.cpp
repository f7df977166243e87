// Layout.cpp — the swizzle and wgmma fragment maps of Layout.h, with the documents that
// define them.
#include "kir/Layout.h"

#include "support/Internal.h"

namespace fsl::kir {

int swizzleBits(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return 0;
  case Swizzle::Bytes32:
    return 1;
  case Swizzle::Bytes64:
    return 2;
  case Swizzle::Bytes128:
    return 3;
  }
  FSL_UNREACHABLE("swizzle");
}

int64_t swizzleRepeatBytes(Swizzle swizzle) { return int64_t(128) << swizzleBits(swizzle); }

int64_t swizzleAddress(int64_t address, Swizzle swizzle) {
  // The hardware permutes by address bits (CU_TENSOR_MAP_SWIZZLE_*, and the wgmma
  // descriptor's layout type): the 16-byte chunk c of 128-byte row r moves to chunk
  // c ^ (r % 8) for 128B (within each 1024 bytes), c ^ (r % 4) for 64B (512 bytes),
  // c ^ (r % 2) for 32B (256 bytes). TMA and wgmma apply the same map, so a tile that
  // TMA wrote is read back by wgmma in its logical order.
  int bits = swizzleBits(swizzle);
  if (bits == 0)
    return address;
  int64_t mask = (int64_t(1) << bits) - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

int64_t wgmmaOperandByteOffset(Swizzle swizzle, int64_t elementBytes, bool mnMajor,
                               int64_t blockBytes, int64_t mn, int64_t k) {
  // K-major is the canonical layout with the 8-row groups 8 spans apart; M/N-major is PTX
  // ISA's canonical MN-major layout: LBO (`blockBytes`) between the span-wide blocks, SBO
  // of 8 spans between 8-row groups of K.
  int64_t span = swizzleSpanBytes(swizzle);
  int64_t perSpan = span / elementBytes;
  return mnMajor ? mn / perSpan * blockBytes + k * span + mn % perSpan * elementBytes
                 : mn * span + k * elementBytes;
}

std::array<int64_t, 2> wgmmaAccumulatorPosition(int64_t t, int64_t i) {
  // The f32 accumulator of wgmma.mma_async.m64nNk16: PTX ISA 9.7.15.5.1.1.1 ("Matrix
  // Fragments for wgmma.mma_async.m64nNk16", figure "WGMMA .m64nNk16 register fragment
  // layout for accumulator matrix D"), the same map as CUTLASS's CLayout_64xN in
  // include/cute/atom/mma_traits_sm90_gmma.hpp: thread shape (4, 8, 4) with strides
  // (128, 1, 16) and value shape (2, 2, N/8) with strides (64, 8, 512) over the
  // column-major 64 x N index m + 64 n. Warp t/32 owns rows 16 (t/32) .. +15; lane group
  // (t%32)/4 picks the row in each 8-row half; each thread holds column pairs
  // 2 (t%4) + {0, 1} of every 8-column slice.
  int64_t row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
  int64_t column = 8 * (i / 4) + 2 * (t % 4) + i % 2;
  return {row, column};
}

} // namespace fsl::kir
