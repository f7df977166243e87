// Commands.cpp — the fusion at the cursor, its lowered program, printed.
#include "lsp/Commands.h"

#include "lsp/CompilerFacts.h"
#include "lsp/Protocol.h"

#include "kir/Printer.h"

#include <llvm/Support/raw_ostream.h>

namespace fsl::lsp {
namespace {

llvm::Error failure(const llvm::Twine &message) {
  return llvm::make_error<mlir::lsp::LSPError>(message.str(), mlir::lsp::ErrorCode::RequestFailed);
}

} // namespace

llvm::Expected<llvm::json::Value> runCommand(const Analysis &analysis, llvm::StringRef command,
                                             llvm::SMLoc loc) {
  if (command != kShowGeneratedCuda && command != kShowKernelIR)
    return llvm::make_error<mlir::lsp::LSPError>("unknown command '" + command.str() +
                                                     "' (fsl-lsp has " + kShowGeneratedCuda +
                                                     " and " + kShowKernelIR + ")",
                                                 mlir::lsp::ErrorCode::InvalidParams);
  std::string name = fusionAt(analysis, loc);
  if (name.empty())
    return failure("no fusion here: put the cursor in a fusion or in one of its schedules");
  const ir::Fusion *fusion = fusionIR(analysis, name);
  const pipeline::Compilation *compilation = analysis.compilation();
  const kir::Program *program =
      fusion && analysis.lowered() ? compilation->programOf(*fusion) : nullptr;
  if (!program)
    return failure("fusion '" + name + "' was not lowered: " + analysis.path() +
                   " has errors (see its diagnostics)");
  std::string text;
  if (command == kShowKernelIR) {
    llvm::raw_string_ostream out(text);
    kir::printProgram(*program, out);
  } else {
    codegen::GeneratedSources sources = compilation->generate(*fusion);
    std::string base = compilation->baseName(*fusion);
    text = "// ---- " + base + ".h\n" + sources.header + "\n// ---- " + base + ".cu\n" +
           sources.source;
  }
  return llvm::json::Object{{"fusion", name},
                            {"language", command == kShowKernelIR ? "kernel-ir" : "cuda"},
                            {"text", text}};
}

} // namespace fsl::lsp
