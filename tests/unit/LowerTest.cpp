// LowerTest.cpp — the choices the lowering passes make that a schedule does not spell:
// early loads, reciprocal divisions, clamped rows, deferred inout write-backs, merges,
// and the verifier after every pass.
#include "LowerSupport.h"

#include "kir/Mutator.h"

#include <doctest/doctest.h>

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/raw_ostream.h>

using namespace fsl;
using fsl::test::Parsed;

namespace {

/// A lowered snippet, with queries of what the passes chose.
struct Lowered : test::LoweredSnippet {
  using LoweredSnippet::LoweredSnippet;
  /// Names of the global tensors loaded into `*_early` arrays before phase 0.
  std::vector<std::string> earlyInputs() const {
    std::vector<std::string> names;
    kir::forEachStmt(kernel().body, [&](const kir::Stmt &s) {
      if (s->kind == kir::StmtKind::VectorCopy &&
          llvm::StringRef(s->buffer->name).ends_with("_early"))
        names.push_back(s->source->name);
    });
    return names;
  }
  /// The phase (by the count of block reductions before it) that stores `output`.
  int storePhase(const char *output) const {
    int reductions = 0, phase = -1;
    kir::forEachStmt(kernel().body, [&](const kir::Stmt &s) {
      if (s->kind == kir::StmtKind::Reduce)
        ++reductions;
      if ((s->kind == kir::StmtKind::Store || s->kind == kir::StmtKind::VectorCopy) &&
          s->buffer->name == output && phase < 0)
        phase = reductions;
    });
    return phase;
  }
};

/// The early inputs of a fusion over rows of H = 4096 bf16 (a batch of 4 vectors of 16
/// bytes), scheduled as the heuristics would, with `header` its signature and `body` its
/// statements (reading x, keeping xf).
std::vector<std::string> earlyInputsOfNorm(const std::string &header, const std::string &body) {
  Lowered lowered("fusion f<H = 4096>" + header + " {\n    let xf = f32(x)" + body + "\n}\n" +
                  "schedule f {\n"
                  "    split H by 8 -> (Ho, Hv);\n"
                  "    split Ho by 128 -> (Hp, Hx);\n"
                  "    parallelize T -> BIDx, Hx -> TIDx;\n"
                  "    vectorize Hv;\n"
                  "    unroll Hp;\n"
                  "    persistent xf in registers;\n"
                  "}\n");
  return lowered.earlyInputs();
}

} // namespace

TEST_CASE("early loads: inputs read after a reduction, within 64 bytes a thread") {
  const char *weighted = "(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H])";
  // The weight costs 4 vectors of 16 bytes: 64 bytes.
  CHECK(
      earlyInputsOfNorm(weighted, ";\n    y = bf16(xf * rsqrt(mean(xf * xf, over H)) * f32(w));") ==
      std::vector<std::string>{"w"});
  // Two such inputs cost 128 bytes: the first fits, the second waits for its phase.
  CHECK(earlyInputsOfNorm("(x: bf16[T, H], g: bf16[H], b: bf16[H]) -> (y: bf16[T, H])",
                          ";\n    y = bf16((xf - mean(xf, over H)) * f32(g) + f32(b));") ==
        std::vector<std::string>{"g"});
  // An input read in phase 0 is loaded there anyway.
  CHECK(earlyInputsOfNorm(weighted, " * f32(w);\n    y = bf16(xf * rsqrt(mean(xf * xf, over H)));")
            .empty());
}

TEST_CASE("a division by a row-invariant value multiplies by its reciprocal") {
  Lowered softmax(
      "fusion f<H = 1024>(x: f32[T, H], s: f32 = 2.0) -> (y: f32[T, H], z: f32[T, H]) {\n"
      "    let e = exp(x);\n"
      "    let p = e / (sum(e, over H) * s);\n"
      "    let q = e / x;\n"
      "    y = p;\n    z = q;\n}\n"
      "schedule f {\n    split H by 128 -> (Hp, Hx);\n"
      "    parallelize T -> BIDx, Hx -> TIDx;\n}\n");
  std::string text = softmax.text();
  // p = e * (1 / (sum * s)); q = e / x stays a division (x varies).
  CHECK(text.find("let p_") != std::string::npos);
  CHECK(text.find("* (1:f32 / ") != std::string::npos);
  CHECK(text.find("(e_2 / x_0)") != std::string::npos);
}

TEST_CASE("rows split over threadIdx.y are clamped; rows a thread walks are checked") {
  Lowered rows("fusion f<H = 1024>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n"
               "    let xf = f32(x);\n    y = bf16(xf / sum(xf, over H));\n}\n"
               "schedule f {\n    split H by 32 -> (Hp, Hx);\n    split T by 4 -> (Tb, Ty);\n"
               "    parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;\n}\n");
  // Loads read min(row, T - 1); stores past the end are skipped; no per-row check.
  std::string text = rows.text();
  CHECK(text.find("min(") != std::string::npos);
  CHECK(text.find("a clamped row past the end") != std::string::npos);
  CHECK(text.find("this thread's row is in bounds") == std::string::npos);
  // A column sum walks T in a serial loop (and sums over it: a repeated row would count
  // twice), so T keeps its bounds check.
  Lowered columns("fusion f<H = 64>(x: f32[T, H]) -> (y: f32[H]) {\n"
                  "    y = sum(x, over T);\n}\n"
                  "schedule f {\n    split T by 32 -> (Tb, Tx);\n"
                  "    parallelize H -> BIDx, Tx -> TIDx;\n}\n");
  CHECK(columns.text().find("min(") == std::string::npos);
  CHECK(columns.text().find("remainder of a non-divisible split") != std::string::npos);
}

TEST_CASE("an inout write-back waits for the last phase that reads its parameter") {
  const char *fusion =
      "fusion f<H = 1024>(x: bf16[T, H], r: inout bf16[T, H]) -> (y: bf16[T, H]) {\n"
      "    let h = f32(x) + f32(r);\n    r = bf16(h);\n"
      "    y = bf16(h * rsqrt(mean(h * h, over H)));\n}\n";
  std::string split = "    split H by 128 -> (Hp, Hx);\n    parallelize T -> BIDx, Hx -> TIDx;\n";
  Lowered recomputed(std::string(fusion) + "schedule f {\n" + split + "}\n");
  CHECK(recomputed.storePhase("r") == 1);
  // Kept in registers, h is not read again: the write-back stays in phase 0.
  Lowered kept(std::string(fusion) + "schedule f {\n" + split +
               "    persistent h in registers;\n}\n");
  CHECK(kept.storePhase("r") == 0);
}

TEST_CASE("a merged loop indexes both dimensions by division and remainder") {
  Lowered merged("fusion f<H = 64>(x: f32[T, H]) -> (y: f32[T, H]) {\n    y = x * 2.0;\n}\n"
                 "schedule f {\n    merge (T, H) -> TH;\n    split TH by 128 -> (B, X);\n"
                 "    parallelize B -> BIDx, X -> TIDx;\n}\n");
  std::string text = merged.text();
  CHECK(text.find("/ 64)") != std::string::npos);
  CHECK(text.find("% 64)") != std::string::npos);
  CHECK(text.find("for B_i in [0, (((T * 64) + 127) / 128)) parallel BIDx") != std::string::npos);
}

TEST_CASE("unroll by N is recorded on the loop") {
  Lowered unrolled("fusion f<H = 4096>(x: f32[T, H]) -> (y: f32[T, H]) {\n    y = x * 2.0;\n}\n"
                   "schedule f {\n    split H by 128 -> (Hp, Hx);\n"
                   "    parallelize T -> BIDx, Hx -> TIDx;\n    unroll Hp by 4;\n}\n");
  CHECK(unrolled.text().find("for Hp_i in [0, 32) unrolled by 4") != std::string::npos);
}
