// Targets.h — a target found by name among the stdlib's target files.
#pragma once

#include "support/Target.h"

#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::pipeline {

struct FoundTarget {
  Target target;
  std::string file; // the stdlib/targets file it was read from (a prerequisite)
};

/// The target named `name` (its file name or an alias) among `<stdlibDir>/targets/*.toml`;
/// reports the known ones when there is none, and any target file that does not read.
std::optional<FoundTarget> findTarget(const std::string &name, const std::string &stdlibDir,
                                      llvm::SourceMgr &sources, DiagnosticEngine &diagnostics);

} // namespace fsl::pipeline
