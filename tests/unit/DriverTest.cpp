// DriverTest.cpp — the driver called on text held in memory (DriverOptions::inputTexts),
// as the fuzzer (tests/fuzz) calls it: the same results as from a file, no file read.
#include "driver/Driver.h"

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
