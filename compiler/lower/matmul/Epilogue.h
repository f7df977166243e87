// Epilogue.h — the matmul kernel's epilogue (CUTLASS's collective epilogue): each
// accumulator element's row and column, the fusion's pointwise values after the product
// (bias, activation, residual, casts), and the stores.
//
//   epilogue via registers          each thread stores its elements inside the output
//   epilogue via shared             the consumers write the output tile to shared memory
//                                   (128-byte swizzled column blocks, so a warp's writes
//                                   spread over the banks; 16-bit outputs by stmatrix, a
//                                   warp's 16 x 16 block of fragments an instruction, others
//                                   a pair of elements a store), then copy it out in
//                                   16-byte pieces, coalesced
//   epilogue via shared tma_store   the same tile, then one thread stores it with TMA
//                                   (one box a column block; TMA clips at the tensor's
//                                   edges) after the async-proxy fence; before the next
//                                   tile overwrites it, that thread waits until the
//                                   stores have read it
//     , tile (BM, C)                the tile C columns at a time through two shared
//                                   pieces used in turn: one piece's stores run while the
//                                   next piece is written, and the pipeline keeps the
//                                   shared memory a whole tile would take
//
// Where CTAs share a tile's K loop (split-K, stream-K), the epilogue runs in the CTA that
// adds the parts (PartialTiles.h), as for a whole tile.
#pragma once

#include "lower/matmul/MainLoop.h"

#include <map>

namespace fsl::lower {

/// What the epilogue writes through besides the outputs: the output's tensor map (TMA
/// stores) and the shared output tile (an epilogue via shared memory).
struct EpilogueStorage {
  kir::TensorMapPtr mapOut;
  kir::BufferPtr outTile;
};

/// The output's tensor map for TMA stores, a kernel parameter after the others: boxes of
/// BM rows x one 128-byte span of N, swizzled as the shared output tile is written. The
/// pointer parameter stays (the launcher checks the tensor through it).
void addOutputTensorMap(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
                        EpilogueStorage &storage);
/// The shared output tile (a tile a consumer group), for an epilogue via shared memory.
void allocateOutputTile(const MatmulPlan &plan, const KernelNames &names, EpilogueStorage &storage,
                        SharedLayout &layout);

/// The fusion's epilogue on `product` (the f32 value of the output element at
/// cx.rootIndex; `product2` the second product's), and with `storeOutputs` the stores to
/// the outputs; `values` receives every value by fusion value id.
/// `held` gives the value of inputs already in registers (by fusion value id), read there
/// instead of loaded.
std::vector<kir::Stmt> fusedEpilogue(LowerContext &cx, const MatmulPlan &plan, kir::Expr product,
                                     kir::Expr product2 = nullptr, bool storeOutputs = true,
                                     std::map<unsigned, kir::Expr> *values = nullptr,
                                     const std::map<unsigned, kir::Expr> *held = nullptr);

class Epilogue {
public:
  Epilogue(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
           const CtaThreads &threads, const EpilogueStorage &storage,
           const Accumulators &accumulators, const TileScheduler &scheduler)
      : cx_(cx), plan_(plan), names_(names), threads_(threads), storage_(storage),
        accumulators_(accumulators), scheduler_(scheduler) {}

  /// The epilogue of a work tile whose accumulators hold the product.
  kir::Stmt tile(const WorkTile &tile) const;
  /// After the CTA's last tile: the last TMA stores have read the output tile (null when
  /// there is nothing to wait for).
  kir::Stmt end() const;

private:
  /// A piece of an epilogue tile: its first column in the CTA tile and its shared piece
  /// (0 or 1); both null for the whole tile.
  struct Piece {
    kir::Expr firstColumn, slot;
  };
  /// A pair computed into registers: its row and column in the CTA tile (null where not
  /// needed) and the buffer it is in.
  struct PairAt {
    kir::VarPtr r, c;
    kir::BufferPtr buffer;
  };
  kir::Stmt tileInPieces(const WorkTile &tile) const;
  /// Whether the shared output tile is written by stmatrix (quadBody) rather than a pair
  /// at a time (pairBody): 16-bit outputs, no integer division in the epilogue (which
  /// needs each element checked), and 16-column blocks in every instruction and piece.
  bool storesMatrices() const;
  /// Whether the epilogue divides integers (each element then checked at the edges).
  bool dividesIntegersInEpilogue() const;
  /// The walk's origins for quadBody: the fragments' (the lets of what the pairs' inputs
  /// read) and the stmatrix rows' (`rows`), their lets to `out`.
  FragmentOrigin quadOrigins(FragmentOrigin &rows, std::vector<kir::Stmt> &out) const;
  kir::Stmt elementBody(const WorkTile &tile, const Piece &at, const FragmentElement &e) const;
  /// Inputs over N only (a bias) held in registers a piece ahead: each one's registers of
  /// the piece, by fusion value id (columns / 4 a thread: two a fragment chunk of the
  /// piece).
  using HeldColumns = std::map<unsigned, kir::BufferPtr>;
  /// Whether an input of the epilogue has dimension `dim` (a bias over N, a residual),
  /// leaving out those `held` in registers.
  bool readsInputOver(ir::DimId dim, const HeldColumns *held = nullptr) const;
  PairAt pairInto(const WorkTile &tile, const FragmentElement &first, kir::BufferPtr into,
                  int64_t at, std::vector<kir::Stmt> &out, const HeldColumns *held = nullptr) const;
  /// The column inputs a piece ahead (tileInPieces): their registers' declarations and the
  /// first piece's loads to `out`, the copy and the next piece's loads to `top`.
  HeldColumns holdColumnInputs(const WorkTile &tile, const FragmentOrigin &origin, kir::Expr piece,
                               std::vector<kir::Stmt> &out, std::vector<kir::Stmt> &top) const;
  kir::Stmt pairBody(const WorkTile &tile, const Piece &at, const FragmentElement &first) const;
  kir::Stmt quadBody(const WorkTile &tile, const Piece &at, const FragmentElement &first,
                     const FragmentOrigin &rows, const HeldColumns *held = nullptr) const;
  std::pair<kir::VarPtr, kir::Expr> loadProducts(const FragmentElement &e,
                                                 std::vector<kir::Stmt> &body) const;
  kir::Expr outputTileIndex(kir::Expr row, kir::Expr column) const;
  kir::Expr outTileBase(const Piece &at) const;
  kir::Expr inPiece(const Piece &at, kir::Expr column) const;
  kir::Stmt storeOutputTile(const WorkTile &tile, const Piece &at) const;
  kir::Stmt waitOutputTileRead(const std::string &comment) const;

  LowerContext &cx_;
  const MatmulPlan &plan_;
  const KernelNames &names_;
  const CtaThreads &threads_;
  const EpilogueStorage &storage_;
  const Accumulators &accumulators_;
  const TileScheduler &scheduler_;
};

} // namespace fsl::lower
