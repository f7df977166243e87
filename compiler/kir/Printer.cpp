// Printer.cpp — Kernel IR text: one method per node kind (statements: dispatched from
// Stmt.def, so a new kind without its method does not compile).
#include "kir/Printer.h"

#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::kir {
namespace {

llvm::StringRef swizzleName(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return "";
  case Swizzle::Bytes32:
    return " swizzle 32B";
  case Swizzle::Bytes64:
    return " swizzle 64B";
  case Swizzle::Bytes128:
    return " swizzle 128B";
  }
  FSL_UNREACHABLE("swizzle");
}

/// An M/N-major wgmma operand's span-wide blocks: " blocks 8192B" (nothing for one block).
std::string blocks(int64_t blockBytes) {
  return blockBytes ? " blocks " + std::to_string(blockBytes) + "B" : "";
}

llvm::StringRef loopKindName(LoopKind kind) {
  switch (kind) {
  case LoopKind::Serial:
    return "serial";
  case LoopKind::Unrolled:
    return "unrolled";
  case LoopKind::Vectorized:
    return "vectorized";
  case LoopKind::Parallel:
    return "parallel";
  }
  FSL_UNREACHABLE("loop kind");
}

llvm::StringRef reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::ArgMax:
    return "argmax";
  case ReduceKind::ArgMin:
    return "argmin";
  case ReduceKind::Welford:
    return "welford";
  case ReduceKind::MaxExpSum:
    return "max-exp-sum";
  case ReduceKind::SumPair:
    return "sum-pair";
  }
  FSL_UNREACHABLE("reduce kind");
}

llvm::StringRef scopeName(ReduceScope scope) {
  switch (scope) {
  case ReduceScope::Warp:
    return "warp";
  case ReduceScope::BlockX:
    return "block over threadIdx.x";
  case ReduceScope::Grid:
    return "grid";
  }
  FSL_UNREACHABLE("reduce scope");
}

llvm::StringRef barrierKindName(BarrierKind kind) {
  switch (kind) {
  case BarrierKind::Block:
    return "block";
  case BarrierKind::Named:
    return "named";
  case BarrierKind::Cluster:
    return "cluster";
  case BarrierKind::Grid:
    return "grid";
  }
  FSL_UNREACHABLE("barrier kind");
}

llvm::StringRef gridOpName(GridDependencyOp op) {
  switch (op) {
  case GridDependencyOp::WaitAndLaunchDependents:
    return "wait; launch_dependents";
  case GridDependencyOp::Wait:
    return "wait";
  case GridDependencyOp::LaunchDependents:
    return "launch_dependents";
  }
  FSL_UNREACHABLE("grid dependency op");
}

class TextPrinter {
public:
  explicit TextPrinter(llvm::raw_ostream &out) : out_(out) {}

  void expr(const Expr &e) {
    if (!e) {
      out_ << "<null>";
      return;
    }
    switch (e->kind) {
    case ExprKind::Const:
      if (ir::isInteger(e->dtype))
        out_ << integerConstant(e->constant);
      else if (e->dtype == DType::Bool)
        out_ << (e->constant != 0 ? "true" : "false");
      else
        out_ << llvm::format("%g", e->constant) << ":" << ir::dtypeName(e->dtype);
      return;
    case ExprKind::Var:
      out_ << (e->var->builtin == Builtin::None ? llvm::StringRef(e->var->name)
                                                : builtinName(e->var->builtin));
      return;
    case ExprKind::Unary:
      out_ << unaryName(e->unary) << "(";
      expr(e->operands[0]);
      out_ << ")";
      if (ir::isFloat(e->dtype))
        out_ << ":" << ir::dtypeName(e->dtype);
      return;
    case ExprKind::Binary:
      if (e->binary == BinaryOp::Min || e->binary == BinaryOp::Max || e->binary == BinaryOp::Pow) {
        out_ << binaryName(e->binary) << "(";
        expr(e->operands[0]);
        out_ << ", ";
        expr(e->operands[1]);
        out_ << ")";
      } else {
        out_ << "(";
        expr(e->operands[0]);
        out_ << " " << binaryName(e->binary) << " ";
        expr(e->operands[1]);
        out_ << ")";
      }
      if (ir::isFloat(e->dtype) && (e->dtype == DType::BF16 || e->dtype == DType::F16))
        out_ << ":" << ir::dtypeName(e->dtype);
      return;
    case ExprKind::Select:
      out_ << "select(";
      expr(e->operands[0]);
      out_ << ", ";
      expr(e->operands[1]);
      out_ << ", ";
      expr(e->operands[2]);
      out_ << ")";
      return;
    case ExprKind::Cast:
      out_ << ir::dtypeName(e->dtype) << "(";
      expr(e->operands[0]);
      out_ << ")";
      return;
    case ExprKind::Load:
      out_ << e->buffer->name << "[";
      expr(e->operands[0]);
      out_ << "]";
      return;
    }
    FSL_UNREACHABLE("expression kind");
  }

  /// One method a kind, printKind, dispatched from Stmt.def.
  void stmt(const Stmt &s, int indent) {
    switch (s->kind) {
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  case StmtKind::Kind:                                                                             \
    return print##Kind(*s, indent);
#include "kir/Stmt.def"
    }
    FSL_UNREACHABLE("statement kind");
  }

private:
  /// The start of a statement's line.
  llvm::raw_ostream &line(int indent) { return out_ << std::string(indent * 2, ' '); }

  /// The end of a statement's line: its comment and origin.
  void note(const StmtNode &s) {
    std::string text = s.comment;
    if (!s.origin.text.empty())
      text = text.empty() ? s.origin.text : text + "; " + s.origin.text;
    if (!text.empty())
      out_ << "  // " << text;
    out_ << "\n";
  }

  void printBlock(const StmtNode &s, int indent) {
    for (const Stmt &child : s.body)
      stmt(child, indent);
  }

  void printFor(const StmtNode &s, int indent) {
    line(indent) << "for " << s.var->name << " in [0, ";
    expr(s.extent);
    out_ << ") " << loopKindName(s.loopKind);
    if (s.loopKind == LoopKind::Parallel)
      out_ << " " << axisName(s.axis);
    if (s.unrollFactor)
      out_ << " by " << *s.unrollFactor;
    note(s);
    stmt(s.body[0], indent + 1);
  }

  void printIf(const StmtNode &s, int indent) {
    line(indent) << "if ";
    expr(s.condition);
    note(s);
    stmt(s.body[0], indent + 1);
    if (s.body.size() > 1) {
      line(indent) << "else\n";
      stmt(s.body[1], indent + 1);
    }
  }

  void printLet(const StmtNode &s, int indent) {
    line(indent) << (s.mutableVar ? "var " : "let ") << s.var->name << ": "
                 << ir::dtypeName(s.var->dtype) << " = ";
    expr(s.value);
    note(s);
  }

  void printAssign(const StmtNode &s, int indent) {
    line(indent) << s.var->name << " = ";
    expr(s.value);
    note(s);
  }

  void printAllocate(const StmtNode &s, int indent) {
    line(indent) << "allocate " << memorySpaceName(s.buffer->space) << " " << s.buffer->name << ": "
                 << ir::dtypeName(s.buffer->dtype) << "[";
    if (s.count)
      expr(s.count);
    else
      out_ << llvm::join(
          llvm::map_range(s.buffer->shape, [](int64_t n) { return std::to_string(n); }), " x ");
    out_ << "]" << swizzleName(s.buffer->swizzle);
    if (s.index) {
      out_ << " at byte ";
      expr(s.index);
    }
    note(s);
  }

  void printStore(const StmtNode &s, int indent) {
    line(indent) << "store " << s.buffer->name << "[";
    expr(s.index);
    out_ << "] = ";
    expr(s.value);
    note(s);
  }

  /// `what xN buffer[index] <- source[sourceIndex]`: a vector copy, a stmatrix.
  void copyFromSource(const StmtNode &s, int indent, llvm::StringRef what) {
    line(indent) << what << " x" << s.lanes << " " << s.buffer->name << "[";
    expr(s.index);
    out_ << "] <- " << s.source->name << "[";
    expr(s.sourceIndex);
    out_ << "]";
    note(s);
  }

  void printVectorCopy(const StmtNode &s, int indent) { copyFromSource(s, indent, "vector_copy"); }

  void printStMatrix(const StmtNode &s, int indent) { copyFromSource(s, indent, "stmatrix"); }

  void printAtomicAdd(const StmtNode &s, int indent) {
    line(indent) << s.buffer->name << "[";
    expr(s.index);
    out_ << "] <- atom.add.acq_rel.gpu " << s.source->name << "[";
    expr(s.sourceIndex);
    out_ << "], ";
    expr(s.value);
    note(s);
  }

  void printReduce(const StmtNode &s, int indent) {
    line(indent) << "reduce " << reduceKindName(s.reduceKind) << " " << s.var->name;
    for (const VarPtr &carried : s.carried)
      out_ << ", " << carried->name;
    out_ << " " << scopeName(s.scope);
    if (s.scratch) {
      out_ << " scratch " << s.scratch->name << " slot ";
      expr(s.slot);
    }
    note(s);
  }

  void printBarrier(const StmtNode &s, int indent) {
    line(indent) << "barrier " << barrierKindName(s.barrierKind);
    if (s.barrierKind == BarrierKind::Named)
      out_ << " " << s.barrierId;
    if (s.threads) {
      out_ << " threads ";
      expr(s.threads);
    }
    note(s);
  }

  void printGridDependency(const StmtNode &s, int indent) {
    line(indent) << "griddepcontrol " << gridOpName(s.gridOp);
    if (s.condition) {
      out_ << " if ";
      expr(s.condition);
    }
    note(s);
  }

  void printComment(const StmtNode &s, int indent) { line(indent) << "// " << s.comment << "\n"; }

  /// The mbarrier operations: the barrier's element, a remote CTA, the count (arrivals,
  /// bytes or parity).
  void mbarrier(const StmtNode &s, int indent, const char *countName) {
    line(indent) << stmtKindName(s.kind) << " " << s.buffer->name << "[";
    expr(s.index);
    out_ << "]";
    if (s.ctaRank) {
      out_ << " cta ";
      expr(s.ctaRank);
    }
    if (s.count) {
      out_ << countName;
      expr(s.count);
    }
    note(s);
  }
  void printMBarrierInit(const StmtNode &s, int indent) { mbarrier(s, indent, " arrivals "); }
  void printMBarrierArrive(const StmtNode &s, int indent) { mbarrier(s, indent, " parity "); }
  void printMBarrierArriveExpectTx(const StmtNode &s, int indent) {
    mbarrier(s, indent, " bytes ");
  }
  void printMBarrierWait(const StmtNode &s, int indent) { mbarrier(s, indent, " parity "); }

  /// A statement that is its name alone.
  void named(const StmtNode &s, int indent) {
    line(indent) << stmtKindName(s.kind);
    note(s);
  }
  void printFenceProxyAsync(const StmtNode &s, int indent) { named(s, indent); }
  void printHoldLoads(const StmtNode &s, int indent) { named(s, indent); }
  void printWgmmaFence(const StmtNode &s, int indent) { named(s, indent); }
  void printWgmmaCommit(const StmtNode &s, int indent) { named(s, indent); }

  void tma(const StmtNode &s, int indent, const char *direction) {
    line(indent) << stmtKindName(s.kind) << " " << s.tensorMap->name << " (";
    for (size_t i = 0; i < s.coordinates.size(); ++i) {
      if (i)
        out_ << ", ";
      expr(s.coordinates[i]);
    }
    out_ << ") box "
         << llvm::join(
                llvm::map_range(s.tensorMap->box, [](int64_t n) { return std::to_string(n); }),
                " x ")
         << direction << s.buffer->name << "[";
    expr(s.index);
    out_ << "]";
    if (s.barrier) {
      out_ << " barrier " << s.barrier->name << "[";
      expr(s.barrierIndex);
      out_ << "]";
    }
    if (s.multicastMask) {
      out_ << " multicast mask ";
      expr(s.multicastMask);
    }
    note(s);
  }
  void printTmaLoad(const StmtNode &s, int indent) { tma(s, indent, " -> "); }
  void printTmaStore(const StmtNode &s, int indent) { tma(s, indent, " <- "); }

  void pending(const StmtNode &s, int indent) {
    line(indent) << stmtKindName(s.kind) << " pending " << s.pending;
    note(s);
  }
  void printTmaStoreWait(const StmtNode &s, int indent) { pending(s, indent); }
  void printWgmmaWait(const StmtNode &s, int indent) { pending(s, indent); }

  void printWgmma(const StmtNode &s, int indent) {
    line(indent) << "wgmma.mma_async m" << s.shape.m << "n" << s.shape.n << "k" << s.shape.k << " "
                 << ir::dtypeName(s.inputType) << " " << s.buffer->name;
    // The accumulators from element `index` on: several instructions a warpgroup's tile.
    if (s.index && !(s.index->kind == ExprKind::Const && s.index->constant == 0)) {
      out_ << "[";
      expr(s.index);
      out_ << "...]";
    }
    out_ << " += " << s.operandA->name << "[";
    expr(s.offsetA);
    out_ << "]" << (s.transposeA ? "^T" : "") << blocks(s.blockBytesA) << " * " << s.operandB->name
         << "[";
    expr(s.offsetB);
    out_ << "]" << (s.transposeB ? "^T" : "") << blocks(s.blockBytesB);
    if (s.accumulate) {
      out_ << " accumulate if ";
      expr(s.accumulate);
    }
    note(s);
  }

  void printSetMaxNReg(const StmtNode &s, int indent) {
    line(indent) << "setmaxnreg." << (s.increase ? "inc " : "dec ") << s.registers;
    note(s);
  }

  void printWarpRole(const StmtNode &s, int indent) {
    line(indent) << "warp_role " << s.role << " if ";
    expr(s.condition);
    note(s);
    stmt(s.body[0], indent + 1);
  }

  llvm::raw_ostream &out_;
};

void printLaunch(const LaunchShape &launch, llvm::raw_ostream &out) {
  TextPrinter p(out);
  auto triple = [&](const char *name, const std::array<Expr, 3> &dims) {
    if (!dims[0])
      return;
    out << "  " << name << " (";
    for (int i = 0; i < 3; ++i) {
      if (i)
        out << ", ";
      p.expr(dims[i]);
    }
    out << ")\n";
  };
  triple("grid", launch.grid);
  triple("block", launch.block);
  if (launch.cluster[0])
    triple("cluster", launch.cluster);
  if (launch.sharedBytes) {
    out << "  shared bytes ";
    p.expr(launch.sharedBytes);
    out << "\n";
  }
  if (launch.maxThreads)
    out << "  launch bounds " << *launch.maxThreads
        << (launch.minBlocksPerSm ? ", " + std::to_string(*launch.minBlocksPerSm) : "") << "\n";
  if (launch.maxRegisters)
    out << "  max registers " << *launch.maxRegisters << "\n";
  if (launch.cooperative)
    out << "  cooperative\n";
}

} // namespace

void printExpr(const Expr &e, llvm::raw_ostream &out) { TextPrinter(out).expr(e); }

std::string toString(const Expr &e) {
  std::string text;
  llvm::raw_string_ostream out(text);
  printExpr(e, out);
  return text;
}

void printStmt(const Stmt &s, llvm::raw_ostream &out, int indent) {
  TextPrinter(out).stmt(s, indent);
}

void printKernel(const Kernel &kernel, llvm::raw_ostream &out) {
  out << "kernel " << kernel.name;
  if (!kernel.comment.empty())
    out << "  // " << kernel.comment;
  out << "\n";
  for (const KernelParam &param : kernel.params) {
    out << "  param ";
    switch (param.kind) {
    case KernelParam::Kind::Tensor:
      out << param.buffer->name << ": " << ir::dtypeName(param.buffer->dtype) << "*"
          << (param.buffer->inout     ? " inout"
              : param.buffer->written ? " out"
                                      : "");
      break;
    case KernelParam::Kind::Scalar:
      out << param.var->name << ": " << ir::dtypeName(param.var->dtype);
      break;
    case KernelParam::Kind::Dim:
      out << param.var->name << ": dim";
      break;
    case KernelParam::Kind::Stride:
      out << param.var->name << ": stride of axis " << param.axis;
      break;
    case KernelParam::Kind::TensorMap:
      out << param.tensorMap->name << ": tensor map of " << param.tensorMap->global->name;
      break;
    }
    out << "\n";
  }
  printLaunch(kernel.launch, out);
  out << "body\n";
  if (kernel.body)
    printStmt(kernel.body, out, 1);
}

void printProgram(const Program &program, llvm::raw_ostream &out) {
  out << "program " << (program.fusion ? program.fusion->name : "") << "\n";
  for (const Workspace &workspace : program.workspaces) {
    out << "  workspace " << workspace.buffer->name << ": "
        << ir::dtypeName(workspace.buffer->dtype) << "[";
    printExpr(workspace.elements, out);
    out << "]";
    if (!workspace.comment.empty())
      out << "  // " << workspace.comment;
    out << "\n";
  }
  for (const Variant &variant : program.variants) {
    out << "  variant";
    if (variant.guard) {
      out << " when ";
      printExpr(variant.guard, out);
    }
    out << ": launch";
    for (unsigned k : variant.launches)
      out << " " << program.kernels[k].name;
    out << "\n";
  }
  for (const Kernel &kernel : program.kernels) {
    out << "\n";
    printKernel(kernel, out);
  }
}

} // namespace fsl::kir
