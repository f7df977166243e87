// Analysis.cpp — the phases of `fslc FILE` on a text in memory, and source positions.
#include "lsp/Analysis.h"

#include "parse/Parser.h"
#include "pipeline/Sources.h"
#include "sema/Sema.h"

#include <mlir/Tools/lsp-server-support/Logging.h>

namespace fsl::lsp {

namespace {
/// Enough errors to fix; past it the engine reports one too-many-errors.
constexpr unsigned kErrorLimit = 200;
} // namespace

Analysis::Analysis(std::string path, std::string text, const ServerOptions &options)
    : path_(std::move(path)) {
  mainBuffer_ = pipeline::addSourceText(sources_, path_, text);
  lines_ = std::make_unique<LineTable>(this->text());
  compile(options);
}

Analysis::~Analysis() = default;

llvm::StringRef Analysis::text() const {
  return sources_.getMemoryBuffer(mainBuffer_)->getBuffer();
}

void Analysis::compile(const ServerOptions &options) {
  DiagnosticEngine engine(diagnostics_);
  engine.setErrorLimit(kErrorLimit);

  // The server's own parse: its diagnostics are the compilation's, reported below.
  CollectingDiagnosticConsumer repeated;
  DiagnosticEngine scratch(repeated);
  syntax_ = parseFile(sources_, mainBuffer_, scratch);

  SettingsRequest request;
  request.firstInput = path_;
  request.target = options.target;
  request.includeDirs = options.includeDirs;
  request.stdlibDir = options.stdlibDir;
  bool configured = configure(request, sources_, engine, settings_);

  pipeline::Options compileOptions;
  compileOptions.target = settings_.target;
  compileOptions.stdlibDir = settings_.stdlibDir;
  compileOptions.includeDirs = settings_.includeDirs;
  compileOptions.defines = settings_.defines;
  // As `fslc FILE` generates code: every fusion gets a schedule (hover and inlay hints
  // show the heuristics' choices too) and is lowered when nothing failed.
  compileOptions.scheduleEveryFusion = true;
  pipeline::Compilation &compilation =
      compilation_.emplace(std::move(compileOptions), sources_, path_);
  if (!compilation.parse(mainBuffer_, engine))
    return;
  if (!configured)
    return; // sema needs the target and the include folders fsl.toml gives
  analyzed_ = compilation.analyze(engine);
  parseImports();
  if (!analyzed_)
    return;
  if (compilation.schedule(engine) && !engine.hasErrors())
    lowered_ = compilation.lower(engine);
  mlir::lsp::Logger::debug("{0}: {1} diagnostics, lowered: {2}", path_,
                           diagnostics_.diagnostics.size(), lowered_);
}

void Analysis::parseImports() {
  const char *begin = text().begin(), *end = text().end();
  for (unsigned id = 1; id <= sources_.getNumBuffers(); ++id) {
    llvm::SMLoc at = sources_.getBufferInfo(id).IncludeLoc;
    if (id == mainBuffer_ || !at.isValid() || at.getPointer() < begin || at.getPointer() >= end)
      continue;
    ImportedFile &imported = imports_.emplace_back();
    imported.path = sources_.getMemoryBuffer(id)->getBufferIdentifier().str();
    imported.buffer = id;
    imported.importedAt = at;
    CollectingDiagnosticConsumer repeated;
    DiagnosticEngine scratch(repeated);
    imported.syntax = parseFile(sources_, id, scratch);
  }
}

const Program *Analysis::program() const {
  return analyzed_ && compilation_ ? compilation_->program() : nullptr;
}

const pipeline::SchedulePlan *Analysis::schedules() const {
  return program() ? &compilation_->schedules() : nullptr;
}

// --- Positions -------------------------------------------------------------------------

llvm::SMLoc Analysis::locAt(const mlir::lsp::Position &position) const {
  return llvm::SMLoc::getFromPointer(text().begin() + lines_->offsetOf(position));
}

size_t Analysis::offsetOf(llvm::SMLoc loc) const {
  if (!inMainFile(loc))
    return 0;
  return loc.getPointer() - text().begin();
}

bool Analysis::inMainFile(llvm::SMLoc loc) const {
  return loc.isValid() && loc.getPointer() >= text().begin() && loc.getPointer() <= text().end();
}

mlir::lsp::Range Analysis::rangeOf(llvm::SMRange range) const {
  if (!inMainFile(range.Start))
    return mlir::lsp::Range(mlir::lsp::Position(0, 0));
  size_t end = inMainFile(range.End) ? offsetOf(range.End) : offsetOf(range.Start);
  return lines_->rangeOf(offsetOf(range.Start), end);
}

const LineTable &Analysis::linesOf(unsigned buffer) const {
  if (buffer == mainBuffer_)
    return *lines_;
  std::unique_ptr<LineTable> &lines = otherLines_[buffer];
  if (!lines)
    lines = std::make_unique<LineTable>(sources_.getMemoryBuffer(buffer)->getBuffer());
  return *lines;
}

std::optional<mlir::lsp::Location> Analysis::locationOf(llvm::SMRange range) const {
  if (!range.Start.isValid())
    return std::nullopt;
  unsigned buffer = sources_.FindBufferContainingLoc(range.Start);
  if (buffer == 0)
    return std::nullopt;
  std::string file =
      buffer == mainBuffer_ ? path_ : sources_.getMemoryBuffer(buffer)->getBufferIdentifier().str();
  llvm::Expected<mlir::lsp::URIForFile> uri = mlir::lsp::URIForFile::fromFile(file);
  if (!uri) {
    llvm::consumeError(uri.takeError());
    return std::nullopt;
  }
  const LineTable &lines = linesOf(buffer);
  const char *begin = lines.text().begin();
  size_t start = range.Start.getPointer() - begin;
  size_t end = start;
  if (range.End.isValid() && range.End.getPointer() >= range.Start.getPointer() &&
      range.End.getPointer() <= lines.text().end())
    end = range.End.getPointer() - begin;
  return mlir::lsp::Location{*uri, lines.rangeOf(start, end)};
}

std::optional<mlir::lsp::Location> Analysis::startOf(unsigned buffer) const {
  if (buffer == 0 || buffer > sources_.getNumBuffers())
    return std::nullopt;
  llvm::SMLoc start =
      llvm::SMLoc::getFromPointer(sources_.getMemoryBuffer(buffer)->getBufferStart());
  return locationOf(llvm::SMRange(start, start));
}

std::optional<llvm::SMRange> Analysis::importLineOf(llvm::SMLoc loc) const {
  // Up the chain of imports (each buffer remembers the import that loaded it) to the
  // document; a bounded walk, though sema refuses cycles anyway.
  for (unsigned steps = 0; loc.isValid() && steps <= sources_.getNumBuffers(); ++steps) {
    unsigned buffer = sources_.FindBufferContainingLoc(loc);
    if (buffer == 0)
      return std::nullopt;
    llvm::SMLoc includedAt = sources_.getBufferInfo(buffer).IncludeLoc;
    if (inMainFile(includedAt)) {
      const char *lineEnd = includedAt.getPointer();
      while (lineEnd < text().end() && *lineEnd != '\n')
        ++lineEnd;
      return llvm::SMRange(includedAt, llvm::SMLoc::getFromPointer(lineEnd));
    }
    loc = includedAt;
  }
  return std::nullopt;
}

} // namespace fsl::lsp
