// TileScheduler.h — which output tile, and which k tiles of it, a CTA works on next (the
// matmul kernel's tile scheduler, one a `tiles` kind):
//
//   OneTilePerCta.cpp    one_per_cta: the block indices are the tile (the default)
//   PersistentTiles.cpp  persistent [swizzle G | hilbert B]: one CTA an SM walks tiles in a
//                        grouped order, or along Hilbert curves in blocks
//   StreamK.cpp          stream_k [swizzle G]: whole tiles, then even runs of k tiles; a
//                        piece of a tile goes to a workspace, and the last one adds them
//   SplitK.cpp           split_k S: one tile a CTA and part of K (grid z); the parts go
//                        to a workspace, and the CTA whose part arrives last adds them
//
// A scheduler gives the CTA's grid loops and launch grid, the lets the CTA computes once
// (its k tiles, the walk's shape), and the walk itself: a role's body for each work tile,
// with the tile's coordinates and K range bound (WorkTile). What becomes of a tile's
// partial sums (split-K, stream-K) is the scheduler's too: `finishTile` (PartialTiles.h).
#pragma once

#include "lower/Context.h"
#include "lower/matmul/Fragments.h"

#include <memory>

namespace fsl::lower {

/// The walkers of the tiles: the producer issues the loads of every tile of the CTA; the
/// consumers compute them (and load too, without a producer). Each binds only what it uses.
enum class Role { Producer, Consumers };

/// What a walk binds for the work tile its body runs on.
struct WorkTile {
  kir::VarPtr mTile, nTile;
  /// The K loop: its first k tile (null: 0), its k tiles, and the CTA's stage uses before
  /// it (null: none; stage uses count across the CTA's tiles, Matmul.h).
  kir::Expr kBegin, kCount, useBase;
  /// Two consumer groups: the group's round of its walk (its items are round * 2 + group).
  kir::VarPtr round;
};

class TileScheduler {
public:
  TileScheduler(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
                const CtaThreads &threads);
  virtual ~TileScheduler() = default;
  /// The block index along x: the M tile (one tile a CTA) or the CTA (persistent).
  kir::VarPtr cta() const { return cta_; }
  /// The lets the CTA computes once, before its roles: its k tiles and its walk's shape.
  virtual void prologue(std::vector<kir::Stmt> &out);
  /// `body` for each work tile of this CTA in `role`.
  virtual kir::Stmt forEachWorkTile(Role role,
                                    const std::function<kir::Stmt(const WorkTile &)> &body) = 0;
  /// The consumers' end of a work tile: `epilogue` for a whole tile (split-K, stream-K: a
  /// part of one goes to the workspace, and the last part's CTA runs it).
  virtual kir::Stmt finishTile(const WorkTile &tile, const Accumulators &accumulators,
                               kir::Stmt epilogue) {
    return epilogue;
  }
  /// The shared word a consumer group hears its tile's arrival count in (partial tiles).
  void useArrivalWord(kir::BufferPtr word) { lastPart_ = std::move(word); }
  /// The grid loops around the CTA's `body`, and the launch grid they make.
  virtual kir::Stmt gridLoops(kir::Stmt body) const = 0;
  virtual void launchGrid(kir::LaunchShape &launch) const = 0;
  /// K's k tiles where the consumers zero their accumulators for K = 0 once, before the
  /// CTA's tiles: persistent walks, whose tiles all have K's k tiles (null otherwise).
  kir::Expr hoistedZeroingKTiles() const;

protected:
  /// Tiles of `tile` along `dim`, rounded up.
  kir::Expr tiles(ir::DimId dim, int64_t tile) const;
  /// Units of work a CTA (or cluster) takes: output tiles, or with clusters of C CTAs,
  /// groups of C consecutive M tiles.
  kir::Expr tileCount() const;
  /// K's k tiles, rounded up.
  kir::Expr allKTiles() const;
  /// The grid of one tile a CTA: x the M tiles (clusters: in whole clusters), y the N tiles.
  kir::Stmt oneTileGridLoops(kir::Stmt body) const;
  /// Whether a walk in `role` takes every other item (two consumer groups).
  bool grouped(Role role) const;
  /// The rounds of the group's walk over `count` items: items group, group + G, ...
  kir::Expr groupRounds(kir::Expr count) const;
  /// Lets of the tile's (m_tile, n_tile) for tile (with clusters: unit) number `tile` of
  /// the grouped order.
  std::pair<kir::VarPtr, kir::VarPtr> tileCoordinates(std::vector<kir::Stmt> &walk,
                                                      kir::Expr tile) const;
  /// The lets of `row` and `column` (units of M and N) for unit number `tile` of the
  /// Hilbert order in blocks (`tiles persistent hilbert B`).
  void hilbertCoordinates(std::vector<kir::Stmt> &walk, kir::Expr tile, kir::VarPtr row,
                          kir::VarPtr column, kir::Expr rowsM, kir::Expr tilesN) const;

  LowerContext &cx_;
  const MatmulPlan &plan_;
  const KernelNames &names_;
  const CtaThreads &threads_;
  /// The block indices along x and y, and the CTA's k tiles.
  kir::VarPtr cta_, ctaY_, kTiles_;
  kir::BufferPtr lastPart_;
};

/// Whether the K = 0 zeroing of the accumulators goes before a CTA's tiles instead of after
/// each tile's K loop: per tile, the compiler made it a select an accumulator in every
/// tile's epilogue (128 instructions). Only for persistent walks: split-K and stream-K
/// parts have their own k tiles, and with one tile a CTA (where it runs once anyway) ptxas
/// serializes the wgmma pipeline behind a definition of the accumulators before it (C7515).
bool hoistsZeroing(const MatmulPlan &plan);

std::unique_ptr<TileScheduler> makeTileScheduler(LowerContext &cx, const MatmulPlan &plan,
                                                 const KernelNames &names,
                                                 const CtaThreads &threads);
std::unique_ptr<TileScheduler> makeOneTilePerCta(LowerContext &cx, const MatmulPlan &plan,
                                                 const KernelNames &names,
                                                 const CtaThreads &threads);
std::unique_ptr<TileScheduler> makePersistentTiles(LowerContext &cx, const MatmulPlan &plan,
                                                   const KernelNames &names,
                                                   const CtaThreads &threads);
std::unique_ptr<TileScheduler> makeStreamK(LowerContext &cx, const MatmulPlan &plan,
                                           const KernelNames &names, const CtaThreads &threads);
std::unique_ptr<TileScheduler> makeSplitK(LowerContext &cx, const MatmulPlan &plan,
                                          const KernelNames &names, const CtaThreads &threads);

} // namespace fsl::lower
