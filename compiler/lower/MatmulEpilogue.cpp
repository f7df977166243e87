// MatmulEpilogue.cpp — the fused epilogue of a matmul kernel: each accumulator element's
// row and column, the fusion's pointwise values after the product (bias, activation,
// residual, casts), and the stores.
//
//   epilogue via registers          each thread stores its elements inside the output
//   epilogue via shared             the consumers write the output tile to shared memory
//                                   (128-byte swizzled column blocks, so a warp's writes
//                                   spread over the banks), then copy it out in 16-byte
//                                   pieces, coalesced
//   epilogue via shared tma_store   the same tile, then one thread stores it with TMA
//                                   (one box a column block; TMA clips at the tensor's
//                                   edges) after the async-proxy fence; before the next
//                                   tile overwrites it, that thread waits until the
//                                   stores have read it
#include "lower/MatmulBuilder.h"
#include "lower/Pointwise.h"

#include <llvm/ADT/STLExtras.h>

#include <map>

namespace fsl::lower {

using kir::Expr;
using kir::Stmt;
using kir::StmtKind;

Stmt MatmulBuilder::epilogue() {
  std::vector<Stmt> out;
  if (plan_.sharedEpilogue()) {
    if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore)
      out.push_back(waitOutputTileRead("the previous tile's TMA stores have read the output tile"));
    out.push_back(consumerBarrier("the output tile is free to write"));
  }
  out.push_back(kir::comment(plan_.sharedEpilogue()
                                 ? "Epilogue: each accumulator element's row and column, the "
                                   "fusion's epilogue, into the output tile"
                                 : "Epilogue: each accumulator element's row and column, the "
                                   "fusion's epilogue, stores inside the output"));
  Stmt nest = forEachFragmentElement(out, [&](const FragmentElement &e) {
    return elementBody(e.mi, e.ni, e.ns, e.h, e.c, e.accIndex, e.row0, e.col0);
  });
  auto fragments = std::make_shared<kir::StmtNode>(*nest);
  fragments->comment = "the fragments of wgmma m64n" + std::to_string(plan_.instructionN) + "k16";
  fragments->origin = plan_.epilogueOrigin;
  out.push_back(fragments);
  if (plan_.sharedEpilogue())
    out.push_back(storeOutputTile());
  return kir::block(std::move(out));
}

/// The unrolled nest over the thread's accumulator elements: `body` for each, with its
/// fragment coordinates; the lets of the thread's first element (row0, col0 in the CTA
/// tile) go to `out`.
Stmt MatmulBuilder::forEachFragmentElement(
    std::vector<Stmt> &out, const std::function<Stmt(const FragmentElement &)> &body) {
  kir::VarPtr lane = var("lane"), row0 = var("row0"), col0 = var("col0");
  out.push_back(kir::let(lane, kir::var(tid_) % kir::index(128), "thread of the warpgroup"));
  Expr l = kir::var(lane);
  out.push_back(kir::let(row0, warpgroupRow() + kir::index(16) * (l / kir::index(32)) +
                                   l % kir::index(32) / kir::index(4)));
  out.push_back(kir::let(col0, warpgroupColumn() + kir::index(2) * (l % kir::index(4))));
  int64_t in = plan_.instructionN;
  return unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
    return unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
      return unrolled("ns", in / 8, [&](Expr ns) {
        return unrolled("h", 2, [&](Expr h) {
          return unrolled("half", 2, [&](Expr c) {
            Expr fragment = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
            FragmentElement e{mi,   ni,  ns,
                              h,    c,   fragment + ns * kir::index(4) + h * kir::index(2) + c,
                              row0, col0};
            return body(e);
          });
        });
      });
    });
  });
}

/// Row and column of a fragment element in the CTA tile, and in the output.
std::pair<Expr, Expr> MatmulBuilder::tilePosition(const FragmentElement &e) const {
  return {kir::var(e.row0) + e.mi * kir::index(64) + e.h * kir::index(8),
          kir::var(e.col0) + e.ni * kir::index(plan_.instructionN) + e.ns * kir::index(8) + e.c};
}
std::pair<Expr, Expr> MatmulBuilder::outputPosition(const FragmentElement &e) const {
  auto [r, c] = tilePosition(e);
  return {kir::var(mTile_) * kir::index(plan_.tileM) + r,
          kir::var(nTile_) * kir::index(plan_.tileN) + c};
}

/// One accumulator element: its position, the bounds check, the epilogue and stores (to
/// the outputs, or to the shared output tile).
Stmt MatmulBuilder::elementBody(Expr mi, Expr ni, Expr ns, Expr h, Expr c, Expr accIndex,
                                const kir::VarPtr &row0, const kir::VarPtr &col0) {
  // (r, c) in the CTA tile, (row, col) in the output.
  kir::VarPtr r = var("r"), cc = var("c"), row = var("row"), col = var("col");
  std::vector<Stmt> element;
  element.push_back(kir::let(r, kir::var(row0) + mi * kir::index(64) + h * kir::index(8)));
  element.push_back(
      kir::let(cc, kir::var(col0) + ni * kir::index(plan_.instructionN) + ns * kir::index(8) + c));
  element.push_back(kir::let(row, kir::var(mTile_) * kir::index(plan_.tileM) + kir::var(r)));
  element.push_back(kir::let(col, kir::var(nTile_) * kir::index(plan_.tileN) + kir::var(cc)));
  // Dimension indices for addresses: M and N are this element's row and column.
  cx_.rootIndex.assign(f_.dims.size(), kir::index(0));
  cx_.rootIndex[plan_.m] = kir::var(row);
  cx_.rootIndex[plan_.n] = kir::var(col);
  std::vector<Stmt> body;
  const ir::Value &product = *plan_.product;
  kir::VarPtr accumulated = kir::makeVar(valueName(product), ir::DType::F32);
  body.push_back(
      fromFusion(kir::let(accumulated, kir::load(acc_, accIndex), product.name), product.range));
  if (const ir::Value *second = plan_.product2) {
    kir::VarPtr accumulated2 = kir::makeVar(valueName(*second), ir::DType::F32);
    body.push_back(fromFusion(kir::let(accumulated2, kir::load(acc2_, accIndex), second->name),
                              second->range));
    product2Value_ = kir::var(accumulated2);
  }
  if (plan_.splitK > 1) {
    // split_k: the partial product goes to its slice of the workspace; the second kernel
    // adds the slices and applies the epilogue.
    Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
    body.push_back(kir::store(plan_.partials,
                              (kir::var(split_) * m + kir::var(row)) * n + kir::var(col),
                              kir::var(accumulated)));
  } else if (plan_.sharedEpilogue()) {
    // The values, stored to the shared tile instead of the output.
    std::vector<Stmt> values = epilogueValues(kir::var(accumulated), /*storeOutputs=*/false);
    body.insert(body.end(), values.begin(), values.end());
    body.push_back(
        fromFusion(kir::store(outTile_, outTileBase() + outputTileIndex(kir::var(r), kir::var(cc)),
                              lastValues_.at(f_.outputs[0].value->id)),
                   f_.outputs[0].range));
  } else {
    std::vector<Stmt> values = epilogueValues(kir::var(accumulated));
    body.insert(body.end(), values.begin(), values.end());
  }
  // Elements past the output's edges are not computed (their bias or residual would be
  // read out of bounds): the tile's parts there stay unwritten, and no store reaches them.
  Expr inside = kir::var(row) < cx_.dimExtent(plan_.m) && kir::var(col) < cx_.dimExtent(plan_.n);
  element.push_back(kir::ifThen(inside, kir::block(std::move(body)), nullptr,
                                "tails: only elements inside the output"));
  return kir::block(std::move(element));
}

/// Element (row, column) of the shared output tile: column block `column / span` (one
/// 128-byte row of `span` elements each), BM rows of it, and in each row the 16-byte
/// chunks permuted by the 128-byte swizzle (chunk ^ row % 8), as TMA reads them.
Expr MatmulBuilder::outputTileIndex(Expr row, Expr column) const {
  int64_t bytes = ir::dtypeBytes(outTile_->dtype);
  int64_t span = 128 / bytes, chunk = 16 / bytes;
  Expr inBlock = column % kir::index(span);
  Expr swizzledChunk =
      kir::binary(kir::BinaryOp::Xor, inBlock / kir::index(chunk), row % kir::index(8));
  return column / kir::index(span) * kir::index(plan_.tileM * span) + row * kir::index(span) +
         swizzledChunk * kir::index(chunk) + inBlock % kir::index(chunk);
}

Stmt MatmulBuilder::waitOutputTileRead(const std::string &comment) {
  auto wait = hopperNode(StmtKind::TmaStoreWait, comment);
  wait->pending = 0;
  return kir::ifThen(firstConsumerThread(), Stmt(wait));
}

/// The written output tile to global memory: TMA stores by one thread, or 16-byte copies
/// by all consumer threads.
Stmt MatmulBuilder::storeOutputTile() {
  const ir::Output &output = f_.outputs.at(0);
  int64_t bytes = ir::dtypeBytes(output.dtype);
  int64_t span = 128 / bytes, chunk = 16 / bytes;
  int64_t blocks = plan_.tileN / span;
  std::vector<Stmt> out;
  if (plan_.epilogueVia == sched::EpilogueKind::SharedTmaStore) {
    // Generic-proxy writes become visible to the TMA unit (the async proxy) through the
    // fence, each thread its own, before the barrier that lets the storing thread go.
    out.push_back(hopperNode(StmtKind::FenceProxyAsync, "the tile's writes, for the TMA unit"));
    out.push_back(consumerBarrier("the whole tile is written"));
    kir::VarPtr block = var("block");
    Stmt store = [&] {
      auto s = hopperNode(StmtKind::TmaStore);
      s->tensorMap = mapOut_;
      Expr b = blocks == 1 ? kir::index(0) : kir::var(block);
      s->coordinates = {kir::var(mTile_) * kir::index(plan_.tileM),
                        kir::var(nTile_) * kir::index(plan_.tileN) + b * kir::index(span)};
      s->buffer = outTile_;
      s->index = outTileBase() + b * kir::index(plan_.tileM * span);
      s->origin = plan_.epilogueOrigin;
      return Stmt(s);
    }();
    Stmt stores = blocks == 1
                      ? store
                      : kir::forLoop(block, kir::index(blocks), kir::LoopKind::Unrolled, store);
    out.push_back(kir::ifThen(firstConsumerThread(), stores, nullptr,
                              "one thread stores the tile's column blocks"));
    return kir::block(std::move(out));
  }
  out.push_back(consumerBarrier("the whole tile is written"));
  // Chunk `p` of the tile: column block p / (BM * span / chunk), row, chunk in the row.
  int64_t threads = 128 * plan_.warpgroupsPerTile();
  int64_t chunks = plan_.tileM * plan_.tileN / chunk;
  kir::VarPtr step = var("step"), p = var("piece"), row = var("row"), col = var("col"),
              i = var("i");
  kir::VarPtr thread = var("consumer_thread");
  out.push_back(kir::let(thread, kir::var(tid_) - firstThreadOfGroup(),
                         group_ ? "thread of the consumer group" : "thread of the consumers"));
  std::vector<Stmt> piece;
  Expr perBlock = kir::index(plan_.tileM * span / chunk);
  piece.push_back(kir::let(row, kir::var(p) % perBlock / kir::index(span / chunk)));
  piece.push_back(kir::let(col, kir::var(p) / perBlock * kir::index(span) +
                                    kir::var(p) % kir::index(span / chunk) * kir::index(chunk)));
  Expr globalRow = kir::var(mTile_) * kir::index(plan_.tileM) + kir::var(row);
  Expr globalCol = kir::var(nTile_) * kir::index(plan_.tileN) + kir::var(col);
  cx_.rootIndex.assign(f_.dims.size(), kir::index(0));
  cx_.rootIndex[plan_.m] = globalRow;
  cx_.rootIndex[plan_.n] = globalCol;
  Expr to = cx_.offsetOf(output.dims);
  Expr from = outTileBase() + outputTileIndex(kir::var(row), kir::var(col));
  Expr m = cx_.dimExtent(plan_.m), n = cx_.dimExtent(plan_.n);
  // Whole pieces inside the output go as one 16-byte access when the rows keep 16-byte
  // alignment; the others element by element, up to the edge.
  Expr whole = globalRow < m && globalCol + kir::index(chunk - 1) < n &&
               kir::binary(kir::BinaryOp::Eq, n % kir::index(chunk), kir::index(0));
  cx_.rootIndex[plan_.n] = globalCol + kir::var(i);
  Stmt partial =
      kir::forLoop(i, kir::index(chunk), kir::LoopKind::Unrolled,
                   kir::ifThen(globalRow < m && globalCol + kir::var(i) < n,
                               kir::store(cx_.outputBuffers[0], cx_.offsetOf(output.dims),
                                          kir::load(outTile_, from + kir::var(i)))));
  piece.push_back(kir::ifThen(whole,
                              kir::vectorCopy(cx_.outputBuffers[0], to, outTile_, from, chunk),
                              partial, "16 bytes, or the part inside the output"));
  Stmt perStep = kir::block({
      kir::let(p, kir::var(step) * kir::index(threads) + kir::var(thread)),
      kir::ifThen(kir::var(p) < kir::index(chunks), kir::block(std::move(piece))),
  });
  out.push_back(kir::forLoop(step, kir::index((chunks + threads - 1) / threads),
                             kir::LoopKind::Serial, perStep, plan_.epilogueOrigin));
  return kir::block(std::move(out));
}

std::vector<Stmt> MatmulBuilder::epilogueValues(Expr product, bool storeOutputs) {
  std::vector<Stmt> body;
  std::map<unsigned, Expr> &values = lastValues_;
  values.clear();
  values[plan_.product->id] = std::move(product);
  if (plan_.product2)
    values[plan_.product2->id] = product2Value_;
  for (const ir::Value *value : plan_.epilogue) {
    if (roundedByStore(*value)) {
      values[value->id] = values.at(value->operands[0]->id);
      continue;
    }
    Expr expr;
    if (value->op == ir::Op::Input) {
      expr = kir::load(cx_.paramBuffers[value->paramIndex],
                       cx_.offsetOf(f_.params[value->paramIndex].dims));
    } else if (value->op == ir::Op::Scalar) {
      expr = kir::var(cx_.scalarVars[value->paramIndex]);
    } else if (value->op == ir::Op::Constant) {
      expr = kir::constant(value->constant, value->dtype);
    } else {
      std::vector<Expr> operands;
      for (const ir::Value *operand : value->operands)
        operands.push_back(values.at(operand->id));
      expr = pointwiseOperation(*value, operands, plan_.schedule->fastExp.has_value());
    }
    kir::VarPtr v = kir::makeVar(valueName(*value), value->dtype);
    body.push_back(fromFusion(kir::let(v, expr, value->name), value->range));
    values[value->id] = kir::var(v);
  }
  for (unsigned o = 0; storeOutputs && o < f_.outputs.size(); ++o) {
    const ir::Output &output = f_.outputs[o];
    body.push_back(fromFusion(
        kir::store(cx_.outputBuffers[o], cx_.offsetOf(output.dims), values.at(output.value->id)),
        output.range));
  }
  return body;
}

/// A cast to bf16 or f16 that only outputs of that type store: the store rounds the
/// f32 value once (as the store-rounding pass does for the other kernels).
bool MatmulBuilder::roundedByStore(const ir::Value &value) const {
  if (value.op != ir::Op::Cast ||
      (value.dtype != ir::DType::BF16 && value.dtype != ir::DType::F16) ||
      value.operands[0]->dtype != ir::DType::F32)
    return false;
  for (const ir::Value *user : plan_.epilogue)
    if (llvm::is_contained(user->operands, &value))
      return false;
  for (const ir::Output &output : f_.outputs)
    if (output.value == &value && output.dtype != value.dtype)
      return false;
  return true;
}

} // namespace fsl::lower
