// Driver.h — the fslc command line tool, run once per invocation.
//
// Options come from the command line (main.cpp) and fsl.toml (Settings.h); the driver
// reads each input, compiles it (pipeline/Compilation.h, the phases in the order of the
// folders under compiler/) and writes what --emit asks for.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl {

enum class EmitKind { Check, Format, AST, FusionIR, Schedule, KernelIR, Cuda, Ptx, Cubin };
enum class DiagnosticsFormat { Text, Json };
enum class ColorMode { Auto, Always, Never };

/// A value given to an option of fixed values (--emit, --diagnostics-format...) that is
/// none of them.
struct InvalidOptionValue {
  std::string option; // as spelled on the command line, without dashes: `emit`
  std::string value;
  std::vector<std::string> valid; // in the order of --help
};

struct DriverOptions {
  std::vector<std::string> inputs;
  /// Inputs held in memory (the fuzzer, a program embedding the driver): an input named
  /// here is read from its text instead of the file system; nothing else changes (imports,
  /// fsl.toml lookup and diagnostics still use the name).
  std::map<std::string, std::string> inputTexts;
  /// -o: a folder, or one file when it has the extension of what --emit writes
  /// (driver/OutputPath.h).
  std::string outputDir;
  std::vector<std::string> includeDirs;
  std::vector<std::string> defines; // NAME=VALUE, as given
  std::string target;               // empty: from fsl.toml, else the default
  std::string configPath;
  std::string tuningDatabase;        // --tuning-db; empty: fsl.toml's, else none
  std::string stdlibDir;             // --stdlib; empty: see stdlibFromEnvironment
  std::string stdlibFromEnvironment; // $FSLC_STDLIB; empty: installed, else source tree
  std::string executablePath;        // fslc itself: the installed stdlib is next to it
  std::string evaluateSizes;         // --evaluate: NAME=VALUE,... (sizes and scalars)
  std::string simulateSizes;         // --simulate: NAME=VALUE,... (sizes and scalars)
  /// --evaluate or --simulate given even with no sizes (`--simulate ""`): it runs all the
  /// same, so that the sizes it needs are asked for instead of nothing being done. Sizes
  /// given alone (a program embedding the driver) ask for the run too.
  bool evaluate = false, simulate = false;
  int64_t simulateMisalign = 0; // --simulate-misalign: elements past an aligned address
  /// --simulate-rtol / --simulate-atol, as given (checked by the driver); none: derived.
  std::optional<std::string> simulateRtol, simulateAtol;
  uint64_t seed = 0;          // random inputs of --evaluate and --simulate
  bool specialValues = false; // --special-values: NaN, infinities and ties in float inputs
  EmitKind emit = EmitKind::Check;
  DiagnosticsFormat diagnosticsFormat = DiagnosticsFormat::Text;
  ColorMode color = ColorMode::Auto;
  bool noColorEnvironment = false;       // $NO_COLOR set and not empty: Auto means Never
  std::vector<std::string> nvrtcOptions; // -Xnvrtc
  bool resolved = false;                 // --emit=schedule: loop nests instead of text
  bool inPlace = false;                  // -i: --emit=format rewrites the inputs
  bool checkFormatted = false;           // --check: --emit=format names unformatted inputs
  std::vector<std::string> printAfter;   // --print-after=PASS: Kernel IR after that pass
  bool printAfterAll = false;            // --print-after-all
  bool verify = false;
  bool warningsAsErrors = false;
  unsigned errorLimit = 50;
  std::string depfile;        // --depfile=FILE
  bool depfileGcc = false;    // -MD (or -MF): a depfile, by default next to the first output
  std::string depfileGccPath; // -MF FILE
  std::string depfileTarget;  // -MT TARGET; empty: every output written
  std::string symbolPrefix;   // --prefix: of generated symbols and file names
  bool resourceUsage = false; // --resource-usage: ptxas's figures per kernel
  bool timeTrace = false;     // --time-trace[=FILE]
  std::string timeTraceFile;  // empty: named after the output or the input
  bool printTargets = false;  // --print-targets: list the targets, then exit
  bool crashForTesting = false;

  /// Set by main when the command line itself could not be parsed: llvm::cl's message,
  /// and what it was about when main can tell: an unknown option (with the nearest known
  /// spelling, if one is near) or an unknown value of an option of fixed values.
  std::string usageError;
  std::string unknownOption, unknownOptionSuggestion;
  std::optional<InvalidOptionValue> invalidOptionValue;
};

/// Exit codes: 0 success, 1 diagnostics in the sources (or -verify mismatches),
/// 2 usage, configuration or file-system errors.
enum ExitCode { kExitSuccess = 0, kExitDiagnostics = 1, kExitUsage = 2 };

/// Runs the pipeline; results go to `out`, diagnostics to `err`.
int runDriver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err);

} // namespace fsl
