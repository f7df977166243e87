// SimulateTest.cpp — the --simulate comparison: the tolerance derived from an output's
// arithmetic and sums, the options that replace it, the mismatch report, and the rounding
// errors propagated through ill-conditioned computations (which correct kernels stay
// within and kernels broken on purpose do not); a race the simulator finds in a kernel
// whose barrier is removed.
#include "LowerSupport.h"
#include "TestSupport.h"

#include "driver/ErrorBound.h"
#include "driver/Evaluate.h"
#include "driver/Simulate.h"
#include "eval/Evaluator.h"
#include "kir/Mutator.h"
#include "sema/Sema.h"
#include "sim/Simulator.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <doctest/doctest.h>

#include <cmath>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// The first fusion of `text`, analysed.
struct Analysed {
  Parsed parsed;
  std::unique_ptr<Program> program;

  explicit Analysed(const std::string &text) : parsed(text) {
    REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
    program = analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
    REQUIRE_MESSAGE(program, parsed.firstMessage());
  }
  const ir::Fusion &fusion() const { return *program->fusions[0]; }
};

} // namespace

TEST_CASE("simulate tolerance: the lowest-precision type an output's value goes through") {
  // An f64 output computed in f32; an f16 output computed in bf16; a bf16 sum (f32
  // accumulation) with an f32 output; integers only.
  Analysed a("fusion f(x: f32[T, H], b: bf16[T, H], n: i32[T, H]) -> (w: f64[T, H], h: f16[T, H], "
             "s: f32[T], i: i32[T, H], c: f32[T, H]) {\n"
             "    w = f64(x * x);\n"
             "    h = f16(b * b);\n"
             "    s = f32(sum(b * b, over H));\n"
             "    i = n * n + 1;\n"
             "    c = f32(b);\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  std::vector<int64_t> extents = {3, 100}; // T, H
  auto arithmetic = [&](size_t o) { return arithmeticOf(f, f.outputs[o], extents); };
  CHECK(arithmetic(0).lowest == ir::DType::F32);
  CHECK(arithmetic(0).sums.empty());
  CHECK(arithmetic(1).lowest == ir::DType::BF16);
  OutputArithmetic sum = arithmetic(2);
  CHECK(sum.lowest == ir::DType::BF16);
  REQUIRE(sum.sums.size() == 1);
  CHECK(sum.sums[0].accumulator == ir::DType::F32);
  CHECK(sum.sums[0].terms == 100);
  CHECK(!arithmetic(3).lowest);
  // A widened bf16 input is exact on both sides: f32's tolerance, not bf16's.
  CHECK(arithmetic(4).lowest == ir::DType::F32);

  // rtol = 4 (u + sum of u_A sqrt(n)); atol = rtol x the reference's root mean square.
  std::vector<double> reference = {3, -4}; // rms 3.5355...
  Tolerance w = toleranceFor(arithmetic(0), reference);
  CHECK(w.rel == doctest::Approx(4 * std::ldexp(1.0, -24)));
  CHECK(w.abs == doctest::Approx(w.rel * std::sqrt(12.5)));
  CHECK(w.basis == "f32 arithmetic");
  Tolerance s = toleranceFor(sum, reference);
  CHECK(s.rel == doctest::Approx(4 * (std::ldexp(1.0, -8) + std::ldexp(1.0, -24) * 10)));
  CHECK(s.basis == "bf16 arithmetic, an f32 sum of 100");
  Tolerance exact = toleranceFor(arithmetic(3), reference);
  CHECK(exact.rel == 0);
  CHECK(exact.abs == 0);

  // The options replace the term they name.
  ToleranceOptions rel;
  rel.rel = 0.5;
  Tolerance partly = toleranceFor(arithmetic(0), reference, rel);
  CHECK(partly.rel == 0.5);
  CHECK(partly.abs == doctest::Approx(w.abs));
  CHECK(partly.basis == "f32 arithmetic; partly given");
  ToleranceOptions both = rel;
  both.abs = 0;
  Tolerance given = toleranceFor(arithmetic(0), reference, both);
  CHECK(given.abs == 0);
  CHECK(given.basis == "given");
}

TEST_CASE("simulate tolerance: a mismatch counts its elements and names the worst") {
  Analysed a("fusion f(x: f32[T, H]) -> (y: f32[T, H]) {\n"
             "    y = x;\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  eval::EvalResult reference, simulated;
  reference.extents = simulated.extents = {2, 3}; // T = 2, H = 3
  reference.outputs = {{1, 2, 3, 4, 5, NAN}};
  simulated.outputs = {{1, 2.5, 3, 4.25, NAN, NAN}};
  ToleranceOptions zero;
  zero.abs = 0;
  zero.rel = 0.1;
  std::vector<OutputComparison> c = compareOutputs(f, simulated, reference, zero);
  REQUIRE(c.size() == 1);
  CHECK(c[0].elements == 6);
  CHECK(c[0].mismatches == 2); // 2.5 for 2 and NaN for 5; 4.25 is within 10 % of 4
  CHECK(std::isinf(c[0].maxAbsError));
  REQUIRE(c[0].worst.size() == 2);
  CHECK(c[0].worst[0].coordinates == std::vector<int64_t>{1, 1}); // the NaN, worst
  CHECK(c[0].worst[1].coordinates == std::vector<int64_t>{0, 1});
  CHECK(describeMismatch(f, 0, c[0]) ==
        "output y: 2 of 6 elements out of tolerance 0 + 0.1 x |reference| (given); max |error| "
        "inf, max relative error inf; y[T=1, H=1]: got nan, expected 5; y[T=0, H=1]: got 2.5, "
        "expected 2");
  simulated.outputs[0][4] = 5;
  simulated.outputs[0][1] = 2;
  c = compareOutputs(f, simulated, reference, zero);
  CHECK(c[0].mismatches == 0);
  CHECK(c[0].maxAbsError == 0.25);
  CHECK(c[0].maxRelError == 0.0625);
  CHECK(describeMismatches(f, c) == "");
}

namespace {

/// A lowered snippet, simulated on the seeded inputs and compared as --simulate does.
struct Simulated : test::LoweredSnippet {
  using LoweredSnippet::LoweredSnippet;

  /// "" when every output is within its tolerance, else "mismatch: ..." or "fault: ...".
  /// `propagated`: with the rounding errors propagated through the fusion (--simulate's),
  /// or with toleranceFor's terms alone.
  std::string compare(const std::string &sizes, const kir::Program *program = nullptr,
                      bool propagated = true) {
    std::string ignored;
    llvm::raw_string_ostream sink(ignored);
    eval::EvalRequest request;
    REQUIRE_MESSAGE(
        makeEvaluationRequest(fusion(), sizes, 0, {}, parsed.diagnostics, sink, request),
        parsed.firstMessage());
    llvm::Expected<eval::EvalResult> reference = eval::evaluate(fusion(), request);
    REQUIRE_MESSAGE(static_cast<bool>(reference), llvm::toString(reference.takeError()));
    llvm::Expected<eval::EvalResult> simulated =
        sim::simulate(program ? *program : *lowered, request);
    if (!simulated)
      return "fault: " + llvm::toString(simulated.takeError());
    std::vector<std::vector<double>> bounds;
    if (propagated)
      bounds = roundingErrorBounds(fusion(), request, reference->extents);
    std::string mismatch = describeMismatches(
        fusion(), compareOutputs(fusion(), *simulated, *reference, {}, {}, bounds));
    return mismatch.empty() ? "" : "mismatch: " + mismatch;
  }

  /// The lowered program with its kernels rewritten by `mutator`.
  kir::Program mutated(kir::Mutator &mutator) const {
    kir::Program copy = *lowered;
    for (kir::Kernel &kernel : copy.kernels)
      kernel.body = mutator.mutate(kernel.body);
    return copy;
  }
};

/// Loads of `name` read the neighbouring element (index xor 1: the other of a pair).
class NeighbourLoads : public kir::Mutator {
public:
  explicit NeighbourLoads(std::string name) : name_(std::move(name)) {}
  using Mutator::mutate;
  kir::Expr mutate(const kir::Expr &e) override {
    if (e->kind != kir::ExprKind::Load || e->buffer->name != name_)
      return mutateChildren(e);
    ++changed;
    return kir::load(e->buffer, kir::binary(kir::BinaryOp::Xor, e->operands[0], kir::index(1)));
  }
  int changed = 0;

private:
  std::string name_;
};

/// Serial loops run one iteration fewer: a sum misses its last term.
class OneTermShort : public kir::Mutator {
public:
  using Mutator::mutate;
  kir::Stmt mutate(const kir::Stmt &s) override {
    kir::Stmt result = mutateChildren(s);
    if (result->kind != kir::StmtKind::For || result->loopKind != kir::LoopKind::Serial)
      return result;
    ++changed;
    auto copy = std::make_shared<kir::StmtNode>(*result);
    copy->extent = copy->extent - kir::index(1);
    return copy;
  }
  int changed = 0;
};

/// The barriers whose comment starts with `comment` removed.
class DropBarrier : public kir::Mutator {
public:
  explicit DropBarrier(std::string comment) : comment_(std::move(comment)) {}
  using Mutator::mutate;
  kir::Stmt mutate(const kir::Stmt &s) override {
    if (s->kind != kir::StmtKind::Barrier || !llvm::StringRef(s->comment).starts_with(comment_))
      return mutateChildren(s);
    ++changed;
    return kir::block({});
  }
  int changed = 0;

private:
  std::string comment_;
};

/// Each wgmma.wait_group that leaves one group in flight leaves two instead: the stage the
/// K loop then releases may still be read by its products.
class LenientWgmmaWaits : public kir::Mutator {
public:
  using Mutator::mutate;
  kir::Stmt mutate(const kir::Stmt &s) override {
    if (s->kind != kir::StmtKind::WgmmaWait || s->pending != 1)
      return mutateChildren(s);
    ++changed;
    return kir::wgmmaWait(2);
  }
  int changed = 0;
};

/// Drops the wgmma.wait_group 0 after a tile's K loop: the epilogue then reads
/// accumulators its last products may still write. With `dropEpilogue`, the epilogue's
/// loop over the fragments goes too (nothing reads the accumulators: the products are
/// left in flight).
class DropFinalWgmmaWait : public kir::Mutator {
public:
  explicit DropFinalWgmmaWait(bool dropEpilogue = false) : dropEpilogue_(dropEpilogue) {}
  using Mutator::mutate;
  kir::Stmt mutate(const kir::Stmt &s) override {
    if (dropEpilogue_ && s->kind == kir::StmtKind::For &&
        llvm::StringRef(s->comment).starts_with("the fragments of wgmma"))
      return kir::block({});
    if (s->kind != kir::StmtKind::WgmmaWait || s->pending != 0 ||
        !llvm::StringRef(s->comment).starts_with("the tile's last products are done"))
      return mutateChildren(s);
    ++changed;
    return kir::block({});
  }
  int changed = 0;

private:
  bool dropEpilogue_;
};

/// Each TmaStoreWait leaves `extra` more bulk groups pending than the lowering asked for
/// (`remove`: the waits with no pending group are dropped instead).
class LenientStoreWaits : public kir::Mutator {
public:
  explicit LenientStoreWaits(int64_t extra, bool removeFinal = false)
      : extra_(extra), removeFinal_(removeFinal) {}
  using Mutator::mutate;
  kir::Stmt mutate(const kir::Stmt &s) override {
    if (s->kind != kir::StmtKind::TmaStoreWait)
      return mutateChildren(s);
    if (removeFinal_) {
      if (s->pending != 0 || !llvm::StringRef(s->comment).contains("last TMA store"))
        return s;
      ++changed;
      return kir::block({});
    }
    if (s->pending == 0)
      return s;
    ++changed;
    return kir::tmaStoreWait(s->pending + extra_);
  }
  int changed = 0;

private:
  int64_t extra_;
  bool removeFinal_;
};

bool contains(const std::string &text, llvm::StringRef part) {
  return llvm::StringRef(text).contains(part);
}

} // namespace

TEST_CASE("simulate tolerance: correct ill-conditioned kernels stay within the propagated "
          "rounding error, wrong ones do not") {
  // exp(20 x): the rounding of 20 x, relative u, is |20 x| u in the exponent and so
  // relative |20 x| u in the result, up to 20 units where the fixed tolerance allows 4.
  Simulated exp20("fusion f(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                  "    y = exp(x * 20.0);\n"
                  "}\n"
                  "schedule f {\n"
                  "    parallelize T -> BIDx, H -> TIDx;\n"
                  "}\n");
  CHECK(contains(exp20.compare("T=8,H=128", nullptr, /*propagated=*/false), "mismatch"));
  CHECK(exp20.compare("T=8,H=128") == "");
  NeighbourLoads neighbour("x");
  kir::Program wrongElement = exp20.mutated(neighbour);
  REQUIRE(neighbour.changed > 0);
  CHECK(contains(exp20.compare("T=8,H=128", &wrongElement), "mismatch: output y:"));

  // x^16 by four squarings: each doubles the relative error before it, 15 units in all.
  Simulated power("fusion f(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                  "    let x2 = x * x;\n"
                  "    let x4 = x2 * x2;\n"
                  "    let x8 = x4 * x4;\n"
                  "    y = x8 * x8;\n"
                  "}\n"
                  "schedule f {\n"
                  "    parallelize T -> BIDx, H -> TIDx;\n"
                  "}\n");
  CHECK(contains(power.compare("T=16,H=128", nullptr, false), "mismatch"));
  CHECK(power.compare("T=16,H=128") == "");
  NeighbourLoads powerNeighbour("x");
  kir::Program wrongPower = power.mutated(powerNeighbour);
  CHECK(contains(power.compare("T=16,H=128", &wrongPower), "mismatch: output y:"));

  // A 32-term sum of terms near 100 whose total 3200 is then taken away: the roundings of
  // partial sums up to 3200 remain in a result of a few units.
  Simulated cancelling("fusion f<H = 32>(x: f32[T, H]) -> (y: f32[T]) {\n"
                       "    y = sum(x + 100.0, over H) - 3200.0;\n"
                       "}\n"
                       "schedule f {\n"
                       "    parallelize T -> BIDx;\n"
                       "}\n");
  CHECK(contains(cancelling.compare("T=64", nullptr, false), "mismatch"));
  CHECK(cancelling.compare("T=64") == "");
  OneTermShort short_;
  kir::Program missingTerm = cancelling.mutated(short_);
  REQUIRE(short_.changed > 0);
  CHECK(contains(cancelling.compare("T=64", &missingTerm), "mismatch: output y:"));

  // Softmax of logits up to 80: the rounding of 80 x (and of the maximum) is amplified by
  // exp to 80 units and more in the probabilities.
  Simulated softmax("fusion f<S = 32>(x: f32[T, S]) -> (y: f32[T, S]) {\n"
                    "    let z = x * 80.0;\n"
                    "    let e = exp(z - max(z, over S));\n"
                    "    y = e / sum(e, over S);\n"
                    "}\n"
                    "schedule f {\n"
                    "    parallelize T -> BIDx, S -> TIDx;\n"
                    "}\n");
  CHECK(contains(softmax.compare("T=64", nullptr, false), "mismatch"));
  CHECK(softmax.compare("T=64") == "");
  NeighbourLoads softmaxNeighbour("x");
  kir::Program wrongLogit = softmax.mutated(softmaxNeighbour);
  CHECK(contains(softmax.compare("T=64", &wrongLogit), "mismatch: output y:"));
}

TEST_CASE("simulate tolerance: the propagated rounding error, operation by operation") {
  Analysed a("fusion f(x: f32[T]) -> (e: f32[T], s: f32[T], m: f32[T], c: f64[T]) {\n"
             "    e = exp(x * 20.0);\n"
             "    s = sqrt(x * x);\n"
             "    m = max(x * 3.0, x);\n"
             "    c = f64(x);\n"
             "}\n");
  const ir::Fusion &f = a.fusion();
  eval::EvalRequest request;
  request.sizes["T"] = 2;
  request.params = {{0.5, -1}};
  std::vector<std::vector<double>> bounds = roundingErrorBounds(f, request, {2});
  REQUIRE(bounds.size() == 4);
  double u = std::ldexp(1.0, -24);
  // exp(10): the product's rounding u 10 through exp, exp's own u, and the output's 2 u.
  CHECK(bounds[0][0] == doctest::Approx(std::exp(10.0) * u * (10 + 1 + 2)));
  // sqrt(x x) = |x|: x x rounded (u x^2), through sqrt (1 / 2|x|), sqrt's u, output's 2 u.
  CHECK(bounds[1][1] == doctest::Approx(u * 0.5 + u + 2 * u));
  // max passes on its operands' errors unrounded: 3 x's rounding, or none (x).
  CHECK(bounds[2][0] == doctest::Approx(u * 1.5 + 2 * u * 1.5));
  CHECK(bounds[2][1] == doctest::Approx(u * 3 + 2 * u));
  // An input read as it is and widened: exact on both sides, as the output rounds nothing.
  CHECK(bounds[3][0] == doctest::Approx(2 * std::ldexp(1.0, -53) * 0.5));
}

namespace {

/// A matrix product of 128 x 128 tiles, two warpgroups each 64 x 128, two stages of
/// k = 64, with `more` added to its schedule.
std::string twoStageProduct(const std::string &more) {
  return "fusion mm(a: bf16[M, K], w: bf16[N, K]) -> (y: f32[M, N]) {\n"
         "    y = sum(f32(a) * f32(w), over K);\n"
         "}\n"
         "schedule mm {\n"
         "    mma over K: tile (128, 128, 64), warp (64, 128), instruction wgmma(64, 128, 16);\n"
         "    pipeline 2 stages via tma;\n" +
         more + "}\n";
}

/// The warp-specialized form of twoStageProduct simulated at `sizes` as lowered (it must
/// match) and with `mutator` applied (it must change something): the second run's report.
template <typename M> std::string warpSpecializedMutated(M &mutator, const char *sizes) {
  Simulated product(
      twoStageProduct("    warp_specialize producer(regs 40), consumers(2, regs 232);\n"));
  CHECK(product.compare(sizes) == "");
  kir::Program mutated = product.mutated(mutator);
  REQUIRE(mutator.changed >= 1);
  return product.compare(sizes, &mutated);
}

} // namespace

TEST_CASE("simulate: a matrix product without the barrier before a stage's refill races") {
  // Two consumer warpgroups read each stage by wgmma; thread 0 refills it by TMA once
  // every warpgroup is done, which only the __syncthreads at the end of the K step says.
  Simulated product(twoStageProduct(""));
  CHECK(product.compare("M=128,N=128,K=256") == "");
  DropBarrier drop("every warpgroup is done with the stage");
  kir::Program racing = product.mutated(drop);
  REQUIRE(drop.changed == 1);
  std::string result = product.compare("M=128,N=128,K=256", &racing);
  // Thread 0 refills a stage that warpgroup 1 (warps 4-7) still reads: its products'
  // group is not retired by its wgmma.wait_group yet when the load writes.
  CHECK_MESSAGE(contains(result, "kernel mm_v0: block (0, 0, 0), thread (0, 0, 0): write to "
                                 "shared a_tiles["),
                result);
  CHECK_MESSAGE(contains(result, "] in `tma.load a_tiles` while a wgmma may still read it: no "
                                 "wgmma.wait_group of its warpgroup has retired its group"),
                result);
}

TEST_CASE("simulate: a stage released before the wgmma.wait_group that retires its reads") {
  // The warp-specialized K loop releases the stage before the one in flight after
  // wgmma.wait_group 1. With wait_group 2 the released stage's products may still read
  // it when the producer refills it: the simulator runs the products at their issue, and
  // faults on the write because no wait has retired their reads.
  LenientWgmmaWaits lenient;
  std::string result = warpSpecializedMutated(lenient, "M=128,N=128,K=512");
  CHECK_MESSAGE(contains(result, "while a wgmma may still read it: no wgmma.wait_group of its "
                                 "warpgroup has retired its group"),
                result);
}

TEST_CASE("simulate: accumulators read before the wgmma.wait_group that retires them") {
  // Without the wait after the K loop, the epilogue reads the accumulators while the last
  // products may still write them: the first warp of the first consumer warpgroup faults
  // at its first fragment.
  DropFinalWgmmaWait drop;
  std::string result = warpSpecializedMutated(drop, "M=256,N=256,K=512");
  CHECK_MESSAGE(contains(result, "thread (128, 0, 0): load of accumulator acc[0] while a wgmma "
                                 "product still writes it: no wgmma.wait_group of warp 4 has "
                                 "retired its group"),
                result);
}

TEST_CASE("simulate: a block that exits with wgmma products in flight faults") {
  // Without the wait and without the epilogue, nothing reads the accumulators:
  // one tile a CTA, so each block exits with its last products in flight. Every block's
  // state starts afresh (the next block reuses the storage).
  DropFinalWgmmaWait drop(/*dropEpilogue=*/true);
  std::string result = warpSpecializedMutated(drop, "M=256,N=256,K=512");
  CHECK_MESSAGE(contains(result, "the block exits while warpgroup 1 has wgmma products in "
                                 "flight: no wgmma.wait_group retired them before the end"),
                result);
}

TEST_CASE("simulate: an output tile written again before its TMA stores have read it faults") {
  // 128 x 256 tiles stored 64 columns at a time through two shared pieces: before a piece
  // is written, the stores of the piece before the last must have read its shared tile
  // (wait_group.read 1: one store a piece, the last piece's left pending).
  Simulated product("fusion mm(a: bf16[M, K], w: bf16[N, K]) -> (y: bf16[M, N]) {\n"
                    "    y = bf16(sum(f32(a) * f32(w), over K));\n"
                    "}\n"
                    "schedule mm {\n"
                    "    mma over K: tile (128, 256, 64), warp (64, 256), instruction "
                    "wgmma(64, 256, 16);\n"
                    "    pipeline 2 stages via tma;\n"
                    "    warp_specialize producer(regs 40), consumers(2, regs 232);\n"
                    "    epilogue via shared tma_store, tile (128, 64);\n"
                    "}\n");
  CHECK(product.compare("M=100,N=256,K=64") == "");
  LenientStoreWaits lenient(1);
  kir::Program early = product.mutated(lenient);
  REQUIRE(lenient.changed == 1);
  std::string result = product.compare("M=100,N=256,K=64", &early);
  CHECK_MESSAGE(contains(result, "while a TMA store may still read it: no "
                                 "cp.async.bulk.wait_group.read of the storing thread has "
                                 "retired the store"),
                result);
  // Without the wait after the last tile, the block exits while its stores may read.
  LenientStoreWaits noFinal(0, /*removeFinal=*/true);
  kir::Program exits = product.mutated(noFinal);
  REQUIRE(noFinal.changed == 1);
  result = product.compare("M=100,N=256,K=64", &exits);
  CHECK_MESSAGE(contains(result, "the block exits while 2 TMA stores"), result);
}

/// The count a part compares with to know it is the last: one fewer, so the next to last
/// part finishes the tile.
class FinishEarly : public kir::Mutator {
public:
  using Mutator::mutate;
  kir::Expr mutate(const kir::Expr &e) override {
    if (e->kind == kir::ExprKind::Binary && e->binary == kir::BinaryOp::Eq &&
        e->operands[0]->kind == kir::ExprKind::Load &&
        e->operands[0]->buffer->name.starts_with("last_part")) {
      ++changed;
      return kir::binary(kir::BinaryOp::Eq, e->operands[0], e->operands[1] - kir::index(1));
    }
    return mutateChildren(e);
  }
  int changed = 0;
};

TEST_CASE("simulate: split-K's parts of a tile need zeroed counters and the last part") {
  // Three parts of K a tile; the CTA whose part arrives last adds them. The workspaces
  // start as NaN, so a counter nobody zeroed, or a tile finished before its last part
  // was stored, shows.
  Simulated product("fusion mm(a: bf16[M, K], w: bf16[N, K]) -> (y: bf16[M, N]) {\n"
                    "    y = bf16(sum(f32(a) * f32(w), over K));\n"
                    "}\n"
                    "schedule mm {\n"
                    "    mma over K: tile (64, 64, 64), warp (64, 64), instruction "
                    "wgmma(64, 64, 16);\n"
                    "    pipeline 2 stages via tma;\n"
                    "    warp_specialize producer(regs 40), consumers(1, regs 232);\n"
                    "    tiles split_k 3;\n"
                    "}\n");
  CHECK(product.compare("M=70,N=72,K=192") == "");
  // Without the kernel that zeroes the counters (the variant's first launch).
  kir::Program unzeroed = *product.lowered;
  REQUIRE(unzeroed.kernels.size() == 2);
  for (kir::Variant &variant : unzeroed.variants)
    variant.launches.erase(variant.launches.begin());
  std::string result = product.compare("M=70,N=72,K=192", &unzeroed);
  CHECK_MESSAGE(contains(result, "which holds no count (its memory was never zeroed)"), result);
  // A tile finished by the next to last part: the last part's slot is still NaN.
  FinishEarly early;
  kir::Program premature = product.mutated(early);
  REQUIRE(early.changed == 1);
  result = product.compare("M=70,N=72,K=192", &premature);
  CHECK_MESSAGE(contains(result, "nan"), result);
}
