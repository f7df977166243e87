// PartialTiles.h — an output tile whose K loop is shared out between CTAs (split-K's
// parts of K, stream-K's pieces of runs), finished inside the kernel: no second kernel.
//
// A small kernel zeroes the tiles' arrival counters first (the product's kernel starts
// beside it, programmatic dependent launch, and waits for it at its grid dependency
// wait). Each CTA holding a part stores its f32 accumulators to a slot of the `partials`
// workspace, then counts itself in on the tile's counter; the CTA that arrives last adds
// the parts in K order and runs the epilogue as for a whole tile:
//
//   partials[(slot * A + i) * T + t] = acc[i]     A accumulators a thread, T threads of the
//                                                 consumer group: a warp's store is 128
//                                                 consecutive bytes
//   group barrier; its first thread: last_part[group] = atomic_add(arrivals[tile], 1)
//   group barrier
//   if last_part[group] == parts - 1: acc = part 0 + part 1 + ... (in K order); epilogue
//
// No CTA waits for another, so none needs another resident; the sum's order is fixed, so
// every run gives the same bits whichever CTA arrives last. The acquire-release add after
// the group's barrier publishes the group's stores; the last CTA's add acquires every
// earlier part, and its barrier hands them to the group.
#pragma once

#include "lower/Context.h"
#include "lower/matmul/Fragments.h"
#include "lower/matmul/MainLoop.h"

#include <functional>

namespace fsl::lower {

/// Where a part of a tile goes and how the tile's parts are found.
struct PartialTile {
  /// This CTA's slot in `partials`, and the tile's arrival counter in `arrivals`.
  kir::Expr slot, counter;
  /// The tile's parts: how many follow the first (the last to arrive finds this many
  /// before it), the first one's slot (in K order), and the slot of part `p` >= 1.
  struct Parts {
    kir::Expr laterParts, firstSlot;
    std::function<kir::Expr(kir::Expr p)> laterSlot;
  };
  /// Works them out where they are needed (after the count, and in the sum), its lets to
  /// `out`: values kept across the part's stores cost the consumers registers (ptxas
  /// spilled at 168 a thread).
  std::function<Parts(std::vector<kir::Stmt> &out)> locate;
};

/// The shared word a consumer group hears its arrival count in (one a group).
kir::BufferPtr allocateArrivalWord(const MatmulPlan &plan, const KernelNames &names,
                                   SharedLayout &layout);

/// The end of a work tile whose K loop may be part of the tile's: `whole` (null: never)
/// says the CTA did all of it and runs `epilogue` at once; otherwise its part is stored,
/// counted in, and the last part's CTA adds them all and runs `epilogue`.
kir::Stmt finishPartialTile(const MatmulPlan &plan, const KernelNames &names,
                            const CtaThreads &threads, const Accumulators &accumulators,
                            const kir::BufferPtr &lastPart, const PartialTile &part,
                            kir::Expr whole, kir::Stmt epilogue);

/// The kernel before the product's that zeroes `arrivals`, a counter a tile (pass
/// `zero-arrivals`). A memset node there instead cost few-row products a fifth of their
/// time on the H200 (run Q3: 1.20x against 1.34x no split at 16 x 4096 x 4096); this
/// kernel overlaps the product's launch.
bool buildArrivalsZero(LowerContext &cx);

/// The output tiles, ceil(M / BM) x ceil(N / BN), of the kernel's rows and columns
/// `extent` gives: the counters' count (the workspace's size and the zeroing kernel's).
kir::Expr outputTiles(const MatmulPlan &plan, const std::function<kir::Expr(ir::DimId)> &extent);

/// Elements of a slot of `partials`: the accumulators of a consumer group's threads.
int64_t partialSlotElements(const MatmulPlan &plan);

} // namespace fsl::lower
