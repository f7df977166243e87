// TileScheduler.cpp — what the tile schedulers share: tile counts, the grid of one tile a
// CTA, the consumer groups' rounds and the tile orders (grouped, "swizzled", or along
// Hilbert curves in blocks).
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

TileScheduler::TileScheduler(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
                             const CtaThreads &threads)
    : cx_(cx), plan_(plan), names_(names), threads_(threads) {
  cta_ = names.var(plan.persistentCtas() ? "cta" : "m_tile");
  ctaY_ = names.var("n_tile");
  kTiles_ = names.var("k_tiles");
}

void TileScheduler::prologue(std::vector<Stmt> &out) {
  out.push_back(
      kir::let(kTiles_, allKTiles(), "k tiles; the last one's columns past K are zero-filled"));
}

bool hoistsZeroing(const MatmulPlan &plan) { return plan.tileWalk == TileWalk::Persistent; }

Expr TileScheduler::hoistedZeroingKTiles() const {
  return hoistsZeroing(plan_) ? kir::var(kTiles_) : nullptr;
}

Expr TileScheduler::tiles(ir::DimId dim, int64_t tile) const {
  return (cx_.dimExtent(dim) + kir::index(tile - 1)) / kir::index(tile);
}

Expr TileScheduler::tileCount() const {
  return tiles(plan_.m, plan_.tileM * plan_.clusterM) *
         tiles(plan_.n, plan_.tileN * plan_.clusterN);
}

Expr TileScheduler::allKTiles() const {
  return (cx_.dimExtent(plan_.k) + kir::index(plan_.tileK - 1)) / kir::index(plan_.tileK);
}

Stmt TileScheduler::oneTileGridLoops(Stmt body) const {
  body = kir::parallelLoop(
      ctaY_, tiles(plan_.n, plan_.tileN), kir::Axis::BIDy, body,
      {"tiles one_per_cta: " + std::to_string(plan_.tileN) + " columns", plan_.tilesOrigin.range});
  return kir::parallelLoop(
      cta_, tiles(plan_.m, plan_.tileM * plan_.clusterM) * kir::index(plan_.clusterM),
      kir::Axis::BIDx, body,
      {"tiles one_per_cta: " + std::to_string(plan_.tileM) + " rows", plan_.tilesOrigin.range});
}

bool TileScheduler::grouped(Role role) const {
  return role == Role::Consumers && threads_.group != nullptr;
}

Expr TileScheduler::groupRounds(Expr count) const {
  Expr g = kir::index(plan_.tileGroups);
  return kir::max(count - kir::var(threads_.group) + g - kir::index(1), kir::index(0)) / g;
}

/// Group tile / (G * TN) covers M tiles [G g, G g + G) (fewer in the last group) across
/// all TN tiles of N, walking down the group's M tiles first. With a cluster the units
/// are the cluster's C M tiles (or C N tiles), one a CTA by its rank.
std::pair<kir::VarPtr, kir::VarPtr> TileScheduler::tileCoordinates(std::vector<Stmt> &walk,
                                                                   Expr tile) const {
  int64_t c = plan_.clusterM, cn = plan_.clusterN;
  kir::VarPtr mTile = names_.var("m_tile"), nTile = names_.var("n_tile");
  kir::VarPtr group = names_.var("group"), firstRow = names_.var("first_m"),
              groupRows = names_.var("group_rows"), inGroup = names_.var("in_group"),
              row = c > 1 ? names_.var("m_unit") : mTile,
              column = cn > 1 ? names_.var("n_unit") : nTile;
  Expr rowsM = tiles(plan_.m, plan_.tileM * c), tilesN = tiles(plan_.n, plan_.tileN * cn);
  int64_t groupUnits = std::max<int64_t>(1, plan_.tileGroup / c);
  Expr g = kir::index(groupUnits);
  if (plan_.hilbertOrder) {
    hilbertCoordinates(walk, tile, row, column, rowsM, tilesN);
  } else if (groupUnits == 1) {
    walk.push_back(kir::let(row, tile / tilesN, "row by row"));
    walk.push_back(kir::let(column, tile % tilesN));
  } else {
    walk.push_back(kir::let(group, tile / (g * tilesN),
                            "groups of " + std::to_string(plan_.tileGroup) + " M tiles"));
    walk.push_back(kir::let(firstRow, kir::var(group) * g));
    walk.push_back(
        kir::let(groupRows, kir::foldedBinary(kir::BinaryOp::Min, rowsM - kir::var(firstRow), g)));
    walk.push_back(kir::let(inGroup, tile % (g * tilesN)));
    walk.push_back(kir::let(row, kir::var(firstRow) + kir::var(inGroup) % kir::var(groupRows),
                            "down the group first"));
    walk.push_back(kir::let(column, kir::var(inGroup) / kir::var(groupRows)));
  }
  if (c > 1)
    walk.push_back(kir::let(mTile, kir::var(row) * kir::index(c) + kir::var(threads_.clusterRank),
                            "the cluster's M tiles, one a CTA"));
  if (cn > 1)
    walk.push_back(kir::let(nTile,
                            kir::var(column) * kir::index(cn) + kir::var(threads_.clusterRank),
                            "the cluster's N tiles, one a CTA"));
  return {mTile, nTile};
}

/// `hilbert B`: band tile / (B * TN) holds M units [B band, B band + B) (fewer in the last
/// band) across all TN units of N, in blocks of B x B units (fewer columns in the last);
/// a whole block is walked along a Hilbert curve, two bits of the tile's number in the
/// block a step (B = 2^S: S steps, unrolled), entering at its first unit and leaving at the
/// last unit of its first row, beside the next block; a cut block goes down its columns.
void TileScheduler::hilbertCoordinates(std::vector<Stmt> &walk, Expr tile, kir::VarPtr row,
                                       kir::VarPtr column, Expr rowsM, Expr tilesN) const {
  const int64_t side = plan_.tileGroup;
  Expr b = kir::index(side);
  kir::VarPtr band = names_.var("band"), firstRow = names_.var("first_m"),
              bandRows = names_.var("band_rows"), inBand = names_.var("in_band"),
              block = names_.var("block"), firstColumn = names_.var("first_n"),
              blockColumns = names_.var("block_columns"), inBlock = names_.var("in_block");
  walk.push_back(kir::let(band, tile / (b * tilesN),
                          "bands of " + std::to_string(side) + " M units in blocks of " +
                              std::to_string(side) + " x " + std::to_string(side)));
  walk.push_back(kir::let(firstRow, kir::var(band) * b));
  walk.push_back(
      kir::let(bandRows, kir::foldedBinary(kir::BinaryOp::Min, rowsM - kir::var(firstRow), b)));
  walk.push_back(kir::let(inBand, tile % (b * tilesN)));
  walk.push_back(kir::let(block, kir::var(inBand) / (kir::var(bandRows) * b)));
  walk.push_back(kir::let(firstColumn, kir::var(block) * b));
  walk.push_back(kir::let(
      blockColumns, kir::foldedBinary(kir::BinaryOp::Min, tilesN - kir::var(firstColumn), b)));
  walk.push_back(kir::let(inBlock, kir::var(inBand) % (kir::var(bandRows) * b)));
  // The curve: x along N, y along M; each step places the curve of the steps before it
  // in one quadrant of a square twice as wide (turned where the quadrant asks).
  auto bit = [&](int64_t k) {
    return (kir::var(inBlock) / kir::index(int64_t(1) << k)) % kir::index(2);
  };
  auto isZero = [](Expr e) { return kir::binary(kir::BinaryOp::Eq, e, kir::index(0)); };
  Expr x, y;
  for (int64_t step = 0, s = 1; s < side; ++step, s *= 2) {
    kir::VarPtr rx = names_.var("hilbert_rx" + std::to_string(step)),
                ry = names_.var("hilbert_ry" + std::to_string(step));
    walk.push_back(kir::let(rx, bit(2 * step + 1),
                            step == 0 ? "the Hilbert curve through a whole block, a quadrant a "
                                        "step"
                                      : ""));
    walk.push_back(kir::let(ry, (bit(2 * step) + kir::var(rx)) % kir::index(2)));
    Expr rxv = kir::var(rx), ryv = kir::var(ry), sv = kir::index(s);
    if (step == 0) {
      x = rxv;
      y = ryv;
      continue;
    }
    Expr turned = isZero(ryv), mirrored = kir::binary(kir::BinaryOp::Eq, rxv, kir::index(1));
    kir::VarPtr nx = names_.var("hilbert_x" + std::to_string(step)),
                ny = names_.var("hilbert_y" + std::to_string(step));
    walk.push_back(kir::let(
        nx, kir::select(turned, kir::select(mirrored, kir::index(s - 1) - y, y), x) + sv * rxv));
    walk.push_back(kir::let(
        ny, kir::select(turned, kir::select(mirrored, kir::index(s - 1) - x, x), y) + sv * ryv));
    x = kir::var(nx);
    y = kir::var(ny);
  }
  Expr whole = kir::binary(kir::BinaryOp::Eq, kir::var(bandRows), b) &&
               kir::binary(kir::BinaryOp::Eq, kir::var(blockColumns), b);
  walk.push_back(kir::let(
      row, kir::var(firstRow) + kir::select(whole, y, kir::var(inBlock) % kir::var(bandRows)),
      "a block cut by M's or N's edge: down its columns"));
  walk.push_back(
      kir::let(column, kir::var(firstColumn) +
                           kir::select(whole, x, kir::var(inBlock) / kir::var(bandRows))));
}

std::unique_ptr<TileScheduler> makeTileScheduler(LowerContext &cx, const MatmulPlan &plan,
                                                 const KernelNames &names,
                                                 const CtaThreads &threads) {
  switch (plan.tileWalk) {
  case TileWalk::Persistent:
    return makePersistentTiles(cx, plan, names, threads);
  case TileWalk::StreamK:
    return makeStreamK(cx, plan, names, threads);
  case TileWalk::OnePerCta:
    break;
  }
  return plan.splitK > 1 ? makeSplitK(cx, plan, names, threads)
                         : makeOneTilePerCta(cx, plan, names, threads);
}

} // namespace fsl::lower
