// OutputFiles.h — what fslc writes and what it read: output files (written whole and
// only when changed, never over an input), the depfile, and the time trace.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fsl {

class DiagnosticEngine;
struct Settings;

class OutputFiles {
public:
  OutputFiles(const Settings &settings, DiagnosticEngine &diagnostics)
      : settings_(settings), diagnostics_(diagnostics) {}

  /// An input the outputs depend on (a source or an import), kept once, in the order
  /// read.
  void addPrerequisite(llvm::StringRef path);

  /// Writes `contents` to `fileName` in the output folder, and remembers it (the
  /// depfile's targets). An exit code.
  int writeNamed(const std::string &fileName, llvm::StringRef contents);

  /// Writes `contents` to `path` (-o naming the one output file, or the header beside
  /// it), and remembers it. An exit code.
  int writeOutput(const std::string &path, llvm::StringRef contents);

  /// Replaces `path` by `contents` unless it holds exactly that already. An exit code.
  int writeFile(const std::string &path, llvm::StringRef contents);

  /// -i: replaces the input `path` by `contents` unless it holds exactly that already,
  /// keeping its permissions; through a symbolic link, the file it names. An exit code.
  int rewriteInput(const std::string &path, llvm::StringRef contents);

  /// -o names one output file: the time trace is named after it.
  void setOutputFile(std::string path) { outputFile_ = std::move(path); }

  /// One Make rule at `depfile` (empty: -MD, next to the first output): the outputs (or
  /// `target`) depend on the inputs, what they import, the fsl.toml and the target file.
  /// `option` names the option that asked (for the diagnostics). An exit code.
  int writeDepfile(std::string depfile, const std::string &target, const char *option);

  /// The time trace at `path`, else next to the output or the first input,
  /// `<-o DIR or input folder>/<input stem>.time-trace.json`. An exit code.
  int writeTimeTrace(std::string path, std::string input);

  /// Every file written into the output folder, in order.
  const std::vector<std::string> &outputs() const { return outputs_; }

private:
  std::optional<std::string> inputAt(llvm::StringRef path) const;
  /// Writes through a temporary file renamed over `path`; `permissions`: the new file's.
  int replaceContents(const std::string &path, llvm::StringRef contents,
                      std::optional<llvm::sys::fs::perms> permissions);

  const Settings &settings_;
  DiagnosticEngine &diagnostics_;
  std::vector<std::string> outputs_;       // every file of -o, in the order written
  std::string outputFile_;                 // -o naming the one output file
  std::vector<std::string> prerequisites_; // of the depfile: inputs and their imports
  std::set<std::string> prerequisiteSet_;
};

} // namespace fsl
