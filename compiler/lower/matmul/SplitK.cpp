// SplitK.cpp — `tiles split_k S`: one tile a CTA (as one_per_cta) and part `split` of K
// (grid z); each CTA's f32 partial tile goes to its slice of the workspace ([S, M, N] f32)
// instead of the epilogue, and a second kernel adds the S partial products of each output
// element in split order (the same sum at every run: no atomics), then runs the fusion's
// epilogue and the stores, one element a thread:
//
//   for block parallel BIDx [ceil(M N / 256)], thread parallel TIDx [256]
//     element = block * 256 + thread; if element < M N:
//       row, col; sum = partials[0][row][col] + ... + partials[S - 1][row][col]
//       the epilogue on sum; stores
//
// Consecutive threads take consecutive columns: the workspace reads and the output
// stores are coalesced. Programmatic dependent launch orders it after the first kernel
// (its grid dependency wait returns once that kernel's writes are visible).
#include "lower/matmul/Epilogue.h"
#include "lower/matmul/Matmul.h"
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

  /// The partial product goes to its slice of the workspace; the second kernel adds the
  /// slices and applies the epilogue.
  Stmt storePartial(Expr row, Expr col, Expr value) const override {
    Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
    return kir::store(plan_.partials, (kir::var(split_) * m + row) * n + col, std::move(value));
  }

  bool storesPartials() const override { return true; }

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

constexpr int64_t kSumThreads = 256;

} // namespace

std::unique_ptr<TileScheduler> makeSplitK(LowerContext &cx, const MatmulPlan &plan,
                                          const KernelNames &names, const CtaThreads &threads) {
  return std::unique_ptr<TileScheduler>(new SplitK(cx, plan, names, threads));
}

bool buildSplitKSum(LowerContext &cx) {
  const MatmulPlan &plan = *cx.matmul;
  KernelNames names(cx.fusion);
  cx.addParameters(nullptr);
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::Tensor;
  kp.buffer = plan.partials;
  cx.kernel.params.push_back(kp);

  kir::VarPtr block = names.var("block"), thread = names.var("thread"),
              element = names.var("element"), row = names.var("row"), col = names.var("col"),
              sum = kir::makeVar(names.fresh("sum"), ir::DType::F32), split = names.var("split");
  Expr m = cx.dimExtent(plan.m), n = cx.dimExtent(plan.n);
  Expr elements = m * n;
  cx.rootIndex.assign(cx.fusion.dims.size(), kir::index(0));
  cx.rootIndex[plan.m] = kir::var(row);
  cx.rootIndex[plan.n] = kir::var(col);
  auto partial = [&](Expr s) {
    return kir::load(plan.partials, (s * m + kir::var(row)) * n + kir::var(col));
  };
  std::vector<Stmt> body;
  body.push_back(kir::let(row, kir::var(element) / n));
  body.push_back(kir::let(col, kir::var(element) % n));
  body.push_back(kir::declare(sum, partial(kir::index(0)), "split 0's partial product"));
  body.push_back(
      kir::forLoop(split, kir::index(plan.splitK - 1), kir::LoopKind::Unrolled,
                   kir::assign(sum, kir::binary(kir::BinaryOp::Add, kir::var(sum),
                                                partial(kir::var(split) + kir::index(1))))));
  std::vector<Stmt> values = fusedEpilogue(cx, plan, kir::var(sum));
  body.insert(body.end(), values.begin(), values.end());

  Stmt nest = kir::block({
      kir::let(element, kir::var(block) * kir::index(kSumThreads) + kir::var(thread)),
      kir::ifThen(kir::var(element) < elements, kir::block(std::move(body)), nullptr,
                  "the elements past M x N do nothing"),
  });
  nest = kir::parallelLoop(thread, kir::index(kSumThreads), kir::Axis::TIDx, nest);
  Expr blocks = (elements + kir::index(kSumThreads - 1)) / kir::index(kSumThreads);
  nest =
      fromDirective(kir::parallelLoop(block, blocks, kir::Axis::BIDx, nest), plan.tilesOrigin,
                    std::to_string(plan.splitK) + " partial products an element, added in order");
  cx.kernel.body =
      kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents), nest});
  kir::LaunchShape &launch = cx.kernel.launch;
  launch.grid = {blocks, kir::index(1), kir::index(1)};
  launch.block = {kir::index(kSumThreads), kir::index(1), kir::index(1)};
  launch.maxThreads = kSumThreads;
  return true;
}

} // namespace fsl::lower
