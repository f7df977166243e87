// StreamK.cpp — `tiles stream_k [swizzle G]`: whole tiles in waves, then the k tiles of the
// tiles left spread evenly over the CTAs; a tile split between CTAs is finished by the CTA
// whose piece arrives last.
//
// With T tiles of k_tiles k tiles each and `ctas` = min(SMs, T x k_tiles) persistent CTAs:
//
//   whole_tiles = T when T is a multiple of ctas (no tail wave), else (T / ctas - 1) x ctas
//                 (every wave but the last whole one and the tail: those two waves are
//                 spread, so no CTA idles in a half-empty last wave)
//   sk_k_tiles  = (T - whole_tiles) x k_tiles, the k tiles of the tiles left; CTA c takes
//                 the run [c sk_k_tiles / ctas, (c + 1) sk_k_tiles / ctas)
//
// A CTA's work items are its whole tiles (tile cta + i ctas of the grouped order), then the
// pieces of its run, one a tile it crosses. The stage uses continue across items. A piece
// that covers its tile is a whole tile (the epilogue runs at once); any other goes to the
// CTA's slot in the workspace: slot 0 for the first tile of its run, 1 for the last (a
// run's middle tiles are whole), and is counted in on the tile's counter; the CTA whose
// piece arrives last adds the tile's pieces in K order (the same sum at every run) and
// runs the epilogue (PartialTiles.h). No CTA waits for another.
#include "lower/matmul/Epilogue.h"
#include "lower/matmul/Matmul.h"
#include "lower/matmul/PartialTiles.h"
#include "lower/matmul/TileScheduler.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {

Expr eq(Expr a, Expr b) { return kir::binary(kir::BinaryOp::Eq, std::move(a), std::move(b)); }

class StreamK : public TileScheduler {
public:
  using TileScheduler::TileScheduler;

  void prologue(std::vector<Stmt> &out) override {
    TileScheduler::prologue(out);
    shape(out);
  }

  /// Lets of tiles, ctas, whole_tiles and sk_k_tiles (k tiles of the tiles left).
  void shape(std::vector<Stmt> &out) {
    tileCount_ = names_.var("tiles");
    ctaCount_ = names_.var("ctas");
    wholeTiles_ = names_.var("whole_tiles");
    skKTiles_ = names_.var("sk_k_tiles");
    out.push_back(kir::let(tileCount_, tileCount(), "output tiles"));
    out.push_back(kir::let(ctaCount_, ctas(), "the grid: one CTA an SM, no more than the k tiles"));
    out.push_back(kir::let(
        wholeTiles_, wholeTiles(kir::var(tileCount_), kir::var(ctaCount_), kir::var(kTiles_)),
        "tiles taken whole, in waves of ctas: all but the last two waves (all of them when they "
        "are full)"));
    out.push_back(kir::let(skKTiles_,
                           (kir::var(tileCount_) - kir::var(wholeTiles_)) * kir::var(kTiles_),
                           "the k tiles of the tiles left, spread evenly over the CTAs"));
  }

  /// The CTA's work items: its whole tiles, then one piece a tile its run of k tiles
  /// crosses. Binds the tile, the K loop's range and stage uses, and the piece's slot.
  Stmt forEachWorkTile(Role role, const std::function<Stmt(const WorkTile &)> &body) override {
    std::vector<Stmt> shape;
    kir::VarPtr rounds = names_.var("whole_rounds"), first = names_.var("sk_first"),
                end = names_.var("sk_end"), firstTile = names_.var("first_piece_tile"),
                pieces = names_.var("pieces");
    Expr kt = kir::var(kTiles_), ctas = kir::var(ctaCount_), cta = kir::var(cta_);
    Expr ktAtLeast1 = kir::max(kt, kir::index(1));
    shape.push_back(kir::let(rounds, kir::var(wholeTiles_) / ctas, "whole tiles of each CTA"));
    shape.push_back(kir::let(first, cta * kir::var(skKTiles_) / ctas,
                             "the CTA's run of k tiles: [sk_first, sk_end)"));
    shape.push_back(kir::let(end, (cta + kir::index(1)) * kir::var(skKTiles_) / ctas));
    shape.push_back(kir::let(firstTile, kir::var(first) / ktAtLeast1));
    shape.push_back(kir::let(pieces,
                             kir::select(kir::var(first) < kir::var(end),
                                         (kir::var(end) - kir::index(1)) / ktAtLeast1 -
                                             kir::var(firstTile) + kir::index(1),
                                         kir::index(0)),
                             "the tiles the run crosses"));

    kir::VarPtr itemVar = names_.var("item");
    WorkTile tile;
    tile.round = grouped(role) ? names_.var("round") : nullptr;
    kir::VarPtr piece = names_.var("piece"), skTile = names_.var("sk_tile"),
                runBegin = names_.var("run_begin"), runEnd = names_.var("run_end"),
                tileNumber = names_.var("tile"), begin = names_.var("k_begin"),
                count = names_.var("k_count"), uses = names_.var("uses");
    if (role == Role::Consumers) {
      pieceSlot_ = names_.var("slot");
      consumerSkTile_ = skTile;
    }
    Expr item = kir::var(itemVar);
    Expr whole = item < kir::var(rounds);
    std::vector<Stmt> walk;
    walk.push_back(
        kir::let(piece, item - kir::var(rounds), "the item's piece (whole tiles first)"));
    walk.push_back(kir::let(skTile, kir::var(firstTile) + kir::var(piece)));
    walk.push_back(kir::let(runBegin, kir::max(kir::var(first), kir::var(skTile) * kt)));
    walk.push_back(kir::let(runEnd, kir::min(kir::var(end), kir::var(skTile) * kt + kt)));
    walk.push_back(kir::let(
        tileNumber, kir::select(whole, cta + item * ctas, kir::var(wholeTiles_) + kir::var(skTile)),
        "the tile's number in the grouped order"));
    std::tie(tile.mTile, tile.nTile) = tileCoordinates(walk, kir::var(tileNumber));
    bool loads = role == Role::Producer || !plan_.warpSpecialized;
    if (loads)
      walk.push_back(kir::let(
          begin, kir::select(whole, kir::index(0), kir::var(runBegin) - kir::var(skTile) * kt),
          "the item's k tiles: [k_begin, k_begin + k_count)"));
    walk.push_back(kir::let(count, kir::select(whole, kt, kir::var(runEnd) - kir::var(runBegin))));
    walk.push_back(kir::let(
        uses,
        kir::select(whole, item * kt, kir::var(rounds) * kt + kir::var(runBegin) - kir::var(first)),
        "stage uses before the item"));
    if (role == Role::Consumers)
      walk.push_back(kir::let(pieceSlot_,
                              cta * kir::index(2) + kir::min(kir::var(piece), kir::index(1)),
                              "a piece's slot: the run's first tile, or its last"));
    tile.kBegin = loads ? kir::var(begin) : nullptr;
    tile.kCount = kir::var(count);
    tile.useBase = kir::var(uses);
    walk.push_back(body(tile));
    Expr items = kir::var(rounds) + kir::var(pieces);
    std::string comment =
        role == Role::Producer ? "its tiles" : "this CTA's whole tiles, then its run of k tiles";
    Stmt loop;
    if (tile.round) {
      // Two consumer groups: group g takes items g, g + 2, ... (the producer all of them).
      walk.insert(walk.begin(), kir::let(itemVar,
                                         kir::var(tile.round) * kir::index(plan_.tileGroups) +
                                             kir::var(threads_.group),
                                         "the group's items: every other one of the CTA's"));
      loop = fromDirective(kir::forLoop(tile.round, groupRounds(items), kir::LoopKind::Serial,
                                        kir::block(std::move(walk))),
                           plan_.tilesOrigin, comment);
    } else {
      loop = fromDirective(
          kir::forLoop(itemVar, items, kir::LoopKind::Serial, kir::block(std::move(walk))),
          plan_.tilesOrigin, comment);
    }
    shape.push_back(loop);
    return kir::block(std::move(shape));
  }

  /// A whole tile runs the epilogue; a piece of one is stored and counted in, and the
  /// piece that arrives last finishes the tile (PartialTiles.h). The tile's pieces are those
  /// of the CTAs whose runs cross it, g0 .. g1 in K order: g0's is its slot 1 when its run
  /// began in an earlier tile (this is its last), else its slot 0; the later CTAs' runs
  /// begin in this tile (their slot 0).
  Stmt finishTile(const WorkTile &tile, const Accumulators &accumulators, Stmt epilogue) override {
    PartialTile part;
    part.slot = kir::var(pieceSlot_);
    part.counter = kir::var(consumerSkTile_);
    part.locate = [this](std::vector<Stmt> &out) {
      kir::VarPtr x0 = names_.var("tile_first"), g0 = names_.var("first_cta"),
                  g1 = names_.var("last_cta");
      // Only a piece reaches here, so there are k tiles left (sk_k_tiles > 0).
      Expr kt = kir::var(kTiles_), ctas = kir::var(ctaCount_), sk = kir::var(skKTiles_);
      out.push_back(kir::let(x0, kir::var(consumerSkTile_) * kt,
                             "the tile's first k tile in the runs; the CTAs whose runs cross it"));
      out.push_back(kir::let(g0, ((kir::var(x0) + kir::index(1)) * ctas - kir::index(1)) / sk));
      out.push_back(kir::let(g1, ((kir::var(x0) + kt) * ctas - kir::index(1)) / sk));
      PartialTile::Parts parts;
      parts.laterParts = kir::var(g1) - kir::var(g0);
      // The first piece's slot: 1 when its run began in an earlier tile.
      parts.firstSlot =
          kir::var(g0) * kir::index(2) +
          kir::select(kir::var(g0) * sk / ctas < kir::var(x0), kir::index(1), kir::index(0));
      parts.laterSlot = [g0](Expr p) { return (kir::var(g0) + p) * kir::index(2); };
      return parts;
    };
    return finishPartialTile(plan_, names_, threads_, accumulators, lastPart_, part,
                             eq(tile.kCount, kir::var(kTiles_)), std::move(epilogue));
  }

  Stmt gridLoops(Stmt body) const override {
    return fromDirective(kir::parallelLoop(cta_, ctas(), kir::Axis::BIDx, body), plan_.tilesOrigin,
                         "stream-K CTAs: one an SM, at most " + std::to_string(plan_.smCount) +
                             ", and no more than the k tiles");
  }

  void launchGrid(kir::LaunchShape &launch) const override {
    launch.grid = {ctas(), kir::index(1), kir::index(1)};
  }

  /// The CTAs of a stream-K product, and the tiles taken whole (in waves of `ctas`), as
  /// expressions of the sizes (the launch shape and both kernels use them).
  Expr ctas() const {
    Expr work = tileCount() * kir::foldedBinary(kir::BinaryOp::Max, allKTiles(), kir::index(1));
    return kir::foldedBinary(kir::BinaryOp::Min, work, kir::index(plan_.smCount));
  }
  Expr wholeTiles(Expr tiles, Expr ctas, Expr kTiles) const {
    Expr waves =
        kir::binary(kir::BinaryOp::Or, eq(tiles % ctas, kir::index(0)), eq(kTiles, kir::index(0)));
    return kir::select(waves, tiles, kir::max(tiles / ctas - kir::index(1), kir::index(0)) * ctas);
  }

private:
  kir::VarPtr tileCount_, ctaCount_, wholeTiles_, skKTiles_;
  /// The consumers' current item: its piece's slot, and its tile among the tiles left.
  kir::VarPtr pieceSlot_, consumerSkTile_;
};

} // namespace

std::unique_ptr<TileScheduler> makeStreamK(LowerContext &cx, const MatmulPlan &plan,
                                           const KernelNames &names, const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new StreamK(cx, plan, names, threads));
}

} // namespace fsl::lower
