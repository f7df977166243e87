// Driver.cpp — options and config, then per input: read → parse → (emit), in order.
#include "driver/Driver.h"

#include "ast/Dumper.h"
#include "ast/Printer.h"
#include "driver/Config.h"
#include "driver/Verify.h"
#include "parse/Parser.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <map>

namespace fsl {

const std::vector<std::string> &knownTargets() {
  static const std::vector<std::string> targets = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  return targets;
}

namespace {

/// Settings after merging the command line over fsl.toml.
struct Settings {
  std::string target;
  std::string outputDir;
  std::vector<std::string> includeDirs;
  std::map<std::string, int64_t> defines;
};

class Driver {
public:
  Driver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err)
      : options_(options), out_(out), err_(err),
        text_(sources_, err, options.color == ColorMode::Always ||
                                 (options.color == ColorMode::Auto && err.has_colors())),
        json_(sources_, err),
        diagnostics_(options.diagnosticsFormat == DiagnosticsFormat::Json
                         ? static_cast<DiagnosticConsumer &>(json_)
                         : static_cast<DiagnosticConsumer &>(text_)) {
    diagnostics_.setWarningsAsErrors(options.warningsAsErrors);
    diagnostics_.setErrorLimit(options.errorLimit);
  }

  int run() {
    int code = configure();
    if (code == kExitSuccess) {
      if (options_.inputs.empty()) {
        diagnostics_.report(DiagId::NoInputFiles, llvm::SMRange());
        code = kExitUsage;
      }
      for (const std::string &input : options_.inputs) {
        int fileCode = compile(input);
        code = std::max(code, fileCode);
        if (diagnostics_.limitReached())
          break;
      }
    }
    diagnostics_.finish();
    return code;
  }

private:
  // --- Options and configuration ----------------------------------------------------

  int configure() {
    if (!options_.usageError.empty()) {
      diagnostics_.report(DiagId::UsageError, llvm::SMRange(), options_.usageError);
      return kExitUsage;
    }
    ProjectConfig config;
    if (!options_.configPath.empty()) {
      std::optional<unsigned> buffer = readFile(options_.configPath);
      if (!buffer)
        return kExitUsage;
      std::optional<ProjectConfig> loaded = loadConfig(sources_, *buffer, diagnostics_);
      if (!loaded)
        return kExitUsage;
      config = std::move(*loaded);
    }
    unsigned errorsBefore = diagnostics_.errorCount();
    settings_.target = !options_.target.empty() ? options_.target
                       : config.target          ? *config.target
                                                : kDefaultTarget;
    if (!llvm::is_contained(knownTargets(), settings_.target))
      diagnostics_.report(DiagId::UnknownTarget, llvm::SMRange(), settings_.target,
                          llvm::join(knownTargets(), ", "));
    settings_.outputDir = !options_.outputDir.empty() ? options_.outputDir : config.outputDir.value_or("");
    settings_.includeDirs = options_.includeDirs;
    settings_.includeDirs.insert(settings_.includeDirs.end(), config.includeDirs.begin(),
                                 config.includeDirs.end());
    for (const std::string &dir : settings_.includeDirs)
      if (!llvm::sys::fs::is_directory(dir))
        diagnostics_.report(DiagId::MissingIncludeDir, llvm::SMRange(), dir);
    for (const auto &[name, value] : config.defines)
      settings_.defines[name] = value;
    for (const std::string &define : options_.defines) {
      auto [name, valueText] = llvm::StringRef(define).split('=');
      int64_t value;
      bool validName = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       llvm::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
      if (!validName || valueText.getAsInteger(10, value) || value <= 0) {
        diagnostics_.report(DiagId::InvalidDefine, llvm::SMRange(), define);
        continue;
      }
      settings_.defines[name.str()] = value;
    }
    return diagnostics_.errorCount() == errorsBefore ? kExitSuccess : kExitUsage;
  }

  /// Adds a file to the source manager; reports why it cannot be read.
  std::optional<unsigned> readFile(const std::string &path) {
    if (llvm::sys::fs::is_directory(path)) {
      diagnostics_.report(DiagId::InputIsDirectory, llvm::SMRange(), path);
      return std::nullopt;
    }
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      diagnostics_.report(DiagId::InputNotReadable, llvm::SMRange(), path, buffer.getError().message());
      return std::nullopt;
    }
    return sources_.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  }

  // --- One input: the pipeline --------------------------------------------------------

  int compile(const std::string &path) {
    std::optional<unsigned> buffer = readFile(path);
    if (!buffer)
      return kExitUsage;

    // Under -verify the file's diagnostics are collected and compared, not printed.
    CollectingDiagnosticConsumer collected;
    DiagnosticEngine verifyEngine(collected);
    verifyEngine.setWarningsAsErrors(options_.warningsAsErrors);
    DiagnosticEngine &diagnostics = options_.verify ? verifyEngine : diagnostics_;
    unsigned errorsBefore = diagnostics.errorCount();

    std::unique_ptr<ast::File> file = parseFile(sources_, *buffer, diagnostics);

    if (options_.verify)
      return verifyDiagnostics(sources_, *buffer, collected.diagnostics, diagnostics_)
                 ? kExitSuccess
                 : kExitDiagnostics;
    if (!file || diagnostics.errorCount() != errorsBefore)
      return kExitDiagnostics;
    return emit(path, *file);
  }

  int emit(const std::string &path, const ast::File &file) {
    std::string result;
    llvm::raw_string_ostream stream(result);
    const char *extension = "";
    switch (options_.emit) {
    case EmitKind::Check:
      return kExitSuccess;
    case EmitKind::Format:
      stream << ast::formatFile(file);
      extension = ".fsl";
      break;
    case EmitKind::AST:
      ast::dumpAST(file, sources_, stream);
      extension = ".ast";
      break;
    }
    if (settings_.outputDir.empty()) {
      out_ << result;
      out_.flush();
      return kExitSuccess;
    }
    return writeOutput(path, extension, result);
  }

  int writeOutput(const std::string &inputPath, llvm::StringRef extension, llvm::StringRef contents) {
    llvm::SmallString<256> outputPath(settings_.outputDir);
    llvm::sys::path::append(outputPath, llvm::sys::path::stem(inputPath) + extension);
    if (std::error_code error = llvm::sys::fs::create_directories(settings_.outputDir)) {
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), settings_.outputDir,
                          error.message());
      return kExitUsage;
    }
    std::error_code error;
    llvm::raw_fd_ostream file(outputPath, error);
    if (!error) {
      file << contents;
      file.close();
      error = file.error();
    }
    if (error) {
      file.clear_error();
      diagnostics_.report(DiagId::OutputNotWritable, llvm::SMRange(), std::string(outputPath),
                          error.message());
      return kExitUsage;
    }
    return kExitSuccess;
  }

  const DriverOptions &options_;
  llvm::raw_ostream &out_;
  llvm::raw_ostream &err_;
  llvm::SourceMgr sources_;
  TextDiagnosticPrinter text_;
  JsonDiagnosticPrinter json_;
  DiagnosticEngine diagnostics_;
  Settings settings_;
};

} // namespace

int runDriver(const DriverOptions &options, llvm::raw_ostream &out, llvm::raw_ostream &err) {
  return Driver(options, out, err).run();
}

} // namespace fsl
