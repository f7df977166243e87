// PersistentTiles.cpp — `tiles persistent [swizzle G]`: one CTA an SM (fewer when there
// are fewer tiles); CTA `cta` takes tiles cta, cta + C, cta + 2C, ... of the grouped order
// (tile t is in group t / (G * TN), which covers M tiles [G g, G g + G) across all TN tiles
// of N, walking down the group's M tiles first), so CTAs running together share the operand
// tiles of a G-row band of A and of a few column tiles of B in L2. With clusters of C CTAs
// the walk is over units of C consecutive M tiles (one a CTA of the cluster, by rank),
// clusters taking the place of CTAs.
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {

class PersistentTiles : public TileScheduler {
public:
  using TileScheduler::TileScheduler;

  void prologue(std::vector<Stmt> &out) override {
    TileScheduler::prologue(out);
    tileCount_ = names_.var("tiles");
    ctaCount_ = names_.var("ctas");
    out.push_back(kir::let(tileCount_, tileCount(),
                           plan_.clusterM > 1   ? "units of the cluster's M tiles"
                           : plan_.clusterN > 1 ? "units of the cluster's N tiles"
                                                : "output tiles"));
    out.push_back(kir::let(
        ctaCount_, kir::var(kir::makeVar("gridDim.x", ir::DType::I64, kir::Builtin::GridDimX)),
        "the grid: at most one CTA an SM, fewer when the device holds fewer "
        "clusters at once"));
    if (plan_.clusterSize() > 1) {
      clusterIndex_ = names_.var("cluster");
      out.push_back(kir::let(clusterIndex_, kir::var(cta_) / kir::index(plan_.clusterSize())));
    }
  }

  Stmt forEachWorkTile(Role role, const std::function<Stmt(const WorkTile &)> &body) override {
    int64_t c = plan_.clusterSize();
    kir::VarPtr tileIter = names_.var("tile_iter");
    Expr walker = kir::var(c > 1 ? clusterIndex_ : cta_);
    Expr walkers = c > 1 ? kir::var(ctaCount_) / kir::index(c) : kir::var(ctaCount_);
    kir::VarPtr tileNumber = names_.var(c > 1 ? "unit" : "tile");
    std::vector<Stmt> walk;
    // With two consumer groups, group g takes the CTA's tiles g, g + 2, ... (the producer
    // all of them, in order).
    WorkTile tile;
    tile.round = grouped(role) ? names_.var("round") : nullptr;
    if (tile.round)
      walk.push_back(kir::let(
          tileIter, kir::var(tile.round) * kir::index(plan_.tileGroups) + kir::var(threads_.group),
          "the group's tiles: every other one of the CTA's"));
    walk.push_back(kir::let(tileNumber, walker + kir::var(tileIter) * walkers));
    std::tie(tile.mTile, tile.nTile) = tileCoordinates(walk, kir::var(tileNumber));
    tile.kCount = kir::var(kTiles_);
    tile.useBase = kir::var(tileIter) * kir::var(kTiles_);
    walk.push_back(body(tile));
    Expr count = (kir::var(tileCount_) - walker + walkers - kir::index(1)) / walkers;
    std::string comment = role == Role::Producer ? "its tiles" : "this CTA's tiles";
    if (tile.round)
      return fromDirective(kir::forLoop(tile.round, groupRounds(count), kir::LoopKind::Serial,
                                        kir::block(std::move(walk))),
                           plan_.tilesOrigin, comment);
    return fromDirective(
        kir::forLoop(tileIter, count, kir::LoopKind::Serial, kir::block(std::move(walk))),
        plan_.tilesOrigin, comment);
  }

  Stmt gridLoops(Stmt body) const override {
    return fromDirective(kir::parallelLoop(cta_, ctaCount(), kir::Axis::BIDx, body),
                         plan_.tilesOrigin,
                         "persistent CTAs: one an SM, at most " + std::to_string(plan_.smCount));
  }

  void launchGrid(kir::LaunchShape &launch) const override {
    launch.grid = {ctaCount(), kir::index(1), kir::index(1)};
    launch.gridFromOccupancy = plan_.clusterSize() > 1;
    int64_t c = plan_.clusterSize();
    launch.fullGrid = std::max<int64_t>(plan_.smCount / c, 1) * c;
  }

private:
  /// Persistent CTAs: one an SM, fewer when there are fewer tiles.
  Expr ctaCount() const {
    int64_t c = plan_.clusterSize();
    return kir::foldedBinary(kir::BinaryOp::Min, tileCount(),
                             kir::index(std::max<int64_t>(plan_.smCount / c, 1))) *
           kir::index(c);
  }

  /// The output tiles (units), the CTAs walking them, and with clusters the cluster's index.
  kir::VarPtr tileCount_, ctaCount_, clusterIndex_;
};

} // namespace

std::unique_ptr<TileScheduler> makePersistentTiles(LowerContext &cx, const MatmulPlan &plan,
                                                   const KernelNames &names,
                                                   const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new PersistentTiles(cx, plan, names, threads));
}

} // namespace fsl::lower
