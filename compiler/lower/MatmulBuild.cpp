// MatmulBuild.cpp — the `build-matmul` pass: a matrix-product plan as Kernel IR (the
// kernel's shape is drawn in Matmul.h).
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
#include "lower/Matmul.h"
#include "lower/Pointwise.h"

#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>

#include <functional>
#include <set>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;
using kir::StmtKind;

std::string valueName(const ir::Value &value) {
  return value.name.empty() ? "v" + std::to_string(value.id)
                            : value.name + "_" + std::to_string(value.id);
}

// --- Hopper statements (IR.h has constructors for the generic ones only) ------------------

std::shared_ptr<kir::StmtNode> node(StmtKind kind, std::string comment = {}) {
  auto s = std::make_shared<kir::StmtNode>();
  s->kind = kind;
  s->comment = std::move(comment);
  return s;
}

Stmt mbarrierOp(StmtKind kind, const kir::BufferPtr &barrier, Expr index, Expr count,
                std::string comment = {}) {
  auto s = node(kind, std::move(comment));
  s->buffer = barrier;
  s->index = std::move(index);
  s->count = std::move(count);
  return s;
}

Stmt tmaLoad(const kir::TensorMapPtr &map, std::vector<Expr> coordinates,
             const kir::BufferPtr &tile, Expr offset, const kir::BufferPtr &barrier,
             Expr barrierIndex) {
  auto s = node(StmtKind::TmaLoad);
  s->tensorMap = map;
  s->coordinates = std::move(coordinates);
  s->buffer = tile;
  s->index = std::move(offset);
  s->barrier = barrier;
  s->barrierIndex = std::move(barrierIndex);
  return s;
}

Stmt wgmmaWait(int64_t pending, std::string comment) {
  auto s = node(StmtKind::WgmmaWait, std::move(comment));
  s->pending = pending;
  return s;
}

/// `s` as coming from `range` of the fusion (for the CUDA printer's source lines).
Stmt from(const Stmt &s, llvm::SMRange range) {
  auto node = std::make_shared<kir::StmtNode>(*s);
  node->origin.range = range;
  return node;
}

Stmt sharedAllocation(const kir::BufferPtr &buffer, int64_t byteOffset, std::string comment) {
  auto s = std::make_shared<kir::StmtNode>(*kir::allocate(buffer, std::move(comment)));
  s->index = kir::index(byteOffset);
  return s;
}

kir::BufferPtr makeBuffer(std::string name, ir::DType dtype, kir::MemorySpace space,
                          std::vector<int64_t> shape, kir::Swizzle swizzle = kir::Swizzle::None,
                          int64_t alignment = 16) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = space;
  b->shape = std::move(shape);
  b->swizzle = swizzle;
  b->alignment = alignment;
  return b;
}

class MatmulBuilder {
public:
  MatmulBuilder(LowerContext &cx, const MatmulPlan &plan) : cx_(cx), plan_(plan), f_(cx.fusion) {}

  bool run() {
    reserveNames();
    // The product's operands are passed as TMA tensor maps.
    cx_.addParameters([&](unsigned param, const kir::BufferPtr &buffer) -> kir::TensorMapPtr {
      if (!isOperand(param))
        return nullptr;
      return (param == plan_.a.param ? mapA_ : mapB_) = tensorMap(f_.params[param], buffer);
    });
    mTile_ = kir::makeVar(fresh("m_tile"), ir::DType::I64);
    nTile_ = kir::makeVar(fresh("n_tile"), ir::DType::I64);
    tid_ = kir::makeVar(fresh("tid"), ir::DType::I64);
    warpgroup_ = kir::makeVar(fresh("warpgroup"), ir::DType::I64);

    std::vector<Stmt> body;
    makeStorage(body);
    makeMainLoop(body);
    makeEpilogue(body);

    Stmt nest = kir::block(std::move(body));
    nest = kir::parallelLoop(warpgroup_, kir::index(plan_.warpgroups), kir::Axis::Warpgroup, nest,
                             {"consumer warpgroups: " + std::to_string(plan_.warpgroupsM()) +
                                  " x " + std::to_string(plan_.warpgroupsN()) + " of " +
                                  std::to_string(plan_.warpM) + " x " + std::to_string(plan_.warpN),
                              plan_.mmaOrigin.range});
    nest = kir::parallelLoop(tid_, kir::index(128 * plan_.warpgroups), kir::Axis::TIDx, nest);
    nest = kir::parallelLoop(nTile_, tiles(plan_.n, plan_.tileN), kir::Axis::BIDy, nest,
                             {"tiles one_per_cta: " + std::to_string(plan_.tileN) + " columns",
                              plan_.tilesOrigin.range});
    nest = kir::parallelLoop(
        mTile_, tiles(plan_.m, plan_.tileM), kir::Axis::BIDx, nest,
        {"tiles one_per_cta: " + std::to_string(plan_.tileM) + " rows", plan_.tilesOrigin.range});
    cx_.kernel.body =
        kir::block({kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents), nest});
    makeLaunchShape();
    return true;
  }

private:
  // --- Names and parameters ------------------------------------------------------------

  /// The names the fusion gives to parameters, outputs, dimensions and values (the
  /// kernel's parameters and lets): the kernel's own variables and buffers stay clear of
  /// them. Its own names are distinct or in disjoint scopes by construction.
  void reserveNames() {
    for (const ir::Param &param : f_.params)
      reserved_.insert(param.name);
    for (const ir::Output &output : f_.outputs)
      reserved_.insert(output.name);
    for (const ir::Dim &dim : f_.dims)
      reserved_.insert(dim.name);
    for (const auto &value : f_.values)
      reserved_.insert(valueName(*value));
  }

  std::string fresh(std::string name) const {
    while (reserved_.count(name))
      name += "_";
    return name;
  }

  kir::VarPtr var(const std::string &name) const {
    return kir::makeVar(fresh(name), ir::DType::I64);
  }

  bool isOperand(unsigned param) const { return param == plan_.a.param || param == plan_.b.param; }

  /// An operand's tensor map: boxes of (tile rows) x (one 128-byte row of K), swizzled.
  kir::TensorMapPtr tensorMap(const ir::Param &param, const kir::BufferPtr &buffer) {
    auto map = std::make_shared<kir::TensorMap>();
    map->name = fresh(param.name + "_map");
    map->global = buffer;
    for (ir::DimId dim : param.dims)
      map->extents.push_back(cx_.dimExtent(dim));
    map->box = {param.dims[0] == plan_.m ? plan_.tileM : plan_.tileN, plan_.tileK};
    map->swizzle = kir::Swizzle::Bytes128;
    return map;
  }

  Expr tiles(ir::DimId dim, int64_t tile) const {
    return (cx_.dimExtent(dim) + kir::index(tile - 1)) / kir::index(tile);
  }

  // --- Storage ----------------------------------------------------------------------------

  int64_t tileElements(int64_t rows) const { return rows * plan_.tileK; }
  int64_t operandBytes() const { return ir::dtypeBytes(plan_.a.dtype); }

  /// The shared operand ring (each stage's tiles 1024-byte aligned, as the 128-byte
  /// swizzle's pattern repeats every 1024 bytes), the full barriers after it, and the
  /// accumulators, zeroed: every wgmma accumulates (scale-d 1).
  void makeStorage(std::vector<Stmt> &out) {
    int64_t s = plan_.stages;
    int64_t aBytes = s * tileElements(plan_.tileM) * operandBytes();
    int64_t bBytes = s * tileElements(plan_.tileN) * operandBytes();
    aTiles_ = makeBuffer(fresh("a_tiles"), plan_.a.dtype, kir::MemorySpace::Shared,
                         {s * tileElements(plan_.tileM)}, kir::Swizzle::Bytes128, 1024);
    bTiles_ = makeBuffer(fresh("b_tiles"), plan_.b.dtype, kir::MemorySpace::Shared,
                         {s * tileElements(plan_.tileN)}, kir::Swizzle::Bytes128, 1024);
    full_ = makeBuffer(fresh("full"), ir::DType::I64, kir::MemorySpace::Shared, {s},
                       kir::Swizzle::None, 8);
    auto stagesOf = [&](const ir::Param &param, int64_t rows) {
      return std::to_string(s) + " stages of the " + std::to_string(rows) + " x " +
             std::to_string(plan_.tileK) + " tile of " + param.name + " (128-byte swizzle)";
    };
    Stmt a = sharedAllocation(aTiles_, 0, stagesOf(f_.params[plan_.a.param], plan_.tileM));
    Stmt b = sharedAllocation(bTiles_, aBytes, stagesOf(f_.params[plan_.b.param], plan_.tileN));
    auto aNode = std::make_shared<kir::StmtNode>(*a);
    aNode->origin = plan_.pipelineOrigin;
    out.push_back(aNode);
    out.push_back(b);
    out.push_back(
        sharedAllocation(full_, aBytes + bBytes, "full barriers: a stage's tiles have landed"));
    sharedBytes_ = aBytes + bBytes + 8 * s;
    acc_ =
        makeBuffer(fresh("acc"), ir::DType::F32, kir::MemorySpace::Local, {plan_.accumulators()});
    out.push_back(kir::allocate(acc_, "f32 accumulators: the thread's fragments of " +
                                          std::to_string(plan_.warpM) + " x " +
                                          std::to_string(plan_.warpN)));
    kir::VarPtr i = var("i");
    out.push_back(kir::forLoop(i, kir::index(plan_.accumulators()), kir::LoopKind::Unrolled,
                               kir::store(acc_, kir::var(i), kir::constant(0, ir::DType::F32))));
    kir::VarPtr stage = var("stage");
    // The fence makes the initialized barriers visible to the asynchronous proxy, which
    // completes TMA transactions on them (CUDA programming guide, "Using TMA to transfer
    // multi-dimensional arrays").
    out.push_back(kir::ifThen(
        elected(),
        kir::block(
            {kir::forLoop(stage, kir::index(s), kir::LoopKind::Unrolled,
                          mbarrierOp(StmtKind::MBarrierInit, full_, kir::var(stage), kir::index(1),
                                     "one arrival (with the expected bytes) a phase")),
             node(StmtKind::FenceProxyAsync, "the barriers, for the TMA unit")}),
        nullptr, "one thread initializes the barriers"));
    auto sync = std::make_shared<kir::StmtNode>(*kir::barrier());
    sync->comment = "the barriers are initialized before any thread uses them";
    out.push_back(sync);
  }

  /// The thread that issues the TMA loads (thread 0 of warpgroup 0).
  Expr elected() const { return kir::binary(kir::BinaryOp::Eq, kir::var(tid_), kir::index(0)); }

  // --- The K loop --------------------------------------------------------------------------

  /// Expect the stage's bytes, then load k tile `kTile` of both operands into `stage`.
  Stmt loadStage(Expr kTile, Expr stage) {
    Expr k = kTile * kir::index(plan_.tileK);
    int64_t bytes = plan_.stageBytes();
    return kir::block({
        mbarrierOp(StmtKind::MBarrierArriveExpectTx, full_, stage, kir::index(bytes),
                   "the whole boxes count, zero-filled parts too"),
        tmaLoad(mapA_, {kir::var(mTile_) * kir::index(plan_.tileM), k}, aTiles_,
                stage * kir::index(tileElements(plan_.tileM)), full_, stage),
        tmaLoad(mapB_, {kir::var(nTile_) * kir::index(plan_.tileN), k}, bTiles_,
                stage * kir::index(tileElements(plan_.tileN)), full_, stage),
    });
  }

  /// `body(index)` in an unrolled loop, or `body(0)` alone for one iteration.
  Stmt unrolled(const std::string &name, int64_t extent, const std::function<Stmt(Expr)> &body) {
    if (extent == 1)
      return body(kir::index(0));
    kir::VarPtr v = var(name);
    return kir::forLoop(v, kir::index(extent), kir::LoopKind::Unrolled, body(kir::var(v)));
  }

  /// The warpgroup's position in the CTA tile: row-major over (BM / WM) x (BN / WN).
  Expr warpgroupRow() const {
    return kir::var(warpgroup_) / kir::index(plan_.warpgroupsN()) * kir::index(plan_.warpM);
  }
  Expr warpgroupColumn() const {
    return kir::var(warpgroup_) % kir::index(plan_.warpgroupsN()) * kir::index(plan_.warpN);
  }

  void makeMainLoop(std::vector<Stmt> &out) {
    int64_t s = plan_.stages;
    Expr k = cx_.dimExtent(plan_.k);
    kTiles_ = var("k_tiles");
    out.push_back(kir::let(kTiles_, (k + kir::index(plan_.tileK - 1)) / kir::index(plan_.tileK),
                           "k tiles; the last one's columns past K are zero-filled"));
    // The prologue: k tiles 0 .. S - 2, each in its own stage.
    if (s > 1) {
      kir::VarPtr stage = var("stage");
      Stmt load = kir::ifThen(kir::var(stage) < kir::var(kTiles_),
                              loadStage(kir::var(stage), kir::var(stage)));
      auto prologue = std::make_shared<kir::StmtNode>(*kir::ifThen(
          elected(), kir::forLoop(stage, kir::index(s - 1), kir::LoopKind::Unrolled, load)));
      prologue->comment = "the first " + std::to_string(s - 1) + " stages";
      prologue->origin = plan_.pipelineOrigin;
      out.push_back(prologue);
    }
    kir::VarPtr kTile = var("k_tile");
    std::vector<Stmt> iteration;
    {
      // The load S - 1 tiles ahead goes into the stage the previous iteration read, which
      // the barrier that ended it has freed.
      kir::VarPtr next = var("next_tile");
      Stmt issue = kir::block({
          kir::let(next, kir::var(kTile) + kir::index(s - 1)),
          kir::ifThen(kir::var(next) < kir::var(kTiles_),
                      loadStage(kir::var(next), kir::var(next) % kir::index(s))),
      });
      iteration.push_back(kir::ifThen(elected(), issue, nullptr,
                                      "k tile k_tile + " + std::to_string(s - 1) + ", " +
                                          std::to_string(s - 1) + " stages ahead"));
    }
    kir::VarPtr stage = var("stage");
    iteration.push_back(kir::let(stage, kir::var(kTile) % kir::index(s)));
    iteration.push_back(mbarrierOp(StmtKind::MBarrierWait, full_, kir::var(stage),
                                   kir::var(kTile) / kir::index(s) % kir::index(2),
                                   "the stage's tiles have landed (its use number's parity)"));
    iteration.push_back(node(StmtKind::WgmmaFence, "the accumulators' earlier accesses first"));
    int64_t in = plan_.instructionN;
    Stmt mma = unrolled("k_step", plan_.tileK / 16, [&](Expr ks) {
      return unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
        return unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
          auto w = node(StmtKind::Wgmma);
          w->shape = kir::WgmmaShape{64, static_cast<int>(in), 16};
          w->inputType = plan_.a.dtype;
          w->buffer = acc_;
          w->index = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
          w->operandA = aTiles_;
          w->offsetA = kir::var(stage) * kir::index(tileElements(plan_.tileM)) +
                       (warpgroupRow() + mi * kir::index(64)) * kir::index(plan_.tileK) +
                       ks * kir::index(16);
          w->operandB = bTiles_;
          w->offsetB = kir::var(stage) * kir::index(tileElements(plan_.tileN)) +
                       (warpgroupColumn() + ni * kir::index(in)) * kir::index(plan_.tileK) +
                       ks * kir::index(16);
          return Stmt(w);
        });
      });
    });
    auto mmaNode = std::make_shared<kir::StmtNode>(*mma);
    mmaNode->origin = plan_.mmaOrigin;
    iteration.push_back(mmaNode);
    iteration.push_back(node(StmtKind::WgmmaCommit));
    iteration.push_back(wgmmaWait(0, "this stage's products are done"));
    auto sync = std::make_shared<kir::StmtNode>(*kir::barrier());
    sync->comment = "every warpgroup is done with the stage before it is refilled";
    iteration.push_back(sync);
    out.push_back(kir::forLoop(kTile, kir::var(kTiles_), kir::LoopKind::Serial,
                               kir::block(std::move(iteration)), plan_.mmaOrigin));
  }

  // --- The epilogue ------------------------------------------------------------------------

  void makeEpilogue(std::vector<Stmt> &out) {
    out.push_back(kir::comment("Epilogue: each accumulator element's row and column, the "
                               "fusion's epilogue, stores inside the output"));
    kir::VarPtr lane = var("lane"), row0 = var("row0"), col0 = var("col0");
    out.push_back(kir::let(lane, kir::var(tid_) % kir::index(128), "thread of the warpgroup"));
    Expr l = kir::var(lane);
    out.push_back(kir::let(row0, kir::var(mTile_) * kir::index(plan_.tileM) + warpgroupRow() +
                                     kir::index(16) * (l / kir::index(32)) +
                                     l % kir::index(32) / kir::index(4)));
    out.push_back(kir::let(col0, kir::var(nTile_) * kir::index(plan_.tileN) + warpgroupColumn() +
                                     kir::index(2) * (l % kir::index(4))));
    int64_t in = plan_.instructionN;
    Stmt nest = unrolled("mi", plan_.instructionsM(), [&](Expr mi) {
      return unrolled("ni", plan_.instructionsN(), [&](Expr ni) {
        return unrolled("ns", in / 8, [&](Expr ns) {
          return unrolled("h", 2, [&](Expr h) {
            return unrolled("c", 2, [&](Expr c) {
              Expr fragment = (mi * kir::index(plan_.instructionsN()) + ni) * kir::index(in / 2);
              Expr element = fragment + ns * kir::index(4) + h * kir::index(2) + c;
              return elementBody(mi, ni, ns, h, c, element, row0, col0);
            });
          });
        });
      });
    });
    auto node = std::make_shared<kir::StmtNode>(*nest);
    node->comment = "the fragments of wgmma m64n" + std::to_string(in) + "k16";
    node->origin = plan_.epilogueOrigin;
    out.push_back(node);
  }

  /// One accumulator element: its position, the bounds check, the epilogue and stores.
  Stmt elementBody(Expr mi, Expr ni, Expr ns, Expr h, Expr c, Expr accIndex,
                   const kir::VarPtr &row0, const kir::VarPtr &col0) {
    kir::VarPtr row = var("row"), col = var("col");
    std::vector<Stmt> element;
    element.push_back(kir::let(row, kir::var(row0) + mi * kir::index(64) + h * kir::index(8)));
    element.push_back(kir::let(col, kir::var(col0) + ni * kir::index(plan_.instructionN) +
                                        ns * kir::index(8) + c));
    // Dimension indices for addresses: M and N are this element's row and column.
    cx_.rootIndex.assign(f_.dims.size(), kir::index(0));
    cx_.rootIndex[plan_.m] = kir::var(row);
    cx_.rootIndex[plan_.n] = kir::var(col);
    std::vector<Stmt> body;
    std::map<unsigned, Expr> values;
    const ir::Value &product = *plan_.product;
    kir::VarPtr accumulated = kir::makeVar(valueName(product), ir::DType::F32);
    body.push_back(
        from(kir::let(accumulated, kir::load(acc_, accIndex), product.name), product.range));
    values[product.id] = kir::var(accumulated);
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
        expr = pointwiseOperation(*value, operands);
      }
      kir::VarPtr v = kir::makeVar(valueName(*value), value->dtype);
      body.push_back(from(kir::let(v, expr, value->name), value->range));
      values[value->id] = kir::var(v);
    }
    for (unsigned o = 0; o < f_.outputs.size(); ++o) {
      const ir::Output &output = f_.outputs[o];
      body.push_back(from(
          kir::store(cx_.outputBuffers[o], cx_.offsetOf(output.dims), values.at(output.value->id)),
          output.range));
    }
    Expr inside = kir::var(row) < cx_.dimExtent(plan_.m) && kir::var(col) < cx_.dimExtent(plan_.n);
    element.push_back(kir::ifThen(inside, kir::block(std::move(body)), nullptr,
                                  "tails: only elements inside the output"));
    return kir::block(std::move(element));
  }

  /// A cast to bf16 or f16 that only outputs of that type store: the store rounds the
  /// f32 value once (as the store-rounding pass does for the other kernels).
  bool roundedByStore(const ir::Value &value) const {
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

  // --- Launch ------------------------------------------------------------------------------

  void makeLaunchShape() {
    kir::LaunchShape &launch = cx_.kernel.launch;
    launch.grid = {tiles(plan_.m, plan_.tileM), tiles(plan_.n, plan_.tileN), kir::index(1)};
    launch.block = {kir::index(128 * plan_.warpgroups), kir::index(1), kir::index(1)};
    launch.sharedBytes = kir::index(sharedBytes_);
    launch.maxThreads = 128 * plan_.warpgroups;
  }

  LowerContext &cx_;
  const MatmulPlan &plan_;
  const ir::Fusion &f_;
  std::set<std::string> reserved_;
  kir::TensorMapPtr mapA_, mapB_;
  kir::VarPtr mTile_, nTile_, tid_, warpgroup_, kTiles_;
  kir::BufferPtr aTiles_, bTiles_, full_, acc_;
  int64_t sharedBytes_ = 0;
};

} // namespace

bool buildMatmul(LowerContext &context, const MatmulPlan &plan) {
  return MatmulBuilder(context, plan).run();
}

} // namespace fsl::lower
