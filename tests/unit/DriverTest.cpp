// DriverTest.cpp — the driver called on text held in memory (DriverOptions::inputTexts),
// as the fuzzer (tests/fuzz) calls it: the same results as from a file, no file read.
#include "driver/Driver.h"
#include "driver/ResourceUsage.h"

#include <doctest/doctest.h>
#include <llvm/Support/raw_ostream.h>

using namespace fsl;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run runOnText(const std::string &name, const std::string &text, EmitKind emit) {
  DriverOptions options;
  options.inputs = {name};
  options.inputTexts[name] = text;
  options.emit = emit;
  options.color = ColorMode::Never;
  options.stdlibDir = FSL_TEST_STDLIB_DIR;
  Run run;
  llvm::raw_string_ostream out(run.out), err(run.err);
  run.code = runDriver(options, out, err);
  return run;
}

} // namespace

TEST_CASE("the driver reads an input held in memory, by its name") {
  // No such file exists: the text comes from the options.
  Run formatted = runOnText("/nonexistent/in-memory.fsl",
                            "fusion f(x: f32[T]) -> (y: f32[T]) {y = x*2.0;}", EmitKind::Format);
  CHECK(formatted.code == kExitSuccess);
  CHECK(formatted.out == "fusion f(x: f32[T]) -> (y: f32[T]) {\n    y = x * 2.0;\n}\n");
  CHECK(formatted.err.empty());

  Run checked = runOnText("/nonexistent/in-memory.fsl", "fusion f(x: f32[T]) -> (y: f32[T]) {}",
                          EmitKind::Check);
  CHECK(checked.code == kExitDiagnostics);
  // Diagnostics name the input as given.
  CHECK(checked.err.find("/nonexistent/in-memory.fsl:1:") != std::string::npos);
}

TEST_CASE("--simulate with no sizes asks for the ones the fusion needs") {
  // `--simulate ""`: the option is given, its sizes empty. It used to do nothing, exit 0.
  DriverOptions options;
  options.inputs = {"rows.fsl"};
  options.inputTexts["rows.fsl"] =
      "fusion rows(x: f32[T, H], alpha: f32) -> (y: f32[T, H]) { y = x * alpha; }";
  options.simulate = true;
  options.color = ColorMode::Never;
  options.stdlibDir = FSL_TEST_STDLIB_DIR;
  Run run;
  llvm::raw_string_ostream out(run.out), err(run.err);
  run.code = runDriver(options, out, err);
  CHECK(run.code == kExitUsage);
  CHECK(run.out.empty());
  CHECK(run.err.find("--simulate: give the sizes of runtime dimensions T and H, and a value for "
                     "scalar alpha, as in T=4,H=4,alpha=1 [invalid-simulate-argument]") !=
        std::string::npos);
}

TEST_CASE("a -D given twice must give one value") {
  auto run = [](std::vector<std::string> defines) {
    DriverOptions options;
    options.inputs = {"scale.fsl"};
    options.inputTexts["scale.fsl"] =
        "fusion scale<H = 64>(x: f32[T, H]) -> (y: f32[T, H]) { y = x * 2.0; }";
    options.defines = std::move(defines);
    options.color = ColorMode::Never;
    options.stdlibDir = FSL_TEST_STDLIB_DIR;
    Run result;
    llvm::raw_string_ostream out(result.out), err(result.err);
    result.code = runDriver(options, out, err);
    return result;
  };
  Run conflicting = run({"H=8", "H=16"});
  CHECK(conflicting.code == kExitUsage);
  CHECK(conflicting.err.find("-D H=8 and -D H=16 give 'H' two values") != std::string::npos);
  CHECK(run({"H=8", "H=8"}).code == kExitSuccess);
  // A -D no input declares is a usage error too.
  CHECK(run({"W=8"}).code == kExitUsage);
}

TEST_CASE("ptxas -v's report read a kernel at a time, and the setmaxnreg it ignored") {
  // The shape of NVRTC's log with --ptxas-options=-v (two kernels, the second spilling).
  const char *log = "ptxas info    : (C7507) Potential Performance Loss: 'setmaxnreg' ignored to "
                    "maintain minimum register requirements.\n"
                    "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'k_v0' for 'sm_90a'\n"
                    "ptxas info    : Function properties for k_v0\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 18 registers, 1024 bytes smem, 384 bytes cmem[0]\n"
                    "ptxas info    : Compiling entry function 'k_v1' for 'sm_90a'\n"
                    "ptxas info    : Function properties for k_v1\n"
                    "    16 bytes stack frame, 24 bytes spill stores, 8 bytes spill loads\n"
                    "ptxas info    : Used 168 registers, used 2 barriers, 16 bytes cumulative "
                    "stack size\n";
  std::vector<KernelResources> kernels = parsePtxasReport(log);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].name == "k_v0");
  CHECK(kernels[0].registers == 18);
  CHECK(kernels[0].sharedBytes == 1024);
  CHECK(kernels[0].spillStores == 0);
  CHECK(kernels[1].name == "k_v1");
  CHECK(kernels[1].registers == 168);
  CHECK(kernels[1].stackBytes == 16);
  CHECK(kernels[1].spillStores == 24);
  CHECK(kernels[1].spillLoads == 8);
  CHECK(ptxasIgnoredSetMaxNReg(log));
  // ptxas's other reasons are not a role's count that raising would cure.
  CHECK_FALSE(ptxasIgnoredSetMaxNReg(
      "ptxas info    : (C7505) Potential Performance Loss: 'setmaxnreg' ignored to allow "
      "debugging.\n"));
  CHECK_FALSE(ptxasIgnoredSetMaxNReg("ptxas info    : Used 18 registers"));
}
