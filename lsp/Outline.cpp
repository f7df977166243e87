// Outline.cpp — document symbols from the syntax tree, folding ranges from it and the text.
#include "lsp/Outline.h"

#include "ast/Printer.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::lsp {
namespace {

using mlir::lsp::DocumentSymbol;
using mlir::lsp::SymbolKind;

std::string typeText(const ast::Type &type) {
  std::string text;
  llvm::raw_string_ostream out(text);
  ast::printType(type, out);
  return text;
}

std::string directiveText(const ast::Directive &directive) {
  std::string text;
  llvm::raw_string_ostream out(text);
  ast::printDirective(directive, out);
  return llvm::StringRef(text).trim().str();
}

DocumentSymbol symbol(const Analysis &analysis, llvm::StringRef name, SymbolKind kind,
                      llvm::SMRange whole, llvm::SMRange selection, llvm::StringRef detail) {
  DocumentSymbol result(name.empty() ? "(unnamed)" : name, kind, analysis.rangeOf(whole),
                        analysis.rangeOf(selection));
  result.detail = detail.str();
  return result;
}

DocumentSymbol fusionSymbol(const Analysis &analysis, const ast::FusionDecl &fusion) {
  DocumentSymbol result = symbol(analysis, fusion.name.text, SymbolKind::Function, fusion.range,
                                 fusion.name.range, "fusion");
  for (const ast::StaticDim &dim : fusion.staticDims)
    result.children.push_back(symbol(analysis, dim.name.text, SymbolKind::TypeParameter, dim.range,
                                     dim.name.range,
                                     dim.value ? "= " + std::to_string(dim.value->value) : ""));
  for (const ast::Param &param : fusion.params)
    result.children.push_back(symbol(analysis, param.name.text, SymbolKind::Variable, param.range,
                                     param.name.range,
                                     (param.isInout ? "inout " : "") + typeText(param.type)));
  for (const ast::Output &output : fusion.outputs)
    result.children.push_back(symbol(analysis, output.name.text, SymbolKind::Field, output.range,
                                     output.name.range, "output " + typeText(output.type)));
  for (const ast::Statement &statement : fusion.body)
    if (statement.isLet)
      result.children.push_back(
          symbol(analysis, statement.target.text, SymbolKind::Variable, statement.range,
                 statement.target.range,
                 statement.declaredType ? typeText(*statement.declaredType) : "let"));
  return result;
}

DocumentSymbol scheduleSymbol(const Analysis &analysis, const ast::ScheduleDecl &schedule) {
  std::vector<std::string> guard;
  for (const ast::SizeCondition &condition : schedule.when)
    guard.push_back(
        llvm::StringRef(condition.range.Start.getPointer(),
                        condition.range.End.getPointer() - condition.range.Start.getPointer())
            .str());
  std::string name = "schedule " + schedule.fusion.text;
  if (!guard.empty())
    name += " when " + llvm::join(guard, " && ");
  std::string detail = schedule.isAuto ? "= auto" : "";
  if (schedule.autoKind)
    detail += "(" + schedule.autoKind->text + ")";
  DocumentSymbol result =
      symbol(analysis, name, SymbolKind::Namespace, schedule.range, schedule.fusion.range, detail);
  for (const ast::DirectivePtr &directive : schedule.directives)
    result.children.push_back(symbol(analysis, directiveText(*directive), SymbolKind::Event,
                                     directive->range, directive->range, ""));
  for (const ast::Knob &knob : schedule.knobs)
    result.children.push_back(symbol(analysis, knob.name.text, SymbolKind::Key, knob.range,
                                     knob.name.range,
                                     knob.value ? ast::formatExpr(*knob.value) : ""));
  return result;
}

llvm::json::Object foldingRange(int startLine, int endLine, llvm::StringRef kind) {
  llvm::json::Object range{{"startLine", startLine}, {"endLine", endLine}};
  if (!kind.empty())
    range["kind"] = kind;
  return range;
}

} // namespace

llvm::json::Array documentSymbols(const Analysis &analysis) {
  llvm::json::Array result;
  if (!analysis.syntax())
    return result;
  for (const ast::DeclPtr &decl : analysis.syntax()->decls) {
    if (const auto *import = llvm::dyn_cast<ast::ImportDecl>(decl.get())) {
      std::string resolved;
      for (const ImportedFile &imported : analysis.imports())
        if (imported.importedAt.getPointer() == import->pathRange.Start.getPointer())
          resolved = imported.path;
      result.push_back(mlir::lsp::toJSON(symbol(analysis, import->spelling, SymbolKind::Module,
                                                import->range, import->pathRange, resolved)));
    } else if (const auto *fn = llvm::dyn_cast<ast::FnDecl>(decl.get())) {
      std::vector<std::string> params;
      for (const ast::Name &param : fn->params)
        params.push_back(param.text);
      DocumentSymbol fnSymbol = symbol(analysis, fn->name.text, SymbolKind::Function, fn->range,
                                       fn->name.range, "fn(" + llvm::join(params, ", ") + ")");
      result.push_back(mlir::lsp::toJSON(fnSymbol));
    } else if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get())) {
      result.push_back(mlir::lsp::toJSON(fusionSymbol(analysis, *fusion)));
    } else if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get())) {
      result.push_back(mlir::lsp::toJSON(scheduleSymbol(analysis, *schedule)));
    }
  }
  return result;
}

llvm::json::Array foldingRanges(const Analysis &analysis) {
  llvm::json::Array result;
  // Runs of two or more whole-line comments.
  llvm::SmallVector<llvm::StringRef, 0> textLines;
  analysis.text().split(textLines, '\n');
  for (size_t line = 0; line < textLines.size();) {
    size_t end = line;
    while (end < textLines.size() && textLines[end].ltrim().starts_with("//"))
      ++end;
    if (end - line >= 2)
      result.push_back(foldingRange(int(line), int(end - 1), "comment"));
    line = std::max(end, line + 1);
  }
  if (!analysis.syntax())
    return result;
  int importsStart = -1, importsEnd = -1;
  auto endImports = [&] {
    if (importsEnd > importsStart)
      result.push_back(foldingRange(importsStart, importsEnd, "imports"));
    importsStart = importsEnd = -1;
  };
  for (const ast::DeclPtr &decl : analysis.syntax()->decls) {
    mlir::lsp::Range range = analysis.rangeOf(decl->range);
    if (llvm::isa<ast::ImportDecl>(decl.get())) {
      if (importsStart < 0)
        importsStart = range.start.line;
      importsEnd = range.end.line;
      continue;
    }
    endImports();
    if (range.end.line > range.start.line)
      result.push_back(foldingRange(range.start.line, range.end.line, "region"));
  }
  endImports();
  return result;
}

} // namespace fsl::lsp
