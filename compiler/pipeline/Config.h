// Config.h — `fsl.toml` project files.
//
//   [build]
//   target = "sm_90a"          # default --target
//   include = ["lib"]          # -I directories, relative to the fsl.toml file
//   output = "out"             # default -o directory, relative to the fsl.toml file
//   tuning_database = "tuned.fsl"  # default --tuning-db, relative to the fsl.toml file
//
//   [defines]                  # static dimensions, as -D NAME=VALUE
//   H = 8192
//
// Command-line options override the file. Errors point at the TOML line.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {

class DiagnosticEngine;

struct ProjectConfig {
  std::optional<std::string> target;
  std::vector<std::string> includeDirs;
  std::optional<std::string> outputDir;
  std::optional<std::string> tuningDatabase;
  std::vector<std::pair<std::string, int64_t>> defines;
};

/// Reads the TOML file held in buffer `bufferId`. Returns nullopt after reporting errors.
std::optional<ProjectConfig> loadConfig(llvm::SourceMgr &sources, unsigned bufferId,
                                        DiagnosticEngine &diagnostics);

} // namespace fsl
