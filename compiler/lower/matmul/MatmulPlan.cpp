// MatmulPlan.cpp — the matrix product, its operands and epilogue, the tile sizes, and the
// refusals of fusions the matmul kernel cannot compute (operand forms, epilogue shapes).
#include "lower/matmul/MatmulPlan.h"

#include "lower/Plan.h"

#include "schedule/ScheduleBuilder.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/FormatVariadic.h>

#include <functional>
#include <set>

namespace fsl::lower {

int64_t MatmulPlan::stageBytes() const {
  return (tileM + tileN * (product2 ? 2 : 1)) * tileK *
         static_cast<int64_t>(ir::dtypeBytes(a.dtype));
}

bool hasMatmul(const ir::Fusion &fusion) {
  return llvm::any_of(fusion.values, [](const std::unique_ptr<ir::Value> &value) {
    return value->op == ir::Op::MatMul;
  });
}

namespace {

/// wgmma N values whose instructions fsl/device.cuh wraps: every N of m64nNk16.
bool wrappedInstructionN(int64_t n) { return n >= 8 && n <= 256 && n % 8 == 0; }

class MatmulPlanner {
public:
  MatmulPlanner(const sched::Schedule &schedule, DiagnosticEngine &diagnostics)
      : schedule_(schedule), fusion_(*schedule.fusion), diagnostics_(diagnostics) {}

  std::unique_ptr<MatmulPlan> run() {
    plan_ = std::make_unique<MatmulPlan>();
    plan_->schedule = &schedule_;
    plan_->fusion = &fusion_;
    if (!findProduct() || !checkOperands() || !planEpilogue())
      return nullptr;
    planTiles();
    return std::move(plan_);
  }

private:
  bool unsupported(const std::string &why, llvm::SMRange at = {}) {
    return reportUnsupported(diagnostics_, schedule_, why, at);
  }

  // --- The fusion ---------------------------------------------------------------------

  bool findProduct() {
    for (const auto &value : fusion_.values) {
      if (value->op != ir::Op::MatMul)
        continue;
      if (plan_->product2)
        return unsupported("a third matrix product: one kernel computes one product, or two "
                           "of the same left operand",
                           value->range);
      if (plan_->product) {
        plan_->product2 = value.get();
        continue;
      }
      plan_->product = value.get();
    }
    const ir::Value &product = *plan_->product;
    plan_->k = product.reduced.at(0);
    plan_->m = product.lhsLayout->rowDim;
    plan_->n = product.rhsLayout->rowDim;
    // swap_ab: the kernel computes (b a^T)^T, so its rows run along N and its columns along
    // M; the stores address the output by dimension and so write the tile transposed.
    const sched::MatmulSchedule &mm = schedule_.matmul;
    plan_->swapAB = mm.mma && mm.mma->swapAB;
    if (plan_->swapAB)
      std::swap(plan_->m, plan_->n);
    if (product.dtype != ir::DType::F32)
      return unsupported("a matrix product accumulated in " + ir::dtypeName(product.dtype).str() +
                             ": wgmma accumulates in f32; write sum(f32(a) * f32(b), over K)",
                         product.range);
    return true;
  }

  const std::string &dimName(ir::DimId dim) const { return fusion_.dims[dim].name; }

  /// `f32(x)` of a bf16 or f16 tensor parameter with the product's row dimension and K
  /// contiguous: the only operands TMA and wgmma read here.
  bool checkOperand(const ir::Value *operand, const ir::MatMulOperand &layout, bool lhs,
                    MatmulOperand &result) {
    const ir::Value &product = *plan_->product;
    // Named as the user wrote the product (swap_ab swaps the roles, not the names).
    const char *which = operand == product.operands[0] ? "left" : "right";
    const ir::Value *input = operand->op == ir::Op::Cast && operand->dtype == ir::DType::F32
                                 ? operand->operands[0]
                                 : nullptr;
    if (!input || input->op != ir::Op::Input ||
        (input->dtype != ir::DType::BF16 && input->dtype != ir::DType::F16))
      return unsupported(llvm::formatv("the {0} operand of the matrix product is not f32(x) of a "
                                       "bf16 or f16 tensor parameter x; wgmma reads bf16 or f16 "
                                       "tiles that TMA loads from a parameter",
                                       which)
                             .str(),
                         product.range);
    const ir::Param &param = fusion_.params[input->paramIndex];
    FSL_INTERNAL_ASSERT(!param.isStrided, "an unchecked strided operand reached the lowering");
    if (param.dims.size() != 2 || (!layout.contractedIsInner && lhs))
      return unsupported(llvm::formatv("operand {0}: [{1}, {2}] ({2} contiguous) is not lowered "
                                       "yet; write it as [{2}, {1}] ({1} contiguous)",
                                       param.name, dimName(plan_->k), dimName(layout.rowDim))
                             .str(),
                         param.range);
    result.input = input;
    result.param = input->paramIndex;
    result.dtype = input->dtype;
    result.kContiguous = layout.contractedIsInner;
    // TMA reads rows whose stride is a multiple of 16 bytes; a static extent of the
    // contiguous dimension that breaks that can be refused now, a runtime one is refused
    // by the launcher (the tensor map cannot be encoded) and by the simulator.
    ir::DimId inner = param.dims.back();
    std::optional<int64_t> extent = fusion_.dims[inner].staticExtent;
    // The remainder mod 16 is all the check needs; the product itself may pass 64 bits.
    int64_t elementBytes = ir::dtypeBytes(input->dtype);
    if (extent && *extent % 16 * elementBytes % 16 != 0) {
      std::optional<int64_t> rowBytes = llvm::checkedMul(*extent, elementBytes);
      return unsupported(
          llvm::formatv("rows of {0} are {1} x {2} = {3} bytes apart; TMA needs a "
                        "multiple of 16 bytes",
                        param.name, dimName(inner), ir::dtypeName(input->dtype),
                        rowBytes ? std::to_string(*rowBytes) : std::string("more than 2^63 - 1"))
              .str(),
          param.range);
    }
    return true;
  }

  bool checkOperands() {
    const ir::Value &product = *plan_->product;
    if (plan_->swapAB) {
      // b, [N, K], is wgmma's left operand and a its right one (the checker refused b as
      // [K, N] and a second product).
      FSL_INTERNAL_ASSERT(!plan_->product2 && product.rhsLayout->contractedIsInner,
                          "an unchecked swap_ab reached the lowering");
      if (!checkOperand(product.operands[1], *product.rhsLayout, true, plan_->a) ||
          !checkOperand(product.operands[0], *product.lhsLayout, false, plan_->b))
        return false;
    } else if (!checkOperand(product.operands[0], *product.lhsLayout, true, plan_->a) ||
               !checkOperand(product.operands[1], *product.rhsLayout, false, plan_->b)) {
      return false;
    }
    if (const ir::Value *second = plan_->product2) {
      // The same a over the same M, N and K, another b of b's layout.
      const ir::Value *lhs = second->operands[0];
      bool sameA = lhs->op == ir::Op::Cast && lhs->operands[0] == plan_->a.input &&
                   second->lhsLayout->contractedIsInner;
      if (!sameA || second->lhsLayout->rowDim != plan_->m ||
          second->rhsLayout->rowDim != plan_->n || second->reduced.at(0) != plan_->k)
        return unsupported(
            llvm::formatv("a second matrix product of another left operand or other dimensions: "
                          "two products share a kernel when both are {0} @ (a [{1}, {2}] "
                          "operand) over {2}; chained products are not lowered",
                          fusion_.params[plan_->a.param].name, dimName(plan_->n), dimName(plan_->k))
                .str(),
            second->range);
      if (!checkOperand(second->operands[1], *second->rhsLayout, false, plan_->b2))
        return false;
      if (second->dtype != ir::DType::F32)
        return unsupported("a matrix product accumulated in " + ir::dtypeName(second->dtype).str() +
                               ": wgmma accumulates in f32; write sum(f32(a) * f32(b), over K)",
                           second->range);
      if (plan_->b2.dtype != plan_->b.dtype || plan_->b2.kContiguous != plan_->b.kContiguous ||
          plan_->b2.param == plan_->b.param)
        return unsupported("the two products' right operands must be two different parameters of "
                           "one type and layout",
                           second->range);
    }
    if (plan_->a.dtype != plan_->b.dtype)
      return unsupported("operands of the matrix product of different types (" +
                             ir::dtypeName(plan_->a.dtype).str() + " and " +
                             ir::dtypeName(plan_->b.dtype).str() +
                             "); wgmma multiplies two bf16 or two f16 tiles",
                         product.range);
    return true;
  }

  /// The values the outputs need after the product: pointwise over [M, N] only.
  bool planEpilogue() {
    const ir::Value *product = plan_->product, *product2 = plan_->product2;
    std::set<unsigned> needed;
    std::function<void(const ir::Value *)> need = [&](const ir::Value *value) {
      if (!needed.insert(value->id).second || value == product || value == product2)
        return;
      for (const ir::Value *operand : value->operands)
        need(operand);
    };
    std::set<ir::DimId> tile = {plan_->m, plan_->n};
    for (const ir::Output &output : fusion_.outputs) {
      std::set<ir::DimId> dims(output.dims.begin(), output.dims.end());
      if (dims != tile)
        return unsupported("output " + output.name + " is not over [" + dimName(plan_->m) + ", " +
                               dimName(plan_->n) +
                               "]: the matmul kernel stores the elements of its output tiles",
                           output.range);
      need(output.value);
    }
    for (const auto &value : fusion_.values) {
      if (!needed.count(value->id) || value.get() == product || value.get() == product2)
        continue;
      if (ir::isReduction(value->op) || value->op == ir::Op::MatMul)
        return unsupported("a reduction after the matrix product: the epilogue is pointwise on "
                           "the accumulators",
                           value->range);
      for (ir::DimId dim : value->dims)
        if (!tile.count(dim))
          return unsupported("the epilogue reads a value over " + dimName(dim) +
                                 ", which is not a dimension of the output tile",
                             value->range);
      FSL_INTERNAL_ASSERT(value->op != ir::Op::Input ||
                              !fusion_.params[value->paramIndex].isStrided,
                          "an unchecked strided parameter reached the lowering");
      plan_->epilogue.push_back(value.get());
    }
    return true;
  }

  // --- The schedule -------------------------------------------------------------------
  //
  // Every rule of a matrix product's schedule is the checker's (matmul-loop-directive,
  // matmul-schedule-incomplete, mma-shape, pipeline-stages, swizzle-range, split-k-range,
  // cluster-shape, matmul-directive-conflict, shared-epilogue-output), and the lowering
  // is reached only by schedules it passed (pipeline/SchedulePlanning.cpp): what the
  // plan reads is asserted, not refused again.

  void planTiles() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    FSL_INTERNAL_ASSERT(mm.mma && mm.pipeline && mm.pipeline->viaTma,
                        "an incomplete matmul schedule reached the lowering");
    const sched::Applied<sched::Mma> &mma = *mm.mma;
    plan_->mmaOrigin = {"mma over " + mma.reductionDim.text + (mma.swapAB ? ", swap_ab" : ""),
                        mma.origin.range};
    FSL_INTERNAL_ASSERT(mma.instruction.text == "wgmma" && mma.ctaTile.size() == 3 &&
                            mma.warpTile.size() == 2 && mma.instructionShape.size() == 3,
                        "an unchecked mma directive reached the lowering");
    // The kernel's tile: (N, M) of the output with swap_ab.
    const bool swap = plan_->swapAB;
    const sched::Count &bm = mma.ctaTile[swap ? 1 : 0], &bn = mma.ctaTile[swap ? 0 : 1],
                       &bk = mma.ctaTile[2];
    const sched::Count &wm = mma.warpTile[swap ? 1 : 0], &wn = mma.warpTile[swap ? 0 : 1];
    const sched::Count &im = mma.instructionShape[0], &in = mma.instructionShape[1],
                       &ik = mma.instructionShape[2];
    FSL_INTERNAL_ASSERT(bk.value == 128 / ir::dtypeBytes(plan_->a.dtype) && im.value == 64 &&
                            ik.value == 16 && wrappedInstructionN(in.value) && wm.value >= 64 &&
                            wm.value % 64 == 0 && wn.value >= in.value &&
                            wn.value % in.value == 0 && bm.value >= wm.value &&
                            bn.value >= wn.value && bm.value % wm.value == 0 &&
                            bn.value % wn.value == 0 && bm.value <= 256 && bn.value <= 512 &&
                            (plan_->a.param != plan_->b.param || bm.value == bn.value),
                        "an unchecked mma shape reached the lowering");
    plan_->tileM = bm.value;
    plan_->tileN = bn.value;
    plan_->tileK = bk.value;
    plan_->warpM = wm.value;
    plan_->warpN = wn.value;
    plan_->instructionN = in.value;
    plan_->warpgroups = plan_->warpgroupsM() * plan_->warpgroupsN();
    FSL_INTERNAL_ASSERT(plan_->accumulators() <= 160 && plan_->warpgroups <= 4 &&
                            (!plan_->product2 || 2 * plan_->accumulators() <= 128),
                        "an unchecked warp tile reached the lowering");
    FSL_INTERNAL_ASSERT(mm.pipeline->stages.value >= 1,
                        "an unchecked pipeline reached the lowering");
    plan_->stages = mm.pipeline->stages.value;
    plan_->pipelineOrigin = {"pipeline " + std::to_string(plan_->stages) + " stages via tma",
                             mm.pipeline->origin.range};
    plan_->tilesOrigin = {"tiles one_per_cta",
                          mm.tiles.empty() ? mma.origin.range : mm.tiles[0].origin.range};
    FSL_INTERNAL_ASSERT(mm.tiles.size() <= 1, "two tile orders reached the lowering");
    if (!mm.tiles.empty() && (mm.tiles[0].order == sched::TileOrder::Persistent ||
                              mm.tiles[0].order == sched::TileOrder::StreamK)) {
      bool streamK = mm.tiles[0].order == sched::TileOrder::StreamK;
      plan_->tileWalk = streamK ? TileWalk::StreamK : TileWalk::Persistent;
      plan_->tileGroup = mm.tiles[0].parameter ? mm.tiles[0].parameter->value : 1;
      plan_->hilbertOrder = mm.tiles[0].hilbert;
      FSL_INTERNAL_ASSERT(plan_->tileGroup >= 1, "an unchecked swizzle reached the lowering");
      FSL_INTERNAL_ASSERT(
          !plan_->hilbertOrder ||
              (plan_->tileGroup >= 2 && (plan_->tileGroup & (plan_->tileGroup - 1)) == 0),
          "an unchecked hilbert block reached the lowering");
      plan_->tilesOrigin.text =
          std::string(streamK ? "tiles stream_k" : "tiles persistent") +
          (mm.tiles[0].parameter ? std::string(plan_->hilbertOrder ? " hilbert " : " swizzle ") +
                                       std::to_string(plan_->tileGroup)
                                 : "");
    }
    if (!mm.tiles.empty() && mm.tiles[0].order == sched::TileOrder::SplitK) {
      const std::optional<sched::Count> &split = mm.tiles[0].parameter;
      FSL_INTERNAL_ASSERT(split && split->value >= 1 && split->value <= 64,
                          "an unchecked split_k reached the lowering");
      plan_->splitK = split->value;
      plan_->tilesOrigin.text = "tiles split_k " + std::to_string(plan_->splitK);
    }
    plan_->epilogueVia = mm.epilogue ? mm.epilogue->via : sched::EpilogueKind::Registers;
    FSL_INTERNAL_ASSERT(!swap || plan_->epilogueVia == sched::EpilogueKind::Registers,
                        "swap_ab with an epilogue via shared reached the lowering");
    FSL_INTERNAL_ASSERT(plan_->epilogueVia != sched::EpilogueKind::SharedTmaStore ||
                            plan_->tileN * ir::dtypeBytes(fusion_.outputs.at(0).dtype) % 32 == 0,
                        "a TMA-stored output tile of partial column blocks reached the lowering");
    FSL_INTERNAL_ASSERT(plan_->b.kContiguous ||
                            plan_->instructionN % (128 / ir::dtypeBytes(plan_->b.dtype)) == 0,
                        "an N-major b read in partial blocks reached the lowering");
    if (mm.epilogue && !mm.epilogue->tile.empty()) {
      plan_->epiloguePiece = mm.epilogue->tile.back().value;
      FSL_INTERNAL_ASSERT(plan_->epilogueVia == sched::EpilogueKind::SharedTmaStore &&
                              plan_->tileN % plan_->epiloguePiece == 0 &&
                              plan_->epiloguePiece < plan_->tileN && plan_->warpN == plan_->tileN &&
                              plan_->tileWalk != TileWalk::StreamK,
                          "an unchecked epilogue tile reached the lowering");
    }
    plan_->epilogueOrigin = {
        plan_->epilogueVia == sched::EpilogueKind::Registers ? "epilogue via registers"
        : plan_->epilogueVia == sched::EpilogueKind::Shared  ? "epilogue via shared"
                                                             : "epilogue via shared tma_store",
        mm.epilogue ? mm.epilogue->origin.range : mma.origin.range};
    if (plan_->epiloguePiece)
      plan_->epilogueOrigin.text += ", tile (" + std::to_string(plan_->tileM) + ", " +
                                    std::to_string(plan_->epiloguePiece) + ")";
    planWarpRoles();
    planCluster();
    FSL_INTERNAL_ASSERT(!plan_->product2 || (!plan_->partialTiles() && plan_->clusterM == 1),
                        "two products with split_k, stream_k or a cluster reached the lowering");
  }

  /// `cluster (C, 1) [multicast]`: C consecutive M tiles of one N tile a cluster;
  /// `cluster (1, C) [multicast]`: C consecutive N tiles of one M tile.
  void planCluster() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.cluster)
      return;
    const sched::Applied<sched::Cluster> &cluster = *mm.cluster;
    FSL_INTERNAL_ASSERT(cluster.shape.size() == 2 &&
                            (cluster.shape[0].value == 1 || cluster.shape[1].value == 1),
                        "an unchecked cluster shape reached the lowering");
    bool alongN = cluster.shape[1].value != 1;
    int64_t c = cluster.shape[alongN ? 1 : 0].value;
    if (alongN) {
      FSL_INTERNAL_ASSERT(
          (c == 2 || c == 4) && plan_->tileWalk == TileWalk::Persistent && !plan_->swapAB &&
              plan_->splitK == 1 && plan_->tileGroups == 1 &&
              (!cluster.multicast || (plan_->warpSpecialized && plan_->tileM % (8 * c) == 0)),
          "an unchecked cluster along N reached the lowering");
      plan_->clusterN = c;
      plan_->multicast = cluster.multicast;
      plan_->clusterOrigin = {"cluster (1, " + std::to_string(c) + ")" +
                                  (cluster.multicast ? " multicast" : ""),
                              cluster.origin.range};
      return;
    }
    FSL_INTERNAL_ASSERT(c == 1 || c == 2 || c == 4,
                        "an unchecked cluster extent reached the lowering");
    FSL_INTERNAL_ASSERT(c == 1 || (plan_->splitK == 1 && plan_->tileWalk != TileWalk::StreamK &&
                                   plan_->tileGroups == 1),
                        "a cluster with split_k, stream_k or two consumer groups reached the "
                        "lowering");
    plan_->clusterM = c;
    plan_->multicast = cluster.multicast && c > 1;
    plan_->clusterOrigin = {"cluster (" + std::to_string(c) + ", 1)" +
                                (cluster.multicast ? " multicast" : ""),
                            cluster.origin.range};
    if (plan_->multicast) {
      // Each CTA loads 1/C of the b tile: whole 64-column blocks when N is contiguous.
      int64_t span = 128 / ir::dtypeBytes(plan_->b.dtype);
      FSL_INTERNAL_ASSERT(plan_->warpSpecialized && plan_->tileN % c == 0 &&
                              (plan_->b.kContiguous || (plan_->tileN / span) % c == 0) &&
                              plan_->tileN / c >= 8,
                          "an unchecked multicast reached the lowering");
    }
  }

  /// `warp_specialize producer(regs P), consumers(W, regs C)`: the consumers are the
  /// warpgroups the warp tile gives, or twice them (two groups taking alternate tiles).
  void planWarpRoles() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.warpSpecialize)
      return;
    const sched::Applied<sched::WarpSpecialize> &ws = *mm.warpSpecialize;
    int64_t perTile = plan_->warpgroups;
    FSL_INTERNAL_ASSERT(ws.consumerCount.value == perTile || ws.consumerCount.value == 2 * perTile,
                        "an unchecked consumer count reached the lowering");
    if (ws.consumerCount.value == 2 * perTile) {
      FSL_INTERNAL_ASSERT(plan_->tileWalk != TileWalk::OnePerCta && plan_->splitK == 1 &&
                              2 * perTile <= 4,
                          "unchecked consumer groups reached the lowering");
      plan_->tileGroups = 2;
      plan_->warpgroups = 2 * perTile;
    }
    plan_->warpSpecialized = true;
    plan_->producerRegisters = ws.producerRegs.value;
    plan_->consumerRegisters = ws.consumerRegs.value;
    plan_->warpSpecializeOrigin = {
        llvm::formatv("warp_specialize producer(regs {0}), consumers({1}, regs {2})",
                      plan_->producerRegisters, plan_->warpgroups, plan_->consumerRegisters)
            .str(),
        ws.origin.range};
  }

  const sched::Schedule &schedule_;
  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  std::unique_ptr<MatmulPlan> plan_;
};

} // namespace

std::unique_ptr<MatmulPlan> planMatmul(const sched::Schedule &schedule, int64_t smCount,
                                       DiagnosticEngine &diagnostics) {
  std::unique_ptr<MatmulPlan> plan = MatmulPlanner(schedule, diagnostics).run();
  if (plan)
    plan->smCount = smCount;
  return plan;
}

} // namespace fsl::lower
