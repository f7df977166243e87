// DiagnosticsToLsp.cpp — severity, range, notes as related information, and the file.
#include "lsp/DiagnosticsToLsp.h"

#include "lsp/Protocol.h"

namespace fsl::lsp {
namespace {

mlir::lsp::DiagnosticSeverity severityOf(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return mlir::lsp::DiagnosticSeverity::Error;
  case Severity::Warning:
    return mlir::lsp::DiagnosticSeverity::Warning;
  case Severity::Note:
    return mlir::lsp::DiagnosticSeverity::Information;
  }
  return mlir::lsp::DiagnosticSeverity::Error;
}

llvm::json::Value withCode(const mlir::lsp::Diagnostic &diagnostic, DiagId kind) {
  llvm::json::Value value = ownedJSON(mlir::lsp::toJSON(diagnostic));
  value.getAsObject()->insert({"code", diagInfo(kind).id});
  return value;
}

} // namespace

std::map<std::string, llvm::json::Array> lspDiagnostics(const Analysis &analysis) {
  std::map<std::string, llvm::json::Array> byFile;
  byFile[analysis.path()];
  for (const Diagnostic &diagnostic : analysis.diagnostics()) {
    mlir::lsp::Diagnostic lsp;
    lsp.severity = severityOf(diagnostic.severity);
    lsp.source = "fslc";
    lsp.message = diagnostic.message;
    std::vector<mlir::lsp::DiagnosticRelatedInformation> related;
    for (const DiagNote &note : diagnostic.notes) {
      if (std::optional<mlir::lsp::Location> at = analysis.locationOf(note.range))
        related.emplace_back(*at, note.message);
      else
        lsp.message += "\nnote: " + note.message;
    }
    if (!related.empty())
      lsp.relatedInformation = related;

    std::optional<mlir::lsp::Location> at = analysis.locationOf(diagnostic.range);
    if (at && at->uri.file() == analysis.path()) {
      lsp.range = at->range;
      byFile[analysis.path()].push_back(withCode(lsp, diagnostic.kind));
      continue;
    }
    // Elsewhere: in the file itself, and where the document points at it.
    if (at) {
      mlir::lsp::Diagnostic there = lsp;
      there.range = at->range;
      byFile[at->uri.file().str()].push_back(withCode(there, diagnostic.kind));
    }
    mlir::lsp::Diagnostic here = lsp;
    if (std::optional<llvm::SMRange> importLine = analysis.importLineOf(diagnostic.range.Start);
        importLine && at) {
      here.range = analysis.rangeOf(*importLine);
      here.message = "in imported file " + at->uri.file().str() + ": " + lsp.message;
    } else {
      here.range = mlir::lsp::Range(mlir::lsp::Position(0, 0));
      if (at)
        here.message = "in " + at->uri.file().str() + ": " + lsp.message;
    }
    if (at) {
      std::vector<mlir::lsp::DiagnosticRelatedInformation> notes = {
          {*at, severityName(diagnostic.severity).str() + ": " + diagnostic.message}};
      if (lsp.relatedInformation)
        notes.insert(notes.end(), lsp.relatedInformation->begin(), lsp.relatedInformation->end());
      here.relatedInformation = notes;
    }
    byFile[analysis.path()].push_back(withCode(here, diagnostic.kind));
  }
  return byFile;
}

} // namespace fsl::lsp
