// OutputFiles.cpp — output files, the depfile and the time trace.
#include "driver/OutputFiles.h"

#include "driver/Driver.h"
#include "pipeline/Settings.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl {
namespace {

/// A path as Make reads it (GCC's escaping, which Ninja understands too).
std::string makeEscaped(llvm::StringRef path) {
  std::string escaped;
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == ' ' || c == '\t') {
      // Backslashes before a blank would escape the escape: double them.
      for (size_t j = i; j > 0 && path[j - 1] == '\\'; --j)
        escaped += '\\';
      escaped += '\\';
    } else if (c == '#') {
      escaped += '\\';
    } else if (c == '$') {
      escaped += '$';
    }
    escaped += c;
  }
  return escaped;
}

} // namespace

void OutputFiles::addPrerequisite(llvm::StringRef path) {
  llvm::SmallString<256> clean(path);
  llvm::sys::path::remove_dots(clean, /*remove_dot_dot=*/false);
  if (prerequisiteSet_.insert(std::string(clean)).second)
    prerequisites_.push_back(std::string(clean));
}

int OutputFiles::writeNamed(const std::string &fileName, llvm::StringRef contents) {
  llvm::SmallString<256> outputPath(settings_.outputDir);
  llvm::sys::path::append(outputPath, fileName);
  return writeOutput(std::string(outputPath), contents);
}

int OutputFiles::writeOutput(const std::string &path, llvm::StringRef contents) {
  int code = writeFile(path, contents);
  if (code == kExitSuccess)
    outputs_.push_back(path);
  return code;
}

/// The input (a source, an import, fsl.toml or the target file) that `path` is the
/// same file as, if any: writing there would replace what was read.
std::optional<std::string> OutputFiles::inputAt(llvm::StringRef path) const {
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  std::vector<std::string> read = prerequisites_;
  for (const std::string &file :
       {settings_.configFile, settings_.targetFile, settings_.tuningDatabase})
    if (!file.empty())
      read.push_back(file);
  for (const std::string &input : read) {
    bool same = false;
    if (!llvm::sys::fs::equivalent(path, input, same) && same)
      return input;
  }
  return std::nullopt;
}

/// An unchanged file keeps its modification time, so a build system that checks it again
/// (Ninja's restat) rebuilds nothing downstream. New contents go to a temporary file in
/// the same folder that is renamed over the old one, so that no reader, nor a build
/// interrupted here, ever sees half a file.
int OutputFiles::writeFile(const std::string &path, llvm::StringRef contents) {
  llvm::TimeTraceScope scope("Write", path);
  // `--emit=format -o .` names its output after the input, in the input's folder; a
  // depfile or trace may be pointed at one too. What was read is never replaced.
  if (std::optional<std::string> input = inputAt(path)) {
    diagnostics_.report(DiagId::OutputOverwritesInput, llvm::SMRange(), path, *input);
    return kExitUsage;
  }
  llvm::StringRef directory = llvm::sys::path::parent_path(path);
  if (!directory.empty())
    if (std::error_code error = llvm::sys::fs::create_directories(directory)) {
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), directory.str(),
                          error.message());
      return kExitUsage;
    }
  return replaceContents(path, contents, std::nullopt);
}

int OutputFiles::rewriteInput(const std::string &path, llvm::StringRef contents) {
  llvm::TimeTraceScope scope("Write", path);
  // Renaming over a symbolic link would replace the link: write the file it names.
  llvm::SmallString<256> target;
  if (std::error_code error = llvm::sys::fs::real_path(path, target)) {
    diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), path, error.message());
    return kExitUsage;
  }
  llvm::ErrorOr<llvm::sys::fs::perms> permissions = llvm::sys::fs::getPermissions(target);
  if (!permissions) {
    diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), path,
                        permissions.getError().message());
    return kExitUsage;
  }
  return replaceContents(std::string(target), contents, *permissions);
}

int OutputFiles::replaceContents(const std::string &path, llvm::StringRef contents,
                                 std::optional<llvm::sys::fs::perms> permissions) {
  if (auto existing = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                  /*RequiresNullTerminator=*/false);
      existing && (*existing)->getBuffer() == contents)
    return kExitSuccess;
  auto fail = [&](std::string message) {
    diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), path, std::move(message));
    return kExitUsage;
  };
  llvm::Expected<llvm::sys::fs::TempFile> temporary = llvm::sys::fs::TempFile::create(
      path + ".tmp-%%%%%%",
      permissions.value_or(llvm::sys::fs::all_read | llvm::sys::fs::all_write));
  if (!temporary)
    return fail(llvm::toString(temporary.takeError()));
  std::error_code error;
  {
    llvm::raw_fd_ostream stream(temporary->FD, /*shouldClose=*/false);
    stream << contents;
    stream.flush();
    error = stream.error();
    stream.clear_error();
  }
  // The mode given to create is masked by the umask; an input keeps its own exactly.
  if (!error && permissions)
    error = llvm::sys::fs::setPermissions(temporary->FD, *permissions);
  if (error) {
    llvm::consumeError(temporary->discard());
    return fail(error.message());
  }
  if (llvm::Error kept = temporary->keep(path))
    return fail(llvm::toString(std::move(kept)));
  return kExitSuccess;
}

int OutputFiles::writeDepfile(std::string path, const std::string &target, const char *option) {
  if (path.empty()) {
    // -MD alone: next to the first output, as GCC puts it next to the object file.
    if (outputs_.empty()) {
      diagnostics_.report(DiagId::DepfileNeedsOutput, llvm::SMRange(), "-MD",
                          "to name the depfile after", "-MF FILE");
      return kExitUsage;
    }
    llvm::SmallString<256> beside(outputs_.front());
    llvm::sys::path::replace_extension(beside, ".d");
    path = std::string(beside);
  }
  std::vector<std::string> targets;
  if (!target.empty())
    targets.push_back(target);
  else
    targets = outputs_;
  if (targets.empty()) {
    diagnostics_.report(DiagId::DepfileNeedsOutput, llvm::SMRange(), option,
                        "to name as the rule's target", "-o DIR, or -MT TARGET");
    return kExitUsage;
  }
  std::vector<std::string> prerequisites = prerequisites_;
  for (const std::string &file :
       {settings_.configFile, settings_.targetFile, settings_.tuningDatabase})
    if (!file.empty() && !llvm::is_contained(prerequisites, file))
      prerequisites.push_back(file);
  std::string rule;
  for (size_t i = 0; i < targets.size(); ++i)
    rule += (i ? " " : "") + makeEscaped(targets[i]);
  rule += ":";
  for (const std::string &prerequisite : prerequisites)
    rule += " \\\n  " + makeEscaped(prerequisite);
  rule += "\n";
  return writeFile(path, rule);
}

int OutputFiles::writeTimeTrace(std::string path, std::string input) {
  if (path.empty()) {
    llvm::SmallString<256> named;
    if (input == "-")
      input = "stdin";
    if (!outputFile_.empty()) {
      // Beside the one output file, named after it, as clang's -ftime-trace does.
      named = outputFile_;
      llvm::sys::path::replace_extension(named, "");
    } else if (!settings_.outputDir.empty()) {
      named = settings_.outputDir;
      llvm::sys::path::append(named, llvm::sys::path::stem(input));
    } else {
      named = input;
      llvm::sys::path::replace_extension(named, "");
    }
    path = (named + ".time-trace.json").str();
  }
  std::string trace;
  {
    llvm::raw_string_ostream stream(trace);
    llvm::SmallVector<char, 0> bytes;
    llvm::raw_svector_ostream json(bytes);
    llvm::timeTraceProfilerWrite(json);
    stream << llvm::StringRef(bytes.data(), bytes.size());
  }
  return writeFile(path, trace);
}

} // namespace fsl
