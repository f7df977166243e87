// StreamK.cpp — `tiles stream_k [swizzle G]`: whole tiles in waves, then the k tiles of the
// tiles left spread evenly over the CTAs, and the fix-up kernel that finishes the tiles
// split between CTAs.
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
// run's middle tiles are whole). The fix-up kernel, one CTA a tile left, finds the CTAs
// whose runs cross its tile (g0 .. g1, from the run boundaries), adds their pieces in K
// order (the same sum at every run, no atomics, no waits between CTAs), and runs the
// epilogue. Pieces are stored in fragment order, so each thread writes and reads back
// its own accumulators with coalesced accesses, and only for elements inside the output.
#include "lower/matmul/Epilogue.h"
#include "lower/matmul/Matmul.h"
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
    if (role == Role::Consumers)
      pieceSlot_ = names_.var("slot");
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

  /// A piece of a tile goes to the workspace; the fix-up kernel adds the pieces.
  Stmt finishTile(const WorkTile &tile, const Accumulators &accumulators, Stmt epilogue) override {
    return kir::ifThen(kir::binary(kir::BinaryOp::Eq, tile.kCount, kir::var(kTiles_)),
                       std::move(epilogue), storePiece(tile, accumulators),
                       "a whole tile, or a piece of one");
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

  /// Element (r, c) of a slot of the pieces workspace: slot after slot of BM x BN floats,
  /// row-major, so the fix-up kernel reads consecutive columns with consecutive threads
  /// (and a warp's fragment stores fill whole 32-byte sectors: 4 lanes x 2 columns a row).
  Expr pieceIndex(Expr slot, Expr r, Expr c) const {
    return (slot * kir::index(plan_.tileM) + r) * kir::index(plan_.tileN) + c;
  }

  // The fix-up kernel's view of the shape.
  kir::VarPtr kTiles() const { return kTiles_; }
  kir::VarPtr tileCountVar() const { return tileCount_; }
  kir::VarPtr ctaCountVar() const { return ctaCount_; }
  kir::VarPtr wholeTilesVar() const { return wholeTiles_; }
  kir::VarPtr skKTilesVar() const { return skKTiles_; }
  using TileScheduler::allKTiles;
  using TileScheduler::tileCoordinates;
  using TileScheduler::tileCount;

private:
  /// A piece of a tile, not the whole: the thread's accumulators to the CTA's slot.
  Stmt storePiece(const WorkTile &tile, const Accumulators &accumulators) const {
    std::vector<Stmt> out;
    Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
    Stmt nest = forEachFragmentElement(plan_, names_, threads_, out, [&](const FragmentElement &e) {
      auto [r, c] = tilePosition(plan_, e);
      Expr row = kir::var(tile.mTile) * kir::index(plan_.tileM) + r;
      Expr col = kir::var(tile.nTile) * kir::index(plan_.tileN) + c;
      return kir::ifThen(row < m && col < n,
                         kir::store(plan_.partials, pieceIndex(kir::var(pieceSlot_), r, c),
                                    kir::load(accumulators.acc, e.accIndex)));
    });
    out.push_back(fromDirective(nest, plan_.tilesOrigin,
                                "a piece of the tile: the accumulators inside the output to the "
                                "CTA's slot, for the fix-up kernel"));
    return kir::block(std::move(out));
  }

  kir::VarPtr tileCount_, ctaCount_, wholeTiles_, skKTiles_;
  /// The consumers' current item's slot for a piece.
  kir::VarPtr pieceSlot_;
};

/// Rows of a tile a fix-up CTA finishes.
constexpr int64_t kFixupRows = 4;

} // namespace

std::unique_ptr<TileScheduler> makeStreamK(LowerContext &cx, const MatmulPlan &plan,
                                           const KernelNames &names, const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new StreamK(cx, plan, names, threads));
}

/// A tile left after the whole ones that is split between CTAs (not covered by one CTA's
/// run) is finished here, by BM / 4 CTAs of 4 rows each: BN threads, one a column
/// (coalesced reads and stores), each element the sum of the pieces in K order, then the
/// fusion's epilogue and the stores. The bands past M have nothing to do (one band of a tile
/// for M = 1). No division runs per element: the first peer's slot is found once a tile (the
/// others' is slot 0, the first tile of their runs).
bool buildStreamKFixup(LowerContext &cx) {
  const MatmulPlan &plan = *cx.matmul;
  KernelNames names(cx.fusion);
  CtaThreads threads;
  StreamK streamK(cx, plan, names, threads);
  cx.addParameters(nullptr);
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::Tensor;
  kp.buffer = plan.partials;
  cx.kernel.params.push_back(kp);
  kir::VarPtr skTile = names.var("sk_tile"), band = names.var("band"), thread = names.var("thread");

  std::vector<Stmt> body;
  body.push_back(kir::let(streamK.kTiles(), streamK.allKTiles()));
  streamK.shape(body);

  // The CTAs whose runs cross the tile: those holding its first and its last k tile.
  const int64_t threadCount = plan.tileN;
  kir::VarPtr x0 = names.var("tile_first"), g0 = names.var("first_cta"), g1 = names.var("last_cta"),
              firstSlot = names.var("first_slot"), rows = names.var("rows"),
              columns = names.var("columns"), r = names.var("r"), c = thread,
              row = names.var("row"), col = names.var("col"),
              sum = kir::makeVar(names.fresh("sum"), ir::DType::F32), p = names.var("p"),
              peer = names.var("peer"), slot = names.var("slot");
  Expr kt = kir::var(streamK.kTiles()), ctas = kir::var(streamK.ctaCountVar()),
       sk = kir::var(streamK.skKTilesVar());
  Expr m = cx.dimExtent(plan.m), n = cx.dimExtent(plan.n);
  std::vector<Stmt> tile;
  auto [mTile, nTile] =
      streamK.tileCoordinates(tile, kir::var(streamK.wholeTilesVar()) + kir::var(skTile));
  tile.push_back(
      kir::let(rows, kir::min(kir::index(plan.tileM), m - kir::var(mTile) * kir::index(plan.tileM)),
               "the tile's rows and columns inside the output"));
  tile.push_back(kir::let(
      columns, kir::min(kir::index(plan.tileN), n - kir::var(nTile) * kir::index(plan.tileN))));
  tile.push_back(kir::let(
      firstSlot,
      kir::var(g0) * kir::index(2) +
          kir::select(kir::var(g0) * sk / ctas < kir::var(x0), kir::index(1), kir::index(0)),
      "the first peer's slot: 1 when its run began in an earlier tile (this is its last)"));
  std::vector<Stmt> inside;
  inside.push_back(kir::let(row, kir::var(mTile) * kir::index(plan.tileM) + kir::var(r)));
  inside.push_back(kir::let(col, kir::var(nTile) * kir::index(plan.tileN) + kir::var(c)));
  inside.push_back(kir::declare(sum, kir::constant(0, ir::DType::F32)));
  {
    std::vector<Stmt> add;
    add.push_back(kir::let(peer, kir::var(g0) + kir::var(p)));
    add.push_back(kir::let(slot,
                           kir::select(kir::binary(kir::BinaryOp::Eq, kir::var(p), kir::index(0)),
                                       kir::var(firstSlot), kir::var(peer) * kir::index(2)),
                           "the later peers' runs begin in this tile: their slot 0"));
    add.push_back(kir::assign(
        sum, kir::binary(kir::BinaryOp::Add, kir::var(sum),
                         kir::load(plan.partials,
                                   streamK.pieceIndex(kir::var(slot), kir::var(r), kir::var(c))))));
    inside.push_back(fromDirective(kir::forLoop(p, kir::var(g1) - kir::var(g0) + kir::index(1),
                                                kir::LoopKind::Serial, kir::block(std::move(add))),
                                   plan.tilesOrigin,
                                   "the pieces in K order: the same sum at every run"));
  }
  cx.rootIndex.assign(cx.fusion.dims.size(), kir::index(0));
  cx.rootIndex[plan.m] = kir::var(row);
  cx.rootIndex[plan.n] = kir::var(col);
  std::vector<Stmt> values = fusedEpilogue(cx, plan, kir::var(sum));
  inside.insert(inside.end(), values.begin(), values.end());
  // The CTA's band of kFixupRows rows: many CTAs a tile keep enough loads in flight (a
  // CTA's rows run one after the other, each waiting for its pieces).
  kir::VarPtr i = names.var("i");
  std::vector<Stmt> perRow;
  perRow.push_back(kir::let(r, kir::var(band) * kir::index(kFixupRows) + kir::var(i)));
  perRow.push_back(kir::ifThen(kir::var(r) < kir::var(rows) && kir::var(c) < kir::var(columns),
                               kir::block(std::move(inside)), nullptr,
                               "the rows and columns inside the output"));
  tile.push_back(fromDirective(kir::forLoop(i, kir::index(kFixupRows), kir::LoopKind::Unrolled,
                                            kir::block(std::move(perRow))),
                               plan.epilogueOrigin, "the band's rows, a column a thread"));

  std::vector<Stmt> split;
  split.push_back(kir::let(x0, kir::var(skTile) * kt, "the tile's first k tile in the runs"));
  split.push_back(kir::let(g0, ((kir::var(x0) + kir::index(1)) * ctas - kir::index(1)) / sk));
  split.push_back(kir::let(g1, ((kir::var(x0) + kt) * ctas - kir::index(1)) / sk));
  split.push_back(kir::ifThen(kir::var(g0) < kir::var(g1), kir::block(std::move(tile)), nullptr,
                              "split between CTAs (one CTA's run covering it did it whole)"));
  body.push_back(kir::ifThen(kir::var(skTile) < kir::var(streamK.tileCountVar()) -
                                                    kir::var(streamK.wholeTilesVar()),
                             kir::block(std::move(split)), nullptr, "one CTA a tile left"));

  Stmt nest = kir::block(std::move(body));
  nest = kir::parallelLoop(thread, kir::index(threadCount), kir::Axis::TIDx, nest);
  Expr tiles = streamK.tileCount();
  Expr left = tiles - streamK.wholeTiles(tiles, streamK.ctas(), streamK.allKTiles());
  Expr blocks = kir::foldedBinary(kir::BinaryOp::Max, left, kir::index(1));
  nest = kir::parallelLoop(
      band, kir::index(plan.tileM / kFixupRows), kir::Axis::BIDy, nest,
      {"bands of " + std::to_string(kFixupRows) + " rows of the tile", plan.tilesOrigin.range});
  nest = fromDirective(kir::parallelLoop(skTile, blocks, kir::Axis::BIDx, nest), plan.tilesOrigin,
                       "the tiles left after the whole ones");
  cx.kernel.body =
      kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents), nest});
  kir::LaunchShape &launch = cx.kernel.launch;
  launch.grid = {blocks, kir::index(plan.tileM / kFixupRows), kir::index(1)};
  launch.block = {kir::index(threadCount), kir::index(1), kir::index(1)};
  launch.maxThreads = threadCount;
  // Without a minimum of blocks ptxas kept the fix-up to 32 registers and spilled around
  // its 64-bit divisions; many of its small CTAs fit an SM either way.
  launch.minBlocksPerSm = 1;
  return true;
}

} // namespace fsl::lower
