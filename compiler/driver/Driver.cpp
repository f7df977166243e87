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
#include "support/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <set>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

namespace fsl {
namespace {

/// Settings after merging the command line over fsl.toml.
struct Settings {
  Target target;
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
  std::string path;
  std::unique_ptr<ast::File> file;                         // when only parsed (format, ast)
  std::unique_ptr<Program> program;                        // after sema
  std::vector<PlannedSchedule> planned;                    // in source order, then the chosen
  std::vector<std::unique_ptr<sched::Schedule>> schedules; // built from `planned`, checked
  std::vector<std::unique_ptr<kir::Program>> programs;     // lowered, when asked for
  std::map<std::string, std::string> noHeuristic;          // fusion -> why no auto schedule
  std::set<std::string> staticDimNames;
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
    int code = configure();
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
    diagnostics_.finish();
    return code;
  }

private:
  // --- Options and configuration ----------------------------------------------------

  int configure() {
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
    ProjectConfig config;
    if (!options_.configPath.empty()) {
      std::optional<unsigned> buffer = readFile(options_.configPath);
      if (!buffer)
        return kExitUsage;
      std::optional<ProjectConfig> loaded = loadConfig(sources_, *buffer, diagnostics_);
      if (!loaded)
        return kExitUsage;
      config = std::move(*loaded);
    }
    unsigned errorsBefore = diagnostics_.errorCount();
    settings_.stdlibDir = !options_.stdlibDir.empty() ? options_.stdlibDir : FSL_STDLIB_DIR;
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
        return;
      }
    }
    diagnostics_.report(DiagId::UnknownTarget, llvm::SMRange(), name,
                        known.empty() ? "none found in " + std::string(directory)
                                      : llvm::join(known, ", "));
  }

  /// Adds a file to the source manager; reports why it cannot be read.
  std::optional<unsigned> readFile(const std::string &path) {
    if (llvm::sys::fs::is_directory(path)) {
      diagnostics_.report(DiagId::InputIsDirectory, llvm::SMRange(), path);
      return std::nullopt;
    }
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      diagnostics_.report(DiagId::InputNotReadable, llvm::SMRange(), path,
                          buffer.getError().message());
      return std::nullopt;
    }
    return sources_.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
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
           options_.printAfterAll;
  }

  /// The lowered program of one fusion.
  const kir::Program &programOf(const Unit &unit, const ir::Fusion &fusion) const {
    for (const auto &program : unit.programs)
      if (program->fusion == &fusion)
        return *program;
    FSL_UNREACHABLE("a fusion without a lowered program");
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
    for (const auto &fusion : unit.program->fusions) {
      std::vector<const sched::Schedule *> schedules;
      for (const auto &schedule : unit.schedules)
        if (schedule->fusion == fusion.get())
          schedules.push_back(schedule.get());
      bool any = !schedules.empty();
      if (any)
        if (auto program = lowerFusion(*fusion, schedules, lowerOptions, diagnostics_, print))
          unit.programs.push_back(std::move(program));
      if (!any) {
        auto why = unit.noHeuristic.find(fusion->name);
        diagnostics_.report(DiagId::NeedsExplicitSchedule, fusion->range, fusion->name,
                            why != unit.noHeuristic.end() ? why->second
                                                          : "its schedules are all 'auto'");
      }
    }
    return diagnostics_.errorCount() == errorsBefore;
  }

  Unit frontEnd(const std::string &path, int &code) {
    Unit unit;
    unit.path = path;
    unit.failed = true;
    std::optional<unsigned> buffer = readFile(path);
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

    std::unique_ptr<ast::File> file = parseFile(sources_, *buffer, diagnostics);
    if (file)
      unit.staticDimNames = staticDimNames(*file);
    if (file && needsSemantics()) {
      SemaOptions semaOptions{settings_.includeDirs, settings_.stdlibDir, settings_.defines};
      unit.program = analyze(std::move(file), sources_, diagnostics, semaOptions);
      if (unit.program) {
        planSchedules(unit, diagnostics);
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
      if (sched::checkAutoSchedule(*schedule, diagnostics) && guardsKnown)
        chosen =
            heuristicSchedules(unit, *fusion, heuristics::knobsOf(*schedule, header), diagnostics);
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

  const ir::Fusion *fusionNamed(const Unit &unit, const std::string &name) const {
    for (const auto &fusion : unit.program->fusions)
      if (fusion->name == name)
        return fusion.get();
    return nullptr;
  }

  std::vector<sched::ScheduleBlock> heuristicSchedules(Unit &unit, const ir::Fusion &fusion,
                                                       const heuristics::Knobs &knobs,
                                                       DiagnosticEngine &diagnostics) {
    heuristics::Choice choice =
        heuristics::chooseSchedules(fusion, settings_.target, knobs, &diagnostics);
    if (choice.blocks.empty())
      unit.noHeuristic[fusion.name] = choice.why;
    return std::move(choice.blocks);
  }

  /// Builds and checks every planned block, then the guards of each fusion's schedules.
  void buildSchedules(Unit &unit, DiagnosticEngine &diagnostics) {
    std::map<std::string, std::vector<const sched::ScheduleHeader *>> byFusion;
    for (PlannedSchedule &planned : unit.planned) {
      byFusion[planned.fusion->name].push_back(&planned.block.header);
      if (planned.block.header.isAuto)
        continue; // knobs were checked when the heuristics were asked
      std::unique_ptr<sched::Schedule> built =
          sched::buildSchedule(planned.block, *planned.fusion, diagnostics);
      if (built && checkSchedule(*built, settings_.target, diagnostics)) {
        planned.built = built.get();
        unit.schedules.push_back(std::move(built));
      }
    }
    // Overlaps cannot be told while a guard names an unknown dimension.
    for (const auto &[name, headers] : byFusion) {
      bool known = true;
      std::set<const ast::ScheduleDecl *> checked; // an `= auto` may give several blocks
      for (const PlannedSchedule &planned : unit.planned)
        if (planned.fusion->name == name && planned.decl && checked.insert(planned.decl).second)
          known &= sched::checkGuardDims(*planned.decl, *planned.fusion, diagnostics);
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
    for (const PlannedSchedule &planned : unit.planned)
      if (!planned.decl)
        appended.push_back(text(planned));
    auto replace = [&](const ast::Decl &decl) {
      std::vector<std::string> blocks;
      for (const PlannedSchedule &planned : unit.planned)
        if (planned.decl == &decl && !planned.block.header.isAuto)
          blocks.push_back(text(planned));
      return blocks;
    };
    return ast::formatFile(*unit.program->main, replace, appended);
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
    if (!options_.simulateSizes.empty()) {
      for (const auto &fusion : unit.program->fusions) {
        if (!result.empty())
          stream << '\n';
        if (!simulateAndCompare(*fusion, programOf(unit, *fusion), options_.simulateSizes,
                                options_.seed, options_.simulateMisalign, diagnostics_, stream)) {
          out_ << result;
          return kExitDiagnostics;
        }
      }
    }
    if (!options_.evaluateSizes.empty() && unit.program) {
      for (const auto &fusion : unit.program->fusions) {
        std::vector<const ir::Fusion *> others;
        for (const auto &other : unit.program->fusions)
          if (other != fusion)
            others.push_back(other.get());
        if (!result.empty())
          stream << '\n';
        if (!evaluateAndSummarize(*fusion, options_.evaluateSizes, options_.seed, others,
                                  diagnostics_, stream))
          return kExitDiagnostics;
      }
    }
    if (result.empty())
      return kExitSuccess;
    if (settings_.outputDir.empty() || options_.emit == EmitKind::Cuda ||
        options_.emit == EmitKind::Ptx || options_.emit == EmitKind::Cubin) {
      out_ << result;
      out_.flush();
      return kExitSuccess;
    }
    return writeOutput(unit.path, extension, result);
  }

  codegen::CodegenOptions codegenOptions() const {
    codegen::CodegenOptions options;
    options.programmaticDependentLaunch =
        codegen::supportsProgrammaticLaunch(settings_.target.arch);
    return options;
  }

  /// <fusion>.cu and <fusion>.h per fusion: into -o DIR, or to standard output.
  int emitCuda(Unit &unit) {
    for (const auto &fusion : unit.program->fusions) {
      codegen::GeneratedSources sources =
          codegen::generateCuda(programOf(unit, *fusion), unit.path, codegenOptions());
      if (settings_.outputDir.empty()) {
        out_ << "// ---- " << fusion->name << ".h\n"
             << sources.header << "\n// ---- " << fusion->name << ".cu\n"
             << sources.source;
        continue;
      }
      int code = writeNamed(fusion->name + ".h", sources.header);
      if (code == kExitSuccess)
        code = writeNamed(fusion->name + ".cu", sources.source);
      if (code != kExitSuccess)
        return code;
    }
    out_.flush();
    return kExitSuccess;
  }

  /// The kernels through NVRTC: <fusion>.ptx or <fusion>.cubin.
  int emitCompiled(Unit &unit, bool cubin) {
    for (const auto &fusion : unit.program->fusions) {
      codegen::GeneratedSources sources =
          codegen::generateCuda(programOf(unit, *fusion), unit.path, codegenOptions());
      codegen::NvrtcResult compiled =
          codegen::compileWithNvrtc(sources.source, fusion->name + ".cu", settings_.target.arch,
                                    cubin, options_.nvrtcOptions);
      if (!compiled.ok) {
        diagnostics_.report(DiagId::NvrtcFailed, fusion->range, fusion->name, compiled.log);
        return kExitDiagnostics;
      }
      std::string name = fusion->name + (cubin ? ".cubin" : ".ptx");
      if (settings_.outputDir.empty()) {
        out_ << compiled.output;
        continue;
      }
      if (int code = writeNamed(name, compiled.output); code != kExitSuccess)
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
    if (std::error_code error = llvm::sys::fs::create_directories(settings_.outputDir)) {
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), settings_.outputDir,
                          error.message());
      return kExitUsage;
    }
    std::error_code error;
    llvm::raw_fd_ostream file(outputPath, error);
    if (!error) {
      file << contents;
      file.close();
      error = file.error();
    }
    if (error) {
      file.clear_error();
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), std::string(outputPath),
                          error.message());
      return kExitUsage;
    }
    return kExitSuccess;
  }

  const DriverOptions &options_;
  llvm::raw_ostream &out_;
  llvm::raw_ostream &err_; // --print-after output, as LLVM's tools print it
  llvm::SourceMgr sources_;
  TextDiagnosticPrinter text_;
  JsonDiagnosticPrinter json_;
  DiagnosticEngine diagnostics_;
  Settings settings_;
};

} // namespace

int runDriver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  return Driver(options, out, err).run();
}

} // namespace fsl
