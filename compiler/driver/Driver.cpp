// Driver.cpp — options and config; then for every input read → parse → sema →
// schedules (pipeline/Compilation); then the -D check across inputs; then emit. Nothing
// is written for an input with errors.
#include "driver/Driver.h"

#include "ast/Dumper.h"
#include "ast/Printer.h"
#include "driver/Evaluate.h"
#include "driver/OutputFiles.h"
#include "driver/OutputPath.h"
#include "driver/ResourceUsage.h"
#include "driver/Simulate.h"
#include "driver/Verify.h"
#include "ir/Printer.h"
#include "kir/Printer.h"
#include "lower/Lower.h"
#include "pipeline/Compilation.h"
#include "pipeline/Settings.h"
#include "pipeline/Sources.h"
#include "pipeline/Specialize.h"
#include "schedule/Printer.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"
#include "support/SourceFile.h"
#include "support/Suggestions.h"
#include "support/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

namespace fsl {
namespace {

/// The largest --simulate-misalign (elements).
constexpr int64_t kMostMisalign = int64_t(1) << 20;

/// One input on its way through the pipeline.
struct Unit {
  std::string path;       // as named in diagnostics: `<stdin>` for `-`
  bool fromStdin = false; // `-`: outputs named after it go to standard output
  unsigned buffer = 0;    // its text in the source manager, once read
  bool parsed = false;    // read and parsed without errors: its static dimensions are known
  std::optional<pipeline::Compilation> compilation;
  bool failed = false;
};

class Driver {
public:
  Driver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err)
      : options_(options), out_(out), err_(err),
        text_(sources_, err,
              options.color == ColorMode::Always ||
                  (options.color == ColorMode::Auto && !options.noColorEnvironment &&
                   err.has_colors())),
        json_(sources_, err), diagnostics_(options.diagnosticsFormat == DiagnosticsFormat::Json
                                               ? static_cast<DiagnosticConsumer &>(json_)
                                               : static_cast<DiagnosticConsumer &>(text_)),
        files_(settings_, diagnostics_) {
    diagnostics_.setWarningsAsErrors(options.warningsAsErrors);
    diagnostics_.setErrorLimit(options.errorLimit);
  }

  int run() {
    // The profiler is per thread: it starts on the thread the driver runs on.
    if (options_.timeTrace)
      llvm::timeTraceProfilerInitialize(/*TimeTraceGranularity=*/0, "fslc");
    int code = runPhases();
    if (options_.timeTrace) {
      code = std::max(
          code, files_.writeTimeTrace(options_.timeTraceFile,
                                      options_.inputs.empty() ? "fslc" : options_.inputs.front()));
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
      return listTargets(settings_.stdlibDir, sources_, diagnostics_, out_) ? kExitSuccess
                                                                            : kExitUsage;
    code =
        configure(settingsRequest(), sources_, diagnostics_, settings_) ? kExitSuccess : kExitUsage;
    if (code == kExitSuccess)
      code = checkOutputPath();
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
      // A -D no input declares is a mistake in the command line, not in the sources; an
      // input that did not parse may declare it, so its parse errors are all there is to say.
      bool allParsed = llvm::all_of(units, [](const Unit &unit) { return unit.parsed; });
      if (allParsed && !checkDefines(units)) {
        code = std::max<int>(code, kExitUsage);
      } else if (!options_.verify) {
        if (!checkSingleOutput(units))
          code = std::max<int>(code, kExitUsage);
        else
          for (Unit &unit : units)
            if (!unit.failed)
              code = std::max(code, emit(unit));
      }
    }
    if (code == kExitSuccess && wantsDepfile())
      code = files_.writeDepfile(
          !options_.depfileGccPath.empty() ? options_.depfileGccPath : options_.depfile,
          options_.depfileTarget, options_.depfile.empty() ? "-MD" : "--depfile");
    return code;
  }

  // --- Options and configuration ----------------------------------------------------

  /// What the command line alone can tell to be wrong.
  int checkOptions() {
    if (!options_.unknownOption.empty()) {
      diagnostics_.report(DiagId::UnknownOption, llvm::SMRange(), options_.unknownOption,
                          options_.unknownOptionSuggestion.empty()
                              ? "; run 'fslc --help' for the options"
                              : "; did you mean '" + options_.unknownOptionSuggestion + "'?");
      return kExitUsage;
    }
    if (const std::optional<InvalidOptionValue> &invalid = options_.invalidOptionValue) {
      diagnostics_.report(DiagId::InvalidOptionValue, llvm::SMRange(), invalid->value,
                          invalid->option, llvm::join(invalid->valid, ", "),
                          didYouMean(invalid->value, invalid->valid));
      return kExitUsage;
    }
    if (!options_.usageError.empty()) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(), options_.usageError);
      return kExitUsage;
    }
    for (const std::string &pass : options_.printAfter)
      if (!llvm::is_contained(loweringPassNames(), pass)) {
        diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                            "--print-after=" + pass + ": no lowering pass of that name (passes: " +
                                llvm::join(loweringPassNames(), ", ") + ")" +
                                didYouMean(pass, loweringPassNames()));
        return kExitUsage;
      }
    if (int code = checkFormatOptions(); code != kExitSuccess)
      return code;
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
      if (!simulating()) {
        diagnostics_.report(DiagId::UsageError, llvm::SMRange(),
                            std::string("--") + name + " applies to --simulate only");
        return kExitUsage;
      }
    }
    // --simulate-misalign: elements past an aligned address, which the simulator multiplies
    // by each tensor's element bytes.
    if (options_.simulateMisalign < 0 || options_.simulateMisalign > kMostMisalign) {
      diagnostics_.report(DiagId::InvalidOptionValue, llvm::SMRange(),
                          std::to_string(options_.simulateMisalign), "simulate-misalign",
                          "0 to " + std::to_string(kMostMisalign), "");
      return kExitUsage;
    }
    return kExitSuccess;
  }

  /// -i and --check: what --emit=format does with its result instead of printing it.
  int checkFormatOptions() {
    auto refuse = [&](const std::string &message) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(), message);
      return kExitUsage;
    };
    if (options_.inPlace && options_.checkFormatted)
      return refuse("-i rewrites the inputs and --check writes nothing; give one of them");
    if (options_.emit != EmitKind::Format) {
      if (options_.inPlace)
        return refuse("-i rewrites the inputs in canonical form: it applies to --emit=format");
      if (options_.checkFormatted)
        return refuse("--check names the inputs not in canonical form: it applies to "
                      "--emit=format (--emit=check, the default, checks the sources)");
      return kExitSuccess;
    }
    const char *option = options_.inPlace ? "-i" : "--check";
    if ((options_.inPlace || options_.checkFormatted) && !options_.outputDir.empty())
      return refuse(std::string(option) +
                    (options_.inPlace ? " writes over the inputs" : " writes nothing") + "; -o " +
                    options_.outputDir + " names an output: give one of them");
    if (options_.inPlace && llvm::is_contained(options_.inputs, "-"))
      return refuse("-i: standard input ('-') has no file to rewrite");
    return kExitSuccess;
  }

  /// -o (or fsl.toml's output) names a folder, or the one output file (OutputPath.h).
  int checkOutputPath() {
    const std::string &path = settings_.outputDir;
    if (path.empty() || options_.inPlace || options_.checkFormatted)
      return kExitSuccess;
    llvm::StringRef extension = outputExtension(options_.emit, options_.resolved);
    switch (classifyOutputPath(path, options_.emit, options_.resolved)) {
    case OutputPathKind::Folder:
      return kExitSuccess;
    case OutputPathKind::WrongExtension:
      diagnostics_.report(DiagId::OutputFileExtension, llvm::SMRange(), path,
                          emitName(options_.emit), writesWhat(), extension);
      return kExitUsage;
    case OutputPathKind::File:
      break;
    }
    outputFile_ = path;
    files_.setOutputFile(path);
    if (options_.inputs.size() > 1) {
      diagnostics_.report(DiagId::OutputFileAmbiguous, llvm::SMRange(), path,
                          std::to_string(options_.inputs.size()) + " inputs are given",
                          folderGets());
      return kExitUsage;
    }
    return kExitSuccess;
  }

  /// What --emit writes for one input or fusion, for the messages about -o.
  std::string writesWhat() const {
    std::string file = "a '" + outputExtension(options_.emit, options_.resolved).str() + "' file";
    if (options_.emit == EmitKind::Cuda)
      return file + " and its '.h' header beside it";
    if (options_.emit == EmitKind::Check)
      return file + " (the summary of --evaluate)";
    return file;
  }

  /// What -o DIR would get instead of the one file.
  std::string folderGets() const {
    switch (options_.emit) {
    case EmitKind::Cuda:
      return "'<fusion>.cu' and '<fusion>.h' for each fusion";
    case EmitKind::Ptx:
    case EmitKind::Cubin:
      return "'<fusion>" + outputExtension(options_.emit, false).str() + "' for each fusion";
    default:
      return "one file for each input, named after it";
    }
  }

  /// With -o naming one file of a kind written per fusion, the input must define
  /// exactly one fusion: which of several to write, or what to write for none, would be a
  /// guess. False after reporting.
  bool checkSingleOutput(const std::vector<Unit> &units) {
    if (outputFile_.empty() || !writesPerFusion(options_.emit))
      return true;
    for (const Unit &unit : units) {
      if (unit.failed || !unit.compilation || !unit.compilation->program())
        continue;
      std::vector<std::string> fusions;
      for (const auto &fusion : unit.compilation->program()->fusions)
        if (unit.compilation->wanted(*fusion))
          fusions.push_back(fusion->name);
      if (fusions.size() == 1)
        continue;
      std::string defines = "'" + unit.path + "' defines " +
                            (fusions.empty() ? std::string("no fusion")
                                             : std::to_string(fusions.size()) + " fusions (" +
                                                   llvm::join(fusions, ", ") + ")");
      diagnostics_.report(DiagId::OutputFileAmbiguous, llvm::SMRange(), outputFile_, defines,
                          folderGets());
      return false;
    }
    return true;
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

  SettingsRequest settingsRequest() const {
    SettingsRequest request;
    if (!options_.inputs.empty())
      request.firstInput = options_.inputs.front();
    request.configPath = options_.configPath;
    request.target = options_.target;
    request.outputDir = options_.outputDir;
    request.tuningDatabase = options_.tuningDatabase;
    request.includeDirs = options_.includeDirs;
    request.defines = options_.defines;
    request.stdlibDir = settings_.stdlibDir;
    return request;
  }

  /// What each input's compilation is given.
  pipeline::Options compileOptions() const {
    pipeline::Options options = compileOptionsFrom(settings_);
    options.scheduleEveryFusion = needsKernels() || options_.emit == EmitKind::Schedule;
    options.printAfter.passes.insert(options_.printAfter.begin(), options_.printAfter.end());
    options.printAfter.all = options_.printAfterAll;
    options.printAfter.out = &err_;
    options.symbolPrefix = options_.symbolPrefix;
    return options;
  }

  /// Adds an input to the source manager: a text held in memory, a file, or standard
  /// input for `-`.
  std::optional<unsigned> readInput(const std::string &path) {
    if (auto text = options_.inputTexts.find(path); text != options_.inputTexts.end())
      return pipeline::addSourceText(sources_, path, text->second);
    if (path != "-")
      return pipeline::readSource(sources_, path, diagnostics_);
    return pipeline::addSource(sources_, readStandardInput(), "<stdin>", diagnostics_);
  }

  // --- One input: the phases, in order ---------------------------------------------

  bool evaluating() const { return options_.evaluate || !options_.evaluateSizes.empty(); }
  bool simulating() const { return options_.simulate || !options_.simulateSizes.empty(); }

  bool needsSemantics() const {
    return options_.verify || options_.emit == EmitKind::Check ||
           options_.emit == EmitKind::FusionIR || options_.emit == EmitKind::Schedule ||
           needsKernels() || evaluating();
  }

  bool needsKernels() const {
    return options_.emit == EmitKind::KernelIR || options_.emit == EmitKind::Cuda ||
           options_.emit == EmitKind::Ptx || options_.emit == EmitKind::Cubin || simulating() ||
           !options_.printAfter.empty() || options_.printAfterAll || options_.resourceUsage;
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
    unit.buffer = *buffer;
    // Under -verify the file's diagnostics are collected and compared, not printed.
    CollectingDiagnosticConsumer collected;
    DiagnosticEngine verifyEngine(collected);
    verifyEngine.setWarningsAsErrors(options_.warningsAsErrors);
    DiagnosticEngine &diagnostics = options_.verify ? verifyEngine : diagnostics_;
    unsigned errorsBefore = diagnostics.errorCount();

    pipeline::Compilation &compilation =
        unit.compilation.emplace(compileOptions(), sources_, unit.path);
    bool parsed = compilation.parse(*buffer, diagnostics);
    unit.parsed = parsed && diagnostics.errorCount() == errorsBefore;
    if (!unit.fromStdin)
      files_.addPrerequisite(path);
    if (parsed && needsSemantics() && compilation.analyze(diagnostics)) {
      for (const auto &imported : compilation.program()->imported)
        files_.addPrerequisite(imported->path);
      compilation.schedule(diagnostics);
    }

    if (options_.verify) {
      bool matched = verifyDiagnostics(sources_, *buffer, collected.diagnostics, diagnostics_);
      if (!matched)
        code = std::max<int>(code, kExitDiagnostics);
      return unit;
    }
    unit.failed =
        (!compilation.file() && !compilation.program()) || diagnostics.errorCount() != errorsBefore;
    if (unit.failed)
      code = std::max<int>(code, kExitDiagnostics);
    return unit;
  }

  /// Every -D must name a static dimension of some input.
  bool checkDefines(const std::vector<Unit> &units) {
    std::set<std::string> known;
    for (const Unit &unit : units)
      if (unit.compilation)
        known.insert(unit.compilation->staticDimNames().begin(),
                     unit.compilation->staticDimNames().end());
    return pipeline::checkDefines(known, settings_.defines, diagnostics_);
  }

  // --- Emit --------------------------------------------------------------------------

  int emit(Unit &unit) {
    pipeline::Compilation &compilation = *unit.compilation;
    if (needsKernels() && !compilation.lower(diagnostics_))
      return kExitDiagnostics;
    const Program *program = compilation.program();
    std::string result;
    llvm::raw_string_ostream stream(result);
    const char *extension = "";
    llvm::TimeTraceScope scope("Emit", unit.path);
    switch (options_.emit) {
    case EmitKind::Check:
      extension = ".eval.txt"; // only --evaluate can have something to say
      break;
    case EmitKind::Format:
      if (options_.checkFormatted)
        return checkFormatted(unit, ast::formatFile(*compilation.file()));
      if (options_.inPlace)
        return files_.rewriteInput(unit.path, ast::formatFile(*compilation.file()));
      stream << ast::formatFile(*compilation.file());
      extension = ".fsl";
      break;
    case EmitKind::AST:
      ast::dumpAST(*compilation.file(), sources_, stream);
      extension = ".ast";
      break;
    case EmitKind::FusionIR:
      for (size_t i = 0; i < program->fusions.size(); ++i) {
        if (i != 0)
          stream << '\n';
        ir::printFusion(*program->fusions[i], stream);
      }
      extension = ".fusion-ir";
      break;
    case EmitKind::Schedule:
      // A fusion whose `= auto` no heuristic could schedule has nothing to print: say why
      // rather than print its `= auto` line back as if it had been chosen.
      if (!compilation.reportUnscheduled(diagnostics_))
        return kExitDiagnostics;
      if (options_.resolved) {
        const auto &schedules = compilation.schedules().schedules;
        for (size_t i = 0; i < schedules.size(); ++i) {
          if (i != 0)
            stream << '\n';
          sched::printResolved(*schedules[i], stream);
        }
        extension = ".schedule.txt";
      } else {
        stream << pipeline::formatWithSchedules(*program, compilation.schedules());
        extension = ".fsl";
      }
      break;
    case EmitKind::KernelIR:
      for (size_t i = 0; i < compilation.programs().size(); ++i) {
        if (i != 0)
          stream << '\n';
        kir::printProgram(*compilation.programs()[i], stream);
      }
      extension = ".kernel-ir";
      break;
    case EmitKind::Cuda:
      // The sources go to -o DIR or standard output now; a --simulate report follows.
      if (int code = emitCuda(compilation); code != kExitSuccess)
        return code;
      break;
    case EmitKind::Ptx:
    case EmitKind::Cubin:
      if (int code = emitCompiled(compilation, options_.emit == EmitKind::Cubin);
          code != kExitSuccess)
        return code;
      break;
    }
    if (options_.resourceUsage)
      if (int code = reportResourceUsage(compilation, options_.nvrtcOptions, diagnostics_);
          code != kExitSuccess)
        return code;
    // Sizes that cannot be run are a usage error (2); a run that fails is a finding (1).
    auto exitCode = [](RunResult run) {
      return run == RunResult::Refused ? kExitUsage : kExitDiagnostics;
    };
    auto othersThan = [&](const ir::Fusion &fusion) {
      std::vector<const ir::Fusion *> others;
      for (const auto &other : program->fusions)
        if (other.get() != &fusion)
          others.push_back(other.get());
      return others;
    };
    if (simulating()) {
      for (const auto &fusion : program->fusions) {
        if (!result.empty())
          stream << '\n';
        llvm::TimeTraceScope simulateScope("Simulate", fusion->name);
        const kir::Program *lowered = compilation.programOf(*fusion);
        if (!lowered)
          FSL_UNREACHABLE("a fusion without a lowered program");
        RunResult run = simulateAndCompare(*fusion, *lowered, options_.simulateSizes, options_.seed,
                                           options_.simulateMisalign, diagnostics_, stream,
                                           settings_.target.launchLimits(), othersThan(*fusion),
                                           tolerance_, inputValues());
        if (run != RunResult::Ok) {
          out_ << result;
          return exitCode(run);
        }
      }
    }
    if (evaluating() && program) {
      for (const auto &fusion : program->fusions) {
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
    // -o naming the file: it gets what is named after the input (the CUDA and NVRTC
    // outputs were written above, and their --simulate report goes to standard output).
    if (!outputFile_.empty() && !writesPerFusion(options_.emit))
      return files_.writeOutput(outputFile_, result);
    // Standard input has no name to give an output file: what is named after the input
    // goes to standard output (the CUDA and NVRTC outputs are named after the fusions).
    if (settings_.outputDir.empty() || unit.fromStdin || writesPerFusion(options_.emit)) {
      out_ << result;
      out_.flush();
      return kExitSuccess;
    }
    return files_.writeNamed((llvm::sys::path::stem(unit.path) + extension).str(), result);
  }

  /// <fusion>.cu and <fusion>.h per fusion: into -o DIR, or to standard output.
  int emitCuda(const pipeline::Compilation &compilation) {
    for (const auto &fusion : compilation.program()->fusions) {
      if (!compilation.wanted(*fusion))
        continue;
      codegen::GeneratedSources sources = compilation.generate(*fusion);
      std::string name = compilation.baseName(*fusion);
      if (!outputFile_.empty())
        return writeCudaAs(outputFile_, name, sources);
      if (settings_.outputDir.empty()) {
        out_ << "// ---- " << name << ".h\n"
             << sources.header << "\n// ---- " << name << ".cu\n"
             << sources.source;
        continue;
      }
      // The .cu first: a depfile's rule names the first output written first.
      int code = files_.writeNamed(name + ".cu", sources.source);
      if (code == kExitSuccess)
        code = files_.writeNamed(name + ".h", sources.header);
      if (code != kExitSuccess)
        return code;
    }
    out_.flush();
    return kExitSuccess;
  }

  /// -o x.cu: the one fusion's source as `x.cu` and its header beside it as `x.h`, which
  /// the source includes by that name.
  int writeCudaAs(const std::string &sourcePath, const std::string &name,
                  const codegen::GeneratedSources &sources) {
    llvm::SmallString<256> headerPath(sourcePath);
    llvm::sys::path::replace_extension(headerPath, ".h");
    std::string headerName = llvm::sys::path::filename(headerPath).str();
    std::string source = sources.source;
    // The generated source includes `<name>.h` once (codegen/CudaCodegen.cpp).
    std::string include = "#include \"" + name + ".h\"\n";
    size_t at = source.find(include);
    if (at == std::string::npos)
      FSL_UNREACHABLE("a generated source without its header's #include");
    source.replace(at, include.size(), "#include \"" + headerName + "\"\n");
    int code = files_.writeOutput(sourcePath, source);
    if (code == kExitSuccess)
      code = files_.writeOutput(std::string(headerPath), sources.header);
    out_.flush();
    return code;
  }

  /// A --check of one input: none of it is written; its first difference from the
  /// canonical form is reported.
  int checkFormatted(const Unit &unit, llvm::StringRef formatted) {
    llvm::StringRef original = sources_.getMemoryBuffer(unit.buffer)->getBuffer();
    if (original == formatted)
      return kExitSuccess;
    size_t at = 0;
    while (at < original.size() && at < formatted.size() && original[at] == formatted[at])
      ++at;
    llvm::SMLoc where = llvm::SMLoc::getFromPointer(original.data() + at);
    diagnostics_.report(DiagId::NotFormatted, llvm::SMRange(where, where),
                        unit.fromStdin ? std::string("'fslc --emit=format' prints it")
                                       : "'fslc --emit=format -i " + unit.path + "' rewrites it");
    return kExitDiagnostics;
  }

  /// The kernels through NVRTC: <fusion>.ptx or <fusion>.cubin.
  int emitCompiled(const pipeline::Compilation &compilation, bool cubin) {
    for (const auto &fusion : compilation.program()->fusions) {
      std::optional<codegen::NvrtcResult> compiled = compilation.compile(
          *fusion, compilation.generate(*fusion), cubin, options_.nvrtcOptions, diagnostics_);
      if (!compiled)
        return kExitDiagnostics;
      // What NVRTC says on success (warnings, ptxas -v figures) is worth seeing too.
      if (!compiled->log.empty())
        diagnostics_.report(DiagId::NvrtcLog, llvm::SMRange(), fusion->name, compiled->log);
      std::string name = compilation.baseName(*fusion) + (cubin ? ".cubin" : ".ptx");
      if (!outputFile_.empty()) {
        if (int code = files_.writeOutput(outputFile_, compiled->output); code != kExitSuccess)
          return code;
        continue;
      }
      if (settings_.outputDir.empty()) {
        out_ << compiled->output;
        continue;
      }
      if (int code = files_.writeNamed(name, compiled->output); code != kExitSuccess)
        return code;
    }
    out_.flush();
    return kExitSuccess;
  }

  bool wantsDepfile() const { return !options_.depfile.empty() || options_.depfileGcc; }

  InputValues inputValues() const {
    return options_.specialValues ? InputValues::Special : InputValues::Uniform;
  }

  const DriverOptions &options_;
  llvm::raw_ostream &out_;
  llvm::raw_ostream &err_; // --print-after output, as LLVM's tools print it
  llvm::SourceMgr sources_;
  TextDiagnosticPrinter text_;
  JsonDiagnosticPrinter json_;
  DiagnosticEngine diagnostics_;
  Settings settings_;
  OutputFiles files_;
  ToleranceOptions tolerance_; // --simulate-rtol / --simulate-atol
  std::string outputFile_;     // -o naming the one output file (OutputPath.h)
};

} // namespace

int runDriver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  return Driver(options, out, err).run();
}

} // namespace fsl
