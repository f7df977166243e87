// Sources.h — files read into the source manager, with the reason one cannot be.
//
// Inputs, target files and fsl.toml all enter the compiler this way, so that their
// diagnostics can point into them.
#pragma once

#include "support/SourceFile.h"

#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::pipeline {

/// Adds a file to the source manager; reports why it cannot be read. Devices, pipes and
/// files over the size limit are refused before anything is read.
std::optional<unsigned> readSource(llvm::SourceMgr &sources, const std::string &path,
                                   DiagnosticEngine &diagnostics);

/// Adds what readSourceFile (or readStandardInput) returned, named `path`; reports why
/// it could not be read.
std::optional<unsigned> addSource(llvm::SourceMgr &sources, SourceFile file,
                                  const std::string &path, DiagnosticEngine &diagnostics);

/// Adds a text held in memory, named `path` (as diagnostics and imports see it).
unsigned addSourceText(llvm::SourceMgr &sources, const std::string &path, const std::string &text);

} // namespace fsl::pipeline
