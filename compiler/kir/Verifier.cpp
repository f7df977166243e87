// Verifier.cpp — scope and type checks over one kernel.
#include "kir/Verifier.h"

#include "kir/Printer.h"
#include "support/Internal.h"

#include <set>

namespace fsl::kir {
namespace {

struct Failure {
  std::string message;
};

/// Whether a field in `role` holds its default. Every kind uses the Common fields (an
/// Origin has no ==), so they are never compared.
template <StmtFieldRole role, typename T> bool holdsDefault(const T &value, const T &initial) {
  if constexpr (role == StmtFieldRole::Common)
    return true;
  else
    return value == initial;
}

class Checker {
public:
  explicit Checker(const Kernel &kernel) : kernel_(kernel) {
    for (const KernelParam &param : kernel.params) {
      if (param.var)
        vars_.insert(param.var.get());
      if (param.buffer)
        buffers_.insert(param.buffer.get());
      if (param.tensorMap && param.tensorMap->global)
        buffers_.insert(param.tensorMap->global.get());
    }
  }

  void run() {
    if (!kernel_.body)
      fail("kernel has no body");
    stmt(kernel_.body);
  }

private:
  [[noreturn]] void fail(const std::string &message) { throw Failure{message}; }

  void expr(const Expr &e) {
    if (!e)
      fail("null expression");
    switch (e->kind) {
    case ExprKind::Const:
      return;
    case ExprKind::Var:
      if (e->var->builtin == Builtin::None && !vars_.count(e->var.get()))
        fail("variable '" + e->var->name + "' used outside its scope");
      return;
    case ExprKind::Unary:
    case ExprKind::Cast:
      if (e->operands.size() != 1)
        fail("unary expression without one operand");
      expr(e->operands[0]);
      return;
    case ExprKind::Binary:
      if (e->operands.size() != 2)
        fail("binary expression without two operands");
      expr(e->operands[0]);
      expr(e->operands[1]);
      return;
    case ExprKind::Select:
      if (e->operands.size() != 3)
        fail("select without three operands");
      for (const Expr &operand : e->operands)
        expr(operand);
      return;
    case ExprKind::Load:
      buffer(e->buffer, "load");
      integer(e->operands.at(0), "load index of " + e->buffer->name);
      return;
    }
    FSL_UNREACHABLE("expression kind");
  }

  void integer(const Expr &e, const std::string &what) {
    expr(e);
    if (!ir::isInteger(e->dtype))
      fail(what + " is not an integer: " + toString(e));
  }

  void buffer(const BufferPtr &b, const char *what) {
    if (!b)
      fail(std::string(what) + " of a null buffer");
    if (!buffers_.count(b.get()))
      fail(std::string(what) + " of buffer '" + b->name + "' that is not allocated here");
  }

  void mutableVar(const VarPtr &v, const char *what) {
    if (!vars_.count(v.get()))
      fail(std::string(what) + " of variable '" + v->name + "' outside its scope");
    if (!mutables_.count(v.get()))
      fail(std::string(what) + " of '" + v->name + "', which is not mutable");
  }

  /// The span-wide blocks of a wgmma operand: an M/N-major operand wider than one swizzle
  /// span needs their distance (the descriptor's leading byte offset, in 16-byte units of
  /// a 14-bit field); a K-major operand, or one without a swizzle, has none.
  void wgmmaBlocks(const StmtNode &s, const Buffer &operand, int64_t extent, bool mnMajor,
                   int64_t blockBytes, const char *which) {
    std::string name = std::string("wgmma operand ") + which + " (" + operand.name + ")";
    int64_t span = swizzleSpanBytes(operand.swizzle);
    if (mnMajor && span == 0)
      fail(name + " is M/N-major without a swizzle: only swizzled M/N-major layouts are "
                  "described");
    if (blockBytes < 0 || blockBytes % 16 != 0 || blockBytes >= (int64_t(1) << 18))
      fail(name + " has blocks " + std::to_string(blockBytes) +
           " bytes apart: a multiple of 16 below 2^18");
    if (!mnMajor && blockBytes != 0)
      fail(name + " is K-major but has a block distance");
    if (mnMajor && extent * ir::dtypeBytes(s.inputType) > span && blockBytes == 0)
      fail(name + " is M/N-major and " + std::to_string(extent) +
           " elements wide, more than one swizzle span, without the distance of its blocks");
  }

  /// A block's bindings end with the block (C scoping).
  void scoped(const Stmt &s) {
    std::set<const Var *> vars = vars_, mutables = mutables_;
    std::set<const Buffer *> buffers = buffers_;
    stmt(s);
    vars_ = std::move(vars);
    mutables_ = std::move(mutables);
    buffers_ = std::move(buffers);
  }

  /// The cluster operations: a remote arrival only on mbarrier.arrive, a multicast only on
  /// a TMA load, and both (and cluster barriers) only in a kernel launched as clusters.
  void clusterFields(const StmtNode &s) {
    bool clustered = kernel_.launch.cluster[0] != nullptr;
    if (s.ctaRank) {
      if (s.kind != StmtKind::MBarrierArrive)
        fail(stmtKindName(s.kind).str() + " with a CTA rank; only mbarrier.arrive has one");
      integer(s.ctaRank, "mbarrier.arrive CTA rank");
      if (!clustered)
        fail("mbarrier.arrive on another CTA's barrier in a kernel launched without a cluster");
    }
    if (s.multicastMask) {
      if (s.kind != StmtKind::TmaLoad)
        fail(stmtKindName(s.kind).str() + " with a multicast mask; only a TMA load has one");
      integer(s.multicastMask, "TMA multicast mask");
      if (!clustered)
        fail("multicast TMA load in a kernel launched without a cluster");
    }
    if (s.kind == StmtKind::Barrier && s.barrierKind == BarrierKind::Cluster) {
      if (!clustered)
        fail("cluster barrier in a kernel launched without a cluster");
      if (s.threads)
        fail("cluster barrier with a thread count (every thread of the cluster takes part)");
    }
    if (s.kind == StmtKind::Barrier && s.barrierKind == BarrierKind::Grid) {
      if (!kernel_.launch.cooperative)
        fail("grid barrier in a kernel launched without the cooperative attribute");
      if (clustered)
        fail("grid barrier in a kernel launched with a cluster");
      if (s.threads)
        fail("grid barrier with a thread count (every thread of the grid takes part)");
    }
  }

  /// A field the statement's kind does not use (Stmt.def) holds its default, so that no
  /// walk, printer or simulator misses what it says.
  void unusedFields(const StmtNode &s) {
    static const StmtNode defaults;
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  if (!stmtKindUses(s.kind, StmtField::Name) &&                                                    \
      !holdsDefault<StmtFieldRole::Role>(s.Name, defaults.Name))                                   \
    fail(stmtKindName(s.kind).str() + " sets field '" #Name "', which its kind does not use");
#include "kir/Stmt.def"
  }

  void stmt(const Stmt &s) {
    if (!s)
      fail("null statement");
    clusterFields(*s);
    unusedFields(*s);
    switch (s->kind) {
    case StmtKind::Block: {
      // A block is a scope (C's braces).
      std::set<const Var *> vars = vars_, mutables = mutables_;
      std::set<const Buffer *> buffers = buffers_;
      for (const Stmt &child : s->body)
        stmt(child);
      vars_ = std::move(vars);
      mutables_ = std::move(mutables);
      buffers_ = std::move(buffers);
      return;
    }
    case StmtKind::For: {
      integer(s->extent, "loop extent of " + s->var->name);
      if (s->loopKind == LoopKind::Vectorized && !asConstant(s->extent))
        fail("vectorized loop '" + s->var->name + "' has no static extent");
      if (s->body.size() != 1)
        fail("loop without one body");
      std::set<const Var *> vars = vars_;
      vars_.insert(s->var.get());
      if (s->loopKind == LoopKind::Parallel)
        stmt(s->body[0]); // a parallel loop binds a name for the rest of the kernel
      else {
        scoped(s->body[0]);
        vars_ = std::move(vars);
      }
      return;
    }
    case StmtKind::If:
      expr(s->condition);
      if (s->condition->dtype != DType::Bool)
        fail("if condition is not a boolean: " + toString(s->condition));
      for (const Stmt &branch : s->body)
        scoped(branch);
      return;
    case StmtKind::Let:
      expr(s->value);
      if (vars_.count(s->var.get()))
        fail("variable '" + s->var->name + "' bound twice");
      vars_.insert(s->var.get());
      if (s->mutableVar)
        mutables_.insert(s->var.get());
      return;
    case StmtKind::Assign:
      expr(s->value);
      mutableVar(s->var, "assignment");
      return;
    case StmtKind::Allocate:
      if (s->buffer->space == MemorySpace::Global)
        fail("allocation of global buffer '" + s->buffer->name + "' inside a kernel");
      if (s->buffer->space == MemorySpace::Local && s->buffer->shape.empty())
        fail("local buffer '" + s->buffer->name + "' without a static shape");
      if (s->buffer->space == MemorySpace::Shared && !s->index)
        fail("shared buffer '" + s->buffer->name + "' without a byte offset");
      if (s->index)
        integer(s->index, "byte offset of " + s->buffer->name);
      if (s->count)
        integer(s->count, "element count of " + s->buffer->name);
      buffers_.insert(s->buffer.get());
      return;
    case StmtKind::Store:
      buffer(s->buffer, "store");
      integer(s->index, "store index of " + s->buffer->name);
      expr(s->value);
      return;
    case StmtKind::VectorCopy:
      buffer(s->buffer, "vector copy");
      buffer(s->source, "vector copy");
      integer(s->index, "vector copy index");
      integer(s->sourceIndex, "vector copy index");
      if (s->lanes < 1 || s->buffer->dtype != s->source->dtype)
        fail("vector copy between '" + s->source->name + "' and '" + s->buffer->name +
             "' of different types or no lanes");
      return;
    case StmtKind::StMatrix:
      buffer(s->buffer, "stmatrix");
      buffer(s->source, "stmatrix");
      integer(s->index, "stmatrix row index");
      integer(s->sourceIndex, "stmatrix source index");
      if (s->buffer->space != MemorySpace::Shared || s->source->space != MemorySpace::Local ||
          s->buffer->dtype != s->source->dtype || ir::dtypeBytes(s->buffer->dtype) != 2 ||
          (s->lanes != 1 && s->lanes != 2 && s->lanes != 4))
        fail("stmatrix from '" + s->source->name + "' into '" + s->buffer->name +
             "': 1, 2 or 4 matrices of one 16-bit type, from registers into shared memory");
      // The registers are read as 4-byte words, one a matrix.
      if (std::optional<int64_t> first = asConstant(s->sourceIndex))
        if (*first % 2 != 0 || *first + 2 * s->lanes > s->source->elements())
          fail("stmatrix from '" + s->source->name + "' at element " + std::to_string(*first) +
               ": " + std::to_string(s->lanes) + " words of two elements from an even element " +
               "inside its " + std::to_string(s->source->elements()));
      return;
    case StmtKind::AtomicAdd:
      buffer(s->buffer, "atomic add");
      buffer(s->source, "atomic add");
      integer(s->index, "atomic add index");
      integer(s->sourceIndex, "atomic add index");
      expr(s->value);
      if (s->source->space != MemorySpace::Global || s->source->dtype != ir::DType::I32 ||
          s->buffer->dtype != ir::DType::I32)
        fail("atomic add on '" + s->source->name + "' into '" + s->buffer->name +
             "': the counter is global i32, and so is the old value's buffer");
      return;
    case StmtKind::Reduce:
      mutableVar(s->var, "reduction");
      if (s->carried.size() + 1 != reduceArity(s->reduceKind))
        fail("a " + std::to_string(reduceArity(s->reduceKind)) + "-accumulator reduction with " +
             std::to_string(s->carried.size() + 1));
      for (const VarPtr &carried : s->carried)
        mutableVar(carried, "reduction");
      if (s->scope == ReduceScope::BlockX) {
        buffer(s->scratch, "block reduction scratch");
        integer(s->slot, "block reduction slot");
      }
      return;
    case StmtKind::Barrier:
      if (s->threads)
        integer(s->threads, "barrier thread count");
      return;
    case StmtKind::GridDependency:
    case StmtKind::Comment:
    case StmtKind::HoldLoads:
    case StmtKind::FenceProxyAsync:
    case StmtKind::WgmmaFence:
    case StmtKind::WgmmaCommit:
    case StmtKind::WgmmaWait:
    case StmtKind::TmaStoreWait:
    case StmtKind::SetMaxNReg:
      return;
    case StmtKind::MBarrierInit:
    case StmtKind::MBarrierArrive:
    case StmtKind::MBarrierArriveExpectTx:
    case StmtKind::MBarrierWait:
      buffer(s->buffer, "mbarrier");
      if (s->buffer->space != MemorySpace::Shared)
        fail("mbarrier '" + s->buffer->name + "' is not in shared memory");
      integer(s->index, "mbarrier index");
      if (s->count)
        expr(s->count);
      return;
    case StmtKind::TmaLoad:
    case StmtKind::TmaStore:
      buffer(s->buffer, "TMA");
      if (s->buffer->space != MemorySpace::Shared)
        fail("TMA copy with '" + s->buffer->name + "' outside shared memory");
      if (!s->tensorMap || s->coordinates.size() != s->tensorMap->box.size())
        fail("TMA copy whose coordinates do not match its box");
      for (const Expr &coordinate : s->coordinates)
        integer(coordinate, "TMA coordinate");
      integer(s->index, "TMA shared offset");
      if (s->barrier) {
        buffer(s->barrier, "TMA barrier");
        integer(s->barrierIndex, "TMA barrier index");
      }
      return;
    case StmtKind::Wgmma:
      buffer(s->buffer, "wgmma accumulator");
      buffer(s->operandA, "wgmma operand");
      buffer(s->operandB, "wgmma operand");
      integer(s->offsetA, "wgmma operand offset");
      integer(s->offsetB, "wgmma operand offset");
      wgmmaBlocks(*s, *s->operandA, s->shape.m, s->transposeA, s->blockBytesA, "A");
      wgmmaBlocks(*s, *s->operandB, s->shape.n, s->transposeB, s->blockBytesB, "B");
      if (s->accumulate) {
        expr(s->accumulate);
        if (s->accumulate->dtype != DType::Bool && !ir::isInteger(s->accumulate->dtype))
          fail("wgmma accumulate flag is not a condition: " + toString(s->accumulate));
      }
      return;
    case StmtKind::WarpRole:
      expr(s->condition);
      scoped(s->body.at(0));
      return;
    }
    FSL_UNREACHABLE("statement kind");
  }

  const Kernel &kernel_;
  std::set<const Var *> vars_, mutables_;
  std::set<const Buffer *> buffers_;
};

} // namespace

std::string verifyKernel(const Kernel &kernel) {
  try {
    Checker(kernel).run();
  } catch (const Failure &failure) {
    return kernel.name + ": " + failure.message;
  }
  return "";
}

} // namespace fsl::kir
