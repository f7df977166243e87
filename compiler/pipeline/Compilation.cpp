// Compilation.cpp — one .fsl file through the compiler, phase by phase.
#include "pipeline/Compilation.h"

#include "kir/IR.h"
#include "lower/Lower.h"
#include "parse/Parser.h"
#include "pipeline/Sources.h"
#include "pipeline/Specialize.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"
#include "tuning/Database.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TimeProfiler.h>

namespace fsl::pipeline {

Compilation::Compilation(Options options, llvm::SourceMgr &sources, std::string path)
    : options_(std::move(options)), sources_(&sources), path_(std::move(path)) {}
Compilation::~Compilation() = default;
Compilation::Compilation(Compilation &&) noexcept = default;
Compilation &Compilation::operator=(Compilation &&) noexcept = default;

bool Compilation::parse(unsigned buffer, DiagnosticEngine &diagnostics) {
  {
    llvm::TimeTraceScope scope("Parse", path_);
    file_ = parseFile(*sources_, buffer, diagnostics);
  }
  if (!file_)
    return false;
  droppedStaticDims_ = dropRuntimeDims(*file_, options_.runtimeDims);
  staticDimNames_ = pipeline::staticDimNames(*file_, options_.specializeDims);
  return true;
}

bool Compilation::analyze(DiagnosticEngine &diagnostics) {
  SemaOptions semaOptions{options_.includeDirs, options_.stdlibDir,
                          semaDefines(options_.defines, options_.specializeDims)};
  {
    llvm::TimeTraceScope scope("Sema", path_);
    program_ = fsl::analyze(std::move(file_), *sources_, diagnostics, semaOptions);
  }
  if (!program_)
    return false;
  specializeRuntimeDims(*program_, options_.specializeDims);
  return true;
}

bool Compilation::schedule(DiagnosticEngine &diagnostics) {
  unsigned errorsBefore = diagnostics.errorCount();
  if (!options_.tuningDatabase.empty() && !tuningDatabase_) {
    llvm::TimeTraceScope scope("Read tuning database", options_.tuningDatabase);
    std::optional<unsigned> buffer = readSource(*sources_, options_.tuningDatabase, diagnostics);
    if (!buffer)
      return false;
    // Entries may name any target of the stdlib, by its file's name or an alias.
    std::vector<std::string> targets = options_.target.aliases;
    targets.insert(targets.begin(), options_.target.name);
    llvm::SmallString<256> directory(options_.stdlibDir);
    llvm::sys::path::append(directory, "targets");
    for (const std::string &file : targetFiles(directory))
      if (!llvm::is_contained(targets, llvm::sys::path::stem(file).str()))
        targets.push_back(llvm::sys::path::stem(file).str());
    tuningDatabase_ =
        tuning::Database::parse(*sources_, *buffer, options_.tuningDatabase, targets, diagnostics);
    if (!tuningDatabase_)
      return false;
  }
  {
    llvm::TimeTraceScope scope("Plan schedules", path_);
    plan_ = planSchedules(*program_, options_.target, options_.scheduleEveryFusion, diagnostics,
                          tuningDatabase_.get());
  }
  buildSchedules(plan_, *program_, options_.target, diagnostics);
  return diagnostics.errorCount() == errorsBefore;
}

bool Compilation::wanted(const ir::Fusion &fusion) const {
  return options_.onlyFusions.empty() || llvm::is_contained(options_.onlyFusions, fusion.name);
}

bool Compilation::reportDeclined(const ir::Fusion &fusion, DiagnosticEngine &diagnostics) const {
  auto declined = plan_.declined.find(fusion.name);
  if (declined == plan_.declined.end())
    return false;
  for (const DeclinedSchedule &each : declined->second)
    diagnostics.report(DiagId::NeedsExplicitSchedule, each.at, fusion.name, each.why);
  return !declined->second.empty();
}

bool Compilation::reportUnscheduled(DiagnosticEngine &diagnostics) const {
  unsigned errorsBefore = diagnostics.errorCount();
  for (const auto &fusion : program_->fusions)
    reportDeclined(*fusion, diagnostics);
  return diagnostics.errorCount() == errorsBefore;
}

bool Compilation::lower(DiagnosticEngine &diagnostics) {
  unsigned errorsBefore = diagnostics.errorCount();
  lower::LowerOptions lowerOptions;
  lowerOptions.registersPerSm = options_.target.registersPerSm;
  lowerOptions.smCount = options_.target.smCount;
  if (options_.target.maxRegistersPerThread > 0)
    lowerOptions.plan.maxRegistersPerThread = options_.target.maxRegistersPerThread;
  lowerOptions.plan.targetName = options_.target.name;
  if (options_.target.maxThreadsPerSm > 0)
    lowerOptions.maxThreadsPerSm = options_.target.maxThreadsPerSm;
  if (options_.target.sharedMemoryPerSm > 0)
    lowerOptions.sharedMemoryPerSm = options_.target.sharedMemoryPerSm;
  std::map<const ir::Fusion *, std::vector<const sched::Schedule *>> schedulesOf;
  // By the planned fusion: a schedule under a pinning guard is built against its copy.
  for (const PlannedSchedule &planned : plan_.planned)
    if (planned.built)
      schedulesOf[planned.fusion].push_back(planned.built);
  for (const auto &fusion : program_->fusions) {
    if (!wanted(*fusion))
      continue;
    const std::vector<const sched::Schedule *> &schedules = schedulesOf[fusion.get()];
    bool any = !schedules.empty();
    llvm::TimeTraceScope scope("Lower", fusion->name);
    // A declined `= auto` leaves its sizes without a schedule: nothing to lower.
    if (reportDeclined(*fusion, diagnostics))
      continue;
    if (!any)
      diagnostics.report(DiagId::NeedsExplicitSchedule, fusion->range, fusion->name,
                         "its schedules are all 'auto'");
    else if (auto program =
                 lowerFusion(*fusion, schedules, lowerOptions, diagnostics, options_.printAfter)) {
      programByFusion_[fusion.get()] = program.get();
      programs_.push_back(std::move(program));
    }
  }
  return diagnostics.errorCount() == errorsBefore;
}

const kir::Program *Compilation::programOf(const ir::Fusion &fusion) const {
  auto it = programByFusion_.find(&fusion);
  return it == programByFusion_.end() ? nullptr : it->second;
}

std::string Compilation::baseName(const ir::Fusion &fusion) const {
  return options_.symbolPrefix + fusion.name;
}

codegen::CodegenOptions Compilation::codegenOptions() const {
  codegen::CodegenOptions options;
  options.programmaticDependentLaunch = codegen::supportsProgrammaticLaunch(options_.target.arch);
  options.limits = options_.target.launchLimits();
  options.symbolPrefix = options_.symbolPrefix;
  options.sourceLocation = [this](llvm::SMRange range) { return relativeLocation(range); };
  return options;
}

/// `file.fsl:LINE` of a range, with a path that does not depend on where the compiler
/// ran: the input by its file name, an imported module relative to the input's folder,
/// or to the import or stdlib folder it was found in (`std/norms.fsl`).
std::string Compilation::relativeLocation(llvm::SMRange range) const {
  if (!range.isValid())
    return "";
  unsigned buffer = sources_->FindBufferContainingLoc(range.Start);
  if (buffer == 0)
    return "";
  std::string path = sources_->getMemoryBuffer(buffer)->getBufferIdentifier().str();
  std::string shown = llvm::sys::path::filename(path).str();
  if (path != path_) {
    std::vector<std::string> roots = {llvm::sys::path::parent_path(path_).str()};
    roots.insert(roots.end(), options_.includeDirs.begin(), options_.includeDirs.end());
    roots.push_back(options_.stdlibDir);
    for (const std::string &root : roots) {
      llvm::SmallString<256> prefix(root);
      if (prefix.empty())
        continue;
      // A whole folder of the path: `stdlib` is no prefix of `stdlib-old/x.fsl`, and
      // `tuning/h200.fsl` keeps no leading separator (append() adds none for "").
      if (!llvm::sys::path::is_separator(prefix.back()))
        prefix += llvm::sys::path::get_separator();
      if (llvm::StringRef(path).starts_with(prefix)) {
        shown = path.substr(prefix.size());
        break;
      }
    }
  }
  // The buffer's line table: FindLineNumber also scans back for the column, which is
  // quadratic over the many locations of a long line.
  return shown + ":" +
         std::to_string(sources_->getBufferInfo(buffer).getLineNumber(range.Start.getPointer()));
}

codegen::GeneratedSources Compilation::generate(const ir::Fusion &fusion) const {
  llvm::TimeTraceScope scope("Codegen", fusion.name);
  const kir::Program *program = programOf(fusion);
  if (!program)
    FSL_UNREACHABLE("a fusion without a lowered program");
  // The sources name the input by its file name only, so they do not depend on the
  // folder the compiler ran in.
  return codegen::generateCuda(*program, llvm::sys::path::filename(path_).str(), codegenOptions());
}

std::optional<codegen::NvrtcResult>
Compilation::compile(const ir::Fusion &fusion, const codegen::GeneratedSources &sources, bool cubin,
                     const std::vector<std::string> &nvrtcOptions,
                     DiagnosticEngine &diagnostics) const {
  llvm::TimeTraceScope scope("NVRTC", fusion.name);
  codegen::NvrtcResult compiled = codegen::compileWithNvrtc(
      sources.source, baseName(fusion) + ".cu", options_.target.arch, cubin, nvrtcOptions);
  if (!compiled.ok) {
    diagnostics.report(DiagId::NvrtcFailed, fusion.range, fusion.name, compiled.log);
    return std::nullopt;
  }
  return compiled;
}

} // namespace fsl::pipeline
