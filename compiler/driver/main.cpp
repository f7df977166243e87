// main.cpp — the `fslc` command line (llvm::cl), handed to the driver.
#include "codegen/Nvrtc.h"
#include "driver/CommandLineErrors.h"
#include "driver/Driver.h"
#include "driver/Tune.h"
#include "support/LargeStack.h"
#include "support/Target.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/PrettyStackTrace.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <cstring>

namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("fslc options");

cl::list<std::string> inputs(cl::Positional, cl::desc("<input .fsl files>"), cl::cat(category));
cl::opt<std::string> outputDir("o",
                               cl::desc("Write outputs into <dir> instead of standard output; "
                                        "one output: into <file> when it has the output's "
                                        "extension (x.cu for --emit=cuda)"),
                               cl::value_desc("dir|file"), cl::cat(category));
cl::list<std::string> includeDirs("I", cl::desc("Add <dir> to the import search path"),
                                  cl::value_desc("dir"), cl::Prefix, cl::cat(category));
cl::list<std::string> defines("D", cl::desc("Set static dimension NAME to VALUE"),
                              cl::value_desc("NAME=VALUE"), cl::Prefix, cl::cat(category));
const std::string targetHelp =
    std::string("GPU target: a file of stdlib/targets or an alias (default ") +
    fsl::kDefaultTarget + ")";
cl::opt<std::string> target("target", cl::desc(targetHelp), cl::value_desc("name"),
                            cl::cat(category));
cl::opt<std::string> stdlibDir("stdlib",
                               cl::desc("Standard library directory (imports, targets); default: "
                                        "$FSLC_STDLIB, the installed one, the source tree's"),
                               cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> evaluateSizes(
    "evaluate",
    cl::desc("Run the float64 reference on random inputs: sizes and scalars, as T=4,eps=1e-5"),
    cl::value_desc("NAME=VALUE,..."), cl::cat(category));
cl::opt<std::string> simulateSizes(
    "simulate",
    cl::desc("Run the kernels on the CPU simulator and compare with the float64 reference"),
    cl::value_desc("NAME=VALUE,..."), cl::cat(category));
cl::opt<int64_t> simulateMisalign(
    "simulate-misalign",
    cl::desc("With --simulate: place every tensor <n> elements past an aligned address"),
    cl::init(0), cl::value_desc("n"), cl::cat(category));
cl::opt<std::string> simulateRtol(
    "simulate-rtol",
    cl::desc("With --simulate: the relative tolerance (default: derived from the arithmetic)"),
    cl::value_desc("x"), cl::cat(category));
cl::opt<std::string> simulateAtol(
    "simulate-atol",
    cl::desc("With --simulate: the absolute tolerance (default: derived from the arithmetic)"),
    cl::value_desc("x"), cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of --evaluate's random inputs (default 0)"),
                       cl::init(0), cl::cat(category));
cl::opt<bool> specialValues(
    "special-values",
    cl::desc("With --evaluate or --simulate: float inputs in rows of ties, NaNs, infinities "
             "and -inf instead of uniform in [-1, 1)"),
    cl::cat(category));
cl::opt<std::string> configPath("config",
                                cl::desc("Read project settings from an fsl.toml file (default: "
                                         "the nearest fsl.toml above the first input)"),
                                cl::value_desc("fsl.toml"), cl::cat(category));
cl::opt<std::string> tuningDatabase(
    "tuning-db",
    cl::desc("Resolve '= auto' from this tuning database before the heuristics (docs/tuning.md; "
             "default: fsl.toml's build.tuning_database)"),
    cl::value_desc("file.fsl"), cl::cat(category));
cl::opt<fsl::EmitKind, false, fsl::ChoiceParser<fsl::EmitKind>>
    emit("emit", cl::desc("What to produce"), cl::init(fsl::EmitKind::Check),
         cl::values(clEnumValN(fsl::EmitKind::Check, "check", "Check the input only (default)"),
                    clEnumValN(fsl::EmitKind::Format, "format", "The input in canonical layout"),
                    clEnumValN(fsl::EmitKind::AST, "ast", "The syntax tree with source ranges"),
                    clEnumValN(fsl::EmitKind::FusionIR, "fusion-ir", "The checked Fusion IR"),
                    clEnumValN(fsl::EmitKind::Schedule, "schedule",
                               "The file with derived extents noted on each directive"),
                    clEnumValN(fsl::EmitKind::KernelIR, "kernel-ir", "The lowered kernels"),
                    clEnumValN(fsl::EmitKind::Cuda, "cuda",
                               "CUDA kernels, launcher and header (<fusion>.cu, <fusion>.h)"),
                    clEnumValN(fsl::EmitKind::Ptx, "ptx", "The kernels compiled to PTX by NVRTC"),
                    clEnumValN(fsl::EmitKind::Cubin, "cubin",
                               "The kernels compiled to a cubin by NVRTC")),
         cl::cat(category));
cl::opt<fsl::DiagnosticsFormat, false, fsl::ChoiceParser<fsl::DiagnosticsFormat>> diagnosticsFormat(
    "diagnostics-format", cl::desc("How diagnostics are written to standard error"),
    cl::init(fsl::DiagnosticsFormat::Text),
    cl::values(clEnumValN(fsl::DiagnosticsFormat::Text, "text", "clang-style text (default)"),
               clEnumValN(fsl::DiagnosticsFormat::Json, "json",
                          "One JSON document (docs/diagnostics.md)")),
    cl::cat(category));
cl::opt<fsl::ColorMode, false, fsl::ChoiceParser<fsl::ColorMode>> color(
    "diagnostics-color", cl::desc("Color text diagnostics"), cl::init(fsl::ColorMode::Auto),
    cl::values(clEnumValN(fsl::ColorMode::Auto, "auto", "When writing to a terminal (default)"),
               clEnumValN(fsl::ColorMode::Always, "always", "Always"),
               clEnumValN(fsl::ColorMode::Never, "never", "Never")),
    cl::cat(category));
cl::list<std::string> nvrtcOptions("Xnvrtc", cl::desc("Pass <option> to NVRTC (--emit=ptx|cubin)"),
                                   cl::value_desc("option"), cl::cat(category));
cl::opt<bool> inPlace("i",
                      cl::desc("With --emit=format: rewrite each input in canonical form, in "
                               "place"),
                      cl::cat(category));
cl::opt<bool> checkFormatted("check",
                             cl::desc("With --emit=format: name each input not in canonical "
                                      "form (exit code 1); write nothing"),
                             cl::cat(category));
cl::opt<bool> resolved("resolved", cl::desc("With --emit=schedule: print every tensor's loop nest"),
                       cl::cat(category));
cl::list<std::string> printAfter("print-after",
                                 cl::desc("Print the Kernel IR after lowering pass <pass> "
                                          "(on standard error; repeatable)"),
                                 cl::value_desc("pass"), cl::cat(category));
cl::opt<bool> printAfterAll("print-after-all",
                            cl::desc("Print the Kernel IR after every lowering pass"),
                            cl::cat(category));
cl::opt<std::string> depfile("depfile",
                             cl::desc("Write a Make-syntax depfile: the outputs depend on the "
                                      "inputs, their imports, fsl.toml and the target file"),
                             cl::value_desc("file"), cl::cat(category));
cl::opt<bool> depfileGcc("MD",
                         cl::desc("Write a depfile, as GCC: to -MF <file>, else next to "
                                  "the first output, as <output stem>.d"),
                         cl::cat(category));
cl::opt<std::string> depfileGccPath("MF", cl::desc("The depfile of -MD (implies -MD)"),
                                    cl::value_desc("file"), cl::Prefix, cl::cat(category));
cl::opt<std::string> depfileTarget("MT",
                                   cl::desc("The target of the depfile's rule (default: every "
                                            "output written)"),
                                   cl::value_desc("target"), cl::Prefix, cl::cat(category));
cl::opt<std::string> symbolPrefix("prefix",
                                  cl::desc("Prefix of the generated symbols and file names "
                                           "(<prefix><fusion>.cu; default: fsl_ symbols)"),
                                  cl::value_desc("prefix"), cl::cat(category));
cl::opt<bool> resourceUsage("resource-usage",
                            cl::desc("Compile the kernels with NVRTC and print each one's "
                                     "registers, spills and shared memory"),
                            cl::cat(category));
cl::opt<std::string> timeTrace("time-trace",
                               cl::desc("Write the time of each phase as Chrome trace JSON "
                                        "(default: <output or input stem>.time-trace.json)"),
                               cl::value_desc("file"), cl::ValueOptional, cl::cat(category));
cl::opt<bool> printTargets("print-targets", cl::desc("List the targets of the stdlib and exit"),
                           cl::cat(category));
// Makes the compiler fail an internal check, to test the crash report (stack dump).
cl::opt<bool> crashForTesting("crash-for-testing", cl::ReallyHidden, cl::cat(category));
cl::opt<bool> verify("verify", cl::desc("Check diagnostics against // expected-* comments"),
                     cl::cat(category));
cl::opt<bool> warningsAsErrors("Werror", cl::desc("Treat warnings as errors"), cl::cat(category));
cl::opt<unsigned> errorLimit("error-limit",
                             cl::desc("Stop after <n> errors (0: no limit, default 50)"),
                             cl::init(50), cl::value_desc("n"), cl::cat(category));

void printVersion(llvm::raw_ostream &out) {
  out << "fslc 0.1.0 (FSL language draft 0)\n"
      << "  built with LLVM " << LLVM_VERSION_STRING << " Support and the ANTLR 4 C++ runtime\n"
      << "  NVRTC " << fsl::codegen::nvrtcVersion() << " for --emit=ptx|cubin\n"
      << "  default target: " << fsl::kDefaultTarget << "\n";
}

/// An address inside fslc, for getMainExecutable (main's own may not be taken).
void anchor() {}

} // namespace

int main(int argc, char **argv) {
  // Prints a stack dump when fslc crashes (LLVM's signal handlers), with the command line.
  llvm::InitLLVM initLLVM(argc, argv);
  // `fslc tune ...` (driver/Tune.h) has options of its own.
  if (argc > 1 && llvm::StringRef(argv[1]) == "tune") {
    std::string executable =
        llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&anchor));
    return fsl::runWithLargeStack([&] {
      return fsl::runTune(llvm::ArrayRef<const char *>(argv + 2, argv + argc), executable.c_str(),
                          llvm::outs(), llvm::errs());
    });
  }
  llvm::setBugReportMsg("PLEASE report this fslc crash with the input file, the command line "
                        "and the stack dump below.\n");
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter(printVersion);
  std::string usageError;
  llvm::raw_string_ostream usageErrors(usageError);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "fslc: the FSL fusion and schedule compiler\n\n"
      "  Exit codes: 0 success, 1 diagnostics in the sources, 2 usage or file errors.\n"
      "  fslc tune FILE --fusion NAME --shapes \"M=4096,N=14336;...\" -o DIR writes a fusion's\n"
      "  schedule candidates for the timing runner (docs/tuning.md).\n",
      &usageErrors);

  fsl::DriverOptions options;
  if (!parsed) {
    // llvm::cl words its errors "fslc: <message>"; keep only the message.
    llvm::StringRef message = llvm::StringRef(usageError).trim();
    message.consume_front(llvm::StringRef(argv[0]).str() + ": ");
    message.consume_front("fslc: ");
    std::string firstLine = message.split('\n').first.str();
    // Name the tool as the user would type it, not by the path it was run from.
    size_t at;
    while ((at = firstLine.find(argv[0])) != std::string::npos)
      firstLine.replace(at, std::strlen(argv[0]), "fslc");
    options.usageError = firstLine;
    if (std::optional<std::string> unknown = fsl::unknownArgumentIn(message)) {
      options.unknownOption = *unknown;
      options.unknownOptionSuggestion =
          fsl::nearestOption(*unknown, fsl::visibleOptionNames(category)).value_or("");
    }
    options.invalidOptionValue = fsl::lastInvalidOptionValue();
    // Other llvm::cl errors (an option without its value) go straight to standard error.
    if (options.usageError.empty())
      options.usageError = "invalid command line; run 'fslc --help' for usage";
  }
  options.inputs.assign(inputs.begin(), inputs.end());
  options.outputDir = outputDir;
  options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
  options.defines.assign(defines.begin(), defines.end());
  options.target = target;
  options.configPath = configPath;
  options.tuningDatabase = tuningDatabase;
  options.stdlibDir = stdlibDir;
  options.evaluateSizes = evaluateSizes;
  options.simulateSizes = simulateSizes;
  options.evaluate = evaluateSizes.getNumOccurrences() != 0;
  options.simulate = simulateSizes.getNumOccurrences() != 0;
  options.simulateMisalign = simulateMisalign;
  if (simulateRtol.getNumOccurrences())
    options.simulateRtol = simulateRtol;
  if (simulateAtol.getNumOccurrences())
    options.simulateAtol = simulateAtol;
  options.seed = seed;
  options.specialValues = specialValues;
  options.emit = emit;
  options.diagnosticsFormat = diagnosticsFormat;
  options.color = color;
  options.resolved = resolved;
  options.inPlace = inPlace;
  options.checkFormatted = checkFormatted;
  options.printAfter.assign(printAfter.begin(), printAfter.end());
  options.printAfterAll = printAfterAll;
  options.nvrtcOptions.assign(nvrtcOptions.begin(), nvrtcOptions.end());
  // -o without --emit writes the CUDA sources: the main job.
  if (emit.getNumOccurrences() == 0 && !options.outputDir.empty())
    options.emit = fsl::EmitKind::Cuda;
  options.verify = verify;
  options.warningsAsErrors = warningsAsErrors;
  options.errorLimit = errorLimit;
  options.depfile = depfile;
  options.depfileGccPath = depfileGccPath;
  options.depfileGcc = depfileGcc || !depfileGccPath.empty();
  options.depfileTarget = depfileTarget;
  options.symbolPrefix = symbolPrefix;
  options.resourceUsage = resourceUsage;
  options.timeTrace = timeTrace.getNumOccurrences() != 0;
  options.timeTraceFile = timeTrace;
  options.printTargets = printTargets;
  options.crashForTesting = crashForTesting;
  // https://no-color.org: NO_COLOR set and not empty turns colour off, unless asked for.
  if (const char *noColor = std::getenv("NO_COLOR"))
    options.noColorEnvironment = noColor[0] != '\0';
  if (const char *fromEnvironment = std::getenv("FSLC_STDLIB"))
    options.stdlibFromEnvironment = fromEnvironment;
  options.executablePath =
      llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&anchor));
  return fsl::runWithLargeStack([&] {
    // Crash reports name the command line; the entry InitLLVM made belongs to the main
    // thread, and the compiler runs on this one.
    llvm::PrettyStackTraceProgram stackTraceEntry(argc, argv);
    return fsl::runDriver(options, llvm::outs(), llvm::errs());
  });
}
