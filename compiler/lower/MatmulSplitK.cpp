// MatmulSplitK.cpp — the second kernel of a `tiles split_k S` product: the S partial
// products of each output element, which the first kernel's CTAs stored to the
// workspace ([S, M, N] f32), added in split order (the same sum at every run: no atomics),
// then the fusion's epilogue and the stores, one element a thread:
//
//   for block parallel BIDx [ceil(M N / 256)], thread parallel TIDx [256]
//     element = block * 256 + thread; if element < M N:
//       row, col; sum = partials[0][row][col] + ... + partials[S - 1][row][col]
//       the epilogue on sum; stores
//
// Consecutive threads take consecutive columns: the workspace reads and the output
// stores are coalesced. Programmatic dependent launch orders it after the first kernel
// (its grid dependency wait returns once that kernel's writes are visible).
#include "lower/MatmulBuilder.h"
#include "lower/Pointwise.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {
constexpr int64_t kSumThreads = 256;
}

bool MatmulBuilder::runSum() {
  reserveNames();
  cx_.addParameters(nullptr);
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::Tensor;
  kp.buffer = plan_.partials;
  cx_.kernel.params.push_back(kp);

  kir::VarPtr block = var("block"), thread = var("thread"), element = var("element"),
              row = var("row"), col = var("col"), sum = var("sum"), split = var("split");
  sum = kir::makeVar(sum->name, ir::DType::F32);
  Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
  Expr elements = m * n;
  cx_.rootIndex.assign(f_.dims.size(), kir::index(0));
  cx_.rootIndex[plan_.m] = kir::var(row);
  cx_.rootIndex[plan_.n] = kir::var(col);
  auto partial = [&](Expr s) {
    return kir::load(plan_.partials, (s * m + kir::var(row)) * n + kir::var(col));
  };
  std::vector<Stmt> body;
  body.push_back(kir::let(row, kir::var(element) / n));
  body.push_back(kir::let(col, kir::var(element) % n));
  body.push_back(kir::declare(sum, partial(kir::index(0)), "split 0's partial product"));
  body.push_back(
      kir::forLoop(split, kir::index(plan_.splitK - 1), kir::LoopKind::Unrolled,
                   kir::assign(sum, kir::binary(kir::BinaryOp::Add, kir::var(sum),
                                                partial(kir::var(split) + kir::index(1))))));
  std::vector<Stmt> values = epilogueValues(kir::var(sum));
  body.insert(body.end(), values.begin(), values.end());

  Stmt nest = kir::block({
      kir::let(element, kir::var(block) * kir::index(kSumThreads) + kir::var(thread)),
      kir::ifThen(kir::var(element) < elements, kir::block(std::move(body)), nullptr,
                  "the elements past M x N do nothing"),
  });
  nest = kir::parallelLoop(thread, kir::index(kSumThreads), kir::Axis::TIDx, nest);
  Expr blocks = (elements + kir::index(kSumThreads - 1)) / kir::index(kSumThreads);
  nest = withOrigin(kir::parallelLoop(block, blocks, kir::Axis::BIDx, nest), plan_.tilesOrigin,
                    std::to_string(plan_.splitK) + " partial products an element, added in order");
  cx_.kernel.body =
      kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents), nest});
  kir::LaunchShape &launch = cx_.kernel.launch;
  launch.grid = {blocks, kir::index(1), kir::index(1)};
  launch.block = {kir::index(kSumThreads), kir::index(1), kir::index(1)};
  launch.maxThreads = kSumThreads;
  return true;
}

bool buildSplitKSum(LowerContext &context, const MatmulPlan &plan) {
  return MatmulBuilder(context, plan).runSum();
}

} // namespace fsl::lower
