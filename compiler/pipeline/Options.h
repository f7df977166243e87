// Options.h — what one compilation is asked to do, settled before it starts.
//
// The command line and fsl.toml (driver/) or the JIT's program options (jit/) fill these
// in; the compilation itself reads nothing else.
#pragma once

#include "lower/Lower.h"
#include "support/Target.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsl::pipeline {

struct Options {
  Target target;
  std::string stdlibDir;                  // `import "std/..."`
  std::vector<std::string> includeDirs;   // -I and fsl.toml's, in that order
  std::map<std::string, int64_t> defines; // static dimension values (-D, fsl.toml)

  /// Static dimensions of the main file's fusions left runtime sizes (the JIT's
  /// runtime_dims): their `<D = N>` declarations are dropped, in memory.
  std::vector<std::string> runtimeDims;
  /// Dimensions made static with these values: a runtime dimension of a main file's
  /// fusion becomes static (a static one takes the value, as with -D), so the heuristics
  /// and the lowering see a constant. Dimensions a fusion lacks are ignored.
  std::map<std::string, int64_t> specializeDims;

  /// A tuning database (docs/tuning.md) `= auto` consults before the heuristics; empty:
  /// none (--tuning-db, fsl.toml's build.tuning_database).
  std::string tuningDatabase;

  /// Every fusion without a schedule declaration gets the heuristics' schedules (for
  /// code, or to print the schedules); otherwise only `= auto` declarations are filled.
  bool scheduleEveryFusion = false;
  /// Non-empty: only these fusions of the main file are lowered and generated.
  std::vector<std::string> onlyFusions;
  /// --print-after: Kernel IR after lowering passes.
  PrintAfter printAfter;
  /// Starts the generated symbols and the names of their files.
  std::string symbolPrefix;
};

} // namespace fsl::pipeline
