// Vectorize.cpp — the `vectorize` pass: element accesses of the vector loop as vectors.
//
// When the vector loop is the innermost serial loop, walks the innermost piece of its
// dimension and that dimension's static extent divides by its width, every tensor whose
// contiguous dimension it is moves as whole vectors: before the loop, one vector copy
// from global memory into a local array a tensor read; in the loop, element loads from
// that array; the outputs are written into local arrays and copied out as vectors after
// the loop (a clamped store's condition moves with it). Otherwise the loop stays a loop
// of scalar accesses.
#include "lower/Passes.h"

#include "kir/Mutator.h"

namespace fsl::lower {
namespace {

using kir::Expr;
using kir::Stmt;

class Vectorizer : public kir::Mutator {
public:
  explicit Vectorizer(const LowerContext &cx) : cx_(cx) {
    const PlannedLoop &loop = cx.plan.loops[cx.plan.vectorLoop];
    root_ = loop.roots[0];
    width_ = *loop.extent.value;
    v_ = cx.vectorVar();
  }
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (s->kind != kir::StmtKind::For || s->var != v_)
      return mutateChildren(s);
    std::vector<Stmt> before, inside, after;
    for (const Stmt &statement :
         s->body[0]->kind == kir::StmtKind::Block ? s->body[0]->body : s->body) {
      if (statement->kind == kir::StmtKind::Let && vectorAccess(statement->value)) {
        const Expr &load = statement->value;
        auto local = localBuffer(statement->var->name + "_vec", load->buffer->dtype);
        before.push_back(kir::allocate(local, "vectorize: " + std::to_string(width_) + " x " +
                                                  ir::dtypeName(local->dtype).str() + " = " +
                                                  std::to_string(bytes(local)) + " bytes"));
        before.push_back(kir::withOrigin(kir::vectorCopy(local, kir::index(0), load->buffer,
                                                         laneZero(load->operands[0]), width_),
                                         statement->origin));
        inside.push_back(kir::withOrigin(
            kir::let(statement->var, kir::load(local, kir::var(v_)), statement->comment),
            statement->origin));
        continue;
      }
      const Stmt *store = &statement;
      bool clamped = labelOf(statement) == labels::ClampedStore;
      if (clamped)
        store = &statement->body[0];
      if ((*store)->kind == kir::StmtKind::Store && vectorStore(*store)) {
        const Stmt &st = *store;
        auto local = localBuffer(st->buffer->name + "_vec", st->buffer->dtype);
        before.push_back(kir::allocate(local));
        inside.push_back(kir::withOrigin(kir::store(local, kir::var(v_), st->value), st->origin));
        Stmt copy = kir::withOrigin(
            kir::vectorCopy(st->buffer, laneZero(st->index), local, kir::index(0), width_),
            st->origin);
        if (clamped)
          copy = kir::withLabel(
              kir::ifThen(laneZero(statement->condition), copy, nullptr, statement->comment),
              labels::ClampedStore);
        after.push_back(copy);
        continue;
      }
      inside.push_back(statement);
    }
    std::vector<Stmt> result = std::move(before);
    result.push_back(withBody(s, {kir::block(std::move(inside))}));
    result.insert(result.end(), after.begin(), after.end());
    return kir::block(std::move(result));
  }

private:
  bool contiguous(const kir::BufferPtr &buffer) const {
    // A vector of one 1-byte element (bool) is no vector access: scalar accesses.
    if (buffer->space != kir::MemorySpace::Global ||
        !kir::isVectorAccessSize(width_, buffer->dtype))
      return false;
    auto dims = cx_.bufferDims.find(buffer.get());
    return dims != cx_.bufferDims.end() && !dims->second.empty() && dims->second.back() == root_;
  }
  bool vectorAccess(const Expr &e) const {
    return e->kind == kir::ExprKind::Load && contiguous(e->buffer);
  }
  bool vectorStore(const Stmt &s) const { return contiguous(s->buffer); }

  Expr laneZero(const Expr &e) const {
    return kir::substitute(e,
                           [&](const kir::VarPtr &v) { return v == v_ ? kir::index(0) : nullptr; });
  }

  std::shared_ptr<kir::Buffer> localBuffer(const std::string &name, ir::DType dtype) const {
    auto buffer = std::make_shared<kir::Buffer>();
    buffer->name = name;
    buffer->dtype = dtype;
    buffer->space = kir::MemorySpace::Local;
    buffer->shape = {width_};
    return buffer;
  }
  int64_t bytes(const kir::BufferPtr &b) const { return width_ * ir::dtypeBytes(b->dtype); }

  const LowerContext &cx_;
  ir::DimId root_;
  int64_t width_;
  kir::VarPtr v_;
};

} // namespace

bool vectorizeAccesses(LowerContext &context) {
  if (context.plan.vectorLoop < 0 || !context.plan.vectorAccessesExact)
    return true;
  context.kernel.body = Vectorizer(context).mutate(context.kernel.body);
  return true;
}

} // namespace fsl::lower
