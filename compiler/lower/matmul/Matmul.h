// Matmul.h — the lowering passes of a matrix-product kernel, in the order Lower.cpp runs
// them (Passes.h lists them with the normalizations' passes).
//
// A fusion with a matrix product is planned by MatmulPlan.h instead of Plan.h, then built
// by these passes from its components (CUTLASS 3's split): a tile scheduler
// (TileScheduler.h, one a `tiles` kind), the main loop (MainLoop.h) and the epilogue
// (Epilogue.h), composed by KernelBuilder.cpp. As for the others, the verifier runs after
// each pass and `--print-after=NAME` prints the kernel then.
//
//   matmul-tile-scheduler  parameters, shared storage and barriers, the grid, the warp
//                          roles and their walks over work tiles, with markers where the
//                          main loop and the epilogue go (Markers.h); the launch shape
//   matmul-main-loop       the producer's TMA loads and the consumers' wgmma K loop
//   matmul-epilogue        the fused epilogue and the stores of each tile
//   simplify               index arithmetic folded with the loops' ranges
//
// split_k and stream_k share tiles' K loops between CTAs: each part goes to a workspace,
// and the CTA whose part arrives last adds them and runs the epilogue (PartialTiles.h); a
// small kernel built by `zero-arrivals` zeroes the tiles' counters before.
//
// The kernel, W = (BM / WM) x (BN / WN) consumer warpgroups, S stages:
//   one_per_cta: for m_tile parallel BIDx [ceil(M / BM)], n_tile parallel BIDy [ceil(N / BN)]
//   persistent:  for cta parallel BIDx [min(tiles, SMs)]
//   stream_k:    for cta parallel BIDx [min(tiles x k_tiles, SMs)], work items: whole
//                tiles, then pieces of K (StreamK.cpp)
//     for tid parallel TIDx, warpgroup parallel Warpgroup [W, or W + 1 with a producer]
//       shared: S stages of the a tile (BM x 64) and the b tile (BN x 64), 128-byte
//               swizzle; [the output tile, BN / 64 swizzled column blocks of BM x 64];
//               S full mbarriers [and S empty ones with a producer]
//       tid 0: mbarrier.init; barrier
//       without warp_specialize: the consumers' loop below, where thread 0 also loads
//         S - 1 stages ahead and a block barrier ends each k tile
//       with it:
//         warpgroup 0 (setmaxnreg.dec P): thread 0, for each tile and k tile:
//           wait empty[stage] (previous use), expect-tx full[stage], TMA a and b
//         warpgroups 1 .. W (setmaxnreg.inc C): for each tile:
//           for k tile: wait full[stage]; wgmma fence, the k steps' wgmma, commit;
//                       wait 1; one thread a warpgroup arrives on empty[previous stage]
//           wait 0; release the last stage
//           epilogue: per fragment element (row, col) inside the output, the fusion's
//             pointwise epilogue, stored to the outputs, or to the shared tile which
//             then goes out by TMA stores (one thread) or 16-byte copies
//
// Tiles (tile_iter-th of a CTA's) number the stage uses across the CTA's tiles: use
// `it = tile_iter * k_tiles + k_tile` is in stage `it % S` with parity `(it / S) % 2`; the
// loops compute that for a tile's first k tile and count from there.
// The M, N and K tails need no code in the loop: TMA fills the parts of a box outside the
// tensor with zeros (a zero K column adds nothing), and the epilogue stores only elements
// inside the output (TMA stores clip at the tensor's edges).
#pragma once

#include "lower/Passes.h"

#include <vector>

namespace fsl::lower {

bool buildMatmulTileScheduler(LowerContext &context);
bool buildMatmulMainLoop(LowerContext &context);
bool buildMatmulEpilogue(LowerContext &context);
/// Every pass of the matmul path, in order.
const std::vector<PassInfo> &matmulPassList();
/// The passes of the kernel before a split-K or stream-K product's that zeroes its tiles'
/// arrival counters (PartialTiles.h).
const std::vector<PassInfo> &arrivalsZeroPassList();

} // namespace fsl::lower
