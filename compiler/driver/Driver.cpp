// Driver.cpp — options and config; then for every input read → parse → sema; then the
// -D check across inputs; then emit. Nothing is written for an input with errors.
#include "driver/Driver.h"

#include "ast/Dumper.h"
#include "ast/Printer.h"
#include "check/Checker.h"
#include "codegen/CudaCodegen.h"
#include "codegen/Nvrtc.h"
#include "driver/Config.h"
#include "driver/Evaluate.h"
#include "driver/Simulate.h"
#include "driver/Verify.h"
#include "heuristics/Heuristics.h"
#include "ir/Printer.h"
#include "kir/Printer.h"
#include "lower/Lower.h"
#include "parse/Parser.h"
#include "schedule/FromAst.h"
#include "schedule/Printer.h"
#include "schedule/ScheduleBuilder.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"
#include "support/SourceFile.h"
#include "support/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

namespace fsl {
namespace {

/// Settings after merging the command line over fsl.toml.
struct Settings {
  Target target;
  std::string targetFile; // the stdlib/targets file it was read from (a prerequisite)
  std::string configFile; // the fsl.toml read, if any (a prerequisite)
  std::string outputDir;
  std::string stdlibDir;
  std::vector<std::string> includeDirs;
  std::map<std::string, int64_t> defines;
};

/// A schedule block of the main file: a user's, or one the heuristics chose.
struct PlannedSchedule {
  /// The declaration it comes from (several blocks may replace one `= auto`); null for a
  /// block chosen for a fusion that has no schedule.
  const ast::ScheduleDecl *decl = nullptr;
  const ir::Fusion *fusion = nullptr;
  /// An `= auto` declaration the heuristics did not replace has only its header.
  sched::ScheduleBlock block;
  const sched::Schedule *built = nullptr; // once built and checked
};

/// One input on its way through the pipeline.
struct Unit {
  std::string path;                     // as named in diagnostics: `<stdin>` for `-`
  bool fromStdin = false;               // `-`: outputs named after it go to standard output
  std::unique_ptr<ast::File> file;      // when only parsed (format, ast)
  std::unique_ptr<Program> program;     // after sema
  std::vector<PlannedSchedule> planned; // in source order, then the chosen
  std::vector<std::unique_ptr<sched::Schedule>> schedules; // built from `planned`, checked
  std::vector<std::unique_ptr<kir::Program>> programs;     // lowered, when asked for
  /// An `= auto` declaration (or a fusion without any schedule) no heuristic could
  /// schedule: why, and where it is reported.
  struct Declined {
    std::string why;
    llvm::SMRange at;
  };
  std::map<std::string, std::vector<Declined>> noHeuristic; // by fusion
  std::set<std::string> staticDimNames;
  std::map<std::string, const ir::Fusion *> fusionsByName;            // of `program`
  std::map<const ir::Fusion *, const kir::Program *> programByFusion; // of `programs`
  bool failed = false;
};

class Driver {
public:
  Driver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err)
      : options_(options), out_(out), err_(err),
        text_(sources_, err,
              options.color == ColorMode::Always ||
                  (options.color == ColorMode::Auto && err.has_colors())),
        json_(sources_, err), diagnostics_(options.diagnosticsFormat == DiagnosticsFormat::Json
                                               ? static_cast<DiagnosticConsumer &>(json_)
                                               : static_cast<DiagnosticConsumer &>(text_)) {
    diagnostics_.setWarningsAsErrors(options.warningsAsErrors);
    diagnostics_.setErrorLimit(options.errorLimit);
  }

  int run() {
    // The profiler is per thread: it starts on the thread the driver runs on.
    if (options_.timeTrace)
      llvm::timeTraceProfilerInitialize(/*TimeTraceGranularity=*/0, "fslc");
    int code = runPhases();
    if (options_.timeTrace) {
      code = std::max(code, writeTimeTrace());
      llvm::timeTraceProfilerCleanup();
    }
    diagnostics_.finish();
    return code;
  }

private:
  int runPhases() {
    if (options_.crashForTesting)
      internalError(__FILE__, __LINE__, "--crash-for-testing", "a crash, as asked");
    int code = checkOptions();
    if (code != kExitSuccess)
      return code;
    settings_.stdlibDir = stdlibDirectory();
    if (options_.printTargets)
      return listTargets();
    code = configure();
    if (code == kExitSuccess && options_.inputs.empty()) {
      diagnostics_.report(DiagId::NoInputFiles, llvm::SMRange());
      code = kExitUsage;
    }
    if (code == kExitSuccess) {
      std::vector<Unit> units;
      for (const std::string &input : options_.inputs) {
        units.push_back(frontEnd(input, code));
        if (diagnostics_.limitReached())
          break;
      }
      if (!checkDefines(units))
        code = std::max<int>(code, kExitDiagnostics);
      else if (!options_.verify)
        for (Unit &unit : units)
          if (!unit.failed)
            code = std::max(code, emit(unit));
    }
    if (code == kExitSuccess && wantsDepfile())
      code = writeDepfile();
    return code;
  }

  // --- Options and configuration ----------------------------------------------------

  /// What the command line alone can tell to be wrong.
  int checkOptions() {
    if (!options_.usageError.empty()) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(), options_.usageError);
      return kExitUsage;
    }
    for (const std::string &pass : options_.printAfter)
      if (!llvm::is_contained(loweringPassNames(), pass)) {
        diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                            "--print-after=" + pass + ": no lowering pass of that name (passes: " +
                                llvm::join(loweringPassNames(), ", ") + ")");
        return kExitUsage;
      }
    // Standard input can be read once.
    if (llvm::count(options_.inputs, "-") > 1) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                          "'-' (standard input) is given more than once");
      return kExitUsage;
    }
    if (!options_.depfile.empty() && !options_.depfileGccPath.empty() &&
        options_.depfile != options_.depfileGccPath) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                          "--depfile=" + options_.depfile + " and -MF " + options_.depfileGccPath +
                              " name different depfiles");
      return kExitUsage;
    }
    // The prefix starts C identifiers and file names: an identifier's characters are
    // safe in both.
    llvm::StringRef prefix = options_.symbolPrefix;
    if (!prefix.empty() && (llvm::isDigit(prefix.front()) || !llvm::all_of(prefix, [](char c) {
                              return llvm::isAlnum(c) || c == '_';
                            }))) {
      diagnostics_.report(DiagId::InvalidPrefix, llvm::SMRange(), options_.symbolPrefix);
      return kExitUsage;
    }
    // --simulate-rtol / --simulate-atol: finite and not negative.
    for (auto [name, given, term] :
         {std::tuple{"simulate-rtol", &options_.simulateRtol, &tolerance_.rel},
          std::tuple{"simulate-atol", &options_.simulateAtol, &tolerance_.abs}}) {
      if (!*given)
        continue;
      double value = 0;
      if (llvm::StringRef(**given).trim().getAsDouble(value) || !std::isfinite(value) ||
          value < 0) {
        diagnostics_.report(DiagId::InvalidSimulateTolerance, llvm::SMRange(), name, **given);
        return kExitUsage;
      }
      *term = value;
      if (options_.simulateSizes.empty()) {
        diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                            std::string("--") + name + " applies to --simulate only");
        return kExitUsage;
      }
    }
    return kExitSuccess;
  }

  /// --stdlib, else $FSLC_STDLIB, else the installed stdlib next to fslc
  /// (<prefix>/bin/fslc and <prefix>/share/fslc/stdlib), else this source tree's.
  std::string stdlibDirectory() const {
    if (!options_.stdlibDir.empty())
      return options_.stdlibDir;
    if (!options_.stdlibFromEnvironment.empty())
      return options_.stdlibFromEnvironment;
    if (!options_.executablePath.empty()) {
      llvm::SmallString<256> installed(llvm::sys::path::parent_path(options_.executablePath));
      llvm::sys::path::append(installed, "..", "share", "fslc", "stdlib");
      llvm::sys::path::remove_dots(installed, /*remove_dot_dot=*/true);
      if (llvm::sys::fs::is_directory(installed))
        return std::string(installed);
    }
    return FSL_STDLIB_DIR;
  }

  /// --print-targets: one line per target file, on standard output.
  int listTargets() {
    llvm::SmallString<256> directory(settings_.stdlibDir);
    llvm::sys::path::append(directory, "targets");
    unsigned errorsBefore = diagnostics_.errorCount();
    std::vector<Target> targets;
    for (const std::string &file : targetFiles(directory))
      if (std::optional<unsigned> buffer = readFile(file))
        if (std::optional<Target> target = parseTarget(sources_, *buffer, diagnostics_))
          targets.push_back(std::move(*target));
    out_ << "Targets in " << directory << ":\n";
    if (targets.empty())
      out_ << "  (none)\n";
    size_t nameWidth = 0, archWidth = 0;
    for (const Target &target : targets) {
      nameWidth = std::max(nameWidth, target.name.size());
      archWidth = std::max(archWidth, target.arch.size());
    }
    for (const Target &target : targets) {
      out_ << "  " << llvm::left_justify(target.name, nameWidth) << "  "
           << llvm::left_justify(target.arch, archWidth) << "  " << target.description;
      if (!target.aliases.empty())
        out_ << " (aliases: " << llvm::join(target.aliases, ", ") << ")";
      if (target.name == kDefaultTarget)
        out_ << " [default]";
      out_ << "\n";
    }
    out_.flush();
    return diagnostics_.errorCount() == errorsBefore ? kExitSuccess : kExitUsage;
  }

  /// Like .clang-format: the nearest fsl.toml in the first input's folder or above it
  /// (the current folder's for standard input). Empty when there is none.
  std::string findConfig() const {
    llvm::SmallString<256> directory;
    if (options_.inputs.empty() || options_.inputs.front() == "-") {
      if (llvm::sys::fs::current_path(directory))
        return "";
    } else {
      directory = options_.inputs.front();
      if (llvm::sys::fs::make_absolute(directory))
        return "";
      // `..` is taken by its spelling, so that the walk climbs what the user named.
      llvm::sys::path::remove_dots(directory, /*remove_dot_dot=*/true);
      llvm::sys::path::remove_filename(directory);
    }
    while (!directory.empty()) {
      llvm::SmallString<256> candidate(directory);
      llvm::sys::path::append(candidate, "fsl.toml");
      if (llvm::sys::fs::is_regular_file(candidate))
        return std::string(candidate);
      llvm::StringRef parent = llvm::sys::path::parent_path(directory);
      if (parent == directory)
        break;
      directory = parent.str();
    }
    return "";
  }

  int configure() {
    llvm::TimeTraceScope scope("Configure");
    ProjectConfig config;
    std::string configPath = !options_.configPath.empty() ? options_.configPath : findConfig();
    if (!configPath.empty()) {
      std::optional<unsigned> buffer = readFile(configPath);
      if (!buffer)
        return kExitUsage;
      std::optional<ProjectConfig> loaded = loadConfig(sources_, *buffer, diagnostics_);
      if (!loaded)
        return kExitUsage;
      config = std::move(*loaded);
      settings_.configFile = configPath;
    }
    unsigned errorsBefore = diagnostics_.errorCount();
    std::string targetName = !options_.target.empty() ? options_.target
                             : config.target          ? *config.target
                                                      : kDefaultTarget;
    loadTarget(targetName);
    settings_.outputDir =
        !options_.outputDir.empty() ? options_.outputDir : config.outputDir.value_or("");
    settings_.includeDirs = options_.includeDirs;
    settings_.includeDirs.insert(settings_.includeDirs.end(), config.includeDirs.begin(),
                                 config.includeDirs.end());
    for (const std::string &dir : settings_.includeDirs)
      if (!llvm::sys::fs::is_directory(dir))
        diagnostics_.report(DiagId::MissingIncludeDir, llvm::SMRange(), dir);
    for (const auto &[name, value] : config.defines)
      settings_.defines[name] = value;
    for (const std::string &define : options_.defines) {
      auto [name, valueText] = llvm::StringRef(define).split('=');
      int64_t value;
      bool validName = !name.empty() &&
                       (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       llvm::all_of(name, [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
      if (!validName || valueText.getAsInteger(10, value) || value <= 0) {
        diagnostics_.report(DiagId::InvalidDefine, llvm::SMRange(), define);
        continue;
      }
      settings_.defines[name.str()] = value;
    }
    return diagnostics_.errorCount() == errorsBefore ? kExitSuccess : kExitUsage;
  }

  /// Finds the target by file name or alias among stdlib/targets/*.toml.
  void loadTarget(const std::string &name) {
    llvm::SmallString<256> directory(settings_.stdlibDir);
    llvm::sys::path::append(directory, "targets");
    std::vector<std::string> known;
    for (const std::string &file : targetFiles(directory)) {
      std::optional<unsigned> buffer = readFile(file);
      if (!buffer)
        continue;
      std::optional<Target> target = parseTarget(sources_, *buffer, diagnostics_);
      if (!target)
        continue;
      known.push_back(target->name);
      for (const std::string &alias : target->aliases)
        known.push_back(alias + " (" + target->name + ")");
      if (target->name == name || llvm::is_contained(target->aliases, name)) {
        settings_.target = *target;
        settings_.targetFile = file;
        return;
      }
    }
    diagnostics_.report(DiagId::UnknownTarget, llvm::SMRange(), name,
                        known.empty() ? "none found in " + std::string(directory)
                                      : llvm::join(known, ", "));
  }

  /// Adds an input to the source manager: a text held in memory, a file, or standard
  /// input for `-`.
  std::optional<unsigned> readInput(const std::string &path) {
    if (auto text = options_.inputTexts.find(path); text != options_.inputTexts.end())
      return sources_.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text->second, path),
                                         llvm::SMLoc());
    if (path != "-")
      return readFile(path);
    return addSource(readStandardInput(), "<stdin>");
  }

  /// Adds a file to the source manager; reports why it cannot be read. Devices, pipes
  /// and files over the size limit are refused before anything is read.
  std::optional<unsigned> readFile(const std::string &path) {
    return addSource(readSourceFile(path), path);
  }

  std::optional<unsigned> addSource(SourceFile file, const std::string &path) {
    switch (file.status) {
    case SourceFile::Status::Ok:
      return sources_.AddNewSourceBuffer(std::move(file.buffer), llvm::SMLoc());
    case SourceFile::Status::Directory:
      diagnostics_.report(DiagId::InputIsDirectory, llvm::SMRange(), path);
      return std::nullopt;
    case SourceFile::Status::NotRegular:
      diagnostics_.report(DiagId::InputNotRegularFile, llvm::SMRange(), path, file.message);
      return std::nullopt;
    case SourceFile::Status::TooLarge:
      diagnostics_.report(DiagId::InputTooLarge, llvm::SMRange(), path,
                          file.size > kMaxSourceBytes && path == "<stdin>"
                              ? "more than " + std::to_string(kMaxSourceBytes)
                              : std::to_string(file.size),
                          kMaxSourceBytes);
      return std::nullopt;
    case SourceFile::Status::Unreadable:
      diagnostics_.report(DiagId::InputNotReadable, llvm::SMRange(), path, file.message);
      return std::nullopt;
    }
    FSL_UNREACHABLE("source file status");
  }

  // --- One input: the phases, in order ---------------------------------------------

  bool needsSemantics() const {
    return options_.verify || options_.emit == EmitKind::Check ||
           options_.emit == EmitKind::FusionIR || options_.emit == EmitKind::Schedule ||
           needsKernels() || !options_.evaluateSizes.empty();
  }

  bool needsKernels() const {
    return options_.emit == EmitKind::KernelIR || options_.emit == EmitKind::Cuda ||
           options_.emit == EmitKind::Ptx || options_.emit == EmitKind::Cubin ||
           !options_.simulateSizes.empty() || !options_.printAfter.empty() ||
           options_.printAfterAll || options_.resourceUsage;
  }

  /// Whether `fusion` is lowered and generated (DriverOptions::onlyFusions).
  bool wanted(const ir::Fusion &fusion) const {
    return options_.onlyFusions.empty() || llvm::is_contained(options_.onlyFusions, fusion.name);
  }

  /// The lowered program of one fusion.
  const kir::Program &programOf(const Unit &unit, const ir::Fusion &fusion) const {
    auto it = unit.programByFusion.find(&fusion);
    if (it != unit.programByFusion.end())
      return *it->second;
    FSL_UNREACHABLE("a fusion without a lowered program");
  }

  /// needs-explicit-schedule for each `= auto` no heuristic could fill (--emit=schedule
  /// would print nothing for the sizes it covers); false after reporting one.
  bool reportUnscheduled(const Unit &unit) {
    unsigned errorsBefore = diagnostics_.errorCount();
    for (const auto &fusion : unit.program->fusions)
      reportDeclined(unit, *fusion);
    return diagnostics_.errorCount() == errorsBefore;
  }

  /// needs-explicit-schedule at each `= auto` of `fusion` that no heuristic could fill
  /// (the sizes it covers would have no schedule), or at the fusion when it has no
  /// schedule declaration; whether there was one.
  bool reportDeclined(const Unit &unit, const ir::Fusion &fusion) {
    auto declined = unit.noHeuristic.find(fusion.name);
    if (declined == unit.noHeuristic.end())
      return false;
    for (const Unit::Declined &each : declined->second)
      diagnostics_.report(DiagId::NeedsExplicitSchedule, each.at, fusion.name, each.why);
    return !declined->second.empty();
  }

  /// Lowers every explicit schedule; a fusion without one cannot generate code yet.
  bool lowerAll(Unit &unit) {
    unsigned errorsBefore = diagnostics_.errorCount();
    PrintAfter print;
    print.passes.insert(options_.printAfter.begin(), options_.printAfter.end());
    print.all = options_.printAfterAll;
    print.out = &err_;
    lower::LowerOptions lowerOptions;
    lowerOptions.registersPerSm = settings_.target.registersPerSm;
    lowerOptions.smCount = settings_.target.smCount;
    std::map<const ir::Fusion *, std::vector<const sched::Schedule *>> schedulesOf;
    for (const auto &schedule : unit.schedules)
      schedulesOf[schedule->fusion].push_back(schedule.get());
    for (const auto &fusion : unit.program->fusions) {
      if (!wanted(*fusion))
        continue;
      const std::vector<const sched::Schedule *> &schedules = schedulesOf[fusion.get()];
      bool any = !schedules.empty();
      llvm::TimeTraceScope scope("Lower", fusion->name);
      // A declined `= auto` leaves its sizes without a schedule: nothing to lower.
      if (reportDeclined(unit, *fusion))
        continue;
      if (!any)
        diagnostics_.report(DiagId::NeedsExplicitSchedule, fusion->range, fusion->name,
                            "its schedules are all 'auto'");
      else if (auto program = lowerFusion(*fusion, schedules, lowerOptions, diagnostics_, print)) {
        unit.programByFusion[fusion.get()] = program.get();
        unit.programs.push_back(std::move(program));
      }
    }
    return diagnostics_.errorCount() == errorsBefore;
  }

  Unit frontEnd(const std::string &path, int &code) {
    Unit unit;
    unit.fromStdin = path == "-";
    unit.path = unit.fromStdin ? "<stdin>" : path;
    unit.failed = true;
    std::optional<unsigned> buffer;
    {
      llvm::TimeTraceScope scope("Read", unit.path);
      buffer = readInput(path);
    }
    if (!buffer) {
      code = std::max<int>(code, kExitUsage);
      return unit;
    }
    // Under -verify the file's diagnostics are collected and compared, not printed.
    CollectingDiagnosticConsumer collected;
    DiagnosticEngine verifyEngine(collected);
    verifyEngine.setWarningsAsErrors(options_.warningsAsErrors);
    DiagnosticEngine &diagnostics = options_.verify ? verifyEngine : diagnostics_;
    unsigned errorsBefore = diagnostics.errorCount();

    std::unique_ptr<ast::File> file;
    {
      llvm::TimeTraceScope scope("Parse", unit.path);
      file = parseFile(sources_, *buffer, diagnostics);
    }
    if (file) {
      overrideDims(*file);
      unit.staticDimNames = staticDimNames(*file);
    }
    if (!unit.fromStdin)
      addPrerequisite(path);
    if (file && needsSemantics()) {
      SemaOptions semaOptions{settings_.includeDirs, settings_.stdlibDir, settings_.defines};
      // A specialized dimension's value is the one asked for, whatever fsl.toml defines.
      for (const auto &[name, value] : options_.specializeDims)
        semaOptions.defines.erase(name);
      {
        llvm::TimeTraceScope scope("Sema", unit.path);
        unit.program = analyze(std::move(file), sources_, diagnostics, semaOptions);
      }
      if (unit.program && options_.analyzedFusion)
        for (const auto &fusion : unit.program->fusions)
          options_.analyzedFusion(*fusion, settings_.target);
      if (unit.program) {
        for (const auto &imported : unit.program->imported)
          addPrerequisite(imported->path);
        {
          llvm::TimeTraceScope scope("Plan schedules", unit.path);
          planSchedules(unit, diagnostics);
        }
        buildSchedules(unit, diagnostics);
      }
    } else {
      unit.file = std::move(file);
    }

    if (options_.verify) {
      bool matched = verifyDiagnostics(sources_, *buffer, collected.diagnostics, diagnostics_);
      if (!matched)
        code = std::max<int>(code, kExitDiagnostics);
      return unit;
    }
    unit.failed = (!unit.file && !unit.program) || diagnostics.errorCount() != errorsBefore;
    if (unit.failed)
      code = std::max<int>(code, kExitDiagnostics);
    return unit;
  }

  /// The typed block of every schedule declaration of the main file; an `= auto` one is
  /// replaced by the blocks the heuristics choose (and, when code or schedules are asked
  /// for, each fusion without a schedule gets theirs), so everything after sees explicit
  /// schedules.
  void planSchedules(Unit &unit, DiagnosticEngine &diagnostics) {
    // The guards of each fusion's schedules: the heuristics add no variant that overlaps
    // one of the others.
    std::map<std::string, std::vector<std::pair<const ast::ScheduleDecl *, sched::ScheduleHeader>>>
        headers;
    for (const ast::DeclPtr &decl : unit.program->main->decls)
      if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get()))
        if (const ir::Fusion *fusion = fusionNamed(unit, schedule->fusion.text))
          headers[fusion->name].emplace_back(schedule, sched::headerOf(*schedule, *fusion));
    std::set<std::string> scheduled;
    for (const ast::DeclPtr &decl : unit.program->main->decls) {
      const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get());
      if (!schedule)
        continue;
      scheduled.insert(schedule->fusion.text);
      const ir::Fusion *fusion = fusionNamed(unit, schedule->fusion.text);
      if (!fusion)
        continue; // sema reported it
      sched::ScheduleHeader header = sched::headerOf(*schedule, *fusion);
      // A guard on an unknown dimension stays as written: it is reported with the guards.
      bool guardsKnown = header.when.size() == schedule->when.size();
      if (!schedule->isAuto) {
        unit.planned.push_back({schedule, fusion, sched::blockOf(*schedule, header)});
        continue;
      }
      std::vector<sched::ScheduleBlock> chosen;
      if (sched::checkAutoSchedule(*schedule, diagnostics) && guardsKnown) {
        heuristics::Knobs knobs = heuristics::knobsOf(*schedule, header);
        for (const auto &[other, otherHeader] : headers[fusion->name])
          if (other != schedule && !otherHeader.when.empty())
            knobs.otherGuards.push_back(otherHeader.when);
        chosen = heuristicSchedules(unit, *fusion, knobs, diagnostics);
      }
      if (chosen.empty()) {
        sched::ScheduleBlock unexpanded;
        unexpanded.header = header;
        unit.planned.push_back({schedule, fusion, std::move(unexpanded)});
        continue;
      }
      // The user's comments above `= auto` stay above what replaces it.
      chosen.front().comments = schedule->comments.leading;
      for (sched::ScheduleBlock &block : chosen)
        unit.planned.push_back({schedule, fusion, std::move(block)});
    }
    if (needsKernels() || options_.emit == EmitKind::Schedule)
      for (const auto &fusion : unit.program->fusions)
        if (!scheduled.count(fusion->name))
          for (sched::ScheduleBlock &block :
               heuristicSchedules(unit, *fusion, heuristics::Knobs(), diagnostics))
            unit.planned.push_back({nullptr, fusion.get(), std::move(block)});
  }

  const ir::Fusion *fusionNamed(Unit &unit, const std::string &name) const {
    // By a map: files with thousands of fusions are checked in linear time.
    if (unit.fusionsByName.empty())
      for (const auto &fusion : unit.program->fusions)
        unit.fusionsByName.emplace(fusion->name, fusion.get());
    auto it = unit.fusionsByName.find(name);
    return it == unit.fusionsByName.end() ? nullptr : it->second;
  }

  std::vector<sched::ScheduleBlock> heuristicSchedules(Unit &unit, const ir::Fusion &fusion,
                                                       const heuristics::Knobs &knobs,
                                                       DiagnosticEngine &diagnostics) {
    heuristics::Choice choice =
        heuristics::chooseSchedules(fusion, settings_.target, knobs, &diagnostics);
    if (choice.blocks.empty())
      unit.noHeuristic[fusion.name].push_back(
          {choice.why, knobs.declRange.isValid() ? knobs.declRange : fusion.range});
    return std::move(choice.blocks);
  }

  /// Builds and checks every planned block, then the guards of each fusion's schedules.
  void buildSchedules(Unit &unit, DiagnosticEngine &diagnostics) {
    std::map<std::string, std::vector<const sched::ScheduleHeader *>> byFusion;
    for (PlannedSchedule &planned : unit.planned) {
      byFusion[planned.fusion->name].push_back(&planned.block.header);
      if (planned.block.header.isAuto)
        continue; // knobs were checked when the heuristics were asked
      std::unique_ptr<sched::Schedule> built;
      {
        llvm::TimeTraceScope scope("Build schedule", planned.fusion->name);
        built = sched::buildSchedule(planned.block, *planned.fusion, diagnostics);
      }
      bool legal = false;
      if (built) {
        llvm::TimeTraceScope scope("Check schedule", planned.fusion->name);
        legal = checkSchedule(*built, settings_.target, diagnostics);
      }
      if (legal) {
        planned.built = built.get();
        unit.schedules.push_back(std::move(built));
      }
    }
    // Overlaps cannot be told while a guard names an unknown dimension.
    std::map<std::string, std::vector<const PlannedSchedule *>> plannedOf;
    for (const PlannedSchedule &planned : unit.planned)
      plannedOf[planned.fusion->name].push_back(&planned);
    for (const auto &[name, headers] : byFusion) {
      bool known = true;
      std::set<const ast::ScheduleDecl *> checked; // an `= auto` may give several blocks
      for (const PlannedSchedule *planned : plannedOf[name])
        if (planned->decl && checked.insert(planned->decl).second)
          known &= sched::checkGuardDims(*planned->decl, *planned->fusion, diagnostics);
      if (known)
        checkGuards(*fusionNamed(unit, name), headers, diagnostics);
    }
  }

  /// --emit=schedule: the main file with every schedule printed from its typed block,
  /// each directive followed by the note its build derived.
  std::string formatWithSchedules(const Unit &unit) const {
    auto text = [](const PlannedSchedule &planned) {
      std::string printed;
      llvm::raw_string_ostream out(printed);
      sched::printBlock(planned.block,
                        planned.built ? planned.built->notes : std::vector<std::string>(), out);
      return printed;
    };
    std::vector<std::string> appended;
    std::map<const ast::Decl *, std::vector<const PlannedSchedule *>> byDecl;
    for (const PlannedSchedule &planned : unit.planned)
      if (!planned.decl)
        appended.push_back(text(planned));
      else if (!planned.block.header.isAuto)
        byDecl[planned.decl].push_back(&planned);
    auto replace = [&](const ast::Decl &decl) {
      std::vector<std::string> blocks;
      if (auto it = byDecl.find(&decl); it != byDecl.end())
        for (const PlannedSchedule *planned : it->second)
          blocks.push_back(text(*planned));
      return blocks;
    };
    return ast::formatFile(*unit.program->main, replace, appended);
  }

  /// DriverOptions::runtimeDims and specializeDims, applied to the main file's fusions
  /// in memory before sema.
  void overrideDims(ast::File &file) const {
    if (options_.runtimeDims.empty() && options_.specializeDims.empty())
      return;
    for (ast::DeclPtr &decl : file.decls) {
      auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get());
      if (!fusion)
        continue;
      llvm::erase_if(fusion->staticDims, [&](const ast::StaticDim &dim) {
        return llvm::is_contained(options_.runtimeDims, dim.name.text);
      });
      for (const auto &[name, value] : options_.specializeDims) {
        auto existing =
            llvm::find_if(fusion->staticDims, [&, &name = name](const ast::StaticDim &dim) {
              return dim.name.text == name;
            });
        if (existing != fusion->staticDims.end()) {
          existing->value = ast::IntLiteral{value, existing->name.range};
          continue;
        }
        // A runtime dimension: declared static at its first appearance in a type.
        std::optional<ast::Name> first;
        auto look = [&](const ast::Type &type) {
          for (const ast::Name &dim : type.dims)
            if (!first && dim.text == name)
              first = dim;
        };
        for (const ast::Param &param : fusion->params)
          look(param.type);
        for (const ast::Output &output : fusion->outputs)
          look(output.type);
        if (first)
          fusion->staticDims.push_back(
              ast::StaticDim{*first, ast::IntLiteral{value, first->range}, first->range});
      }
    }
  }

  static std::set<std::string> staticDimNames(const ast::File &file) {
    std::set<std::string> names;
    for (const ast::DeclPtr &decl : file.decls)
      if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get()))
        for (const ast::StaticDim &dim : fusion->staticDims)
          names.insert(dim.name.text);
    return names;
  }

  /// Every -D must name a static dimension of some input.
  bool checkDefines(const std::vector<Unit> &units) {
    std::set<std::string> known;
    for (const Unit &unit : units)
      known.insert(unit.staticDimNames.begin(), unit.staticDimNames.end());
    bool ok = true;
    for (const auto &[name, value] : settings_.defines) {
      if (known.count(name))
        continue;
      std::string hint = known.empty() ? "; the inputs declare none"
                                       : "; static dimensions: " + llvm::join(known, ", ");
      diagnostics_.report(DiagId::UnknownDefine, llvm::SMRange(), name, hint);
      ok = false;
    }
    return ok;
  }

  int emit(Unit &unit) {
    if (needsKernels() && !lowerAll(unit))
      return kExitDiagnostics;
    std::string result;
    llvm::raw_string_ostream stream(result);
    const char *extension = "";
    llvm::TimeTraceScope scope("Emit", unit.path);
    switch (options_.emit) {
    case EmitKind::Check:
      extension = ".eval.txt"; // only --evaluate can have something to say
      break;
    case EmitKind::Format:
      stream << ast::formatFile(*unit.file);
      extension = ".fsl";
      break;
    case EmitKind::AST:
      ast::dumpAST(*unit.file, sources_, stream);
      extension = ".ast";
      break;
    case EmitKind::FusionIR:
      for (size_t i = 0; i < unit.program->fusions.size(); ++i) {
        if (i != 0)
          stream << '\n';
        ir::printFusion(*unit.program->fusions[i], stream);
      }
      extension = ".fusion-ir";
      break;
    case EmitKind::Schedule:
      // A fusion whose `= auto` no heuristic could schedule has nothing to print: say why
      // rather than print its `= auto` line back as if it had been chosen.
      if (!reportUnscheduled(unit))
        return kExitDiagnostics;
      if (options_.resolved) {
        for (size_t i = 0; i < unit.schedules.size(); ++i) {
          if (i != 0)
            stream << '\n';
          sched::printResolved(*unit.schedules[i], stream);
        }
        extension = ".schedule.txt";
      } else {
        stream << formatWithSchedules(unit);
        extension = ".fsl";
      }
      break;
    case EmitKind::KernelIR:
      for (size_t i = 0; i < unit.programs.size(); ++i) {
        if (i != 0)
          stream << '\n';
        kir::printProgram(*unit.programs[i], stream);
      }
      extension = ".kernel-ir";
      break;
    case EmitKind::Cuda:
      // The sources go to -o DIR or standard output now; a --simulate report follows.
      if (int code = emitCuda(unit); code != kExitSuccess)
        return code;
      break;
    case EmitKind::Ptx:
    case EmitKind::Cubin:
      if (int code = emitCompiled(unit, options_.emit == EmitKind::Cubin); code != kExitSuccess)
        return code;
      break;
    }
    if (options_.resourceUsage)
      if (int code = reportResourceUsage(unit); code != kExitSuccess)
        return code;
    // Sizes that cannot be run are a usage error (2); a run that fails is a finding (1).
    auto exitCode = [](RunResult run) {
      return run == RunResult::Refused ? kExitUsage : kExitDiagnostics;
    };
    auto othersThan = [&](const ir::Fusion &fusion) {
      std::vector<const ir::Fusion *> others;
      for (const auto &other : unit.program->fusions)
        if (other.get() != &fusion)
          others.push_back(other.get());
      return others;
    };
    if (!options_.simulateSizes.empty()) {
      for (const auto &fusion : unit.program->fusions) {
        if (!result.empty())
          stream << '\n';
        llvm::TimeTraceScope simulateScope("Simulate", fusion->name);
        RunResult run = simulateAndCompare(
            *fusion, programOf(unit, *fusion), options_.simulateSizes, options_.seed,
            options_.simulateMisalign, diagnostics_, stream, settings_.target.launchLimits(),
            othersThan(*fusion), tolerance_, inputValues());
        if (run != RunResult::Ok) {
          out_ << result;
          return exitCode(run);
        }
      }
    }
    if (!options_.evaluateSizes.empty() && unit.program) {
      for (const auto &fusion : unit.program->fusions) {
        if (!result.empty())
          stream << '\n';
        llvm::TimeTraceScope evaluateScope("Evaluate", fusion->name);
        RunResult run =
            evaluateAndSummarize(*fusion, options_.evaluateSizes, options_.seed,
                                 othersThan(*fusion), diagnostics_, stream, inputValues());
        if (run != RunResult::Ok)
          return exitCode(run);
      }
    }
    if (result.empty())
      return kExitSuccess;
    // Standard input has no name to give an output file: what is named after the input
    // goes to standard output (the CUDA and NVRTC outputs are named after the fusions).
    if (settings_.outputDir.empty() || unit.fromStdin || options_.emit == EmitKind::Cuda ||
        options_.emit == EmitKind::Ptx || options_.emit == EmitKind::Cubin) {
      out_ << result;
      out_.flush();
      return kExitSuccess;
    }
    return writeOutput(unit.path, extension, result);
  }

  codegen::CodegenOptions codegenOptions(const Unit &unit) const {
    codegen::CodegenOptions options;
    options.programmaticDependentLaunch =
        codegen::supportsProgrammaticLaunch(settings_.target.arch);
    options.limits = settings_.target.launchLimits();
    options.symbolPrefix = options_.symbolPrefix;
    options.sourceLocation = [this, &unit](llvm::SMRange range) {
      return relativeLocation(unit, range);
    };
    return options;
  }

  /// `file.fsl:LINE` of a range, with a path that does not depend on where fslc ran: the
  /// input by its file name, an imported module relative to the input's folder, or to
  /// the import or stdlib folder it was found in (`std/norms.fsl`).
  std::string relativeLocation(const Unit &unit, llvm::SMRange range) const {
    if (!range.isValid())
      return "";
    unsigned buffer = sources_.FindBufferContainingLoc(range.Start);
    if (buffer == 0)
      return "";
    std::string path = sources_.getMemoryBuffer(buffer)->getBufferIdentifier().str();
    std::string shown = llvm::sys::path::filename(path).str();
    if (path != unit.path) {
      std::vector<std::string> roots = {llvm::sys::path::parent_path(unit.path).str()};
      roots.insert(roots.end(), settings_.includeDirs.begin(), settings_.includeDirs.end());
      roots.push_back(settings_.stdlibDir);
      for (const std::string &root : roots) {
        llvm::SmallString<256> prefix(root);
        if (prefix.empty())
          continue;
        llvm::sys::path::append(prefix, "");
        if (llvm::StringRef(path).starts_with(prefix)) {
          shown = path.substr(prefix.size());
          break;
        }
      }
    }
    // The buffer's line table: FindLineNumber also scans back for the column, which is
    // quadratic over the many locations of a long line.
    return shown + ":" +
           std::to_string(sources_.getBufferInfo(buffer).getLineNumber(range.Start.getPointer()));
  }

  /// The generated sources of one fusion; they name the input by its file name only, so
  /// they do not depend on the folder fslc ran in.
  codegen::GeneratedSources generate(const Unit &unit, const ir::Fusion &fusion) const {
    llvm::TimeTraceScope scope("Codegen", fusion.name);
    return codegen::generateCuda(programOf(unit, fusion),
                                 llvm::sys::path::filename(unit.path).str(), codegenOptions(unit));
  }

  /// The kernels of one fusion compiled by NVRTC; reports why they do not compile.
  std::optional<codegen::NvrtcResult> compile(const ir::Fusion &fusion,
                                              const codegen::GeneratedSources &sources, bool cubin,
                                              const std::vector<std::string> &nvrtcOptions) {
    llvm::TimeTraceScope scope("NVRTC", fusion.name);
    codegen::NvrtcResult compiled = codegen::compileWithNvrtc(
        sources.source, baseName(fusion) + ".cu", settings_.target.arch, cubin, nvrtcOptions);
    if (!compiled.ok) {
      diagnostics_.report(DiagId::NvrtcFailed, fusion.range, fusion.name, compiled.log);
      return std::nullopt;
    }
    return compiled;
  }

  /// The name of a fusion's output files: with --prefix, two specializations of one
  /// fusion can share a directory.
  std::string baseName(const ir::Fusion &fusion) const {
    return options_.symbolPrefix + fusion.name;
  }

  /// <fusion>.cu and <fusion>.h per fusion: into -o DIR, or to standard output.
  int emitCuda(Unit &unit) {
    for (const auto &fusion : unit.program->fusions) {
      if (!wanted(*fusion))
        continue;
      codegen::GeneratedSources sources = generate(unit, *fusion);
      if (options_.generated) {
        options_.generated(programOf(unit, *fusion), sources, settings_.target);
        continue;
      }
      std::string name = baseName(*fusion);
      if (settings_.outputDir.empty()) {
        out_ << "// ---- " << name << ".h\n"
             << sources.header << "\n// ---- " << name << ".cu\n"
             << sources.source;
        continue;
      }
      // The .cu first: a depfile's rule names the first output written first.
      int code = writeNamed(name + ".cu", sources.source);
      if (code == kExitSuccess)
        code = writeNamed(name + ".h", sources.header);
      if (code != kExitSuccess)
        return code;
    }
    out_.flush();
    return kExitSuccess;
  }

  /// The kernels through NVRTC: <fusion>.ptx or <fusion>.cubin.
  int emitCompiled(Unit &unit, bool cubin) {
    for (const auto &fusion : unit.program->fusions) {
      std::optional<codegen::NvrtcResult> compiled =
          compile(*fusion, generate(unit, *fusion), cubin, options_.nvrtcOptions);
      if (!compiled)
        return kExitDiagnostics;
      // What NVRTC says on success (warnings, ptxas -v figures) is worth seeing too.
      if (!compiled->log.empty())
        diagnostics_.report(DiagId::NvrtcLog, llvm::SMRange(), fusion->name, compiled->log);
      std::string name = baseName(*fusion) + (cubin ? ".cubin" : ".ptx");
      if (settings_.outputDir.empty()) {
        out_ << compiled->output;
        continue;
      }
      if (int code = writeNamed(name, compiled->output); code != kExitSuccess)
        return code;
    }
    out_.flush();
    return kExitSuccess;
  }

  int writeOutput(const std::string &inputPath, llvm::StringRef extension,
                  llvm::StringRef contents) {
    return writeNamed((llvm::sys::path::stem(inputPath) + extension).str(), contents);
  }

  int writeNamed(const std::string &fileName, llvm::StringRef contents) {
    llvm::SmallString<256> outputPath(settings_.outputDir);
    llvm::sys::path::append(outputPath, fileName);
    int code = writeFile(std::string(outputPath), contents);
    if (code == kExitSuccess)
      outputs_.push_back(std::string(outputPath));
    return code;
  }

  /// The input (a source, an import, fsl.toml or the target file) that `path` is the
  /// same file as, if any: writing there would replace what was read.
  std::optional<std::string> inputAt(llvm::StringRef path) const {
    if (!llvm::sys::fs::exists(path))
      return std::nullopt;
    std::vector<std::string> read = prerequisites_;
    for (const std::string &file : {settings_.configFile, settings_.targetFile})
      if (!file.empty())
        read.push_back(file);
    for (const std::string &input : read) {
      bool same = false;
      if (!llvm::sys::fs::equivalent(path, input, same) && same)
        return input;
    }
    return std::nullopt;
  }

  /// Replaces `path` by `contents` unless it holds exactly that already: an unchanged
  /// file keeps its modification time, so a build system that checks it again (Ninja's
  /// restat) rebuilds nothing downstream. New contents go to a temporary file in the same
  /// folder that is renamed over the old one, so that no reader, nor a build interrupted
  /// here, ever sees half a file.
  int writeFile(const std::string &path, llvm::StringRef contents) {
    llvm::TimeTraceScope scope("Write", path);
    // `--emit=format -o .` names its output after the input, in the input's folder; a
    // depfile or trace may be pointed at one too. What was read is never replaced.
    if (std::optional<std::string> input = inputAt(path)) {
      diagnostics_.report(DiagId::OutputOverwritesInput, llvm::SMRange(), path, *input);
      return kExitUsage;
    }
    llvm::StringRef directory = llvm::sys::path::parent_path(path);
    if (!directory.empty())
      if (std::error_code error = llvm::sys::fs::create_directories(directory)) {
        diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), directory.str(),
                            error.message());
        return kExitUsage;
      }
    if (auto existing = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                    /*RequiresNullTerminator=*/false);
        existing && (*existing)->getBuffer() == contents)
      return kExitSuccess;
    auto fail = [&](std::string message) {
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), path, std::move(message));
      return kExitUsage;
    };
    llvm::Expected<llvm::sys::fs::TempFile> temporary =
        llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%");
    if (!temporary)
      return fail(llvm::toString(temporary.takeError()));
    std::error_code error;
    {
      llvm::raw_fd_ostream stream(temporary->FD, /*shouldClose=*/false);
      stream << contents;
      stream.flush();
      error = stream.error();
      stream.clear_error();
    }
    if (error) {
      llvm::consumeError(temporary->discard());
      return fail(error.message());
    }
    if (llvm::Error kept = temporary->keep(path))
      return fail(llvm::toString(std::move(kept)));
    return kExitSuccess;
  }

  // --- --resource-usage ------------------------------------------------------------

  /// What ptxas -v says of one kernel.
  struct KernelResources {
    std::string name;
    int64_t registers = 0, stackBytes = 0, spillStores = 0, spillLoads = 0, sharedBytes = 0;
  };

  /// Reads ptxas -v's report, one block per kernel:
  ///   ptxas info    : Compiling entry function 'k' for 'sm_90a'
  ///   ptxas info    : Function properties for k
  ///       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  ///   ptxas info    : Used 18 registers, 1024 bytes smem, 384 bytes cmem[0]
  static std::vector<KernelResources> parsePtxasReport(llvm::StringRef log) {
    std::vector<KernelResources> kernels;
    // "N <what>" anywhere in `line`, as a number (0 when absent).
    auto figure = [](llvm::StringRef line, llvm::StringRef what) -> int64_t {
      size_t at = line.find(what);
      if (at == llvm::StringRef::npos)
        return 0;
      llvm::StringRef before = line.take_front(at).rtrim();
      llvm::StringRef digits = before.substr(before.find_last_not_of("0123456789") + 1);
      int64_t value = 0;
      return digits.getAsInteger(10, value) ? 0 : value;
    };
    llvm::SmallVector<llvm::StringRef> lines;
    log.split(lines, '\n');
    for (llvm::StringRef line : lines) {
      if (size_t at = line.find("Compiling entry function '"); at != llvm::StringRef::npos) {
        llvm::StringRef rest = line.drop_front(at + strlen("Compiling entry function '"));
        kernels.push_back({rest.take_until([](char c) { return c == '\''; }).str()});
        continue;
      }
      if (kernels.empty())
        continue;
      KernelResources &kernel = kernels.back();
      if (line.contains("bytes stack frame")) {
        kernel.stackBytes = figure(line, " bytes stack frame");
        kernel.spillStores = figure(line, " bytes spill stores");
        kernel.spillLoads = figure(line, " bytes spill loads");
      } else if (line.contains(" registers")) {
        kernel.registers = figure(line, " registers");
        kernel.sharedBytes = figure(line, " bytes smem");
      }
    }
    return kernels;
  }

  /// --resource-usage: each kernel compiled to a cubin with ptxas -v, in one line.
  int reportResourceUsage(const Unit &unit) {
    std::vector<std::string> nvrtcOptions = options_.nvrtcOptions;
    nvrtcOptions.push_back("--ptxas-options=-v");
    for (const auto &fusion : unit.program->fusions) {
      std::optional<codegen::NvrtcResult> compiled =
          compile(*fusion, generate(unit, *fusion), /*cubin=*/true, nvrtcOptions);
      if (!compiled)
        return kExitDiagnostics;
      const kir::Program &program = programOf(unit, *fusion);
      for (const KernelResources &kernel : parsePtxasReport(compiled->log)) {
        // ptxas sees only static shared memory; the launcher asks for the rest.
        std::string dynamicShared = "no dynamic shared memory";
        for (const kir::Kernel &lowered : program.kernels)
          if (options_.symbolPrefix + lowered.name == kernel.name && lowered.launch.sharedBytes) {
            std::optional<int64_t> bytes = kir::asConstant(lowered.launch.sharedBytes);
            if (!bytes)
              dynamicShared = "dynamic shared memory set at launch";
            else if (*bytes != 0)
              dynamicShared = std::to_string(*bytes) + " bytes dynamic shared memory";
          }
        diagnostics_.report(DiagId::ResourceUsage, llvm::SMRange(), kernel.name, kernel.registers,
                            kernel.spillStores, kernel.spillLoads, kernel.stackBytes,
                            kernel.sharedBytes, dynamicShared);
      }
    }
    return kExitSuccess;
  }

  // --- Depfile and time trace --------------------------------------------------------

  bool wantsDepfile() const { return !options_.depfile.empty() || options_.depfileGcc; }

  /// Inputs the outputs depend on, each once, in the order they were read.
  void addPrerequisite(llvm::StringRef path) {
    llvm::SmallString<256> clean(path);
    llvm::sys::path::remove_dots(clean, /*remove_dot_dot=*/false);
    if (prerequisiteSet_.insert(std::string(clean)).second)
      prerequisites_.push_back(std::string(clean));
  }

  /// A path as Make reads it (GCC's escaping, which Ninja understands too).
  static std::string makeEscaped(llvm::StringRef path) {
    std::string escaped;
    for (size_t i = 0; i < path.size(); ++i) {
      char c = path[i];
      if (c == ' ' || c == '\t') {
        // Backslashes before a blank would escape the escape: double them.
        for (size_t j = i; j > 0 && path[j - 1] == '\\'; --j)
          escaped += '\\';
        escaped += '\\';
      } else if (c == '#') {
        escaped += '\\';
      } else if (c == '$') {
        escaped += '$';
      }
      escaped += c;
    }
    return escaped;
  }

  /// One Make rule: the outputs (or -MT) depend on the inputs, what they import, the
  /// fsl.toml and the target file.
  int writeDepfile() {
    std::string path =
        !options_.depfileGccPath.empty() ? options_.depfileGccPath : options_.depfile;
    if (path.empty()) {
      // -MD alone: next to the first output, as GCC puts it next to the object file.
      if (outputs_.empty()) {
        diagnostics_.report(DiagId::DepfileNeedsOutput, llvm::SMRange(), "-MD",
                            "to name the depfile after", "-MF FILE");
        return kExitUsage;
      }
      llvm::SmallString<256> beside(outputs_.front());
      llvm::sys::path::replace_extension(beside, ".d");
      path = std::string(beside);
    }
    std::vector<std::string> targets;
    if (!options_.depfileTarget.empty())
      targets.push_back(options_.depfileTarget);
    else
      targets = outputs_;
    if (targets.empty()) {
      diagnostics_.report(DiagId::DepfileNeedsOutput, llvm::SMRange(),
                          options_.depfile.empty() ? "-MD" : "--depfile",
                          "to name as the rule's target", "-o DIR, or -MT TARGET");
      return kExitUsage;
    }
    std::vector<std::string> prerequisites = prerequisites_;
    for (const std::string &file : {settings_.configFile, settings_.targetFile})
      if (!file.empty() && !llvm::is_contained(prerequisites, file))
        prerequisites.push_back(file);
    std::string rule;
    for (size_t i = 0; i < targets.size(); ++i)
      rule += (i ? " " : "") + makeEscaped(targets[i]);
    rule += ":";
    for (const std::string &prerequisite : prerequisites)
      rule += " \\\n  " + makeEscaped(prerequisite);
    rule += "\n";
    return writeFile(path, rule);
  }

  /// --time-trace: FILE, else next to the output or the input,
  /// `<-o DIR or input folder>/<input stem>.time-trace.json`.
  int writeTimeTrace() {
    std::string path = options_.timeTraceFile;
    if (path.empty()) {
      std::string input = options_.inputs.empty() ? "fslc" : options_.inputs.front();
      llvm::SmallString<256> named;
      if (input == "-")
        input = "stdin";
      if (!settings_.outputDir.empty()) {
        named = settings_.outputDir;
        llvm::sys::path::append(named, llvm::sys::path::stem(input));
      } else {
        named = input;
        llvm::sys::path::replace_extension(named, "");
      }
      path = (named + ".time-trace.json").str();
    }
    std::string trace;
    {
      llvm::raw_string_ostream stream(trace);
      llvm::SmallVector<char, 0> bytes;
      llvm::raw_svector_ostream json(bytes);
      llvm::timeTraceProfilerWrite(json);
      stream << llvm::StringRef(bytes.data(), bytes.size());
    }
    return writeFile(path, trace);
  }

  const DriverOptions &options_;
  llvm::raw_ostream &out_;
  llvm::raw_ostream &err_; // --print-after output, as LLVM's tools print it
  llvm::SourceMgr sources_;
  TextDiagnosticPrinter text_;
  JsonDiagnosticPrinter json_;
  DiagnosticEngine diagnostics_;
  Settings settings_;
  ToleranceOptions tolerance_; // --simulate-rtol / --simulate-atol
  InputValues inputValues() const {
    return options_.specialValues ? InputValues::Special : InputValues::Uniform;
  }
  std::vector<std::string> outputs_;       // every file of -o DIR, in the order written
  std::vector<std::string> prerequisites_; // of the depfile: inputs and their imports
  std::set<std::string> prerequisiteSet_;
};

} // namespace

int runDriver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  return Driver(options, out, err).run();
}

} // namespace fsl
