// Printer.cpp — Kernel IR text: one method per node kind.
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

  void stmt(const Stmt &s, int indent) {
    std::string pad(indent * 2, ' ');
    auto line = [&]() -> llvm::raw_ostream & { return out_ << pad; };
    auto note = [&] {
      std::string text = s->comment;
      if (!s->origin.text.empty())
        text = text.empty() ? s->origin.text : text + "; " + s->origin.text;
      if (!text.empty())
        out_ << "  // " << text;
      out_ << "\n";
    };
    switch (s->kind) {
    case StmtKind::Block:
      for (const Stmt &child : s->body)
        stmt(child, indent);
      return;
    case StmtKind::For:
      line() << "for " << s->var->name << " in [0, ";
      expr(s->extent);
      out_ << ") " << loopKindName(s->loopKind);
      if (s->loopKind == LoopKind::Parallel)
        out_ << " " << axisName(s->axis);
      if (s->unrollFactor)
        out_ << " by " << *s->unrollFactor;
      note();
      stmt(s->body[0], indent + 1);
      return;
    case StmtKind::If:
      line() << "if ";
      expr(s->condition);
      note();
      stmt(s->body[0], indent + 1);
      if (s->body.size() > 1) {
        line() << "else\n";
        stmt(s->body[1], indent + 1);
      }
      return;
    case StmtKind::Let:
      line() << (s->mutableVar ? "var " : "let ") << s->var->name << ": "
             << ir::dtypeName(s->var->dtype) << " = ";
      expr(s->value);
      note();
      return;
    case StmtKind::Assign:
      line() << s->var->name << " = ";
      expr(s->value);
      note();
      return;
    case StmtKind::Allocate:
      line() << "allocate " << memorySpaceName(s->buffer->space) << " " << s->buffer->name << ": "
             << ir::dtypeName(s->buffer->dtype) << "[";
      if (s->count)
        expr(s->count);
      else
        out_ << llvm::join(
            llvm::map_range(s->buffer->shape, [](int64_t n) { return std::to_string(n); }), " x ");
      out_ << "]" << swizzleName(s->buffer->swizzle);
      if (s->index) {
        out_ << " at byte ";
        expr(s->index);
      }
      note();
      return;
    case StmtKind::Store:
      line() << "store " << s->buffer->name << "[";
      expr(s->index);
      out_ << "] = ";
      expr(s->value);
      note();
      return;
    case StmtKind::VectorCopy:
      line() << "vector_copy x" << s->lanes << " " << s->buffer->name << "[";
      expr(s->index);
      out_ << "] <- " << s->source->name << "[";
      expr(s->sourceIndex);
      out_ << "]";
      note();
      return;
    case StmtKind::Reduce:
      line() << "reduce " << reduceKindName(s->reduceKind) << " " << s->var->name;
      for (const VarPtr &carried : s->carried)
        out_ << ", " << carried->name;
      out_ << " " << scopeName(s->scope);
      if (s->scratch)
        out_ << " scratch " << s->scratch->name << " slot " << s->slot;
      note();
      return;
    case StmtKind::Barrier:
      line() << "barrier " << barrierKindName(s->barrierKind);
      if (s->barrierKind == BarrierKind::Named)
        out_ << " " << s->barrierId;
      if (s->threads) {
        out_ << " threads ";
        expr(s->threads);
      }
      note();
      return;
    case StmtKind::GridDependency:
      line() << "griddepcontrol " << gridOpName(s->gridOp);
      note();
      return;
    case StmtKind::Comment:
      line() << "// " << s->comment << "\n";
      return;
    case StmtKind::MBarrierInit:
    case StmtKind::MBarrierArrive:
    case StmtKind::MBarrierArriveExpectTx:
    case StmtKind::MBarrierWait:
      line() << stmtKindName(s->kind) << " " << s->buffer->name << "[";
      expr(s->index);
      out_ << "]";
      if (s->ctaRank) {
        out_ << " cta ";
        expr(s->ctaRank);
      }
      if (s->count) {
        out_ << (s->kind == StmtKind::MBarrierInit             ? " arrivals "
                 : s->kind == StmtKind::MBarrierArriveExpectTx ? " bytes "
                                                               : " parity ");
        expr(s->count);
      }
      note();
      return;
    case StmtKind::FenceProxyAsync:
    case StmtKind::WgmmaFence:
    case StmtKind::WgmmaCommit:
      line() << stmtKindName(s->kind);
      note();
      return;
    case StmtKind::TmaLoad:
    case StmtKind::TmaStore: {
      line() << stmtKindName(s->kind) << " " << s->tensorMap->name << " (";
      for (size_t i = 0; i < s->coordinates.size(); ++i) {
        if (i)
          out_ << ", ";
        expr(s->coordinates[i]);
      }
      out_ << ") box "
           << llvm::join(
                  llvm::map_range(s->tensorMap->box, [](int64_t n) { return std::to_string(n); }),
                  " x ")
           << (s->kind == StmtKind::TmaLoad ? " -> " : " <- ") << s->buffer->name << "[";
      expr(s->index);
      out_ << "]";
      if (s->barrier) {
        out_ << " barrier " << s->barrier->name << "[";
        expr(s->barrierIndex);
        out_ << "]";
      }
      if (s->multicastMask) {
        out_ << " multicast mask ";
        expr(s->multicastMask);
      }
      note();
      return;
    }
    case StmtKind::TmaStoreWait:
    case StmtKind::WgmmaWait:
      line() << stmtKindName(s->kind) << " pending " << s->pending;
      note();
      return;
    case StmtKind::Wgmma:
      line() << "wgmma.mma_async m" << s->shape.m << "n" << s->shape.n << "k" << s->shape.k << " "
             << ir::dtypeName(s->inputType) << " " << s->buffer->name << " += " << s->operandA->name
             << "[";
      expr(s->offsetA);
      out_ << "]" << (s->transposeA ? "^T" : "") << blocks(s->blockBytesA) << " * "
           << s->operandB->name << "[";
      expr(s->offsetB);
      out_ << "]" << (s->transposeB ? "^T" : "") << blocks(s->blockBytesB);
      if (s->accumulate) {
        out_ << " accumulate if ";
        expr(s->accumulate);
      }
      note();
      return;
    case StmtKind::SetMaxNReg:
      line() << "setmaxnreg." << (s->increase ? "inc " : "dec ") << s->registers;
      note();
      return;
    case StmtKind::WarpRole:
      line() << "warp_role " << s->role << " if ";
      expr(s->condition);
      note();
      stmt(s->body[0], indent + 1);
      return;
    }
    FSL_UNREACHABLE("statement kind");
  }

private:
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
