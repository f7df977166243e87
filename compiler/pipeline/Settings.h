// Settings.h — the command line merged over fsl.toml: the target, folders and defines a
// compilation is given.
//
// The JIT (jit/src/compiler_api.cpp) reads the fsl.toml next to its program the same
// way, so that a program compiles alike under fslc and the JIT.
#pragma once

#include "pipeline/Options.h"
#include "support/Target.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace fsl {

class DiagnosticEngine;

/// What the caller asks for, before fsl.toml is read.
struct SettingsRequest {
  /// fsl.toml is looked for from the first input's folder up (none, or `-`: from the
  /// current folder).
  std::optional<std::string> firstInput;
  std::string configPath;               // --config; empty: the nearest fsl.toml
  std::string target;                   // empty: from fsl.toml, else the default
  std::string outputDir;                // empty: from fsl.toml
  std::string tuningDatabase;           // --tuning-db; empty: from fsl.toml
  std::vector<std::string> includeDirs; // before fsl.toml's
  std::vector<std::string> defines;     // NAME=VALUE, as given; over fsl.toml's
  std::string stdlibDir;                // already chosen
};

/// Settings after merging the command line over fsl.toml.
struct Settings {
  Target target;
  std::string targetFile; // the stdlib/targets file it was read from (a prerequisite)
  std::string configFile; // the fsl.toml read, if any (a prerequisite)
  std::string outputDir;
  std::string tuningDatabase; // empty: none
  std::string stdlibDir;
  std::vector<std::string> includeDirs;
  std::map<std::string, int64_t> defines;
};

/// Reads fsl.toml (the one named, or the nearest above the first input) and the target,
/// and checks the include folders and defines. False after reporting errors.
bool configure(const SettingsRequest &request, llvm::SourceMgr &sources,
               DiagnosticEngine &diagnostics, Settings &settings);

/// What a compilation under `settings` is given: the target, the stdlib, the include
/// folders, the defines and the tuning database (the driver, `fslc tune` and the JIT).
pipeline::Options compileOptionsFrom(const Settings &settings);

/// --print-targets: one line per target file of `stdlibDir`, on `out`. False after
/// reporting a target file that does not read.
bool listTargets(const std::string &stdlibDir, llvm::SourceMgr &sources,
                 DiagnosticEngine &diagnostics, llvm::raw_ostream &out);

} // namespace fsl
