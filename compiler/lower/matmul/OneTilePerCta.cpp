// OneTilePerCta.cpp — `tiles one_per_cta` (the default): the grid is the output tiles,
// block x the M tile (clusters of C CTAs take C consecutive M tiles), block y the N tile;
// each CTA runs the whole K loop of its one tile.
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

namespace {

class OneTilePerCta : public TileScheduler {
public:
  using TileScheduler::TileScheduler;

  kir::Stmt forEachWorkTile(Role, const std::function<kir::Stmt(const WorkTile &)> &body) override {
    WorkTile tile;
    tile.mTile = cta_;
    tile.nTile = ctaY_;
    tile.kCount = kir::var(kTiles_);
    return body(tile);
  }

  kir::Stmt gridLoops(kir::Stmt body) const override { return oneTileGridLoops(std::move(body)); }

  void launchGrid(kir::LaunchShape &launch) const override {
    launch.grid = {tiles(plan_.m, plan_.tileM * plan_.clusterM) * kir::index(plan_.clusterM),
                   tiles(plan_.n, plan_.tileN), kir::index(1)};
  }
};

} // namespace

std::unique_ptr<TileScheduler> makeOneTilePerCta(LowerContext &cx, const MatmulPlan &plan,
                                                 const KernelNames &names,
                                                 const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new OneTilePerCta(cx, plan, names, threads));
}

} // namespace fsl::lower
