// RewriteTest.cpp — what the simulator checks includes every rewrite the emitter prints.
//
// The CUDA printer and the simulator visit the same Kernel IR, so a lowering pass that
// rewrote a kernel wrongly would print wrong CUDA and simulate wrongly alike. For each
// pass that rewrites statements, a kernel where the rewrite applies simulates to the
// float64 reference; the same kernel with the rewrite broken by a small kir::Mutator (a
// guard stripped, a clamp dropped, an index one lane or one batch iteration off, the
// reciprocal of the wrong value, a fast path every thread takes, a grid one block short)
// must not: the simulator faults or its outputs leave the tolerance. Each test also
// checks that its mutator found what it breaks, so none can pass by breaking nothing.
#include "LowerSupport.h"

#include "driver/Evaluate.h"
#include "driver/Simulate.h"
#include "kir/Mutator.h"
#include "kir/Printer.h"
#include "lower/Context.h"
#include "lower/Lower.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"
#include "sim/Simulator.h"

#include <doctest/doctest.h>

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <set>

using namespace fsl;
using fsl::test::Parsed;
using kir::Expr;
using kir::Stmt;

namespace {

/// A lowered snippet that simulates itself, whole or with a broken rewrite.
struct Lowered : test::LoweredSnippet {
  using LoweredSnippet::LoweredSnippet;

  /// The lowered program with the kernel's body (or launch) replaced.
  kir::Program withBody(Stmt body) const {
    kir::Program copy = *lowered;
    copy.kernels[0].body = std::move(body);
    return copy;
  }

  /// Simulates `variant` (the lowered program when null) for `sizes` ("T=7") on the
  /// seeded random inputs and compares with the reference: empty when every output is
  /// within its tolerance, else the simulator's fault or the outputs out of it.
  std::string simulate(const std::string &sizes, const kir::Program *variant = nullptr) {
    std::string ignored;
    llvm::raw_string_ostream sink(ignored);
    eval::EvalRequest request;
    REQUIRE_MESSAGE(
        makeEvaluationRequest(fusion(), sizes, 0, {}, parsed.diagnostics, sink, request),
        parsed.firstMessage());
    llvm::Expected<eval::EvalResult> reference = eval::evaluate(fusion(), request);
    REQUIRE_MESSAGE(static_cast<bool>(reference), llvm::toString(reference.takeError()));
    llvm::Expected<eval::EvalResult> simulated =
        sim::simulate(variant ? *variant : *lowered, request);
    if (!simulated)
      return "fault: " + llvm::toString(simulated.takeError());
    std::string mismatch =
        describeMismatches(fusion(), compareOutputs(fusion(), *simulated, *reference));
    return mismatch.empty() ? "" : "mismatch: " + mismatch;
  }

  std::string text() const {
    std::string out;
    llvm::raw_string_ostream stream(out);
    kir::printKernel(lowered->kernels[0], stream);
    return out;
  }
};

bool contains(const std::string &text, llvm::StringRef part) {
  return llvm::StringRef(text).contains(part);
}

int countLabelled(const Stmt &body, llvm::StringRef label) {
  int count = 0;
  kir::forEachStmt(body, [&](const Stmt &s) { count += s->label == label; });
  return count;
}

// --- The mutators that break one rewrite each ----------------------------------------

/// Replaces every statement labelled `label` (an `if`) by its then-branch: the rewrite
/// forgot the guard.
class StripLabelled : public kir::Mutator {
public:
  explicit StripLabelled(std::string label) : label_(std::move(label)) {}
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->label != label_)
      return mutateChildren(s);
    ++stripped;
    return mutate(s->body[0]);
  }
  int stripped = 0;

private:
  std::string label_;
};

/// `op(a, b)` of an index becomes `a`: `min(i, n - 1)` without the clamp of a row's
/// loads, or `a % c` as a simplifier that believed `a < c` would fold it.
class DropIndexOp : public kir::Mutator {
public:
  explicit DropIndexOp(kir::BinaryOp op) : op_(op) {}
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    if (e->kind == kir::ExprKind::Binary && e->binary == op_ && ir::isInteger(e->dtype)) {
      ++dropped;
      return mutate(e->operands[0]);
    }
    return mutateChildren(e);
  }
  int dropped = 0;

private:
  kir::BinaryOp op_;
};

/// Every vector copy from global memory reads one lane further on.
class ShiftVectorLoads : public kir::Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::VectorCopy || s->source->space != kir::MemorySpace::Global)
      return mutateChildren(s);
    ++shifted;
    Stmt copy =
        kir::vectorCopy(s->buffer, s->index, s->source, s->sourceIndex + kir::index(1), s->lanes);
    return kir::withOrigin(kir::withComment(copy, s->comment), s->origin);
  }
  int shifted = 0;
};

/// The destinations of the vector copies inside loops whose origin starts with `prefix`
/// ("prefetch over Hp", "early loads over Hp"): the arrays a hoisted batch fills.
std::set<const kir::Buffer *> batchArrays(const Stmt &body, llvm::StringRef prefix) {
  std::set<const kir::Buffer *> arrays;
  kir::forEachStmt(body, [&](const Stmt &s) {
    if (s->kind == kir::StmtKind::For && llvm::StringRef(s->origin.text).starts_with(prefix))
      kir::forEachStmt(s, [&](const Stmt &inner) {
        if (inner->kind == kir::StmtKind::VectorCopy)
          arrays.insert(inner->buffer.get());
      });
  });
  return arrays;
}

/// Element reads of the batch `arrays` use the next iteration of every enclosing
/// unrolled batch loop (i -> (i + 1) % extent): the vector of the wrong iteration.
class WrongBatchIteration : public kir::Mutator {
public:
  explicit WrongBatchIteration(std::set<const kir::Buffer *> arrays) : arrays_(std::move(arrays)) {}
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::For || s->loopKind != kir::LoopKind::Unrolled)
      return mutateChildren(s);
    std::optional<int64_t> extent = kir::asConstant(s->extent);
    REQUIRE(extent.has_value());
    batch_[s->var.get()] = *extent;
    Stmt result = mutateChildren(s);
    batch_.erase(s->var.get());
    return result;
  }
  Expr mutate(const Expr &e) override {
    if (e->kind != kir::ExprKind::Load || !arrays_.count(e->buffer.get()))
      return mutateChildren(e);
    Expr index = kir::substitute(e->operands[0], [&](const kir::VarPtr &v) -> Expr {
      auto found = batch_.find(v.get());
      if (found == batch_.end())
        return nullptr;
      return (kir::var(v) + kir::index(1)) % kir::index(found->second);
    });
    if (index == e->operands[0])
      return e;
    ++redirected;
    return kir::load(e->buffer, index);
  }
  int redirected = 0;

private:
  std::set<const kir::Buffer *> arrays_;
  std::map<const kir::Var *, int64_t> batch_;
};

/// `a * (1 / b)` becomes `a * (1 / (b + 1))`.
class WrongReciprocal : public kir::Mutator {
public:
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    Expr result = mutateChildren(e);
    if (result->kind != kir::ExprKind::Binary || result->binary != kir::BinaryOp::Div ||
        !ir::isFloat(result->dtype) || result->operands[0]->kind != kir::ExprKind::Const ||
        result->operands[0]->constant != 1)
      return result;
    ++changed;
    const Expr &b = result->operands[1];
    return kir::binary(kir::BinaryOp::Div, result->operands[0],
                       kir::binary(kir::BinaryOp::Add, b, kir::constant(1, b->dtype)));
  }
  int changed = 0;
};

bool hasLabelledCheck(const Stmt &s) {
  return countLabelled(s, lower::labels::BoundsCheck) + countLabelled(s, lower::labels::RowGuard) >
         0;
}

/// The unswitched `if (fast) unchecked else checked` takes the unchecked nest always.
class AlwaysFastPath : public kir::Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::If || s->body.size() != 2 || hasLabelledCheck(s->body[0]) ||
        !hasLabelledCheck(s->body[1]))
      return mutateChildren(s);
    ++forced;
    return kir::withOrigin(
        kir::ifThen(kir::constant(1, ir::DType::Bool), s->body[0], s->body[1], s->comment),
        s->origin);
  }
  int forced = 0;
};

/// Drops the `let` of variable `name` (what a rewrite that removed a cast still read
/// elsewhere would leave).
class DropLet : public kir::Mutator {
public:
  explicit DropLet(std::string name) : name_(std::move(name)) {}
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->kind == kir::StmtKind::Let && !s->mutableVar && s->var->name == name_) {
      ++dropped;
      return nullptr;
    }
    return mutateChildren(s);
  }
  int dropped = 0;

private:
  std::string name_;
};

// --- The kernels ----------------------------------------------------------------------

/// H = 1000 on 128 threads: the last of 8 iterations of Hp runs past the row for
/// threads 104 and up, so each iteration is checked.
const char *kRemainder = "fusion f<H = 1000>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                         "    y = x * 2.0;\n"
                         "}\n"
                         "schedule f {\n"
                         "    split H by 128 -> (Hp, Hx);\n"
                         "    parallelize T -> BIDx, Hx -> TIDx;\n";

/// T and H merged into one index over 128-thread blocks: the last block is partial.
const char *kMerged = "fusion f<H = 64>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                      "    y = x * 2.0 + 1.0;\n"
                      "}\n"
                      "schedule f {\n"
                      "    merge (T, H) -> TH;\n"
                      "    split TH by 128 -> (B, X);\n"
                      "    parallelize B -> BIDx, X -> TIDx;\n"
                      "}\n";

/// Four rows a block on threadIdx.y: with T = 6 the second block's last two rows are
/// past the end, and are clamped.
const char *kClampedRows = "fusion f<H = 1024>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                           "    y = x / sum(x, over H);\n"
                           "}\n"
                           "schedule f {\n"
                           "    split H by 32 -> (Hp, Hx);\n"
                           "    split T by 4 -> (Tb, Ty);\n"
                           "    parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;\n"
                           "}\n";

/// A norm with a weight read only after the reduction: 4 vectors of 4 x f32 a thread
/// (64 bytes), so the weight is loaded early and each phase's batch is prefetched.
const char *kWeightedNorm = "fusion f<H = 1024>(x: f32[T, H], w: f32[H]) -> (y: f32[T, H]) {\n"
                            "    y = x * rsqrt(mean(x * x, over H) + 1e-6) * w;\n"
                            "}\n"
                            "schedule f {\n"
                            "    split H by 4 -> (Ho, Hv);\n"
                            "    split Ho by 64 -> (Hp, Hx);\n"
                            "    parallelize T -> BIDx, Hx -> TIDx;\n"
                            "    vectorize Hv;\n"
                            "    unroll Hp;\n"
                            "}\n";

/// A pointwise kernel in vectors of 4 x f32, 4 an unrolled batch.
const char *kVectorBatch = "fusion f<H = 1024>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                           "    y = x * 3.0 - 1.0;\n"
                           "}\n"
                           "schedule f {\n"
                           "    split H by 4 -> (Ho, Hv);\n"
                           "    split Ho by 64 -> (Hp, Hx);\n"
                           "    parallelize T -> BIDx, Hx -> TIDx;\n"
                           "    vectorize Hv;\n"
                           "    unroll Hp;\n"
                           "}\n";

} // namespace

TEST_CASE("bounds: a stripped per-iteration check reads and writes past the row") {
  Lowered remainder(std::string(kRemainder) + "}\n");
  REQUIRE(countLabelled(remainder.body(), lower::labels::BoundsCheck) > 0);
  CHECK(remainder.simulate("T=3") == "");

  StripLabelled strip(lower::labels::BoundsCheck);
  kir::Program broken = remainder.withBody(strip.mutate(remainder.body()));
  REQUIRE(strip.stripped > 0);
  std::string outcome = remainder.simulate("T=3", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "out-of-bounds")), outcome);
}

TEST_CASE("bounds: a stripped row guard lets the partial block's threads past the end") {
  Lowered merged(kMerged);
  REQUIRE(countLabelled(merged.body(), lower::labels::RowGuard) > 0);
  // 7 x 64 = 448 elements: the fourth block of 128 has 64 threads past the end.
  CHECK(merged.simulate("T=7") == "");

  StripLabelled strip(lower::labels::RowGuard);
  kir::Program broken = merged.withBody(strip.mutate(merged.body()));
  REQUIRE(strip.stripped > 0);
  std::string outcome = merged.simulate("T=7", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "out-of-bounds")), outcome);
}

TEST_CASE("bounds: clamped rows load min(row, T - 1) and skip the stores past the end") {
  Lowered rows(kClampedRows);
  REQUIRE(countLabelled(rows.body(), lower::labels::ClampedStore) > 0);
  CHECK(contains(rows.text(), "min("));
  CHECK(rows.simulate("T=6") == "");

  SUBCASE("the loads without their clamp") {
    DropIndexOp drop(kir::BinaryOp::Min);
    kir::Program broken = rows.withBody(drop.mutate(rows.body()));
    REQUIRE(drop.dropped > 0);
    std::string outcome = rows.simulate("T=6", &broken);
    CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "out-of-bounds load")),
                  outcome);
  }
  SUBCASE("the stores without their check") {
    StripLabelled strip(lower::labels::ClampedStore);
    kir::Program broken = rows.withBody(strip.mutate(rows.body()));
    REQUIRE(strip.stripped > 0);
    std::string outcome = rows.simulate("T=6", &broken);
    CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "out-of-bounds store")),
                  outcome);
  }
}

TEST_CASE("reciprocal-division: the reciprocal of the wrong divisor changes every element") {
  // Divided by the row's mean (about 1.2) rather than its sum, so that 1 / (b + 1) moves
  // the outputs well past the f32 tolerance.
  Lowered softmax("fusion f<H = 1024>(x: f32[T, H]) -> (y: f32[T, H]) {\n"
                  "    let e = exp(x);\n"
                  "    y = e / mean(e, over H);\n"
                  "}\n"
                  "schedule f {\n"
                  "    split H by 128 -> (Hp, Hx);\n"
                  "    parallelize T -> BIDx, Hx -> TIDx;\n"
                  "}\n");
  CHECK(contains(softmax.text(), "* (1:f32 / "));
  CHECK(softmax.simulate("T=2") == "");

  WrongReciprocal wrong;
  kir::Program broken = softmax.withBody(wrong.mutate(softmax.body()));
  REQUIRE(wrong.changed > 0);
  std::string outcome = softmax.simulate("T=2", &broken);
  CHECK_MESSAGE(contains(outcome, "mismatch: output y"), outcome);
}

TEST_CASE("store-rounding: a bypassed cast that is still read must stay") {
  // y stores bf16(h) by storing h; z reads the rounded value r, so `let r` stays.
  Lowered rounded("fusion f<H = 1024>(x: f32[T, H]) -> (y: bf16[T, H], z: f32[T, H]) {\n"
                  "    let h = x * 3.0;\n"
                  "    let r = bf16(h);\n"
                  "    y = r;\n"
                  "    z = f32(r) - h;\n"
                  "}\n"
                  "schedule f {\n"
                  "    split H by 128 -> (Hp, Hx);\n"
                  "    parallelize T -> BIDx, Hx -> TIDx;\n"
                  "}\n");
  // The store of y reads the f32 value, not the cast.
  std::string castName;
  bool storesUnrounded = false;
  kir::forEachStmt(rounded.body(), [&](const Stmt &s) {
    if (s->kind == kir::StmtKind::Let && s->value->kind == kir::ExprKind::Cast &&
        s->value->dtype == ir::DType::BF16)
      castName = s->var->name;
    if (s->kind == kir::StmtKind::Store && s->buffer->name == "y")
      storesUnrounded = s->value->dtype == ir::DType::F32;
  });
  REQUIRE(!castName.empty());
  CHECK(storesUnrounded);
  CHECK(rounded.simulate("T=2") == "");

  DropLet drop(castName);
  kir::Program broken = rounded.withBody(drop.mutate(rounded.body()));
  REQUIRE(drop.dropped > 0);
  std::string outcome = rounded.simulate("T=2", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, castName)), outcome);
}

TEST_CASE("vectorize: a vector copy one lane off is a misaligned access") {
  Lowered vectors(kVectorBatch);
  int copies = 0;
  kir::forEachStmt(vectors.body(), [&](const Stmt &s) {
    copies += s->kind == kir::StmtKind::VectorCopy && s->lanes == 4;
  });
  REQUIRE(copies > 0);
  CHECK(vectors.simulate("T=3") == "");

  ShiftVectorLoads shift;
  kir::Program broken = vectors.withBody(shift.mutate(vectors.body()));
  REQUIRE(shift.shifted > 0);
  std::string outcome = vectors.simulate("T=3", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "misaligned vector access")),
                outcome);
}

TEST_CASE("early-loads: reading the early array at the wrong batch iteration") {
  Lowered norm(kWeightedNorm);
  std::set<const kir::Buffer *> early = batchArrays(norm.body(), "early loads over");
  REQUIRE(early.size() == 1);
  CHECK((*early.begin())->name == "w_1_early");
  CHECK(norm.simulate("T=3") == "");

  WrongBatchIteration wrong(early);
  kir::Program broken = norm.withBody(wrong.mutate(norm.body()));
  REQUIRE(wrong.redirected > 0);
  std::string outcome = norm.simulate("T=3", &broken);
  CHECK_MESSAGE(contains(outcome, "mismatch: output y"), outcome);
}

TEST_CASE("prefetch: reading the prefetched array at the wrong batch iteration") {
  Lowered batch(kVectorBatch);
  std::set<const kir::Buffer *> prefetched = batchArrays(batch.body(), "prefetch over");
  REQUIRE(prefetched.size() == 1);
  CHECK(batch.simulate("T=3") == "");

  WrongBatchIteration wrong(prefetched);
  kir::Program broken = batch.withBody(wrong.mutate(batch.body()));
  REQUIRE(wrong.redirected > 0);
  std::string outcome = batch.simulate("T=3", &broken);
  CHECK_MESSAGE(contains(outcome, "mismatch: output y"), outcome);
}

TEST_CASE("unswitch: a fast path every thread takes runs the remainder unchecked") {
  Lowered unswitched(std::string(kRemainder) + "    unswitch Hp;\n}\n");
  CHECK(unswitched.simulate("T=3") == "");

  AlwaysFastPath always;
  kir::Program broken = unswitched.withBody(always.mutate(unswitched.body()));
  REQUIRE(always.forced > 0);
  std::string outcome = unswitched.simulate("T=3", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") && contains(outcome, "out-of-bounds")), outcome);
}

TEST_CASE("launch-shape: a grid one block short of the loop it launches faults") {
  Lowered remainder(std::string(kRemainder) + "}\n");
  CHECK(remainder.simulate("T=3") == "");

  kir::Program broken = *remainder.lowered;
  Expr &grid = broken.kernels[0].launch.grid[0];
  REQUIRE(static_cast<bool>(grid));
  grid = grid - kir::index(1);
  std::string outcome = remainder.simulate("T=3", &broken);
  CHECK_MESSAGE((contains(outcome, "fault: ") &&
                 contains(outcome, "loop T_i over BIDx has extent 3, but the launch gives 2")),
                outcome);
}

TEST_CASE("simplify: a remainder folded away as if in range indexes the wrong element") {
  Lowered merged(kMerged);
  CHECK(contains(merged.text(), "% 64)"));
  CHECK(merged.simulate("T=7") == "");

  DropIndexOp drop(kir::BinaryOp::Mod);
  kir::Program broken = merged.withBody(drop.mutate(merged.body()));
  REQUIRE(drop.dropped > 0);
  std::string outcome = merged.simulate("T=7", &broken);
  // The row guard now admits the first row only: the others stay unwritten (NaN).
  CHECK_MESSAGE(contains(outcome, "mismatch: output y: 384 of 448 elements out of tolerance"),
                outcome);
  CHECK_MESSAGE(contains(outcome, "max |error| inf, max relative error inf; y[T=1, H=0]: got nan"),
                outcome);
}
