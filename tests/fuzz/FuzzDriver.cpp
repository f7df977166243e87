// FuzzDriver.cpp — a libFuzzer target over the driver, fed from memory.
//
// Why here and not in robustness.py: coverage guidance reaches the schedule checker,
// the lowering and the simulator, which random byte damage to the examples rarely gets
// past the parser to. Each input runs through the same runDriver() as fslc (the input's
// text given by DriverOptions::inputTexts), in the mode named by $FSL_FUZZ_MODE:
//
//   check      --emit=check
//   format     --emit=format; the output formats to itself (idempotence), and checking
//              it gives the same exit code as checking the input
//   schedule   --emit=schedule, then --emit=schedule --resolved; what the first printed
//              passes --emit=check
//   kernel-ir  --emit=kernel-ir
//   cuda       --emit=cuda
//   simulate   --simulate with every runtime dimension small (inputs of at most
//              kSimulateElements elements over all fusions); with $FSL_FUZZ_STRICT set, a
//              mismatch with the reference is a finding too
//   all        (default) every mode above on each input
//
// A crash, a sanitizer report, an exit code outside 0/1/2 or a broken property aborts
// (a libFuzzer crash); slowness is caught by -timeout. docs/fuzzing.md says how to run it.
#include "driver/Driver.h"
#include "support/LargeStack.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// Where the input claims to live: a folder with no fsl.toml above it, so that no
/// project file of the machine running the fuzzer changes the result.
constexpr const char *kInputName = "/fsl-fuzz-input/input.fsl";

/// Simulating a large static shape (a 4096-wide matmul) takes seconds, not microseconds:
/// inputs whose fusions hold more tensor-shape elements than this, summed, are not
/// simulated (the sanitized simulator is about 13 times slower than the release build;
/// this keeps an input near 0.25 s in the release build, well inside -timeout).
constexpr int64_t kSimulateElements = int64_t(1) << 15;

struct Result {
  int code = 0;
  std::string out, err;
};

Result runOn(llvm::StringRef text, fsl::EmitKind emit, bool resolved = false,
             const std::string &simulate = "") {
  fsl::DriverOptions options;
  options.inputs = {kInputName};
  options.inputTexts[kInputName] = text.str();
  options.emit = emit;
  options.resolved = resolved;
  options.simulateSizes = simulate;
  options.color = fsl::ColorMode::Never;
  // As fslc: $FSLC_STDLIB, else the source tree's stdlib (a copy of the fuzzer run on
  // another machine names the copied tree's).
  if (const char *stdlib = getenv("FSLC_STDLIB"))
    options.stdlibFromEnvironment = stdlib;
  Result result;
  llvm::raw_string_ostream out(result.out), err(result.err);
  // fslc's main runs the driver on a large stack too; the parser's limits assume it.
  result.code = fsl::runWithLargeStack([&] { return fsl::runDriver(options, out, err); });
  out.flush();
  err.flush();
  if (result.code != fsl::kExitSuccess && result.code != fsl::kExitDiagnostics &&
      result.code != fsl::kExitUsage) {
    fprintf(stderr, "fsl-fuzz: exit code %d\n%s\n", result.code, result.err.c_str());
    abort();
  }
  return result;
}

[[noreturn]] void fail(const char *what, const Result &a, const Result &b) {
  fprintf(stderr,
          "fsl-fuzz: %s\n--- first (exit %d) ---\n%s\n%s\n--- second (exit %d) ---\n%s\n%s\n", what,
          a.code, a.out.c_str(), a.err.c_str(), b.code, b.out.c_str(), b.err.c_str());
  abort();
}

void fuzzFormat(llvm::StringRef text) {
  Result formatted = runOn(text, fsl::EmitKind::Format);
  if (formatted.code != fsl::kExitSuccess)
    return;
  Result again = runOn(formatted.out, fsl::EmitKind::Format);
  if (again.code != fsl::kExitSuccess || again.out != formatted.out)
    fail("formatting the formatted input changes it", formatted, again);
  Result checked = runOn(text, fsl::EmitKind::Check);
  Result checkedFormatted = runOn(formatted.out, fsl::EmitKind::Check);
  if (checked.code != checkedFormatted.code)
    fail("formatting changes the result of --emit=check", checked, checkedFormatted);
}

/// What --emit=schedule prints (the user's schedules and the heuristics' choices) is a
/// file the checker accepts.
void fuzzSchedule(llvm::StringRef text) {
  Result printed = runOn(text, fsl::EmitKind::Schedule);
  runOn(text, fsl::EmitKind::Schedule, /*resolved=*/true);
  if (printed.code != fsl::kExitSuccess)
    return;
  Result checked = runOn(printed.out, fsl::EmitKind::Check);
  if (checked.code != fsl::kExitSuccess)
    fail("the checker refuses what --emit=schedule printed", printed, checked);
}

/// The sizes for --simulate: every runtime dimension of the Fusion IR set to a small
/// value taken from the input, so that different inputs try different remainders. The
/// budget is over the whole input: stdlib/std/norms.fsl holds 17 fusions of T x 4096,
/// each simulated in turn, and at T = 9 that ran past -timeout under the sanitizers. Over
/// the budget, every runtime dimension drops to 1; still over, nothing is simulated.
void fuzzSimulate(llvm::StringRef text) {
  Result ir = runOn(text, fsl::EmitKind::FusionIR);
  if (ir.code != fsl::kExitSuccess)
    return;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(ir.out).split(lines, '\n');
  // Each fusion's tensor-shape product: its static part and its runtime dimensions.
  struct FusionShape {
    int64_t staticElements = 1;
    std::vector<std::string> runtimeNames;
  };
  std::vector<FusionShape> fusions;
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.starts_with("fusion ")) {
      fusions.emplace_back();
      continue;
    }
    if (!line.consume_front("dim ") || fusions.empty())
      continue;
    auto [name, rest] = line.split(':');
    if (rest.trim() == "runtime") {
      fusions.back().runtimeNames.push_back(name.trim().str());
      continue;
    }
    auto [dimName, value] = line.split('=');
    int64_t extent;
    if (value.trim().getAsInteger(10, extent) || extent <= 0)
      return; // a line this parser does not know: skip rather than guess
    if (fusions.back().staticElements > kSimulateElements / extent)
      return;
    fusions.back().staticElements *= extent;
  }
  // The extent each runtime name gets (the first value of a name in two fusions).
  unsigned salt = static_cast<unsigned>(text.size());
  std::vector<std::string> names;
  std::vector<int64_t> extents;
  for (const FusionShape &fusion : fusions)
    for (const std::string &name : fusion.runtimeNames)
      if (!llvm::is_contained(names, name)) {
        names.push_back(name);
        extents.push_back(1 + (salt++ * 7 + name.size()) % 9);
      }
  auto totalElements = [&]() {
    int64_t total = 0;
    for (const FusionShape &fusion : fusions) {
      int64_t elements = fusion.staticElements;
      for (const std::string &name : fusion.runtimeNames) {
        int64_t extent = extents[llvm::find(names, name) - names.begin()];
        if (elements > kSimulateElements / extent)
          return kSimulateElements + 1;
        elements *= extent;
      }
      total += elements;
      if (total > kSimulateElements)
        return total;
    }
    return total;
  };
  if (totalElements() > kSimulateElements) {
    std::fill(extents.begin(), extents.end(), 1);
    if (totalElements() > kSimulateElements)
      return;
  }
  std::vector<std::string> unique;
  for (size_t i = 0; i < names.size(); ++i)
    unique.push_back(names[i] + "=" + std::to_string(extents[i]));
  // "," asks for a simulation without naming a size (fusions with static shapes only).
  Result simulated =
      runOn(text, fsl::EmitKind::Check, false, unique.empty() ? "," : llvm::join(unique, ","));
  // With $FSL_FUZZ_STRICT: a schedule the checker accepted must match the reference on
  // the simulator (the simulator's tolerances are known to be too tight for
  // some arithmetic, issue 16, so CI does not ask for it yet).
  static const bool strict = getenv("FSL_FUZZ_STRICT") != nullptr;
  // A fault is not a finding: at sizes the kernel cannot take (a TMA stride not a multiple
  // of 16 bytes) the launcher refuses, and the simulator faults where it would.
  if (strict && llvm::StringRef(simulated.err).contains("[simulation-mismatch]"))
    fail("an accepted schedule fails on the simulator", ir, simulated);
}

enum class Mode { All, Check, Format, Schedule, KernelIR, Cuda, Simulate };

Mode modeFromEnvironment() {
  const char *name = getenv("FSL_FUZZ_MODE");
  llvm::StringRef mode = name ? name : "all";
  if (mode == "all")
    return Mode::All;
  if (mode == "check")
    return Mode::Check;
  if (mode == "format")
    return Mode::Format;
  if (mode == "schedule")
    return Mode::Schedule;
  if (mode == "kernel-ir")
    return Mode::KernelIR;
  if (mode == "cuda")
    return Mode::Cuda;
  if (mode == "simulate")
    return Mode::Simulate;
  fprintf(stderr,
          "FSL_FUZZ_MODE=%s: not one of all, check, format, schedule, kernel-ir, cuda, "
          "simulate\n",
          mode.str().c_str());
  exit(2);
}

const Mode mode = modeFromEnvironment();

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  bool all = mode == Mode::All;
  if (all || mode == Mode::Check)
    runOn(text, fsl::EmitKind::Check);
  if (all || mode == Mode::Format)
    fuzzFormat(text);
  if (all || mode == Mode::Schedule)
    fuzzSchedule(text);
  if (all || mode == Mode::KernelIR)
    runOn(text, fsl::EmitKind::KernelIR);
  if (all || mode == Mode::Cuda)
    runOn(text, fsl::EmitKind::Cuda);
  if (all || mode == Mode::Simulate)
    fuzzSimulate(text);
  return 0;
}
