// Dumper.cpp — indented AST dump with ranges.
#include "ast/Dumper.h"

#include "ast/Printer.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <map>
#include <vector>

namespace fsl::ast {
namespace {

class Dumper {
public:
  Dumper(const llvm::SourceMgr &sources, llvm::raw_ostream &out) : sources_(sources), out_(out) {}

  void file(const File &file) {
    line(0) << "File " << file.path << '\n';
    for (const DeclPtr &decl : file.decls)
      declaration(*decl, 1);
  }

private:
  llvm::raw_ostream &line(unsigned depth) { return out_.indent(2 * depth); }

  std::string where(llvm::SMRange range) {
    if (!range.Start.isValid())
      return "<invalid>";
    auto [startLine, startColumn] = lineAndColumn(range.Start);
    auto [endLine, endColumn] = lineAndColumn(range.End.isValid() ? range.End : range.Start);
    return llvm::formatv("<{0}:{1}-{2}:{3}>", startLine, startColumn, endLine, endColumn).str();
  }

  /// SourceMgr::getLineAndColumn scans back to the line's start for the column: a dump
  /// of a long line (thousands of directives on it) would be quadratic. The line starts
  /// of each buffer are found once, and a location is a binary search.
  std::pair<unsigned, unsigned> lineAndColumn(llvm::SMLoc loc) {
    unsigned buffer = sources_.FindBufferContainingLoc(loc);
    if (buffer == 0)
      return {0, 0};
    std::vector<const char *> &starts = lineStarts_[buffer];
    if (starts.empty()) {
      llvm::StringRef text = sources_.getMemoryBuffer(buffer)->getBuffer();
      starts.push_back(text.begin());
      for (const char *c = text.begin(); c != text.end(); ++c)
        if (*c == '\n')
          starts.push_back(c + 1);
    }
    const char *at = loc.getPointer();
    auto next = std::upper_bound(starts.begin(), starts.end(), at);
    unsigned line = static_cast<unsigned>(next - starts.begin());
    return {line, static_cast<unsigned>(at - *(next - 1)) + 1};
  }

  void declaration(const Decl &decl, unsigned depth) {
    if (const auto *import = llvm::dyn_cast<ImportDecl>(&decl)) {
      line(depth) << "ImportDecl " << import->spelling << ' ' << where(decl.range) << '\n';
    } else if (const auto *fn = llvm::dyn_cast<FnDecl>(&decl)) {
      line(depth) << "FnDecl " << fn->name.text << '(';
      llvm::interleaveComma(fn->params, out_, [&](const Name &n) { out_ << n.text; });
      out_ << ") " << where(decl.range) << '\n';
      expr(*fn->body, depth + 1);
    } else if (const auto *fusion = llvm::dyn_cast<FusionDecl>(&decl)) {
      fusionDecl(*fusion, depth);
    } else {
      scheduleDecl(*llvm::cast<ScheduleDecl>(&decl), depth);
    }
  }

  void fusionDecl(const FusionDecl &fusion, unsigned depth) {
    line(depth) << "FusionDecl " << fusion.name.text << ' ' << where(fusion.range) << '\n';
    for (const StaticDim &dim : fusion.staticDims) {
      line(depth + 1) << "StaticDim " << dim.name.text;
      if (dim.value)
        out_ << " = " << dim.value->value;
      out_ << ' ' << where(dim.range) << '\n';
    }
    for (const Param &param : fusion.params) {
      line(depth + 1) << "Param " << param.name.text << ": " << (param.isInout ? "inout " : "")
                      << (param.isStrided ? "strided " : "");
      printType(param.type, out_);
      out_ << ' ' << where(param.range) << '\n';
      if (param.defaultValue)
        expr(*param.defaultValue, depth + 2);
    }
    for (const Output &output : fusion.outputs) {
      line(depth + 1) << "Output " << output.name.text << ": ";
      printType(output.type, out_);
      out_ << ' ' << where(output.range) << '\n';
    }
    for (const Name &backward : fusion.backward)
      line(depth + 1) << "Backward " << backward.text << ' ' << where(backward.range) << '\n';
    for (const FusionDecl::SameGradient &same : fusion.sameGradients)
      line(depth + 1) << "SameGradient " << same.target.text << " = " << same.source.text << ' '
                      << where(same.range) << '\n';
    for (const Statement &statement : fusion.body) {
      line(depth + 1) << (statement.isLet ? "Let " : "Assign ") << statement.target.text;
      if (statement.declaredType) {
        out_ << ": ";
        printType(*statement.declaredType, out_);
      }
      out_ << ' ' << where(statement.range) << '\n';
      expr(*statement.value, depth + 2);
    }
  }

  void expr(const Expr &e, unsigned depth) {
    switch (e.kind()) {
    case Expr::Kind::Literal:
      line(depth) << "Literal " << llvm::cast<LiteralExpr>(e).spelling;
      break;
    case Expr::Kind::NameRef:
      line(depth) << "Name " << llvm::cast<NameExpr>(e).name.text;
      break;
    case Expr::Kind::Call: {
      const auto &call = llvm::cast<CallExpr>(e);
      line(depth) << "Call " << call.callee.text;
      if (!call.overDims.empty()) {
        out_ << " over (";
        llvm::interleaveComma(call.overDims, out_, [&](const Name &n) { out_ << n.text; });
        out_ << ')';
      }
      out_ << ' ' << where(e.range) << '\n';
      for (const ExprPtr &arg : call.args)
        expr(*arg, depth + 1);
      return;
    }
    case Expr::Kind::Cast:
      line(depth) << "Cast " << elementTypeName(llvm::cast<CastExpr>(e).to) << ' ' << where(e.range)
                  << '\n';
      expr(*llvm::cast<CastExpr>(e).operand, depth + 1);
      return;
    case Expr::Kind::Unary:
      line(depth) << "Unary " << unaryOpSpelling(llvm::cast<UnaryExpr>(e).op) << ' '
                  << where(e.range) << '\n';
      expr(*llvm::cast<UnaryExpr>(e).operand, depth + 1);
      return;
    case Expr::Kind::Binary: {
      const auto &binary = llvm::cast<BinaryExpr>(e);
      line(depth) << "Binary " << binaryOpSpelling(binary.op) << ' ' << where(e.range) << '\n';
      expr(*binary.lhs, depth + 1);
      expr(*binary.rhs, depth + 1);
      return;
    }
    case Expr::Kind::Paren:
      line(depth) << "Paren " << where(e.range) << '\n';
      expr(*llvm::cast<ParenExpr>(e).inner, depth + 1);
      return;
    case Expr::Kind::Index: {
      const auto &indexed = llvm::cast<IndexExpr>(e);
      line(depth) << "Index " << indexed.base.text << " [" << indexed.dim.text;
      if (indexed.isWindow)
        out_ << " -> " << indexed.window.text;
      out_ << "] " << where(e.range) << '\n';
      if (indexed.index)
        expr(*indexed.index, depth + 1);
      return;
    }
    }
    out_ << ' ' << where(e.range) << '\n';
  }

  void scheduleDecl(const ScheduleDecl &schedule, unsigned depth) {
    line(depth) << "ScheduleDecl " << schedule.fusion.text << (schedule.isAuto ? " auto" : "");
    if (schedule.autoKind)
      out_ << '(' << schedule.autoKind->text << ')';
    out_ << ' ' << where(schedule.range) << '\n';
    for (const SizeCondition &condition : schedule.when)
      line(depth + 1) << "When " << condition.dim.text
                      << (condition.modulus ? " % " + std::to_string(condition.modulus->value) : "")
                      << ' ' << binaryOpSpelling(condition.op) << ' ' << condition.bound.value
                      << ' ' << where(condition.range) << '\n';
    for (const DirectivePtr &directive : schedule.directives) {
      line(depth + 1) << "Directive ";
      printDirective(*directive, out_);
      out_ << ' ' << where(directive->range) << '\n';
    }
    for (const Knob &knob : schedule.knobs)
      line(depth + 1) << "Knob " << knob.name.text << " = "
                      << llvm::cast<LiteralExpr>(*knob.value).spelling << ' ' << where(knob.range)
                      << '\n';
  }

  const llvm::SourceMgr &sources_;
  llvm::raw_ostream &out_;
  std::map<unsigned, std::vector<const char *>> lineStarts_; // by buffer
};

} // namespace

void dumpAST(const File &file, const llvm::SourceMgr &sources, llvm::raw_ostream &out) {
  Dumper(sources, out).file(file);
}

} // namespace fsl::ast
