// Fragments.h — the consumers' f32 accumulators and the layout of their wgmma fragments,
// which the main loop writes and the epilogue (or stream-K's pieces) read.
//
// The accumulator fragment of instruction (mi, ni) is `(mi * NI + ni) * IN / 2` floats into
// the thread's array; its element `ns * 4 + h * 2 + c` holds row `16 (lane / 32) +
// (lane % 32) / 4 + 8 h`, column `8 ns + 2 (lane % 4) + c` of the m64nIN tile (PTX ISA,
// wgmma m64nNk16 accumulator fragments).
#pragma once

#include "lower/matmul/Build.h"
#include "lower/matmul/CtaThreads.h"

namespace fsl::lower {

/// The thread's accumulators: of the product, and of the second one (null with one).
struct Accumulators {
  kir::BufferPtr acc, acc2;
};

/// An element of the thread's accumulator fragments.
struct FragmentElement {
  kir::Expr mi, ni, ns, h, c, accIndex;
  kir::VarPtr row0, col0;
  /// The quad walk's: the 8-column chunk counted from the walk's first (its column in the
  /// piece is 8 times it).
  kir::Expr walkChunk = nullptr;

  /// Of a pair's first element (c = 0, forEachFragmentPair): the pair's element `column`
  /// (0 or 1), the same fragment row.
  FragmentElement inPair(kir::Expr column) const;
  /// Of a quad's first pair (forEachFragmentQuadInColumns): the pair `chunk` 8-column
  /// chunks to the right (0 or 1) and `h` 8 rows down (0 or 1).
  FragmentElement inQuad(int64_t chunk, int64_t h) const;
};

/// The unrolled nest over the thread's accumulator elements: `body` for each, with its
/// fragment coordinates; the lets of the thread's first element (row0, col0 in the CTA
/// tile) go to `out`.
kir::Stmt forEachFragmentElement(const MatmulPlan &plan, const KernelNames &names,
                                 const CtaThreads &threads, std::vector<kir::Stmt> &out,
                                 const std::function<kir::Stmt(const FragmentElement &)> &body);

/// The same nest over pairs of adjacent elements (c = 0 and c = 1 of a fragment row, two
/// neighbouring columns of one row): `body` gets the pair's first element and handles
/// both, so that it can store them as one 4- or 8-byte access.
kir::Stmt forEachFragmentPair(const MatmulPlan &plan, const KernelNames &names,
                              const CtaThreads &threads, std::vector<kir::Stmt> &out,
                              const std::function<kir::Stmt(const FragmentElement &)> &body);

/// The pair walk over the fragment columns of one piece of the tile: `chunks` 8-column
/// chunks of the warpgroup tile from chunk `firstChunk` (an expression of an unrolled
/// loop's variable, so every accumulator index folds to a constant), each with its mi and
/// h. The warpgroup's first element (row0, col0) comes from `origin`, whose lets the
/// caller made once (fragmentOrigin).
struct FragmentOrigin {
  kir::VarPtr row0, col0;
  kir::VarPtr lane; // the thread of the warpgroup
};
FragmentOrigin fragmentOrigin(const MatmulPlan &plan, const KernelNames &names,
                              const CtaThreads &threads, std::vector<kir::Stmt> &out);
kir::Stmt
forEachFragmentPairInColumns(const MatmulPlan &plan, const KernelNames &names,
                             const FragmentOrigin &origin, kir::Expr firstChunk, int64_t chunks,
                             const std::function<kir::Stmt(const FragmentElement &)> &body);

/// The quad walk over one piece of the tile (or the whole tile: firstChunk 0, the warp
/// tile's chunks): `body` gets the first pair of each 16 x 16 block of a warp's fragments
/// (two neighbouring 8-column chunks of one instruction, both fragment rows h), which are
/// the four 8 x 8 matrices one stmatrix.x4 stores. `chunks` and the instruction's chunks
/// are even.
kir::Stmt
forEachFragmentQuadInColumns(const MatmulPlan &plan, const KernelNames &names,
                             const FragmentOrigin &origin, kir::Expr firstChunk, int64_t chunks,
                             const std::function<kir::Stmt(const FragmentElement &)> &body);

/// The row and column in the CTA tile of the first element of the row this thread gives
/// to stmatrix (lane 8 j + i: row i of matrix j) in the warp's first 16 x 16 block: rows
/// i and 8 + i for even and odd j, columns 0 and 8 for j < 2 and j >= 2, from the lane
/// of `fragments`. Its lets go to `out`.
FragmentOrigin matrixRowOrigin(const MatmulPlan &plan, const KernelNames &names,
                               const CtaThreads &threads, const FragmentOrigin &fragments,
                               std::vector<kir::Stmt> &out);

/// The element's row and column in the CTA tile.
std::pair<kir::Expr, kir::Expr> tilePosition(const MatmulPlan &plan, const FragmentElement &e);

} // namespace fsl::lower
