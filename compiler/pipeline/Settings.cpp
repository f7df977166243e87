// Settings.cpp — the command line merged over fsl.toml.
#include "pipeline/Settings.h"

#include "pipeline/Config.h"
#include "pipeline/Sources.h"
#include "pipeline/Targets.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <map>

namespace fsl {
namespace {

/// Like .clang-format: the nearest fsl.toml in the first input's folder or above it
/// (the current folder's for standard input). Empty when there is none.
std::string findConfig(const std::optional<std::string> &firstInput) {
  llvm::SmallString<256> directory;
  if (!firstInput || *firstInput == "-") {
    if (llvm::sys::fs::current_path(directory))
      return "";
  } else {
    directory = *firstInput;
    if (llvm::sys::fs::make_absolute(directory))
      return "";
    // `..` is taken by its spelling, so that the walk climbs what the user named.
    llvm::sys::path::remove_dots(directory, /*remove_dot_dot=*/true);
    llvm::sys::path::remove_filename(directory);
  }
  while (!directory.empty()) {
    llvm::SmallString<256> candidate(directory);
    llvm::sys::path::append(candidate, "fsl.toml");
    if (llvm::sys::fs::is_regular_file(candidate))
      return std::string(candidate);
    llvm::StringRef parent = llvm::sys::path::parent_path(directory);
    if (parent == directory)
      break;
    directory = parent.str();
  }
  return "";
}

} // namespace

bool configure(const SettingsRequest &request, llvm::SourceMgr &sources,
               DiagnosticEngine &diagnostics, Settings &settings) {
  llvm::TimeTraceScope scope("Configure");
  settings.stdlibDir = request.stdlibDir;
  ProjectConfig config;
  std::string configPath =
      !request.configPath.empty() ? request.configPath : findConfig(request.firstInput);
  if (!configPath.empty()) {
    std::optional<unsigned> buffer = pipeline::readSource(sources, configPath, diagnostics);
    if (!buffer)
      return false;
    std::optional<ProjectConfig> loaded = loadConfig(sources, *buffer, diagnostics);
    if (!loaded)
      return false;
    config = std::move(*loaded);
    settings.configFile = configPath;
  }
  unsigned errorsBefore = diagnostics.errorCount();
  std::string targetName = !request.target.empty() ? request.target
                           : config.target         ? *config.target
                                                   : kDefaultTarget;
  if (std::optional<pipeline::FoundTarget> found =
          pipeline::findTarget(targetName, settings.stdlibDir, sources, diagnostics)) {
    settings.target = std::move(found->target);
    settings.targetFile = std::move(found->file);
  }
  settings.outputDir =
      !request.outputDir.empty() ? request.outputDir : config.outputDir.value_or("");
  settings.tuningDatabase =
      !request.tuningDatabase.empty() ? request.tuningDatabase : config.tuningDatabase.value_or("");
  // A missing database is a file error of the command line (exit code 2), found before
  // any input is compiled; its contents are read with the schedules.
  if (!settings.tuningDatabase.empty())
    if (std::error_code error =
            llvm::sys::fs::access(settings.tuningDatabase, llvm::sys::fs::AccessMode::Exist))
      diagnostics.report(DiagId::InputNotReadable, llvm::SMRange(), settings.tuningDatabase,
                         error.message());
  settings.includeDirs = request.includeDirs;
  settings.includeDirs.insert(settings.includeDirs.end(), config.includeDirs.begin(),
                              config.includeDirs.end());
  for (const std::string &dir : settings.includeDirs)
    if (!llvm::sys::fs::is_directory(dir))
      diagnostics.report(DiagId::MissingIncludeDir, llvm::SMRange(), dir);
  for (const auto &[name, value] : config.defines)
    settings.defines[name] = value;
  // A -D given twice with two values is a mistake in the command line (a build script
  // that appends its own): neither the first nor the last is what was meant.
  std::map<std::string, std::pair<int64_t, std::string>> given; // name: value, as written
  for (const std::string &define : request.defines) {
    auto [name, valueText] = llvm::StringRef(define).split('=');
    int64_t value;
    bool validName = !name.empty() &&
                     (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                     llvm::all_of(name, [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
    if (!validName || valueText.getAsInteger(10, value) || value <= 0) {
      diagnostics.report(DiagId::InvalidDefine, llvm::SMRange(), define);
      continue;
    }
    auto [earlier, first] = given.try_emplace(name.str(), value, valueText.str());
    if (!first && earlier->second.first != value) {
      diagnostics.report(DiagId::ConflictingDefine, llvm::SMRange(), name, earlier->second.second,
                         valueText);
      continue;
    }
    settings.defines[name.str()] = value;
  }
  return diagnostics.errorCount() == errorsBefore;
}

bool listTargets(const std::string &stdlibDir, llvm::SourceMgr &sources,
                 DiagnosticEngine &diagnostics, llvm::raw_ostream &out) {
  llvm::SmallString<256> directory(stdlibDir);
  llvm::sys::path::append(directory, "targets");
  unsigned errorsBefore = diagnostics.errorCount();
  std::vector<Target> targets;
  for (const std::string &file : targetFiles(directory))
    if (std::optional<unsigned> buffer = pipeline::readSource(sources, file, diagnostics))
      if (std::optional<Target> target = parseTarget(sources, *buffer, diagnostics))
        targets.push_back(std::move(*target));
  out << "Targets in " << directory << ":\n";
  if (targets.empty())
    out << "  (none)\n";
  size_t nameWidth = 0, archWidth = 0;
  for (const Target &target : targets) {
    nameWidth = std::max(nameWidth, target.name.size());
    archWidth = std::max(archWidth, target.arch.size());
  }
  for (const Target &target : targets) {
    out << "  " << llvm::left_justify(target.name, nameWidth) << "  "
        << llvm::left_justify(target.arch, archWidth) << "  " << target.description;
    if (!target.aliases.empty())
      out << " (aliases: " << llvm::join(target.aliases, ", ") << ")";
    if (target.name == kDefaultTarget)
      out << " [default]";
    out << "\n";
  }
  out.flush();
  return diagnostics.errorCount() == errorsBefore;
}

pipeline::Options compileOptionsFrom(const Settings &settings) {
  pipeline::Options options;
  options.target = settings.target;
  options.stdlibDir = settings.stdlibDir;
  options.includeDirs = settings.includeDirs;
  options.defines = settings.defines;
  options.tuningDatabase = settings.tuningDatabase;
  return options;
}

} // namespace fsl
