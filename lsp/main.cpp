// main.cpp — fsl-lsp: the language server for .fsl files, on standard input and output.
//
//   fsl-lsp [--log=error|info|verbose] [--stdlib=DIR] [-I DIR]... [--target=NAME]
#include "lsp/InputGuard.h"
#include "lsp/Server.h"

#include "support/LargeStack.h"

#include <mlir/Tools/lsp-server-support/Logging.h>
#include <mlir/Tools/lsp-server-support/Transport.h>

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/raw_ostream.h>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

namespace cl = llvm::cl;

namespace {

enum class LogLevel { Error, Info, Verbose };

cl::OptionCategory category("fsl-lsp options");
cl::opt<LogLevel> logLevel(
    "log", cl::desc("What to log on standard error"), cl::init(LogLevel::Error),
    cl::values(clEnumValN(LogLevel::Error, "error", "errors only (default)"),
               clEnumValN(LogLevel::Info, "info", "each message and each analysis, with its time"),
               clEnumValN(LogLevel::Verbose, "verbose", "everything, messages' contents included")),
    cl::cat(category));
cl::opt<bool> prettyJson("pretty", cl::desc("Indent the JSON written (for reading a log)"),
                         cl::cat(category));
cl::opt<std::string> stdlibDir("stdlib",
                               cl::desc("Standard library directory (imports, targets); default: "
                                        "$FSLC_STDLIB, the installed one, the source tree's"),
                               cl::value_desc("dir"), cl::cat(category));
cl::list<std::string> includeDirs("I", cl::desc("Add <dir> to the import search path"),
                                  cl::value_desc("dir"), cl::Prefix, cl::cat(category));
cl::opt<std::string> target("target", cl::desc("Target (over fsl.toml's; default h200)"),
                            cl::value_desc("name"), cl::cat(category));

std::string absolute(std::string path) {
  llvm::SmallString<256> result(path);
  llvm::sys::fs::make_absolute(result);
  llvm::sys::path::remove_dots(result, /*remove_dot_dot=*/true);
  return std::string(result);
}

/// As fslc finds it: --stdlib, $FSLC_STDLIB, <prefix>/share/fslc/stdlib next to
/// <prefix>/bin/fsl-lsp, else this source tree's.
std::string stdlibDirectory(const char *argv0) {
  if (!stdlibDir.empty())
    return absolute(stdlibDir);
  if (std::optional<std::string> fromEnvironment = llvm::sys::Process::GetEnv("FSLC_STDLIB");
      fromEnvironment && !fromEnvironment->empty())
    return absolute(*fromEnvironment);
  std::string executable =
      llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&stdlibDirectory));
  if (!executable.empty()) {
    llvm::SmallString<256> installed(llvm::sys::path::parent_path(executable));
    llvm::sys::path::append(installed, "..", "share", "fslc", "stdlib");
    llvm::sys::path::remove_dots(installed, /*remove_dot_dot=*/true);
    if (llvm::sys::fs::is_directory(installed))
      return std::string(installed);
  }
  return absolute(FSL_STDLIB_DIR);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "fsl-lsp: the language server for .fsl files (LSP on stdio)\n");
  switch (logLevel) {
  case LogLevel::Error:
    mlir::lsp::Logger::setLogLevel(mlir::lsp::Logger::Level::Error);
    break;
  case LogLevel::Info:
    mlir::lsp::Logger::setLogLevel(mlir::lsp::Logger::Level::Info);
    break;
  case LogLevel::Verbose:
    mlir::lsp::Logger::setLogLevel(mlir::lsp::Logger::Level::Debug);
    break;
  }
  fsl::lsp::ServerOptions options;
  options.stdlibDir = stdlibDirectory(argv[0]);
  for (const std::string &dir : includeDirs)
    options.includeDirs.push_back(absolute(dir));
  options.target = target;

  // The compiler runs on a thread with a large stack (support/LargeStack.h): so does the
  // server, which calls it for every change.
  return fsl::runWithLargeStack([&] {
    fsl::lsp::InputGuard input(stdin);
    mlir::lsp::JSONTransport transport(input.checked() ? input.checked() : stdin, llvm::outs(),
                                       mlir::lsp::JSONStreamStyle::Standard, prettyJson);
    fsl::lsp::Server server(transport, options);
    // The protocol's exit code: 0 after shutdown then exit, 1 otherwise.
    return server.run() ? 0 : 1;
  });
}
