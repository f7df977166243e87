// Epilogue.cpp — the output tile's storage and tensor map, the fused epilogue on the
// accumulator fragments, and the output tile's stores (Epilogue.h).
#include "lower/matmul/Epilogue.h"

#include "kir/Layout.h"
#include "lower/Pointwise.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FormatVariadic.h>

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;

namespace {

/// A cast to bf16 or f16 that only outputs of that type store: the store rounds the
/// f32 value once (as the store-rounding pass does for the other kernels).
bool roundedByStore(const MatmulPlan &plan, const ir::Value &value) {
  if (value.op != ir::Op::Cast ||
      (value.dtype != ir::DType::BF16 && value.dtype != ir::DType::F16) ||
      value.operands[0]->dtype != ir::DType::F32)
    return false;
  for (const ir::Value *user : plan.epilogue)
    if (llvm::is_contained(user->operands, &value))
      return false;
  for (const ir::Output &output : plan.fusion->outputs)
    if (output.value == &value && output.dtype != value.dtype)
      return false;
  return true;
}

/// Columns of what the shared output tile holds at once: the whole tile, or one piece of an
/// epilogue tile (`epilogue via shared tma_store, tile (BM, C)`).
int64_t pieceColumns(const MatmulPlan &plan) {
  return plan.epiloguePiece ? plan.epiloguePiece : plan.tileN;
}

/// Pieces a consumer group's output tile has room for: two used in turn, or the whole tile.
int64_t pieceSlots(const MatmulPlan &plan) { return plan.epiloguePiece ? 2 : 1; }

/// The swizzle of the shared output tile: the widest whose row (one column block of the
/// tile, or of a piece) divides the tile's N (the piece's columns), so that TMA stores it
/// in whole boxes (224 bf16 columns are 7 blocks of 64 bytes); 128 bytes when none divides
/// it, a tile only the threads copy out (its last block partly used).
kir::Swizzle outputTileSwizzle(const MatmulPlan &plan) {
  int64_t rowBytes = pieceColumns(plan) * ir::dtypeBytes(plan.fusion->outputs.at(0).dtype);
  for (kir::Swizzle swizzle :
       {kir::Swizzle::Bytes128, kir::Swizzle::Bytes64, kir::Swizzle::Bytes32})
    if (rowBytes % kir::swizzleSpanBytes(swizzle) == 0)
      return swizzle;
  return kir::Swizzle::Bytes128;
}

/// Output elements of one row of a column block of the shared output tile.
int64_t outputTileSpan(const MatmulPlan &plan) {
  return kir::swizzleSpanBytes(outputTileSwizzle(plan)) /
         ir::dtypeBytes(plan.fusion->outputs.at(0).dtype);
}

/// Elements of one shared output tile (or piece): whole column blocks, the last one partly
/// used when the tile's N is not a multiple of a block.
int64_t outputTileElements(const MatmulPlan &plan) {
  int64_t span = outputTileSpan(plan);
  return plan.tileM * ((pieceColumns(plan) + span - 1) / span * span);
}

} // namespace

void addOutputTensorMap(LowerContext &cx, const MatmulPlan &plan, const KernelNames &names,
                        EpilogueStorage &storage) {
  const ir::Output &output = cx.fusion.outputs.at(0);
  auto map = std::make_shared<kir::TensorMap>();
  map->name = names.fresh(output.name + "_map");
  map->global = cx.outputBuffers.at(0);
  for (ir::DimId dim : output.dims)
    map->extents.push_back(cx.dimExtent(dim));
  map->box = {plan.tileM, outputTileSpan(plan)};
  map->swizzle = outputTileSwizzle(plan);
  storage.mapOut = map;
  kir::KernelParam kp;
  kp.kind = kir::KernelParam::Kind::TensorMap;
  kp.tensorMap = map;
  kp.fusionParam = 0;
  kp.isOutput = true;
  cx.kernel.params.push_back(kp);
}

void allocateOutputTile(const MatmulPlan &plan, const KernelNames &names, EpilogueStorage &storage,
                        SharedLayout &layout) {
  const ir::Output &output = plan.fusion->outputs.at(0);
  kir::Swizzle swizzle = outputTileSwizzle(plan);
  int64_t span = outputTileSpan(plan);
  int64_t groups = plan.tileGroups, slots = pieceSlots(plan);
  int64_t blocks = (pieceColumns(plan) + span - 1) / span;
  storage.outTile = makeBuffer(
      names.fresh(output.name + "_tile"), output.dtype, kir::MemorySpace::Shared,
      {groups * slots * outputTileElements(plan)}, swizzle, kir::swizzleRepeatBytes(swizzle));
  std::string lastBlock =
      plan.tileN % span == 0 ? "" : ", the last one " + std::to_string(plan.tileN % span) + " wide";
  std::string what =
      plan.epiloguePiece
          ? std::string(groups > 1 ? "two pieces of the output tile a consumer "
                                     "group, used in turn, each "
                                   : "two pieces of the output tile, used in "
                                     "turn, each ") +
                std::to_string(plan.epiloguePiece) + " columns: "
          : std::string(groups > 1 ? "an output tile a consumer group: " : "the output tile: ");
  layout.allocations.push_back(sharedAllocation(
      storage.outTile, layout.bytes,
      what + std::to_string(blocks) + " column block" + (blocks > 1 ? "s" : "") + " of " +
          std::to_string(plan.tileM) + " x " + std::to_string(span) + lastBlock + " (" +
          std::to_string(kir::swizzleSpanBytes(swizzle)) + "-byte swizzle)",
      plan.epilogueOrigin));
  layout.bytes += groups * slots * outputTileElements(plan) * ir::dtypeBytes(output.dtype);
}

std::vector<Stmt> fusedEpilogue(LowerContext &cx, const MatmulPlan &plan, Expr product,
                                Expr product2, bool storeOutputs,
                                std::map<unsigned, Expr> *valuesOut,
                                const std::map<unsigned, Expr> *held) {
  const ir::Fusion &f = cx.fusion;
  std::vector<Stmt> body;
  std::map<unsigned, Expr> values;
  values[plan.product->id] = std::move(product);
  if (plan.product2)
    values[plan.product2->id] = product2;
  for (const ir::Value *value : plan.epilogue) {
    if (roundedByStore(plan, *value)) {
      values[value->id] = values.at(value->operands[0]->id);
      continue;
    }
    Expr expr;
    if (value->op == ir::Op::Input && held && held->count(value->id)) {
      expr = held->at(value->id);
    } else if (value->op == ir::Op::Input) {
      expr = kir::load(cx.paramBuffers[value->paramIndex],
                       cx.offsetOf(f.params[value->paramIndex].dims));
    } else if (value->op == ir::Op::Scalar) {
      expr = kir::var(cx.scalarVars[value->paramIndex]);
    } else if (value->op == ir::Op::Constant) {
      expr = kir::constant(value->constant, value->dtype);
    } else {
      std::vector<Expr> operands;
      for (const ir::Value *operand : value->operands)
        operands.push_back(values.at(operand->id));
      expr = pointwiseOperation(*value, operands,
                                {plan.schedule->fastExp.has_value(),
                                 plan.schedule->fastTanh.has_value(),
                                 plan.schedule->fastDiv.has_value()});
    }
    kir::VarPtr v = kir::makeVar(valueName(*value), value->dtype);
    body.push_back(fromFusion(kir::let(v, expr, value->name), value->range));
    values[value->id] = kir::var(v);
  }
  for (unsigned o = 0; storeOutputs && o < f.outputs.size(); ++o) {
    const ir::Output &output = f.outputs[o];
    body.push_back(fromFusion(
        kir::store(cx.outputBuffers[o], cx.offsetOf(output.dims), values.at(output.value->id)),
        output.range));
  }
  if (valuesOut)
    *valuesOut = std::move(values);
  return body;
}

Stmt Epilogue::tile(const WorkTile &tile) const {
  if (plan_.epiloguePiece)
    return tileInPieces(tile);
  std::vector<Stmt> out;
  if (plan_.sharedEpilogue()) {
    if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore)
      out.push_back(waitOutputTileRead("the previous tile's TMA stores have read the output tile"));
    out.push_back(threads_.consumerBarrier(plan_, "the output tile is free to write"));
  }
  out.push_back(kir::comment(plan_.sharedEpilogue()
                                 ? "Epilogue: each accumulator element's row and column, the "
                                   "fusion's epilogue, into the output tile"
                                 : "Epilogue: each accumulator element's row and column, the "
                                   "fusion's epilogue, stores inside the output"));
  // Into a shared output tile, 16-bit outputs go as 8 x 8 matrices by stmatrix, four
  // pairs a lane an instruction; others two neighbouring elements as one access (the
  // tile's stores are a large part of a short epilogue's instructions). Pairs compute the
  // elements past the output's edges too, from accumulators that are 0 there: not where
  // the epilogue divides integers (a division by zero is undefined behaviour in C++ and a
  // fault in the simulator), which keeps the check an element.
  bool dividesIntegers = dividesIntegersInEpilogue();
  Stmt nest;
  if (storesMatrices()) {
    FragmentOrigin rows;
    FragmentOrigin origin = quadOrigins(rows, out);
    nest = forEachFragmentQuadInColumns(
        plan_, names_, origin, kir::index(0), plan_.instructionsN() * plan_.instructionN / 8,
        [&](const FragmentElement &e) { return quadBody(tile, {}, e, rows); });
  } else if (plan_.sharedEpilogue() && !dividesIntegers) {
    nest = forEachFragmentPair(plan_, names_, threads_, out,
                               [&](const FragmentElement &e) { return pairBody(tile, {}, e); });
  } else {
    nest = forEachFragmentElement(plan_, names_, threads_, out, [&](const FragmentElement &e) {
      return elementBody(tile, {}, e);
    });
  }
  out.push_back(
      fromDirective(nest, plan_.epilogueOrigin,
                    "the fragments of wgmma m64n" + std::to_string(plan_.instructionN) + "k16"));
  if (plan_.sharedEpilogue())
    out.push_back(storeOutputTile(tile, {}));
  return kir::block(std::move(out));
}

/// The output tile C columns at a time through two shared pieces used in turn: before a
/// piece is written, the TMA stores of the piece before the last (the same shared piece)
/// have read it, while the last piece's stores go on; after it is written, one thread
/// stores it. Every piece holds the columns of each consumer warpgroup's fragments in it
/// (the warp tiles are as wide as the tile).
Stmt Epilogue::tileInPieces(const WorkTile &tile) const {
  const int64_t columns = plan_.epiloguePiece, pieces = plan_.tileN / columns;
  const int64_t boxes = columns / outputTileSpan(plan_);
  std::vector<Stmt> out;
  out.push_back(kir::comment(llvm::formatv("Epilogue in {0} pieces of {1} x {2}: each "
                                           "accumulator element's row and column, the fusion's "
                                           "epilogue, into the piece's shared tile, stored by TMA",
                                           pieces, plan_.tileM, columns)
                                 .str()));
  if (pieces % 2 == 1)
    out.push_back(waitOutputTileRead("an odd number of pieces: the previous tile's last piece "
                                     "used the first one's shared tile"));
  bool matrices = storesMatrices();
  FragmentOrigin rows;
  FragmentOrigin origin =
      matrices ? quadOrigins(rows, out) : fragmentOrigin(plan_, names_, threads_, out);
  bool dividesIntegers = dividesIntegersInEpilogue();
  kir::VarPtr piece = names_.var("piece");
  Expr p = kir::var(piece);
  Piece at{p * kir::index(columns), p % kir::index(2)};
  std::vector<Stmt> body;
  // Inputs over N only (a bias) are loaded a piece ahead, so that their latency overlaps
  // the previous piece's work rather than each piece's start (quads only, whose pairs
  // read them by their chunk in the piece).
  HeldColumns held;
  if (matrices)
    held = holdColumnInputs(tile, origin, p, out, body);
  body.push_back(kir::ifThen(threads_.firstConsumerThread(plan_),
                             kir::withComment(kir::tmaStoreWait(/*pending=*/boxes),
                                              "the stores of the piece before the last "
                                              "(this piece's shared tile) have read it")));
  body.push_back(threads_.consumerBarrier(plan_, "the piece's shared tile is free to write"));
  Expr firstChunk = p * kir::index(columns / 8);
  Stmt nest =
      matrices ? forEachFragmentQuadInColumns(
                     plan_, names_, origin, firstChunk, columns / 8,
                     [&](const FragmentElement &e) { return quadBody(tile, at, e, rows, &held); })
      : dividesIntegers ? forEachFragmentPairInColumns(
                              plan_, names_, origin, firstChunk, columns / 8,
                              [&](const FragmentElement &e) {
                                return kir::block({elementBody(tile, at, e.inPair(kir::index(0))),
                                                   elementBody(tile, at, e.inPair(kir::index(1)))});
                              })
                        : forEachFragmentPairInColumns(
                              plan_, names_, origin, firstChunk, columns / 8,
                              [&](const FragmentElement &e) { return pairBody(tile, at, e); });
  body.push_back(fromDirective(nest, plan_.epilogueOrigin,
                               "the fragments of wgmma m64n" + std::to_string(plan_.instructionN) +
                                   "k16 in the piece's columns"));
  body.push_back(storeOutputTile(tile, at));
  out.push_back(kir::forLoop(piece, kir::index(pieces), kir::LoopKind::Unrolled,
                             kir::block(std::move(body)), plan_.epilogueOrigin));
  return kir::block(std::move(out));
}

/// The elements a thread holds of the column inputs loaded a piece ahead (this piece's and
/// the next one's): 32 keeps a bias of 32-column pieces (2 x 8 bf16 registers) and of
/// 64-column ones (2 x 16).
constexpr int64_t kHeldColumnElements = 32;

Epilogue::HeldColumns Epilogue::holdColumnInputs(const WorkTile &tile, const FragmentOrigin &origin,
                                                 Expr piece, std::vector<Stmt> &out,
                                                 std::vector<Stmt> &top) const {
  const ir::Fusion &f = cx_.fusion;
  const int64_t columns = plan_.epiloguePiece, pieces = plan_.tileN / columns;
  const int64_t count = columns / 4; // two a fragment chunk of the piece
  HeldColumns held;
  for (const ir::Value *value : plan_.epilogue) {
    if (value->op != ir::Op::Input)
      continue;
    const ir::Param &param = f.params[value->paramIndex];
    if (param.dims.size() != 1 || param.dims[0] != plan_.n || held.count(value->id))
      continue;
    // Two arrays of `count` a held input: at most kHeldColumnElements elements in all, so
    // that wide pieces or many such inputs do not take the accumulators' registers.
    if (2 * count * int64_t(held.size() + 1) > kHeldColumnElements)
      break;
    kir::BufferPtr next = makeBuffer(names_.fresh(param.name + "_next"), param.dtype,
                                     kir::MemorySpace::Local, {count});
    kir::BufferPtr now = makeBuffer(names_.fresh(param.name + "_piece"), param.dtype,
                                    kir::MemorySpace::Local, {count});
    // Piece `p`'s values of this thread: chunk k of the piece, column 2 (lane % 4) + h of
    // it (the fragments' columns), clamped inside the output as the pairs read them.
    auto loads = [&](Expr p, const std::string &comment) {
      kir::VarPtr k = names_.var("k"), h = names_.var("h");
      cx_.rootIndex.assign(f.dims.size(), kir::index(0));
      cx_.rootIndex[plan_.n] =
          kir::min(kir::var(tile.nTile) * kir::index(plan_.tileN) + kir::var(origin.col0) +
                       p * kir::index(columns) + kir::var(k) * kir::index(8) + kir::var(h),
                   cx_.dimExtent(plan_.n) - kir::index(1));
      // An element copied as it is (no conversion through f32 and back).
      Stmt load = kir::vectorCopy(next, kir::var(k) * kir::index(2) + kir::var(h),
                                  cx_.paramBuffers[value->paramIndex], cx_.offsetOf(param.dims), 1);
      return kir::withComment(
          kir::forLoop(k, kir::index(columns / 8), kir::LoopKind::Unrolled,
                       kir::forLoop(h, kir::index(2), kir::LoopKind::Unrolled, load)),
          comment);
    };
    out.push_back(kir::allocate(next, "the next piece's " + param.name +
                                          ", loaded while this piece is computed and stored"));
    out.push_back(kir::allocate(now, "this piece's " + param.name));
    out.push_back(loads(kir::index(0), "the first piece's " + param.name));
    kir::VarPtr i = names_.var("i");
    top.push_back(kir::forLoop(i, kir::index(count), kir::LoopKind::Unrolled,
                               kir::vectorCopy(now, kir::var(i), next, kir::var(i), 1)));
    top.push_back(kir::ifThen(piece + kir::index(1) < kir::index(pieces),
                              loads(piece + kir::index(1), "the next piece's " + param.name +
                                                               ", in flight during this one")));
    held[value->id] = now;
  }
  return held;
}

bool Epilogue::readsInputOver(ir::DimId dim, const HeldColumns *held) const {
  return llvm::any_of(plan_.epilogue, [&](const ir::Value *value) {
    return value->op == ir::Op::Input && !(held && held->count(value->id)) &&
           llvm::is_contained(cx_.fusion.params[value->paramIndex].dims, dim);
  });
}

FragmentOrigin Epilogue::quadOrigins(FragmentOrigin &rows, std::vector<Stmt> &out) const {
  // The fragments' first row and column are the pairs' inputs' positions only (stmatrix
  // addresses by `rows`): lets nothing reads would be unused variables in the CUDA.
  std::vector<Stmt> lets;
  FragmentOrigin origin = fragmentOrigin(plan_, names_, threads_, lets);
  out.push_back(lets.at(0));
  if (readsInputOver(plan_.m))
    out.push_back(lets.at(1));
  if (readsInputOver(plan_.n))
    out.push_back(lets.at(2));
  rows = matrixRowOrigin(plan_, names_, threads_, origin, out);
  return origin;
}

bool Epilogue::storesMatrices() const {
  if (!plan_.sharedEpilogue() || ir::dtypeBytes(cx_.fusion.outputs.at(0).dtype) != 2 ||
      plan_.instructionN % 16 != 0 || pieceColumns(plan_) % 16 != 0)
    return false;
  return !dividesIntegersInEpilogue();
}

bool Epilogue::dividesIntegersInEpilogue() const {
  return llvm::any_of(plan_.epilogue, [](const ir::Value *value) {
    return value->op == ir::Op::Div && ir::isInteger(value->dtype);
  });
}

Stmt Epilogue::end() const {
  if (plan_.epilogueVia != sched::EpilogueKind::SharedTmaStore)
    return nullptr;
  return waitOutputTileRead("the last TMA store has read the output tile before the "
                            "CTA's shared memory goes");
}

/// The element's products from the accumulators, as lets in `body`: the product's
/// variable, and the second product's value (null with one product).
std::pair<kir::VarPtr, Expr> Epilogue::loadProducts(const FragmentElement &e,
                                                    std::vector<Stmt> &body) const {
  const ir::Value &product = *plan_.product;
  kir::VarPtr accumulated = kir::makeVar(valueName(product), ir::DType::F32);
  body.push_back(
      fromFusion(kir::let(accumulated, kir::load(accumulators_.acc, e.accIndex), product.name),
                 product.range));
  Expr product2;
  if (const ir::Value *second = plan_.product2) {
    kir::VarPtr accumulated2 = kir::makeVar(valueName(*second), ir::DType::F32);
    body.push_back(
        fromFusion(kir::let(accumulated2, kir::load(accumulators_.acc2, e.accIndex), second->name),
                   second->range));
    product2 = kir::var(accumulated2);
  }
  return {accumulated, product2};
}

/// One accumulator element: its position, the bounds check, the epilogue and stores (to
/// the outputs, or to the shared output tile).
Stmt Epilogue::elementBody(const WorkTile &tile, const Piece &at, const FragmentElement &e) const {
  const ir::Fusion &f = cx_.fusion;
  // (r, c) in the CTA tile, (row, col) in the output.
  kir::VarPtr r = names_.var("r"), cc = names_.var("c"), row = names_.var("row"),
              col = names_.var("col");
  std::vector<Stmt> element;
  auto [tileRow, tileColumn] = tilePosition(plan_, e);
  element.push_back(kir::let(r, tileRow));
  element.push_back(kir::let(cc, tileColumn));
  element.push_back(kir::let(row, kir::var(tile.mTile) * kir::index(plan_.tileM) + kir::var(r)));
  element.push_back(kir::let(col, kir::var(tile.nTile) * kir::index(plan_.tileN) + kir::var(cc)));
  // Dimension indices for addresses: M and N are this element's row and column.
  cx_.rootIndex.assign(f.dims.size(), kir::index(0));
  cx_.rootIndex[plan_.m] = kir::var(row);
  cx_.rootIndex[plan_.n] = kir::var(col);
  std::vector<Stmt> body;
  auto [accumulated, product2] = loadProducts(e, body);
  if (plan_.sharedEpilogue()) {
    // The values, stored to the shared tile instead of the output.
    std::map<unsigned, Expr> values;
    std::vector<Stmt> computed = fusedEpilogue(cx_, plan_, kir::var(accumulated), product2,
                                               /*storeOutputs=*/false, &values);
    body.insert(body.end(), computed.begin(), computed.end());
    body.push_back(fromFusion(
        kir::store(storage_.outTile,
                   outTileBase(at) + outputTileIndex(kir::var(r), inPiece(at, kir::var(cc))),
                   values.at(f.outputs[0].value->id)),
        f.outputs[0].range));
  } else {
    std::vector<Stmt> computed = fusedEpilogue(cx_, plan_, kir::var(accumulated), product2);
    body.insert(body.end(), computed.begin(), computed.end());
  }
  // Elements past the output's edges are not computed (their bias or residual would be
  // read out of bounds): the tile's parts there stay unwritten, and no store reaches them.
  Expr inside = kir::var(row) < cx_.dimExtent(plan_.m) && kir::var(col) < cx_.dimExtent(plan_.n);
  element.push_back(kir::ifThen(inside, kir::block(std::move(body)), nullptr,
                                "tails: only elements inside the output"));
  return kir::block(std::move(element));
}

/// Two neighbouring elements of a fragment row (`first` and the one to its right)
/// computed into `into[at]` and `into[at + 1]` (the pair's statements to `out`); returns
/// the pair's row and column in the CTA tile (with `position` false, null where no input
/// reads them). No element is skipped at the output's edges: the tile's rows and columns
/// past them are computed from inputs read at the last row and column (so no read leaves
/// them) and never leave the tile, since both copies out of it (TMA stores, which clip at
/// the tensor's edges, and the checked 16-byte copies) stop at the edges. A per-element
/// check would cost a compare and a branch an element in every tile for the few tiles at
/// the edges.
Epilogue::PairAt Epilogue::pairInto(const WorkTile &tile, const FragmentElement &first,
                                    kir::BufferPtr into, int64_t at, std::vector<Stmt> &out,
                                    const HeldColumns *held) const {
  const ir::Fusion &f = cx_.fusion;
  const ir::Output &output = f.outputs.at(0);
  // The element's row and column in the output, for the epilogue's inputs over M
  // (a residual) and over N (a bias) only.
  // Inputs held in registers need no position.
  bool readsRows = readsInputOver(plan_.m, held), readsColumns = readsInputOver(plan_.n, held);
  bool readsInputs = llvm::any_of(
      plan_.epilogue, [](const ir::Value *value) { return value->op == ir::Op::Input; });
  // Without a buffer to compute into, the pair's own, stored where the caller says: then
  // its row and column in the CTA tile are needed for the address, else only for inputs.
  bool position = !into;
  PairAt pair;
  auto [tileRow, tileColumn] = tilePosition(plan_, first);
  if (position || readsRows)
    pair.r = names_.var("r");
  if (position || readsColumns)
    pair.c = names_.var("c");
  kir::VarPtr row = names_.var("row"), col = names_.var("col"), half = names_.var("half");
  if (pair.r)
    out.push_back(kir::let(pair.r, tileRow));
  if (pair.c)
    out.push_back(kir::let(pair.c, tileColumn, "the pair's first column (even)"));
  if (readsRows)
    out.push_back(kir::let(row, kir::var(tile.mTile) * kir::index(plan_.tileM) + kir::var(pair.r)));
  if (readsColumns)
    out.push_back(kir::let(col, kir::var(tile.nTile) * kir::index(plan_.tileN) + kir::var(pair.c)));
  if (!into) {
    into =
        makeBuffer(names_.fresh(output.name + "_pair"), output.dtype, kir::MemorySpace::Local, {2});
    out.push_back(kir::allocate(into, "the pair, stored together"));
  }
  pair.buffer = into;
  // Dimension indices for the epilogue's inputs: M and N clamped inside the output.
  cx_.rootIndex.assign(f.dims.size(), kir::index(0));
  if (readsRows)
    cx_.rootIndex[plan_.m] = kir::min(kir::var(row), cx_.dimExtent(plan_.m) - kir::index(1));
  if (readsColumns)
    cx_.rootIndex[plan_.n] =
        kir::min(kir::var(col) + kir::var(half), cx_.dimExtent(plan_.n) - kir::index(1));
  const FragmentElement e = first.inPair(kir::var(half));
  std::vector<Stmt> body;
  auto [accumulated, product2] = loadProducts(e, body);
  std::map<unsigned, Expr> values, inRegisters;
  if (held)
    for (const auto &[id, registers] : *held)
      inRegisters[id] = kir::load(registers, first.walkChunk * kir::index(2) + kir::var(half));
  std::vector<Stmt> computed = fusedEpilogue(cx_, plan_, kir::var(accumulated), product2,
                                             /*storeOutputs=*/false, &values, &inRegisters);
  body.insert(body.end(), computed.begin(), computed.end());
  Expr index = at == 0 ? kir::var(half) : kir::var(half) + kir::index(at);
  body.push_back(fromFusion(kir::store(into, index, values.at(output.value->id)), output.range));
  out.push_back(kir::withComment(
      kir::forLoop(half, kir::index(2), kir::LoopKind::Unrolled, kir::block(std::move(body))),
      readsInputs ? "past the output's edges, inputs are read at its last row and column"
                  : "the pair's two columns"));
  return pair;
}

/// A pair (pairInto) into the shared output tile as one 4-byte (8 with f32 outputs) store.
Stmt Epilogue::pairBody(const WorkTile &tile, const Piece &at, const FragmentElement &first) const {
  const ir::Output &output = cx_.fusion.outputs.at(0);
  std::vector<Stmt> out;
  PairAt pair = pairInto(tile, first, nullptr, 0, out);
  out.push_back(
      fromFusion(kir::vectorCopy(storage_.outTile,
                                 outTileBase(at) + outputTileIndex(kir::var(pair.r),
                                                                   inPiece(at, kir::var(pair.c))),
                                 pair.buffer, kir::index(0), 2),
                 output.range));
  return kir::block(std::move(out));
}

/// A 16 x 16 block of a warp's fragments (four pairs: two chunks, both fragment rows) into
/// the shared output tile by one stmatrix.x4: each lane computes its four pairs into
/// registers and gives the address of one row of one 8 x 8 matrix (`rows`, the lane's row
/// of the warp's first block), where four st.shared.b32 a lane stored a pair each.
Stmt Epilogue::quadBody(const WorkTile &tile, const Piece &at, const FragmentElement &first,
                        const FragmentOrigin &rows, const HeldColumns *held) const {
  const ir::Output &output = cx_.fusion.outputs.at(0);
  kir::BufferPtr quad =
      makeBuffer(names_.fresh(output.name + "_quad"), output.dtype, kir::MemorySpace::Local, {8});
  std::vector<Stmt> out;
  out.push_back(kir::allocate(quad, "four pairs: matrices (rows 0-7, 8-15) x (columns 0-7, 8-15)"));
  for (int64_t j = 0; j < 4; ++j)
    pairInto(tile, first.inQuad(j / 2, j % 2), quad, 2 * j, out, held);
  // The block's row and column in the shared tile (or piece): the walk counts its chunks
  // from the piece's first.
  Expr row = kir::var(rows.row0) + first.mi * kir::index(64);
  Expr column = kir::var(rows.col0) + first.walkChunk * kir::index(8);
  out.push_back(
      fromFusion(kir::withComment(kir::stMatrix(storage_.outTile,
                                                outTileBase(at) + outputTileIndex(row, column),
                                                quad, kir::index(0), 4),
                                  "the warp's 16 x 16 block: this lane's row of one matrix"),
                 output.range));
  return kir::block(std::move(out));
}

/// Element (row, column) of the shared output tile: column block `column / span` (one
/// swizzled row of `span` elements each), BM rows of it, and in each row the 16-byte
/// chunks permuted by the swizzle as TMA reads them (Layout.h's swizzleAddress: the chunk
/// XOR the address's 128-byte row; with 128 bytes that is chunk ^ row % 8, with 64 bytes
/// chunk ^ (row / 2) % 4, with 32 bytes chunk ^ (row / 4) % 2).
Expr Epilogue::outputTileIndex(Expr row, Expr column) const {
  const kir::Swizzle swizzle = outputTileSwizzle(plan_);
  int64_t bytes = ir::dtypeBytes(storage_.outTile->dtype);
  int64_t spanBytes = kir::swizzleSpanBytes(swizzle);
  int64_t span = spanBytes / bytes, chunk = 16 / bytes;
  int64_t rowsPer128 = 128 / spanBytes, patterns = int64_t(1) << kir::swizzleBits(swizzle);
  Expr addressRow = rowsPer128 == 1 ? row : row / kir::index(rowsPer128);
  Expr inBlock = column % kir::index(span);
  Expr swizzledChunk = kir::binary(kir::BinaryOp::Xor, inBlock / kir::index(chunk),
                                   addressRow % kir::index(patterns));
  return column / kir::index(span) * kir::index(plan_.tileM * span) + row * kir::index(span) +
         swizzledChunk * kir::index(chunk) + inBlock % kir::index(chunk);
}

/// The group's output tile (or the piece's) in the shared output tiles.
Expr Epilogue::outTileBase(const Piece &at) const {
  Expr base;
  if (threads_.group)
    base = kir::var(threads_.group) * kir::index(pieceSlots(plan_) * outputTileElements(plan_));
  if (at.slot) {
    Expr slot = at.slot * kir::index(outputTileElements(plan_));
    base = base ? base + slot : slot;
  }
  return base ? base : kir::index(0);
}

/// A column of the CTA tile as a column of the piece `at` (the tile's own without pieces).
Expr Epilogue::inPiece(const Piece &at, Expr column) const {
  return at.firstColumn ? column - at.firstColumn : column;
}

Stmt Epilogue::waitOutputTileRead(const std::string &comment) const {
  return kir::ifThen(threads_.firstConsumerThread(plan_),
                     kir::withComment(kir::tmaStoreWait(/*pending=*/0), comment));
}

/// The written output tile to global memory: TMA stores by one thread, or 16-byte copies
/// by all consumer threads.
Stmt Epilogue::storeOutputTile(const WorkTile &tile, const Piece &at) const {
  const ir::Output &output = cx_.fusion.outputs.at(0);
  int64_t bytes = ir::dtypeBytes(output.dtype);
  int64_t span = outputTileSpan(plan_), chunk = 16 / bytes;
  int64_t blocks = (pieceColumns(plan_) + span - 1) / span;
  std::vector<Stmt> out;
  if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore) {
    // Generic-proxy writes become visible to the TMA unit (the async proxy) through the
    // fence, each thread its own, before the barrier that lets the storing thread go.
    out.push_back(kir::withComment(kir::fenceProxyAsync(), "the tile's writes, for the TMA unit"));
    out.push_back(threads_.consumerBarrier(plan_, at.firstColumn ? "the whole piece is written"
                                                                 : "the whole tile is written"));
    kir::VarPtr block = names_.var("block");
    Expr b = blocks == 1 ? kir::index(0) : kir::var(block);
    Expr column = kir::var(tile.nTile) * kir::index(plan_.tileN);
    if (at.firstColumn)
      column = column + at.firstColumn;
    Stmt store = kir::withOrigin(
        kir::tmaStore(
            storage_.mapOut,
            {kir::var(tile.mTile) * kir::index(plan_.tileM), column + b * kir::index(span)},
            storage_.outTile, outTileBase(at) + b * kir::index(plan_.tileM * span)),
        plan_.epilogueOrigin);
    Stmt stores = blocks == 1
                      ? store
                      : kir::forLoop(block, kir::index(blocks), kir::LoopKind::Unrolled, store);
    out.push_back(kir::ifThen(threads_.firstConsumerThread(plan_), stores, nullptr,
                              at.firstColumn ? "one thread stores the piece's column blocks"
                                             : "one thread stores the tile's column blocks"));
    return kir::block(std::move(out));
  }
  out.push_back(threads_.consumerBarrier(plan_, "the whole tile is written"));
  // Chunk `p` of the tile: column block p / (BM * span / chunk), row, chunk in the row.
  int64_t threads = 128 * plan_.warpgroupsPerTile();
  int64_t chunks = outputTileElements(plan_) / chunk;
  kir::VarPtr step = names_.var("step"), p = names_.var("piece"), row = names_.var("row"),
              col = names_.var("col"), i = names_.var("i");
  kir::VarPtr thread = names_.var("consumer_thread");
  out.push_back(
      kir::let(thread, kir::var(threads_.tid) - threads_.firstThreadOfGroup(plan_),
               threads_.group ? "thread of the consumer group" : "thread of the consumers"));
  std::vector<Stmt> piece;
  Expr perBlock = kir::index(plan_.tileM * span / chunk);
  piece.push_back(kir::let(row, kir::var(p) % perBlock / kir::index(span / chunk)));
  piece.push_back(kir::let(col, kir::var(p) / perBlock * kir::index(span) +
                                    kir::var(p) % kir::index(span / chunk) * kir::index(chunk)));
  Expr globalRow = kir::var(tile.mTile) * kir::index(plan_.tileM) + kir::var(row);
  Expr globalCol = kir::var(tile.nTile) * kir::index(plan_.tileN) + kir::var(col);
  cx_.rootIndex.assign(cx_.fusion.dims.size(), kir::index(0));
  cx_.rootIndex[plan_.m] = globalRow;
  cx_.rootIndex[plan_.n] = globalCol;
  Expr to = cx_.offsetOf(output.dims);
  Expr from = outTileBase(at) + outputTileIndex(kir::var(row), kir::var(col));
  Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
  // Whole pieces inside the output go as one 16-byte access when the rows keep 16-byte
  // alignment; the others element by element, up to the edge.
  Expr whole = globalRow < m && globalCol + kir::index(chunk - 1) < n &&
               kir::binary(kir::BinaryOp::Eq, n % kir::index(chunk), kir::index(0));
  // A tile whose last column block is partial: its pieces past the tile's columns are the
  // next tile's, which another CTA writes.
  Expr inTile = plan_.tileN % span == 0 ? Expr() : kir::var(col) < kir::index(plan_.tileN);
  cx_.rootIndex[plan_.n] = globalCol + kir::var(i);
  Stmt partial =
      kir::forLoop(i, kir::index(chunk), kir::LoopKind::Unrolled,
                   kir::ifThen(globalRow < m && globalCol + kir::var(i) < n,
                               kir::store(cx_.outputBuffers[0], cx_.offsetOf(output.dims),
                                          kir::load(storage_.outTile, from + kir::var(i)))));
  Stmt copy =
      kir::ifThen(whole, kir::vectorCopy(cx_.outputBuffers[0], to, storage_.outTile, from, chunk),
                  partial, "16 bytes, or the part inside the output");
  piece.push_back(inTile ? kir::ifThen(inTile, copy, nullptr, "the tile's own columns") : copy);
  Stmt perStep = kir::block({
      kir::let(p, kir::var(step) * kir::index(threads) + kir::var(thread)),
      kir::ifThen(kir::var(p) < kir::index(chunks), kir::block(std::move(piece))),
  });
  out.push_back(kir::forLoop(step, kir::index((chunks + threads - 1) / threads),
                             kir::LoopKind::Serial, perStep, plan_.epilogueOrigin));
  return kir::block(std::move(out));
}

} // namespace fsl::lower
