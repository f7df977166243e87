// MatmulBuilder.h — the builder of the matmul kernels (the `build-matmul` pass, and
// `build-split-k-sum` for split-K's second kernel), shared by its files (private to
// lower/):
//
//   MatmulBuild.cpp     parameters and names, shared storage and barriers, the walk over
//                       output tiles (one a CTA, or persistent in a grouped order), the
//                       warp roles, the launch shape
//   MatmulMainLoop.cpp  the K loop: TMA loads into the stage ring (by the producer
//                       warpgroup, or by one consumer thread ahead of the others) and the
//                       consumers' wgmma on each stage
//   MatmulEpilogue.cpp  the fused epilogue on the accumulator fragments, stored from
//                       registers or through a shared output tile (and TMA stores)
//   MatmulSplitK.cpp    split-K's second kernel: the partial products added, the epilogue
//   MatmulStreamK.cpp   stream-K's work items (whole tiles, then runs of K) and its
//                       fix-up kernel: the pieces of split tiles added, the epilogue
//
// The layouts follow the simulator's reading of the Hopper nodes (sim/Simulator.h) and
// the hardware's: a stage's a tile is BM rows of 64 bf16 (128 bytes, K contiguous), written
// by one TMA box with the 128-byte swizzle at a 1024-byte aligned offset; wgmma reads rows
// of M (or N) one swizzle span apart, so the operand of k step `ks` starts `ks * 16`
// elements into the row and that of instruction row `mi` `mi * 64` rows down. The
// accumulator fragment of instruction (mi, ni) is `(mi * NI + ni) * IN / 2` floats into
// the thread's array; its element `ns * 4 + h * 2 + c` holds row `16 (lane / 32) +
// (lane % 32) / 4 + 8 h`, column `8 ns + 2 (lane % 4) + c` of the m64nIN tile (PTX ISA,
// wgmma m64nNk16 accumulator fragments).
#pragma once

#include "lower/Matmul.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace fsl::lower {

/// A statement of `kind` with nothing set but its comment (the Hopper statements have no
/// constructors in IR.h; their builders fill the fields).
inline std::shared_ptr<kir::StmtNode> hopperNode(kir::StmtKind kind, std::string comment = {}) {
  auto s = std::make_shared<kir::StmtNode>();
  s->kind = kind;
  s->comment = std::move(comment);
  return s;
}

/// A copy of `s` that comes from the directive of `origin`, with `comment` if given.
inline kir::Stmt withOrigin(const kir::Stmt &s, const kir::Origin &origin,
                            std::string comment = {}) {
  auto copy = std::make_shared<kir::StmtNode>(*s);
  copy->origin = origin;
  if (!comment.empty())
    copy->comment = std::move(comment);
  return copy;
}

/// The statements of the kernel, built top-down; the members name the variables and
/// buffers every part refers to.
class MatmulBuilder {
public:
  MatmulBuilder(LowerContext &cx, const MatmulPlan &plan)
      : cx_(cx), plan_(plan), f_(cx.fusion), producerWarpgroup_(plan.warpSpecialized) {}
  bool run();
  /// The split-K sum kernel (MatmulSplitK.cpp).
  bool runSum();
  /// The stream-K fix-up kernel (MatmulStreamK.cpp).
  bool runFixup();

private:
  // --- MatmulBuild.cpp: names, storage, tiles, roles, launch -------------------------------
  void reserveNames();
  std::string fresh(std::string name) const;
  kir::VarPtr var(const std::string &name) const;
  bool isOperand(unsigned param) const;
  kir::TensorMapPtr operandMap(const ir::Param &param, const kir::BufferPtr &buffer);
  void addOutputMap();
  kir::Expr tiles(ir::DimId dim, int64_t tile) const;
  kir::Expr tileCount() const;
  kir::Expr ctaCount() const;
  void makeStorage(std::vector<kir::Stmt> &out);
  kir::Stmt initBarriers();
  /// `body` for each output tile (stream-K: work item) of this CTA, with m_tile_, n_tile_
  /// and the K loop's kBegin_, kCount_ and useBase_ bound.
  /// The producer's walk issues loads; the consumers' computes (and loads, without a
  /// producer): each binds only what it uses.
  enum class Role { Producer, Consumers };
  kir::Stmt forEachTile(const std::function<kir::Stmt()> &body, const std::string &comment,
                        Role role);
  /// Lets of (m_tile_, n_tile_) for tile number `tile` of the grouped order.
  void tileCoordinates(std::vector<kir::Stmt> &out, kir::Expr tile);
  kir::Stmt producerRole();
  kir::Stmt consumerRole();
  kir::Stmt zeroIfNoProduct();
  void makeLaunchShape();

  // --- MatmulStreamK.cpp -----------------------------------------------------------------------
  /// The CTAs of a stream-K product, and the tiles taken whole (in waves of `ctas`), as
  /// expressions of the sizes (the launch shape and both kernels use them).
  kir::Expr streamKCtas() const;
  kir::Expr streamKWholeTiles(kir::Expr tiles, kir::Expr ctas, kir::Expr kTiles) const;
  /// Lets of tiles, ctas, whole_tiles and sk_k_tiles (k tiles of the tiles left).
  void streamKShape(std::vector<kir::Stmt> &out);
  kir::Stmt streamKWalk(const std::function<kir::Stmt()> &body, const std::string &comment,
                        Role role);
  /// A piece of a tile, not the whole: the thread's accumulators to the CTA's slot.
  kir::Stmt storePiece();
  kir::Expr pieceIndex(kir::Expr slot, kir::Expr r, kir::Expr c) const;

  // --- MatmulMainLoop.cpp: the K loop -------------------------------------------------------
  /// The use number of k tile `kTile` of the current output tile: stage `it % S`, phase
  /// `it / S` of the stage's barriers, counted across the CTA's tiles.
  kir::Expr iteration(kir::Expr kTile) const;
  kir::Expr useNumber(std::vector<kir::Stmt> &body, const kir::VarPtr &it,
                      const kir::VarPtr &kTile) const;
  kir::Stmt loadStage(kir::Expr kTile, kir::Expr stage);
  kir::Stmt loadB(const kir::Expr &k, const kir::Expr &stage, const kir::TensorMapPtr &map,
                  const kir::BufferPtr &tiles);
  kir::Stmt producerLoads();
  kir::Stmt consumerLoop();
  kir::Stmt singleRoleLoop();
  /// Two consumer groups: `loop` when it is the group's turn, then the other's.
  kir::Stmt inTurn(kir::Stmt loop);
  kir::Stmt mmaOnStage(const kir::Expr &stage, const kir::Expr &kTile);

  // --- MatmulEpilogue.cpp -------------------------------------------------------------------
  kir::Stmt epilogue();
  /// An element of the thread's accumulator fragments (MatmulBuilder.h's header).
  struct FragmentElement {
    kir::Expr mi, ni, ns, h, c, accIndex;
    kir::VarPtr row0, col0;
  };
  kir::Stmt forEachFragmentElement(std::vector<kir::Stmt> &out,
                                   const std::function<kir::Stmt(const FragmentElement &)> &body);
  /// The element's row and column in the CTA tile, and in the output.
  std::pair<kir::Expr, kir::Expr> tilePosition(const FragmentElement &e) const;
  std::pair<kir::Expr, kir::Expr> outputPosition(const FragmentElement &e) const;
  /// The fusion's epilogue on `product` (the f32 value of the output element at
  /// rootIndex), and, with `storeOutputs`, the stores to the outputs; the values are left
  /// in lastValues_.
  std::vector<kir::Stmt> epilogueValues(kir::Expr product, bool storeOutputs = true);
  kir::Stmt elementBody(kir::Expr mi, kir::Expr ni, kir::Expr ns, kir::Expr h, kir::Expr c,
                        kir::Expr accIndex, const kir::VarPtr &row0, const kir::VarPtr &col0);
  kir::Expr outputTileIndex(kir::Expr row, kir::Expr column) const;
  kir::Stmt storeOutputTile();
  kir::Stmt waitOutputTileRead(const std::string &comment);
  bool roundedByStore(const ir::Value &value) const;

  // --- Shared helpers -------------------------------------------------------------------------
  /// The thread that issues a CTA-wide asynchronous operation: thread 0 of the consumers
  /// (of the producer for loads when warp-specialized).
  kir::Expr isThread(int64_t thread) const;
  kir::Expr firstConsumerThread() const;
  /// The first thread of the consumer group (of the consumers without groups).
  kir::Expr firstThreadOfGroup() const;
  /// The group's output tile in the shared output tiles.
  kir::Expr outTileBase() const;
  /// Whether a walk in `role` takes every other item (two consumer groups).
  bool grouped(Role role) const;
  kir::Expr groupRounds(kir::Expr count) const;
  /// The consumers' barrier: the block's, or named barrier 1 over the consumer threads
  /// when a producer warpgroup does not take part.
  kir::Stmt consumerBarrier(const std::string &comment) const;
  kir::Stmt unrolled(const std::string &name, int64_t extent,
                     const std::function<kir::Stmt(kir::Expr)> &body);
  kir::Expr warpgroupRow() const;
  kir::Expr warpgroupColumn() const;
  int64_t tileElements(int64_t rows) const { return rows * plan_.tileK; }
  int64_t operandBytes() const { return ir::dtypeBytes(plan_.a.dtype); }

  LowerContext &cx_;
  const MatmulPlan &plan_;
  const ir::Fusion &f_;
  std::set<std::string> reserved_;
  kir::TensorMapPtr mapA_, mapB_, mapB2_, mapOut_;
  /// Block and thread indices; `consumer_` is the consumer warpgroup (0 .. W - 1).
  kir::VarPtr cta_, ctaY_, tid_, warpgroup_, consumer_;
  /// Two consumer groups: the warpgroup's group and its place in it (null with one).
  kir::VarPtr group_, member_;
  /// The group's round in its walk (its items are round * 2 + group).
  kir::VarPtr round_;
  /// split_k: the CTA's part of K (grid z) and its first k tile.
  kir::VarPtr split_, kFirst_;
  /// cluster (C, 1): the CTA's rank in its cluster, and (persistent) the cluster's index.
  kir::VarPtr clusterRank_, clusterIndex_;
  /// The current output tile and its number among this CTA's tiles.
  kir::VarPtr mTile_, nTile_, tileIter_, kTiles_;
  /// The K loop of the current tile: its first k tile (null: 0), its k tiles, and the
  /// CTA's stage uses before it (null: none).
  kir::Expr kBegin_, kCount_, useBase_;
  /// stream_k: the tiles taken whole, the k tiles of the others, this CTA's run of them
  /// [sk_first, sk_end), and the current item's slot for a piece.
  kir::VarPtr wholeTiles_, skKTiles_, skFirst_, skEnd_, pieceSlot_;
  /// Persistent: the output tiles and the CTAs walking them.
  kir::VarPtr tileCount_, ctaCount_;
  kir::BufferPtr aTiles_, bTiles_, full_, empty_, acc_, outTile_;
  /// Two products: the second b's ring and accumulators.
  kir::BufferPtr b2Tiles_, acc2_;
  /// Two consumer groups: their turn barriers.
  kir::BufferPtr turn_;
  /// Two products: the second one's value at the element epilogueValues computes.
  kir::Expr product2Value_;
  /// The values of the last epilogueValues call, by fusion value id.
  std::map<unsigned, kir::Expr> lastValues_;
  int64_t sharedBytes_ = 0;
  /// Whether warpgroup 0 is a producer (the fix-up kernel has consumers only).
  bool producerWarpgroup_;
};

} // namespace fsl::lower
