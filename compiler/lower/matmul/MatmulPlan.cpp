// MatmulPlan.cpp — the matrix product, its operands and epilogue, the tile sizes, and the
// refusals of what the matmul lowering does not do yet.
#include "lower/matmul/MatmulPlan.h"

#include "lower/Plan.h"

#include "schedule/ScheduleBuilder.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/STLExtras.h>
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

/// wgmma N values whose instructions fsl/device.cuh wraps.
bool wrappedInstructionN(int64_t n) { return n == 64 || n == 128 || n == 256; }

/// A directive the path refuses, and why; the first in the text is reported.
struct Refusal {
  llvm::SMRange at;
  std::string why;
};

class MatmulPlanner {
public:
  MatmulPlanner(const sched::Schedule &schedule, DiagnosticEngine &diagnostics)
      : schedule_(schedule), fusion_(*schedule.fusion), diagnostics_(diagnostics) {}

  std::unique_ptr<MatmulPlan> run() {
    plan_ = std::make_unique<MatmulPlan>();
    plan_->schedule = &schedule_;
    plan_->fusion = &fusion_;
    if (!findProduct() || !checkOperands() || !planEpilogue() || !checkDirectives() || !planTiles())
      return nullptr;
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
    const char *which = lhs ? "left" : "right";
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
    if (param.isStrided)
      return unsupported("strided parameter " + param.name + " (TMA reads contiguous tensors)",
                         param.range);
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
    int64_t rowBytes = extent ? *extent * ir::dtypeBytes(input->dtype) : 16;
    if (rowBytes % 16 != 0)
      return unsupported(llvm::formatv("rows of {0} are {1} x {2} = {3} bytes apart; TMA needs a "
                                       "multiple of 16 bytes",
                                       param.name, dimName(inner), ir::dtypeName(input->dtype),
                                       rowBytes)
                             .str(),
                         param.range);
    return true;
  }

  bool checkOperands() {
    const ir::Value &product = *plan_->product;
    if (!checkOperand(product.operands[0], *product.lhsLayout, true, plan_->a) ||
        !checkOperand(product.operands[1], *product.rhsLayout, false, plan_->b))
      return false;
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
      if (value->op == ir::Op::Input && fusion_.params[value->paramIndex].isStrided)
        return unsupported("strided parameter " + fusion_.params[value->paramIndex].name,
                           fusion_.params[value->paramIndex].range);
      plan_->epilogue.push_back(value.get());
    }
    return true;
  }

  // --- The schedule -------------------------------------------------------------------

  bool reordered(const sched::TensorSchedule &tensor) {
    if (roots_.empty())
      roots_ = sched::rootTensors(fusion_);
    for (const sched::TensorSchedule &root : roots_) {
      if (root.value != tensor.value)
        continue;
      if (root.loops.size() != tensor.loops.size())
        return true;
      for (size_t i = 0; i < root.loops.size(); ++i)
        if (root.loops[i].name != tensor.loops[i].name)
          return true;
    }
    return false;
  }

  /// Directives of the normalization schedules (loop transforms, placement, memory,
  /// kernel attributes): a matrix product's loops are its tiles.
  void loopDirectives(std::vector<Refusal> &refusals) {
    const char *why = ": a matrix product's loops are its mma tiles; the loop directives of "
                      "the other schedules do not apply (remove it)";
    for (const sched::TensorSchedule &tensor : schedule_.tensors) {
      for (const sched::LoopTransform &t : tensor.transforms)
        refusals.push_back(
            {t.range,
             (t.kind == sched::LoopTransform::Kind::Split ? "split" : "merge") + std::string(why)});
      for (const sched::Loop &loop : tensor.loops) {
        if (loop.parallelizedBy)
          refusals.push_back({loop.parallelizedBy->range, "parallelize" + std::string(why)});
        if (loop.vectorizedBy)
          refusals.push_back({loop.vectorizedBy->range, "vectorize" + std::string(why)});
        if (loop.unrolledBy)
          refusals.push_back({loop.unrolledBy->range, "unroll" + std::string(why)});
        if (loop.unswitched) // no directive range is kept: the schedule's
          refusals.push_back({schedule_.header.fusionRange, "unswitch" + std::string(why)});
      }
      // A reorder keeps no range either: a tensor whose loops are not its root loops.
      if (tensor.transforms.empty() && reordered(tensor))
        refusals.push_back({schedule_.header.fusionRange, "reorder" + std::string(why)});
      auto placement = [&](const std::optional<sched::Origin> &origin, const char *what) {
        if (origin)
          refusals.push_back(
              {origin->range, std::string(what) + " '" + tensor.name + "'" + std::string(why)});
      };
      placement(tensor.rfactorBy, "rfactor of");
      placement(tensor.computeAtBy, "compute_at");
      placement(tensor.computeWithBy, "compute_with");
      placement(tensor.persistentBy, "persistent");
      placement(tensor.cacheBy, "cache");
      placement(tensor.inlinedBy, "inline");
    }
    if (schedule_.inlineAll)
      refusals.push_back({schedule_.inlineAll->range, "inline all" + std::string(why)});
    if (schedule_.reduceForm)
      refusals.push_back({schedule_.reduceForm->origin.range,
                          "reduce one_pass|two_pass: a matrix product's epilogue has no "
                          "reduction pair to combine"});
    if (schedule_.launchBounds)
      refusals.push_back({schedule_.launchBounds->origin.range,
                          "launch_bounds: the block of a matmul kernel is its warpgroups "
                          "(128 threads each), which the mma warp tile sets"});
    if (schedule_.maxRRegCount)
      refusals.push_back({schedule_.maxRRegCount->origin.range,
                          "maxrregcount: a register cap would spill the wgmma accumulators; the "
                          "register split of matmul kernels is warp_specialize's, not lowered "
                          "yet"});
  }

  /// The matrix-product directives this slice does not lower.
  void matmulDirectives(std::vector<Refusal> &refusals) {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (mm.epilogue && mm.epilogue->via != sched::EpilogueKind::Registers)
      sharedEpilogue(refusals);
    if (mm.pipeline && !mm.pipeline->viaTma)
      refusals.push_back({mm.pipeline->origin.range,
                          "pipeline without 'via tma': the operand tiles are loaded by TMA "
                          "only (pipeline N stages via tma)"});
  }

  /// The output tile through shared memory: one output, over [M, N] with N contiguous,
  /// whose rows TMA (or 16-byte copies) can write.
  void sharedEpilogue(std::vector<Refusal> &refusals) {
    const sched::Applied<sched::Epilogue> &epilogue = *schedule_.matmul.epilogue;
    std::string what = epilogue.via == sched::EpilogueKind::SharedTmaStore
                           ? "epilogue via shared tma_store"
                           : "epilogue via shared";
    if (fusion_.outputs.size() != 1) {
      refusals.push_back({epilogue.origin.range,
                          what + ": the output tile of one output goes through shared memory; " +
                              std::to_string(fusion_.outputs.size()) +
                              " outputs take the epilogue via registers"});
      return;
    }
    const ir::Output &output = fusion_.outputs[0];
    if (output.dims.size() != 2 || output.dims[0] != plan_->m || output.dims[1] != plan_->n)
      refusals.push_back({epilogue.origin.range,
                          what + ": output " + output.name + " is not [" + dimName(plan_->m) +
                              ", " + dimName(plan_->n) + "] (" + dimName(plan_->n) +
                              " contiguous); write it so, or take the epilogue via registers"});
    std::optional<int64_t> n = fusion_.dims[plan_->n].staticExtent;
    int64_t rowBytes = n ? *n * ir::dtypeBytes(output.dtype) : 16;
    if (rowBytes % 16 != 0)
      refusals.push_back(
          {epilogue.origin.range,
           llvm::formatv("{0}: rows of {1} are {2} x {3} = {4} bytes apart; the shared output "
                         "tile is written in 16-byte pieces (take the epilogue via registers)",
                         what, output.name, dimName(plan_->n), ir::dtypeName(output.dtype),
                         rowBytes)
               .str()});
  }

  bool checkDirectives() {
    std::vector<Refusal> refusals;
    loopDirectives(refusals);
    matmulDirectives(refusals);
    if (refusals.empty())
      return true;
    // The first refused directive in the text, so a schedule is fixed from the top.
    const Refusal *first = &refusals.front();
    for (const Refusal &r : refusals)
      if (r.at.Start.getPointer() < first->at.Start.getPointer())
        first = &r;
    return unsupported(first->why, first->at);
  }

  bool planTiles() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.mma)
      return unsupported("a matrix product is lowered from its mma tile: write, say, 'mma over " +
                         dimName(plan_->k) +
                         ": tile (128, 128, 64), warp (64, 128), instruction wgmma(64, 128, "
                         "16);' and 'pipeline 3 stages via tma;'");
    const sched::Applied<sched::Mma> &mma = *mm.mma;
    plan_->mmaOrigin = {"mma over " + mma.reductionDim.text, mma.origin.range};
    if (mma.instruction.text != "wgmma")
      return unsupported("instruction " + mma.instruction.text + ": only wgmma is lowered",
                         mma.instruction.range);
    if (mma.ctaTile.size() != 3 || mma.warpTile.size() != 2 || mma.instructionShape.size() != 3)
      return unsupported("the mma directive needs a tile (M, N, K), a warp tile (M, N) and an "
                         "instruction shape (M, N, K)",
                         mma.origin.range);
    const sched::Count &bm = mma.ctaTile[0], &bn = mma.ctaTile[1], &bk = mma.ctaTile[2];
    const sched::Count &wm = mma.warpTile[0], &wn = mma.warpTile[1];
    const sched::Count &im = mma.instructionShape[0], &in = mma.instructionShape[1],
                       &ik = mma.instructionShape[2];
    int64_t rowElements = 128 / ir::dtypeBytes(plan_->a.dtype);
    if (bk.value != rowElements)
      return unsupported(llvm::formatv("a K tile of {0}: the operand tiles are rows of one "
                                       "128-byte swizzle span, {1} {2} elements",
                                       bk.value, rowElements, ir::dtypeName(plan_->a.dtype))
                             .str(),
                         bk.range);
    if (im.value != 64 || ik.value != 16 || !wrappedInstructionN(in.value))
      return unsupported(llvm::formatv("instruction wgmma({0}, {1}, {2}): m64nNk16 with N = 64, "
                                       "128 or 256 is lowered",
                                       im.value, in.value, ik.value)
                             .str(),
                         im.value != 64   ? im.range
                         : ik.value != 16 ? ik.range
                                          : in.range);
    if (wm.value < 64 || wm.value % 64 != 0 || wn.value < in.value || wn.value % in.value != 0)
      return unsupported(llvm::formatv("warp tile ({0}, {1}): a warpgroup's tile is whole "
                                       "wgmma instructions (a multiple of 64 by a multiple of {2})",
                                       wm.value, wn.value, in.value)
                             .str(),
                         wm.range);
    if (bm.value < wm.value || bn.value < wn.value || bm.value % wm.value != 0 ||
        bn.value % wn.value != 0)
      return unsupported(llvm::formatv("warp tile ({0}, {1}) does not divide the tile ({2}, {3})",
                                       wm.value, wn.value, bm.value, bn.value)
                             .str(),
                         wm.range);
    if (bm.value > 256 || bn.value > 256)
      return unsupported(
          llvm::formatv("a tile of ({0}, {1}): a TMA box has at most 256 rows", bm.value, bn.value)
              .str(),
          bm.range);
    if (plan_->a.param == plan_->b.param && bm.value != bn.value)
      return unsupported(llvm::formatv("both operands are {0}: one tensor map loads both tiles, "
                                       "so the tile's M and N must be equal ({1} and {2})",
                                       fusion_.params[plan_->a.param].name, bm.value, bn.value)
                             .str(),
                         bm.range);
    plan_->tileM = bm.value;
    plan_->tileN = bn.value;
    plan_->tileK = bk.value;
    plan_->warpM = wm.value;
    plan_->warpN = wn.value;
    plan_->instructionN = in.value;
    plan_->warpgroups = plan_->warpgroupsM() * plan_->warpgroupsN();
    if (plan_->accumulators() > 128)
      return unsupported(llvm::formatv("warp tile ({0}, {1}): {2} f32 accumulators a thread; at "
                                       "most 128 fit its registers (64 x 256 a warpgroup)",
                                       wm.value, wn.value, plan_->accumulators())
                             .str(),
                         wm.range);
    if (plan_->warpgroups > 4)
      return unsupported(
          llvm::formatv("{0} warpgroups a CTA; at most 4 are lowered", plan_->warpgroups).str(),
          wm.range);
    if (!mm.pipeline)
      return unsupported("a matrix product needs its operand pipeline: write 'pipeline 3 stages "
                         "via tma;'",
                         mma.origin.range);
    if (mm.pipeline->stages.value < 1)
      return unsupported("a pipeline of fewer than one stage", mm.pipeline->stages.range);
    plan_->stages = mm.pipeline->stages.value;
    plan_->pipelineOrigin = {"pipeline " + std::to_string(plan_->stages) + " stages via tma",
                             mm.pipeline->origin.range};
    plan_->tilesOrigin = {"tiles one_per_cta",
                          mm.tiles.empty() ? mma.origin.range : mm.tiles[0].origin.range};
    if (!mm.tiles.empty() && (mm.tiles[0].order == sched::TileOrder::Persistent ||
                              mm.tiles[0].order == sched::TileOrder::StreamK)) {
      bool streamK = mm.tiles[0].order == sched::TileOrder::StreamK;
      plan_->tileWalk = streamK ? TileWalk::StreamK : TileWalk::Persistent;
      plan_->tileGroup = mm.tiles[0].parameter ? mm.tiles[0].parameter->value : 1;
      if (plan_->tileGroup < 1)
        return unsupported("a swizzle of fewer than one tile", mm.tiles[0].parameter->range);
      plan_->tilesOrigin.text =
          std::string(streamK ? "tiles stream_k" : "tiles persistent") +
          (mm.tiles[0].parameter ? " swizzle " + std::to_string(plan_->tileGroup) : "");
    }
    if (!mm.tiles.empty() && mm.tiles[0].order == sched::TileOrder::SplitK) {
      const sched::Count *split = mm.tiles[0].parameter ? &*mm.tiles[0].parameter : nullptr;
      if (!split || split->value < 1 || split->value > 64)
        return unsupported("split_k takes 1 to 64 parts of K",
                           split ? split->range : mm.tiles[0].origin.range);
      plan_->splitK = split->value;
      plan_->tilesOrigin.text = "tiles split_k " + std::to_string(plan_->splitK);
      if (mm.epilogue && mm.epilogue->via != sched::EpilogueKind::Registers && plan_->splitK > 1)
        return unsupported("split_k: the epilogue runs in the kernel that adds the partial "
                           "tiles, element by element; write 'epilogue via registers'",
                           mm.epilogue->origin.range);
    }
    plan_->epilogueVia = mm.epilogue ? mm.epilogue->via : sched::EpilogueKind::Registers;
    plan_->epilogueOrigin = {
        plan_->epilogueVia == sched::EpilogueKind::Registers ? "epilogue via registers"
        : plan_->epilogueVia == sched::EpilogueKind::Shared  ? "epilogue via shared"
                                                             : "epilogue via shared tma_store",
        mm.epilogue ? mm.epilogue->origin.range : mma.origin.range};
    return planWarpRoles() && planCluster() && planSecondProduct();
  }

  /// Two products: a second accumulator set of the same size, in the same registers.
  bool planSecondProduct() {
    const ir::Value *second = plan_->product2;
    if (!second)
      return true;
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (2 * plan_->accumulators() > 128)
      return unsupported(llvm::formatv("two products: warp tile ({0}, {1}) gives {2} f32 "
                                       "accumulators a thread for each; at most 128 fit (64 x 128 "
                                       "a warpgroup for two products)",
                                       plan_->warpM, plan_->warpN, 2 * plan_->accumulators())
                             .str(),
                         mm.mma->origin.range);
    if (plan_->twoKernels())
      return unsupported(plan_->tilesOrigin.text +
                             " with two products: the partial tiles would carry two "
                             "accumulators (not lowered); write tiles persistent",
                         plan_->tilesOrigin.range);
    if (plan_->clusterM > 1)
      return unsupported("cluster with two products (not lowered)", plan_->clusterOrigin.range);
    return true;
  }

  /// `cluster (C, 1) [multicast]`: C consecutive M tiles of one N tile a cluster.
  bool planCluster() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.cluster)
      return true;
    const sched::Applied<sched::Cluster> &cluster = *mm.cluster;
    if (cluster.shape.size() != 2)
      return unsupported("a cluster of (M CTAs, N CTAs)", cluster.origin.range);
    if (cluster.shape[1].value != 1)
      return unsupported("a cluster along N: clusters of consecutive M tiles, (2, 1) or (4, 1), "
                         "are lowered",
                         cluster.shape[1].range);
    int64_t c = cluster.shape[0].value;
    if (c != 1 && c != 2 && c != 4)
      return unsupported(llvm::formatv("a cluster of {0} M tiles: 1, 2 or 4 are lowered", c).str(),
                         cluster.shape[0].range);
    if (plan_->splitK > 1 && c > 1)
      return unsupported("cluster with split_k: the parts of K run as a grid z of their own",
                         cluster.origin.range);
    if (plan_->tileWalk == TileWalk::StreamK && c > 1)
      return unsupported("cluster with stream_k: the CTAs of a cluster would take different "
                         "runs of K, so they share no b tile",
                         cluster.origin.range);
    if (plan_->tileGroups > 1 && c > 1)
      return unsupported("cluster with two consumer groups: the groups of a cluster's CTAs "
                         "would release a shared b stage at different times (not lowered)",
                         cluster.origin.range);
    plan_->clusterM = c;
    plan_->multicast = cluster.multicast && c > 1;
    plan_->clusterOrigin = {"cluster (" + std::to_string(c) + ", 1)" +
                                (cluster.multicast ? " multicast" : ""),
                            cluster.origin.range};
    if (plan_->multicast) {
      if (!plan_->warpSpecialized)
        return unsupported("cluster multicast without warp_specialize: a stage another CTA "
                           "writes into is freed by the consumers' empty barriers, which only "
                           "the producer warpgroup waits on",
                           cluster.origin.range);
      // Each CTA loads 1/C of the b tile: whole 64-column blocks when N is contiguous.
      int64_t span = 128 / ir::dtypeBytes(plan_->b.dtype);
      if (plan_->tileN % c != 0 || (!plan_->b.kContiguous && (plan_->tileN / span) % c != 0) ||
          plan_->tileN / c < 8)
        return unsupported(llvm::formatv("cluster multicast: the b tile of {0} rows does not "
                                         "split into {1} equal boxes",
                                         plan_->tileN, c)
                               .str(),
                           cluster.origin.range);
    }
    return true;
  }

  /// `warp_specialize producer(regs P), consumers(W, regs C)`: the consumers are the
  /// warpgroups the warp tile gives.
  bool planWarpRoles() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.warpSpecialize)
      return true;
    const sched::Applied<sched::WarpSpecialize> &ws = *mm.warpSpecialize;
    int64_t perTile = plan_->warpgroups;
    if (ws.consumerCount.value != perTile && ws.consumerCount.value != 2 * perTile)
      return unsupported(
          llvm::formatv("consumers({0}): the warp tile ({1}, {2}) of the tile ({3}, {4}) gives {5} "
                        "consumer warpgroups a tile; write {5}, or {6} for two groups taking "
                        "alternate tiles",
                        ws.consumerCount.value, plan_->warpM, plan_->warpN, plan_->tileM,
                        plan_->tileN, perTile, 2 * perTile)
              .str(),
          ws.consumerCount.range);
    if (ws.consumerCount.value == 2 * perTile) {
      if (plan_->tileWalk == TileWalk::OnePerCta || plan_->splitK > 1)
        return unsupported(
            llvm::formatv("consumers({0}): two groups of {1} take alternate tiles of a CTA; with "
                          "one tile a CTA ({2}) the second would idle: write tiles persistent or "
                          "stream_k",
                          ws.consumerCount.value, perTile, plan_->tilesOrigin.text)
                .str(),
            ws.consumerCount.range);
      if (2 * perTile > 4)
        return unsupported(
            llvm::formatv("consumers({0}): at most 4 consumer warpgroups are lowered",
                          ws.consumerCount.value)
                .str(),
            ws.consumerCount.range);
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
    return true;
  }

  const sched::Schedule &schedule_;
  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  std::unique_ptr<MatmulPlan> plan_;
  std::vector<sched::TensorSchedule> roots_; // the unscheduled loops, for `reorder`
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
