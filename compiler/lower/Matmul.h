// Matmul.h — the lowering passes of a matrix-product kernel, in the order Lower.cpp runs
// them (the matmul path; Passes.h lists the normalizations' passes).
//
// A fusion with a matrix product is planned by MatmulPlan.h instead of Plan.h, then built
// by these passes; as for the others, the verifier runs after each and
// `--print-after=NAME` prints the kernel then.
//
//   build-matmul   parameters (TMA tensor maps for the operands), the grid of output
//                  tiles and the consumer warpgroups, the shared operand ring with its
//                  mbarriers, the K loop (TMA loads S - 1 stages ahead by one elected
//                  thread, parity waits, wgmma over the k steps) and the epilogue on the
//                  accumulator fragments with predicated stores; the launch shape
//   simplify       index arithmetic folded with the loops' ranges
//
// The kernel, one output tile a CTA (BM x BN), W = (BM / WM) x (BN / WN) warpgroups:
//
//   for m_tile parallel BIDx [ceil(M / BM)], n_tile parallel BIDy [ceil(N / BN)]
//     for tid parallel TIDx [128 W], warpgroup parallel Warpgroup [W]
//       shared: S stages of the a tile (BM x 64) and the b tile (BN x 64), 128-byte
//               swizzle; S full mbarriers
//       local:  the f32 accumulator fragments, WM x WN / 128 a thread, zeroed
//       tid 0: mbarrier.init x S; barrier
//       tid 0: expect-tx + TMA loads of k tiles 0 .. S - 2
//       for k_tile in [0, ceil(K / 64)):
//         tid 0: expect-tx + TMA loads of k tile k_tile + S - 1 (into the stage freed by
//                the barrier that ended the previous iteration)
//         wait full[k_tile % S] parity (k_tile / S) % 2
//         wgmma fence; 4 k steps x (WM / 64) x (WN / IN) wgmma m64nINk16; commit; wait 0
//         barrier (every warpgroup is done reading the stage before it is refilled)
//       epilogue: per fragment element, its (row, col); if row < M && col < N, the
//                 fusion's pointwise epilogue on the accumulator, stored to the outputs
//
// The M, N and K tails need no code in the loop: TMA fills the parts of a box outside the
// tensor with zeros (a zero K column adds nothing), and the epilogue stores only elements
// inside the output.
#pragma once

#include "lower/Context.h"
#include "lower/MatmulPlan.h"

#include <vector>

namespace fsl::lower {

bool buildMatmul(LowerContext &context, const MatmulPlan &plan);

struct MatmulPassInfo {
  const char *name;
  bool (*run)(LowerContext &, const MatmulPlan &);
};

/// Every pass of the matmul path, in order.
const std::vector<MatmulPassInfo> &matmulPassList();

} // namespace fsl::lower
