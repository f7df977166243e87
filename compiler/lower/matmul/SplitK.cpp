// SplitK.cpp — `tiles split_k S`: one tile a CTA (as one_per_cta) and part `split` of K
// (grid z). Each CTA stores its f32 part of the tile to the workspace (S slots a tile) and
// counts it in on the tile's counter; the CTA whose part arrives last adds the S parts in
// split order (the same sum at every run) and runs the fusion's epilogue on the tile
// (PartialTiles.h): one kernel, and no CTA waits for another.
#include "lower/matmul/Epilogue.h"
#include "lower/matmul/Matmul.h"
#include "lower/matmul/PartialTiles.h"
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {

class SplitK : public TileScheduler {
public:
  SplitK(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
         const CtaThreads &threads)
      : TileScheduler(cx, plan, names, threads), split_(names.var("split")) {}

  /// Part `split` of K: k tiles [k_first, k_first + k_per), clipped to K (possibly none:
  /// its partial tile is zeros).
  void prologue(std::vector<Stmt> &out) override {
    kir::VarPtr all = names_.var("all_k_tiles"), per = names_.var("k_per_split");
    kFirst_ = names_.var("k_first");
    out.push_back(
        kir::let(all, allKTiles(), "k tiles; the last one's columns past K are zero-filled"));
    out.push_back(
        kir::let(per, (kir::var(all) + kir::index(plan_.splitK - 1)) / kir::index(plan_.splitK)));
    out.push_back(kir::let(kFirst_, kir::var(split_) * kir::var(per)));
    out.push_back(kir::let(kTiles_,
                           kir::foldedBinary(kir::BinaryOp::Max, kir::index(0),
                                             kir::foldedBinary(kir::BinaryOp::Min, kir::var(per),
                                                               kir::var(all) - kir::var(kFirst_))),
                           "this split's k tiles"));
  }

  Stmt forEachWorkTile(Role, const std::function<Stmt(const WorkTile &)> &body) override {
    WorkTile tile;
    tile.mTile = cta_;
    tile.nTile = ctaY_;
    tile.kBegin = kir::var(kFirst_);
    tile.kCount = kir::var(kTiles_);
    return body(tile);
  }

  /// The tile's S parts: slots tile * S .. tile * S + S - 1 of the workspace, tile the
  /// CTA's (x, y) in the grid, row-major.
  Stmt finishTile(const WorkTile &, const Accumulators &accumulators, Stmt epilogue) override {
    Expr tile = kir::var(cta_) * tiles(plan_.n, plan_.tileN) + kir::var(ctaY_);
    Expr splits = kir::index(plan_.splitK);
    PartialTile part;
    part.slot = tile * splits + kir::var(split_);
    part.counter = tile;
    part.locate = [this, tile, splits](std::vector<Stmt> &) {
      PartialTile::Parts parts;
      parts.laterParts = kir::index(plan_.splitK - 1);
      parts.firstSlot = tile * splits;
      parts.laterSlot = [tile, splits](Expr p) { return tile * splits + p; };
      return parts;
    };
    return finishPartialTile(plan_, names_, threads_, accumulators, lastPart_, part, nullptr,
                             std::move(epilogue));
  }

  Stmt gridLoops(Stmt body) const override {
    body = fromDirective(kir::parallelLoop(split_, kir::index(plan_.splitK), kir::Axis::BIDz, body),
                         plan_.tilesOrigin, "parts of K");
    return oneTileGridLoops(std::move(body));
  }

  void launchGrid(kir::LaunchShape &launch) const override {
    launch.grid = {tiles(plan_.m, plan_.tileM * plan_.clusterM) * kir::index(plan_.clusterM),
                   tiles(plan_.n, plan_.tileN), kir::index(plan_.splitK)};
  }

private:
  /// The CTA's part of K (grid z) and its first k tile.
  kir::VarPtr split_, kFirst_;
};

} // namespace

std::unique_ptr<TileScheduler> makeSplitK(LowerContext &cx, const MatmulPlan &plan,
                                          const KernelNames &names, const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new SplitK(cx, plan, names, threads));
}

} // namespace fsl::lower
