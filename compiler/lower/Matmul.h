// Matmul.h — the lowering passes of a matrix-product kernel, in the order Lower.cpp runs
// them (the matmul path; Passes.h lists the normalizations' passes).
//
// A fusion with a matrix product is planned by MatmulPlan.h instead of Plan.h, then built
// by these passes; as for the others, the verifier runs after each and
// `--print-after=NAME` prints the kernel then.
//
//   build-matmul   parameters (TMA tensor maps for the operands, and for the output of a
//                  TMA-store epilogue), the walk over output tiles, the warp roles, the
//                  shared operand ring with its mbarriers, the K loop and the epilogue;
//                  the launch shape (MatmulBuilder.h lists its files)
//   simplify       index arithmetic folded with the loops' ranges
//
// A split_k product has a second kernel, built by `build-split-k-sum`; a stream_k one by
// `build-stream-k-fixup` (MatmulStreamK.cpp).
//
// The kernel, W = (BM / WM) x (BN / WN) consumer warpgroups, S stages:
//
//   one_per_cta: for m_tile parallel BIDx [ceil(M / BM)], n_tile parallel BIDy [ceil(N / BN)]
//   persistent:  for cta parallel BIDx [min(tiles, SMs)]
//   stream_k:    for cta parallel BIDx [min(tiles x k_tiles, SMs)], work items: whole
//                tiles, then pieces of K (MatmulStreamK.cpp)
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
// `it = tile_iter * k_tiles + k_tile` is in stage `it % S` with parity `(it / S) % 2`.
// The M, N and K tails need no code in the loop: TMA fills the parts of a box outside the
// tensor with zeros (a zero K column adds nothing), and the epilogue stores only elements
// inside the output (TMA stores clip at the tensor's edges).
#pragma once

#include "lower/Context.h"
#include "lower/MatmulPlan.h"

#include <vector>

namespace fsl::lower {

bool buildMatmul(LowerContext &context, const MatmulPlan &plan);
/// The second kernel of a split-K product: each output element's partial products added
/// in split order (deterministic), then the epilogue.
bool buildSplitKSum(LowerContext &context, const MatmulPlan &plan);
/// The second kernel of a stream-K product: the pieces of each tile split between CTAs
/// added in K order (deterministic), then the epilogue, one tile a CTA.
bool buildStreamKFixup(LowerContext &context, const MatmulPlan &plan);

struct MatmulPassInfo {
  const char *name;
  bool (*run)(LowerContext &, const MatmulPlan &);
};

/// Every pass of the matmul path, in order.
const std::vector<MatmulPassInfo> &matmulPassList();
/// The passes of a split-K product's second kernel.
const std::vector<MatmulPassInfo> &splitKSumPassList();
/// The passes of a stream-K product's fix-up kernel.
const std::vector<MatmulPassInfo> &streamKFixupPassList();

} // namespace fsl::lower
