// Printer.cpp — canonical .fsl text from the AST.
#include "ast/Printer.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::ast {
namespace {

constexpr size_t kLineLimit = 100;
constexpr const char *kIndent = "    ";

bool needsParens(const Expr &operand, int parentPrecedence, bool isRightOperand) {
  const auto *binary = llvm::dyn_cast<BinaryExpr>(&operand);
  if (!binary)
    return false;
  int precedence = binaryOpPrecedence(binary->op);
  return precedence < parentPrecedence || (isRightOperand && precedence == parentPrecedence);
}

void printOperand(const Expr &operand, int parentPrecedence, bool isRightOperand,
                  llvm::raw_ostream &out) {
  bool parens = needsParens(operand, parentPrecedence, isRightOperand);
  if (parens)
    out << '(';
  printExpr(operand, out);
  if (parens)
    out << ')';
}

template <typename T, typename F>
void printList(const std::vector<T> &items, llvm::raw_ostream &out, F printItem) {
  llvm::interleave(items, out, printItem, ", ");
}

void printDimRef(const DimRef &ref, llvm::raw_ostream &out) {
  if (ref.tensor)
    out << ref.tensor->text << '.';
  out << ref.dim.text;
}

void printTuple(const IntTuple &tuple, llvm::raw_ostream &out) {
  out << '(';
  printList(tuple.values, out, [&](const IntLiteral &v) { out << v.value; });
  out << ')';
}

std::string paramText(const Param &param) {
  std::string text;
  llvm::raw_string_ostream out(text);
  out << param.name.text << ": ";
  if (param.isInout)
    out << "inout ";
  if (param.isStrided)
    out << "strided ";
  printType(param.type, out);
  if (param.defaultValue) {
    out << " = ";
    printExpr(*param.defaultValue, out);
  }
  return text;
}

std::string outputText(const Output &output) {
  std::string text;
  llvm::raw_string_ostream out(text);
  out << output.name.text << ": ";
  printType(output.type, out);
  return text;
}

bool hasComments(const Comments &comments) {
  return !comments.leading.empty() || !comments.trailing.empty();
}

class FilePrinter {
public:
  explicit FilePrinter(llvm::raw_ostream &out) : out_(out) {}

  void file(const File &file, DeclReplacement replace = nullptr,
            const std::vector<std::string> &appended = {}) {
    const Decl *previous = nullptr;
    for (const DeclPtr &decl : file.decls) {
      if (previous && needsBlankLine(*previous, *decl))
        out_ << '\n';
      std::vector<std::string> blocks;
      if (replace)
        blocks = replace(*decl);
      if (blocks.empty()) {
        leadingComments(decl->comments, "");
        declaration(*decl);
      }
      for (size_t i = 0; i < blocks.size(); ++i)
        out_ << (i != 0 ? "\n" : "") << blocks[i];
      previous = decl.get();
    }
    // Blocks stand apart like fusions and schedules.
    bool any = previous != nullptr;
    for (const std::string &block : appended) {
      out_ << (any ? "\n" : "") << block;
      any = true;
    }
    if (!file.endComments.empty()) {
      if (any)
        out_ << '\n';
      commentLines(file.endComments, "");
    }
  }

private:
  /// Fusions and schedules stand apart; runs of imports or fns stay together unless the
  /// user separated them.
  static bool needsBlankLine(const Decl &previous, const Decl &next) {
    auto isBlock = [](const Decl &d) {
      return llvm::isa<FusionDecl>(d) || llvm::isa<ScheduleDecl>(d);
    };
    return isBlock(previous) || isBlock(next) || previous.kind() != next.kind() ||
           next.comments.blankLineBefore;
  }

  void commentLines(const std::vector<std::string> &comments, const char *indent) {
    for (const std::string &comment : comments) {
      if (!comment.empty())
        out_ << indent << comment;
      out_ << '\n';
    }
  }

  void leadingComments(const Comments &comments, const char *indent) {
    commentLines(comments.leading, indent);
  }

  void endLine(const Comments &comments) {
    if (!comments.trailing.empty())
      out_ << "  " << comments.trailing;
    out_ << '\n';
  }

  /// Blank line kept from the source, then the leading comments, at `indent`.
  void itemPrologue(const Comments &comments, bool first, const char *indent) {
    if (comments.blankLineBefore && !first)
      out_ << '\n';
    leadingComments(comments, indent);
  }

  void closeBody(const Decl &decl) {
    commentLines(decl.endComments, kIndent);
    out_ << '}';
    endLine(decl.comments);
  }

  void declaration(const Decl &decl) {
    if (const auto *import = llvm::dyn_cast<ImportDecl>(&decl)) {
      out_ << "import " << import->spelling << ';';
      endLine(decl.comments);
    } else if (const auto *fn = llvm::dyn_cast<FnDecl>(&decl)) {
      out_ << "fn " << fn->name.text << '(';
      printList(fn->params, out_, [&](const Name &n) { out_ << n.text; });
      out_ << ") = ";
      printExpr(*fn->body, out_);
      out_ << ';';
      endLine(decl.comments);
    } else if (const auto *fusion = llvm::dyn_cast<FusionDecl>(&decl)) {
      fusionDecl(*fusion);
    } else {
      scheduleDecl(*llvm::cast<ScheduleDecl>(&decl));
    }
  }

  void fusionDecl(const FusionDecl &fusion) {
    std::string head = "fusion " + fusion.name.text;
    if (!fusion.staticDims.empty()) {
      llvm::raw_string_ostream headOut(head);
      headOut << '<';
      printList(fusion.staticDims, headOut, [&](const StaticDim &dim) {
        headOut << dim.name.text;
        if (dim.value)
          headOut << " = " << dim.value->value;
      });
      headOut << '>';
    }
    std::vector<std::string> params, outputs;
    bool paramComments = false, outputComments = false;
    // A blank line before the first item is not printed (itemPrologue), so it must not
    // decide the wrapping either: the output would wrap once and then join (fuzzer).
    for (const Param &param : fusion.params) {
      paramComments |=
          hasComments(param.comments) || (!params.empty() && param.comments.blankLineBefore);
      params.push_back(paramText(param));
    }
    for (const Output &output : fusion.outputs) {
      outputComments |=
          hasComments(output.comments) || (!outputs.empty() && output.comments.blankLineBefore);
      outputs.push_back(outputText(output));
    }
    std::string paramLine = "(" + llvm::join(params, ", ") + ")";
    std::string outputLine = outputs.empty() ? "" : " -> (" + llvm::join(outputs, ", ") + ")";
    std::string backwardText;
    // Canonical order: the backward fusions, then the inputs that share a gradient.
    std::vector<std::string> backwardItems;
    for (const Name &backward : fusion.backward)
      backwardItems.push_back(backward.text);
    for (const FusionDecl::SameGradient &same : fusion.sameGradients)
      backwardItems.push_back(same.target.text + " = " + same.source.text);
    for (size_t i = 0; i < backwardItems.size(); ++i)
      backwardText += (i == 0 ? " backward " : ", ") + backwardItems[i];
    bool wrapParams =
        paramComments ||
        head.size() + paramLine.size() + outputLine.size() + backwardText.size() + 2 > kLineLimit;
    out_ << head;
    if (!wrapParams || params.empty()) {
      out_ << paramLine;
    } else {
      out_ << "(\n";
      for (size_t i = 0; i < params.size(); ++i) {
        itemPrologue(fusion.params[i].comments, i == 0, kIndent);
        out_ << kIndent << params[i] << ',';
        endLine(fusion.params[i].comments);
      }
      out_ << ')';
    }
    if (!outputs.empty()) {
      bool wrapOutputs =
          outputComments || 2 + outputLine.size() + backwardText.size() + 2 > kLineLimit;
      if (!wrapOutputs) {
        out_ << outputLine;
      } else {
        out_ << " -> (\n";
        for (size_t i = 0; i < outputs.size(); ++i) {
          itemPrologue(fusion.outputs[i].comments, i == 0, kIndent);
          out_ << kIndent << outputs[i] << ',';
          endLine(fusion.outputs[i].comments);
        }
        out_ << ')';
      }
    }
    out_ << backwardText << " {\n";
    for (size_t i = 0; i < fusion.body.size(); ++i) {
      const Statement &statement = fusion.body[i];
      itemPrologue(statement.comments, i == 0, kIndent);
      out_ << kIndent;
      if (statement.isLet)
        out_ << "let ";
      out_ << statement.target.text;
      if (statement.declaredType) {
        out_ << ": ";
        printType(*statement.declaredType, out_);
      }
      out_ << " = ";
      printExpr(*statement.value, out_);
      out_ << ';';
      endLine(statement.comments);
    }
    closeBody(fusion);
  }

  void scheduleDecl(const ScheduleDecl &schedule) {
    out_ << "schedule " << schedule.fusion.text;
    if (!schedule.when.empty()) {
      out_ << " when ";
      llvm::interleave(
          schedule.when, out_,
          [&](const SizeCondition &c) {
            out_ << c.dim.text;
            if (c.modulus)
              out_ << " % " << c.modulus->value;
            out_ << ' ' << binaryOpSpelling(c.op) << ' ' << c.bound.value;
          },
          " && ");
    }
    if (!schedule.isAuto) {
      out_ << " {\n";
      for (size_t i = 0; i < schedule.directives.size(); ++i) {
        const Directive &directive = *schedule.directives[i];
        itemPrologue(directive.comments, i == 0, kIndent);
        out_ << kIndent;
        printDirective(directive, out_);
        endLine(directive.comments);
      }
      closeBody(schedule);
      return;
    }
    out_ << " = auto";
    if (schedule.autoKind)
      out_ << '(' << schedule.autoKind->text << ')';
    if (schedule.knobs.empty() && schedule.endComments.empty()) {
      out_ << ';';
      endLine(schedule.comments);
      return;
    }
    out_ << " {\n";
    for (size_t i = 0; i < schedule.knobs.size(); ++i) {
      const Knob &knob = schedule.knobs[i];
      itemPrologue(knob.comments, i == 0, kIndent);
      out_ << kIndent << knob.name.text << " = ";
      printExpr(*knob.value, out_);
      out_ << ';';
      endLine(knob.comments);
    }
    closeBody(schedule);
  }

  llvm::raw_ostream &out_;
};

} // namespace

void printType(const Type &type, llvm::raw_ostream &out) {
  out << elementTypeName(type.element);
  if (type.isScalar())
    return;
  out << '[';
  printList(type.dims, out, [&](const Name &dim) { out << dim.text; });
  out << ']';
}

void printExpr(const Expr &expr, llvm::raw_ostream &out) {
  switch (expr.kind()) {
  case Expr::Kind::Literal:
    out << llvm::cast<LiteralExpr>(expr).spelling;
    return;
  case Expr::Kind::NameRef:
    out << llvm::cast<NameExpr>(expr).name.text;
    return;
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    out << call.callee.text << '(';
    printList(call.args, out, [&](const ExprPtr &arg) { printExpr(*arg, out); });
    if (!call.overDims.empty()) {
      out << ", over ";
      if (call.overDims.size() == 1) {
        out << call.overDims[0].text;
      } else {
        out << '(';
        printList(call.overDims, out, [&](const Name &dim) { out << dim.text; });
        out << ')';
      }
    }
    out << ')';
    return;
  }
  case Expr::Kind::Cast: {
    const auto &cast = llvm::cast<CastExpr>(expr);
    out << elementTypeName(cast.to) << '(';
    printExpr(*cast.operand, out);
    out << ')';
    return;
  }
  case Expr::Kind::Unary: {
    const auto &unary = llvm::cast<UnaryExpr>(expr);
    out << unaryOpSpelling(unary.op);
    // Unary operators bind tighter than any binary one.
    printOperand(*unary.operand, 100, false, out);
    return;
  }
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    int precedence = binaryOpPrecedence(binary.op);
    printOperand(*binary.lhs, precedence, false, out);
    out << ' ' << binaryOpSpelling(binary.op) << ' ';
    printOperand(*binary.rhs, precedence, true, out);
    return;
  }
  case Expr::Kind::Paren:
    out << '(';
    printExpr(*llvm::cast<ParenExpr>(expr).inner, out);
    out << ')';
    return;
  case Expr::Kind::Index: {
    const auto &indexed = llvm::cast<IndexExpr>(expr);
    out << indexed.base.text << '[' << indexed.dim.text;
    if (indexed.isWindow) {
      out << " -> " << indexed.window.text;
      if (indexed.index) {
        out << " from ";
        printExpr(*indexed.index, out);
      }
    } else {
      out << " = ";
      printExpr(*indexed.index, out);
    }
    out << ']';
    return;
  }
  }
}

std::string formatExpr(const Expr &expr) {
  std::string text;
  llvm::raw_string_ostream out(text);
  printExpr(expr, out);
  return text;
}

void printDirective(const Directive &directive, llvm::raw_ostream &out) {
  using K = Directive::Kind;
  switch (directive.kind()) {
  case K::Split: {
    const auto &d = llvm::cast<SplitDirective>(directive);
    out << "split ";
    printDimRef(d.dim, out);
    out << (d.factorIsOuter ? " into " : " by ") << d.factor.value << " -> (" << d.outer.text
        << ", " << d.inner.text << ')';
    break;
  }
  case K::Merge: {
    const auto &d = llvm::cast<MergeDirective>(directive);
    out << "merge (";
    printDimRef(d.first, out);
    out << ", ";
    printDimRef(d.second, out);
    out << ") -> " << d.result.text;
    break;
  }
  case K::Reorder: {
    const auto &d = llvm::cast<ReorderDirective>(directive);
    out << "reorder (";
    printList(d.order, out, [&](const DimRef &ref) { printDimRef(ref, out); });
    out << ')';
    break;
  }
  case K::Parallelize: {
    const auto &d = llvm::cast<ParallelizeDirective>(directive);
    out << "parallelize ";
    printList(d.bindings, out, [&](const ParallelBinding &b) {
      printDimRef(b.dim, out);
      out << " -> " << parallelTypeName(b.type);
    });
    break;
  }
  case K::Vectorize:
    out << "vectorize ";
    printDimRef(llvm::cast<VectorizeDirective>(directive).dim, out);
    break;
  case K::Unroll: {
    const auto &d = llvm::cast<UnrollDirective>(directive);
    out << "unroll ";
    printDimRef(d.dim, out);
    if (d.factor)
      out << " by " << d.factor->value;
    break;
  }
  case K::Unswitch:
    out << "unswitch ";
    printDimRef(llvm::cast<UnswitchDirective>(directive).dim, out);
    break;
  case K::Prefetch:
    out << "prefetch ";
    printDimRef(llvm::cast<PrefetchDirective>(directive).dim, out);
    break;
  case K::Rfactor:
    out << "rfactor ";
    printDimRef(llvm::cast<RfactorDirective>(directive).dim, out);
    break;
  case K::Inline: {
    const auto &d = llvm::cast<InlineDirective>(directive);
    out << "inline " << (d.tensor ? d.tensor->text : "all");
    break;
  }
  case K::ComputeAt: {
    const auto &d = llvm::cast<ComputeAtDirective>(directive);
    out << "compute_at " << d.tensor.text << ' ';
    printDimRef(d.at, out);
    break;
  }
  case K::ComputeWith:
    out << "compute_with " << llvm::cast<ComputeWithDirective>(directive).tensor.text;
    break;
  case K::Persistent: {
    const auto &d = llvm::cast<PersistentDirective>(directive);
    out << "persistent " << d.tensor.text << " in " << memoryKindName(d.memory);
    break;
  }
  case K::Cache: {
    const auto &d = llvm::cast<CacheDirective>(directive);
    out << "cache " << d.tensor.text << " in " << memoryKindName(d.memory);
    break;
  }
  case K::LaunchBounds:
    out << "launch_bounds " << llvm::cast<LaunchBoundsDirective>(directive).value.value;
    break;
  case K::MaxRRegCount:
    out << "maxrregcount " << llvm::cast<MaxRRegCountDirective>(directive).value.value;
    break;
  case K::Pdl:
    out << "pdl";
    break;
  case K::GridSync:
    out << "grid_sync";
    break;
  case K::FastExp:
    out << "fast_exp";
    break;
  case K::FastTanh:
    out << "fast_tanh";
    break;
  case K::FastDiv:
    out << "fast_div";
    break;
  case K::Reduce:
    out << (llvm::cast<ReduceDirective>(directive).onePass ? "reduce one_pass" : "reduce two_pass");
    break;
  case K::Mma: {
    const auto &d = llvm::cast<MmaDirective>(directive);
    out << "mma over " << d.reductionDim.text << ": tile ";
    printTuple(d.ctaTile, out);
    out << ", warp ";
    printTuple(d.warpTile, out);
    out << ", instruction " << d.instruction.text;
    printTuple(d.instructionShape, out);
    if (d.swapAB)
      out << ", swap_ab";
    break;
  }
  case K::Pipeline: {
    const auto &d = llvm::cast<PipelineDirective>(directive);
    out << "pipeline " << d.stages.value << " stages";
    if (d.viaTma)
      out << " via tma";
    break;
  }
  case K::WarpSpecialize: {
    const auto &d = llvm::cast<WarpSpecializeDirective>(directive);
    out << "warp_specialize producer(regs " << d.producerRegs.value << "), consumers("
        << d.consumerCount.value << ", regs " << d.consumerRegs.value << ')';
    break;
  }
  case K::Tiles: {
    const auto &d = llvm::cast<TilesDirective>(directive);
    out << "tiles ";
    switch (d.order) {
    case TileOrderKind::OnePerCta:
      out << "one_per_cta";
      break;
    case TileOrderKind::Persistent:
      out << "persistent";
      if (d.parameter)
        out << (d.hilbert ? " hilbert " : " swizzle ") << d.parameter->value;
      break;
    case TileOrderKind::StreamK:
      out << "stream_k";
      if (d.parameter)
        out << (d.hilbert ? " hilbert " : " swizzle ") << d.parameter->value;
      break;
    case TileOrderKind::SplitK:
      out << "split_k " << d.parameter->value;
      break;
    }
    break;
  }
  case K::Cluster: {
    const auto &d = llvm::cast<ClusterDirective>(directive);
    out << "cluster ";
    printTuple(d.shape, out);
    if (d.multicast)
      out << " multicast";
    break;
  }
  case K::Epilogue: {
    const auto &d = llvm::cast<EpilogueDirective>(directive);
    out << "epilogue via "
        << (d.via == EpilogueKind::Registers ? "registers"
            : d.via == EpilogueKind::Shared  ? "shared"
                                             : "shared tma_store");
    if (d.tile) {
      out << ", tile ";
      printTuple(*d.tile, out);
    }
    break;
  }
  }
  out << ';';
}

std::string formatFile(const File &file) {
  std::string text;
  llvm::raw_string_ostream out(text);
  FilePrinter(out).file(file);
  return text;
}

std::string formatFile(const File &file, DeclReplacement replace,
                       const std::vector<std::string> &appended) {
  std::string text;
  llvm::raw_string_ostream out(text);
  FilePrinter(out).file(file, replace, appended);
  return text;
}

} // namespace fsl::ast
