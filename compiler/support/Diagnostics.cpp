// Diagnostics.cpp — registry lookup, the engine, and the text and JSON printers.
#include "support/Diagnostics.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/WithColor.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>

namespace fsl {

static const DiagInfo kRegistry[] = {
#define DIAGNOSTIC(Kind, Sev, Id, Format) {Severity::Sev, Id, Format},
#include "support/Diagnostics.def"
};

const DiagInfo &diagInfo(DiagId kind) { return kRegistry[static_cast<size_t>(kind)]; }

llvm::ArrayRef<DiagInfo> allDiagnostics() { return kRegistry; }

llvm::StringRef severityName(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

std::string messageWithId(const Diagnostic &diagnostic) {
  return diagnostic.message + " [" + diagInfo(diagnostic.kind).id + "]";
}

DiagnosticBuilder::~DiagnosticBuilder() {
  if (engine_)
    engine_->emit(std::move(diagnostic_));
}

void DiagnosticEngine::emit(Diagnostic diagnostic) {
  if (limitReached_)
    return;
  if (diagnostic.severity == Severity::Warning && warningsAsErrors_) {
    diagnostic.severity = Severity::Error;
    diagnostic.notes.push_back(
        {DiagId::NoteWarningAsError, llvm::SMRange(), diagInfo(DiagId::NoteWarningAsError).format});
  }
  // The same diagnostic at the same source range, its notes at the same places, is shown
  // once; a repeat is still counted, so that a phase that meets it again sees its failure.
  bool repeat = false;
  if (diagnostic.range.isValid()) {
    std::string key = std::to_string(static_cast<int>(diagnostic.kind)) + "\n" + diagnostic.message;
    auto place = [&](llvm::SMRange range) {
      key += llvm::formatv("\n{0}:{1}", static_cast<const void *>(range.Start.getPointer()),
                           static_cast<const void *>(range.End.getPointer()))
                 .str();
    };
    place(diagnostic.range);
    for (const DiagNote &note : diagnostic.notes) {
      key += "\n" + note.message;
      place(note.range);
    }
    repeat = !reported_.insert(std::move(key)).second;
  }
  if (diagnostic.severity == Severity::Error) {
    ++errorCount_;
    if (repeat)
      return;
    if (errorLimit_ != 0 && shownErrors_ == errorLimit_) {
      limitReached_ = true;
      consumer_->handle(
          Diagnostic{DiagId::TooManyErrors,
                     Severity::Error,
                     diagnostic.range,
                     llvm::formatv(diagInfo(DiagId::TooManyErrors).format, errorLimit_).str(),
                     {}});
      return;
    }
    ++shownErrors_;
  } else if (diagnostic.severity == Severity::Warning) {
    ++warningCount_;
    if (repeat)
      return;
  } else if (repeat) {
    return;
  }
  consumer_->handle(diagnostic);
}

static llvm::SourceMgr::DiagKind toSourceMgrKind(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return llvm::SourceMgr::DK_Error;
  case Severity::Warning:
    return llvm::SourceMgr::DK_Warning;
  case Severity::Note:
    return llvm::SourceMgr::DK_Note;
  }
  return llvm::SourceMgr::DK_Error;
}

namespace {

/// While alive, LLVM colours `out` whatever it writes to. SourceMgr colours through
/// WithColor, whose auto mode asks the stream whether it is a terminal; the printer's
/// caller has already decided (--diagnostics-color=always colours a pipe too).
class ForcedColors {
public:
  explicit ForcedColors(llvm::raw_ostream &out) : out_(out), wasEnabled_(out.colors_enabled()) {
    out_.enable_colors(true);
    llvm::WithColor::setAutoDetectFunction([](const llvm::raw_ostream &) { return true; });
  }
  ~ForcedColors() {
    llvm::WithColor::setAutoDetectFunction(llvm::WithColor::defaultAutoDetectFunction());
    out_.enable_colors(wasEnabled_);
  }
  ForcedColors(const ForcedColors &) = delete;
  ForcedColors &operator=(const ForcedColors &) = delete;

private:
  llvm::raw_ostream &out_;
  bool wasEnabled_;
};

} // namespace

void TextDiagnosticPrinter::print(DiagId kind, Severity severity, llvm::SMRange range,
                                  llvm::StringRef message) {
  std::optional<ForcedColors> forced;
  if (colors_)
    forced.emplace(out_);
  std::string text = (message + " [" + diagInfo(kind).id + "]").str();
  if (!range.Start.isValid()) {
    // No source text involved: the form compilers use for driver errors.
    llvm::SMDiagnostic diag("fslc", toSourceMgrKind(severity), text);
    diag.print(nullptr, out_, colors_, /*ShowKindLabel=*/true);
    return;
  }
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (range.End.isValid() && range.End.getPointer() > range.Start.getPointer())
    ranges.push_back(range);
  sources_.PrintMessage(out_, range.Start, toSourceMgrKind(severity), text, ranges, {}, colors_);
}

void TextDiagnosticPrinter::handle(const Diagnostic &diagnostic) {
  print(diagnostic.kind, diagnostic.severity, diagnostic.range, diagnostic.message);
  for (const DiagNote &note : diagnostic.notes)
    print(note.kind, Severity::Note, note.range, note.message);
  out_.flush();
}

/// {"file":..., "range": {"start": {"line","column"}, "end": {...}}}, 1-based, end exclusive.
static void addLocation(llvm::json::Object &object, llvm::SourceMgr &sources, llvm::SMRange range) {
  if (!range.Start.isValid())
    return;
  unsigned buffer = sources.FindBufferContainingLoc(range.Start);
  if (buffer == 0)
    return;
  object["file"] = sources.getMemoryBuffer(buffer)->getBufferIdentifier();
  auto position = [&](llvm::SMLoc loc) {
    auto [line, column] = sources.getLineAndColumn(loc, buffer);
    return llvm::json::Object{{"line", line}, {"column", column}};
  };
  llvm::SMLoc end = range.End.isValid() ? range.End : range.Start;
  object["range"] = llvm::json::Object{{"start", position(range.Start)}, {"end", position(end)}};
}

void JsonDiagnosticPrinter::finish() {
  llvm::json::Array list;
  for (const Diagnostic &diagnostic : diagnostics_) {
    llvm::json::Object object{{"id", diagInfo(diagnostic.kind).id},
                              {"severity", severityName(diagnostic.severity)},
                              {"message", diagnostic.message}};
    addLocation(object, sources_, diagnostic.range);
    llvm::json::Array notes;
    for (const DiagNote &note : diagnostic.notes) {
      llvm::json::Object noteObject{
          {"id", diagInfo(note.kind).id}, {"severity", "note"}, {"message", note.message}};
      addLocation(noteObject, sources_, note.range);
      notes.push_back(std::move(noteObject));
    }
    object["notes"] = std::move(notes);
    list.push_back(std::move(object));
  }
  llvm::json::Object document{{"version", 1}, {"diagnostics", std::move(list)}};
  out_ << llvm::formatv("{0:2}", llvm::json::Value(std::move(document))) << "\n";
  out_.flush();
}

} // namespace fsl
