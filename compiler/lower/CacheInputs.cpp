// CacheInputs.cpp — the `cache-inputs` pass: `cache t in shared` as a copy a block.
//
// An input tensor that every block reads whole (no dimension of it on a block index: the
// checker refuses the others, cache-block-varying) is copied into shared memory once a
// block, before anything else the block does: its threads take consecutive elements
// (coalesced), in vectors as wide as the kernel's vector reads of the tensor, each checked
// against the tensor's extents; then one barrier, and every read of the tensor in the
// kernel reads the copy at the same element offset. A strided input's copy is contiguous:
// in the redirected offsets its stride variables become the contiguous strides. The
// copies follow the per-thread shared memory (reduction scratch, persistent buffers), each
// 16-byte aligned; launch-shape adds their bytes (LowerContext::cachedInputBytes).
//
// It runs after vectorize, whose vector reads of the tensor it redirects (and whose width
// the copy takes), and before early-loads and prefetch, which load global memory ahead
// and so leave the reads of the copy alone. A grid reduction's second kernel reads the
// tensor from global memory: it runs one thread a row, with nothing to share.
#include "lower/Passes.h"

#include "kir/Mutator.h"
#include "support/Internal.h"

#include <numeric>

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

/// Every read of one global buffer redirected to its copy in shared memory.
class RedirectReads : public kir::Mutator {
public:
  RedirectReads(kir::BufferPtr global, kir::BufferPtr copy,
                std::function<Expr(const kir::VarPtr &)> contiguousStride)
      : global_(std::move(global)), copy_(std::move(copy)),
        contiguousStride_(std::move(contiguousStride)) {}
  using Mutator::mutate;

  Expr mutate(const Expr &e) override {
    Expr rebuilt = mutateChildren(e);
    if (rebuilt->kind != kir::ExprKind::Load || rebuilt->buffer != global_)
      return rebuilt;
    return kir::load(copy_, copyOffset(rebuilt->operands[0]));
  }

  Stmt mutate(const Stmt &s) override {
    Stmt rebuilt = mutateChildren(s);
    if (rebuilt->kind != kir::StmtKind::VectorCopy || rebuilt->source != global_)
      return rebuilt;
    auto redirected = std::make_shared<kir::StmtNode>(*rebuilt); // origin and comment kept
    redirected->source = copy_;
    redirected->sourceIndex = copyOffset(rebuilt->sourceIndex);
    return redirected;
  }

private:
  Expr copyOffset(const Expr &offset) const {
    return contiguousStride_ ? kir::substitute(offset, contiguousStride_) : offset;
  }

  kir::BufferPtr global_, copy_;
  std::function<Expr(const kir::VarPtr &)> contiguousStride_;
};

class Cacher {
public:
  explicit Cacher(LowerContext &cx) : cx_(cx) {
    // A static block folds the offsets and the copy loops' trip counts into numbers.
    std::optional<int64_t> threads = cx.plan.staticThreads();
    threads_ = threads ? kir::index(*threads) : blockThreads();
  }

  void run() {
    Expr offset = alignTo16(threads_ * kir::index(cx_.plan.sharedBytesPerThread())) +
                  kir::index(cx_.gridSyncSharedBytes); // grid_sync's lane sums before

    Expr total = kir::index(0);
    std::vector<Stmt> staging;
    for (const Plan::CachedInput &cached : cx_.plan.cachedInputs) {
      const kir::BufferPtr &global = cx_.paramBuffers[cached.param];
      std::optional<int64_t> lanes = readLanes(global);
      if (!lanes)
        continue; // not read by this kernel
      const ir::Param &param = cx_.fusion.params[cached.param];
      Expr elements = kir::index(1);
      for (ir::DimId dim : param.dims)
        elements = elements * cx_.dimExtent(dim);
      auto copy = std::make_shared<kir::Buffer>();
      copy->name = param.name + "_shared";
      copy->dtype = param.dtype;
      copy->space = kir::MemorySpace::Shared;
      kir::Origin origin = cached.origin;
      origin.text += ": the block's copy of " + param.name;
      staging.push_back(kir::withOrigin(kir::allocateStmt(copy, offset, elements), origin));
      staging.push_back(copyLoop(cached, global, copy, elements, *lanes));
      cx_.kernel.body =
          RedirectReads(global, copy, contiguousStrides(cached.param)).mutate(cx_.kernel.body);
      Expr bytes = alignTo16(elements * kir::index(ir::dtypeBytes(param.dtype)));
      offset = offset + bytes;
      total = total + bytes;
    }
    if (staging.empty())
      return;
    staging.push_back(kir::withComment(
        kir::barrier(), "the cached inputs are in shared memory before any thread reads them"));
    cx_.cachedInputBytes = total;
    cx_.kernel.body = placeFirst(cx_.kernel.body, staging);
  }

private:
  /// The lanes of the kernel's vector reads of `global` (1: element reads only), or none
  /// when the kernel does not read it.
  std::optional<int64_t> readLanes(const kir::BufferPtr &global) const {
    std::optional<int64_t> lanes;
    kir::forEachStmt(cx_.kernel.body, [&](const Stmt &s) {
      if (s->kind == kir::StmtKind::VectorCopy && s->source == global)
        lanes = lanes ? std::gcd(*lanes, s->lanes) : s->lanes;
    });
    kir::forEachExpr(cx_.kernel.body, [&](const Expr &e) {
      if (e->kind == kir::ExprKind::Load && e->buffer == global)
        lanes = 1;
    });
    return lanes;
  }

  ///   for chunk in [0, ceil(elements / (threads * lanes))):   // cache w in shared
  ///     at = (chunk * threads + thread) * lanes
  ///     if (at < elements): copy[at .. at + lanes) = w[at .. at + lanes)
  /// Consecutive threads take consecutive vectors. With lanes > 1 the vectorize pass found
  /// the tensor's contiguous extent a multiple of them (static, or by the variant's `when`
  /// guard), so `elements` is too and a vector in bounds is whole.
  Stmt copyLoop(const Plan::CachedInput &cached, const kir::BufferPtr &global,
                const kir::BufferPtr &copy, const Expr &elements, int64_t lanes) const {
    const ir::Param &param = cx_.fusion.params[cached.param];
    kir::VarPtr chunk = kir::makeVar(param.name + "_chunk", ir::DType::I64);
    kir::VarPtr at = kir::makeVar(param.name + "_at", ir::DType::I64);
    Expr step = threads_ * kir::index(lanes);
    Expr chunks = (elements + step - kir::index(1)) / step;
    Expr source = globalOffset(cached.param, kir::var(at));
    // A copy of the bytes, whatever the element type (a 1-byte bool moves as a store).
    Stmt move = lanes * ir::dtypeBytes(param.dtype) >= 2
                    ? kir::vectorCopy(copy, kir::var(at), global, source, lanes)
                    : kir::store(copy, kir::var(at), kir::load(global, source));
    Stmt body = kir::block({
        kir::let(at, (kir::var(chunk) * threads_ + linearThreadId()) * kir::index(lanes)),
        kir::ifThen(kir::var(at) < elements, move, nullptr, "within " + param.name),
    });
    std::string how = lanes > 1 ? std::to_string(lanes) + " x " + ir::dtypeName(param.dtype).str() +
                                      " a thread and step"
                                : "an element a thread and step";
    kir::Origin origin = cached.origin;
    origin.text += ": " + how;
    return kir::forLoop(chunk, chunks, kir::LoopKind::Serial, body, origin);
  }

  /// The element of the input at contiguous offset `at`: `at` itself, or for a strided
  /// input its axes' indices at their strides.
  Expr globalOffset(unsigned param, const Expr &at) const {
    const std::vector<ir::DimId> &dims = cx_.fusion.params[param].dims;
    if (cx_.strideVars[param].empty())
      return at;
    std::vector<Expr> index(dims.size());
    Expr inner = kir::index(1);
    for (size_t axis = dims.size(); axis-- > 0;) {
      Expr quotient = at / inner;
      index[axis] = axis == 0 ? quotient : quotient % cx_.dimExtent(dims[axis]);
      inner = inner * cx_.dimExtent(dims[axis]);
    }
    return cx_.paramOffset(param, index);
  }

  /// For a strided input, each stride variable's contiguous value (the extents of the axes
  /// inside it multiplied); none for a contiguous one.
  std::function<Expr(const kir::VarPtr &)> contiguousStrides(unsigned param) const {
    const std::vector<kir::VarPtr> &strides = cx_.strideVars[param];
    if (strides.empty())
      return nullptr;
    std::map<const kir::Var *, Expr> contiguous;
    const std::vector<ir::DimId> &dims = cx_.fusion.params[param].dims;
    Expr inner = cx_.dimExtent(dims.back());
    for (size_t axis = strides.size(); axis-- > 0;) {
      contiguous[strides[axis].get()] = inner;
      inner = inner * cx_.dimExtent(dims[axis]);
    }
    return [contiguous](const kir::VarPtr &v) -> Expr {
      auto found = contiguous.find(v.get());
      return found != contiguous.end() ? found->second : nullptr;
    };
  }

  /// `body` with `staging` first in the body of its innermost parallel loop (the thread
  /// loops nest directly in the block loops, around everything else), so that every
  /// thread of the block copies and reaches the barrier; without parallel loops, after
  /// the grid dependency wait.
  static Stmt placeFirst(const Stmt &body, const std::vector<Stmt> &staging) {
    FSL_INTERNAL_ASSERT(body->kind == kir::StmtKind::Block, "a kernel body that is no block");
    std::vector<Stmt> statements = body->body;
    for (Stmt &s : statements)
      if (isParallel(s)) {
        s = intoInnermost(s, staging);
        return kir::block(std::move(statements));
      }
    auto after = statements.begin();
    while (after != statements.end() && (*after)->kind == kir::StmtKind::GridDependency)
      ++after;
    statements.insert(after, staging.begin(), staging.end());
    return kir::block(std::move(statements));
  }

  static bool isParallel(const Stmt &s) {
    return s->kind == kir::StmtKind::For && s->loopKind == kir::LoopKind::Parallel;
  }

  static Stmt intoInnermost(const Stmt &loop, const std::vector<Stmt> &staging) {
    const Stmt &body = loop->body[0];
    if (isParallel(body))
      return kir::withBody(loop, {intoInnermost(body, staging)});
    if (body->kind == kir::StmtKind::Block && body->body.size() == 1 && isParallel(body->body[0]))
      return kir::withBody(loop, {kir::block({intoInnermost(body->body[0], staging)})});
    std::vector<Stmt> statements = staging;
    statements.push_back(body);
    return kir::withBody(loop, {kir::block(std::move(statements))});
  }

  LowerContext &cx_;
  Expr threads_; // the block's threads
};

} // namespace

bool cacheInputs(LowerContext &context) {
  if (!context.plan.cachedInputs.empty())
    Cacher(context).run();
  return true;
}

} // namespace fsl::lower
