// Fragments.cpp — the walk over the thread's accumulator fragment elements.
#include "lower/matmul/Fragments.h"

#include "support/Internal.h"

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {

/// The nest over mi, ni, ns and h, and with `pairs` false the two columns c of each
/// fragment row too; `body` gets the element (with pairs, the pair's first, c = 0).
Stmt forEachFragment(const MatmulPlan &plan, const KernelNames &names, const CtaThreads &threads,
                     std::vector<Stmt> &out, bool pairs,
                     const std::function<Stmt(const FragmentElement &)> &body) {
  const FragmentOrigin origin = fragmentOrigin(plan, names, threads, out);
  kir::VarPtr row0 = origin.row0, col0 = origin.col0;
  int64_t in = plan.instructionN;
  return names.unrolled("mi", plan.instructionsM(), [&](Expr mi) {
    return names.unrolled("ni", plan.instructionsN(), [&](Expr ni) {
      return names.unrolled("ns", in / 8, [&](Expr ns) {
        return names.unrolled("h", 2, [&](Expr h) {
          auto element = [&](Expr c) {
            Expr fragment = (mi * kir::index(plan.instructionsN()) + ni) * kir::index(in / 2);
            FragmentElement e{mi,   ni,  ns,
                              h,    c,   fragment + ns * kir::index(4) + h * kir::index(2) + c,
                              row0, col0};
            return body(e);
          };
          return pairs ? element(kir::index(0)) : names.unrolled("half", 2, element);
        });
      });
    });
  });
}

} // namespace

FragmentOrigin fragmentOrigin(const MatmulPlan &plan, const KernelNames &names,
                              const CtaThreads &threads, std::vector<Stmt> &out) {
  kir::VarPtr lane = names.var("lane"), row0 = names.var("row0"), col0 = names.var("col0");
  out.push_back(kir::let(lane, kir::var(threads.tid) % kir::index(128), "thread of the warpgroup"));
  Expr l = kir::var(lane);
  out.push_back(kir::let(row0, threads.warpgroupRow(plan) + kir::index(16) * (l / kir::index(32)) +
                                   l % kir::index(32) / kir::index(4)));
  out.push_back(
      kir::let(col0, threads.warpgroupColumn(plan) + kir::index(2) * (l % kir::index(4))));
  return {row0, col0, lane};
}

namespace {

/// Element c = 0 of fragment row half `h` of 8-column chunk `chunk` of the warp tile, in
/// instruction row `mi`: its instruction column ni, chunk ns in it and accumulator index.
FragmentElement chunkElement(const MatmulPlan &plan, const FragmentOrigin &origin, Expr mi,
                             Expr chunk, Expr h) {
  int64_t chunksPerInstruction = plan.instructionN / 8;
  Expr ni = chunk / kir::index(chunksPerInstruction);
  Expr ns = chunk % kir::index(chunksPerInstruction);
  Expr fragment = (mi * kir::index(plan.instructionsN()) + ni) * kir::index(plan.instructionN / 2);
  return {mi,
          ni,
          ns,
          h,
          kir::index(0),
          fragment + ns * kir::index(4) + h * kir::index(2),
          origin.row0,
          origin.col0};
}

} // namespace

Stmt forEachFragmentPairInColumns(const MatmulPlan &plan, const KernelNames &names,
                                  const FragmentOrigin &origin, Expr firstChunk, int64_t chunks,
                                  const std::function<Stmt(const FragmentElement &)> &body) {
  return names.unrolled("mi", plan.instructionsM(), [&](Expr mi) {
    return names.unrolled("q", chunks, [&](Expr q) {
      return names.unrolled(
          "h", 2, [&](Expr h) { return body(chunkElement(plan, origin, mi, firstChunk + q, h)); });
    });
  });
}

Stmt forEachFragmentQuadInColumns(const MatmulPlan &plan, const KernelNames &names,
                                  const FragmentOrigin &origin, Expr firstChunk, int64_t chunks,
                                  const std::function<Stmt(const FragmentElement &)> &body) {
  FSL_INTERNAL_ASSERT(chunks % 2 == 0 && (plan.instructionN / 8) % 2 == 0,
                      "a quad walk over an odd number of 8-column chunks");
  return names.unrolled("mi", plan.instructionsM(), [&](Expr mi) {
    return names.unrolled("q", chunks / 2, [&](Expr q) {
      FragmentElement e =
          chunkElement(plan, origin, mi, firstChunk + q * kir::index(2), kir::index(0));
      e.walkChunk = q * kir::index(2);
      return body(e);
    });
  });
}

FragmentOrigin matrixRowOrigin(const MatmulPlan &plan, const KernelNames &names,
                               const CtaThreads &threads, const FragmentOrigin &fragments,
                               std::vector<Stmt> &out) {
  kir::VarPtr row = names.var("matrix_row0"), col = names.var("matrix_col0");
  Expr l = kir::var(fragments.lane);
  out.push_back(kir::let(row,
                         threads.warpgroupRow(plan) + kir::index(16) * (l / kir::index(32)) +
                             l % kir::index(8) +
                             kir::index(8) * (l / kir::index(8) % kir::index(2)),
                         "the row this lane addresses for stmatrix: row lane % 8 of matrix "
                         "lane % 32 / 8 of its warp's 16 x 16 block"));
  out.push_back(kir::let(col, threads.warpgroupColumn(plan) +
                                  kir::index(8) * (l / kir::index(16) % kir::index(2))));
  return {row, col, fragments.lane};
}

Stmt forEachFragmentElement(const MatmulPlan &plan, const KernelNames &names,
                            const CtaThreads &threads, std::vector<Stmt> &out,
                            const std::function<Stmt(const FragmentElement &)> &body) {
  return forEachFragment(plan, names, threads, out, /*pairs=*/false, body);
}

Stmt forEachFragmentPair(const MatmulPlan &plan, const KernelNames &names,
                         const CtaThreads &threads, std::vector<Stmt> &out,
                         const std::function<Stmt(const FragmentElement &)> &body) {
  return forEachFragment(plan, names, threads, out, /*pairs=*/true, body);
}

FragmentElement FragmentElement::inPair(Expr column) const {
  FragmentElement e = *this;
  e.c = column;
  e.accIndex = accIndex + column;
  return e;
}

FragmentElement FragmentElement::inQuad(int64_t chunk, int64_t rowHalf) const {
  FragmentElement e = *this;
  e.ns = ns + kir::index(chunk);
  e.h = kir::index(rowHalf);
  e.accIndex = accIndex + kir::index(4 * chunk + 2 * rowHalf);
  if (walkChunk)
    e.walkChunk = walkChunk + kir::index(chunk);
  return e;
}

std::pair<Expr, Expr> tilePosition(const MatmulPlan &plan, const FragmentElement &e) {
  return {kir::var(e.row0) + e.mi * kir::index(64) + e.h * kir::index(8),
          kir::var(e.col0) + e.ni * kir::index(plan.instructionN) + e.ns * kir::index(8) + e.c};
}

} // namespace fsl::lower
