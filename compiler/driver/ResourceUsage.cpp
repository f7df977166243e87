// ResourceUsage.cpp — --resource-usage: ptxas's figures for each kernel.
#include "driver/ResourceUsage.h"

#include "driver/Driver.h"
#include "kir/IR.h"
#include "pipeline/Compilation.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/SmallVector.h>

#include <cstring>

namespace fsl {

std::vector<KernelResources> parsePtxasReport(llvm::StringRef log) {
  std::vector<KernelResources> kernels;
  // "N <what>" anywhere in `line`, as a number (0 when absent).
  auto figure = [](llvm::StringRef line, llvm::StringRef what) -> int64_t {
    size_t at = line.find(what);
    if (at == llvm::StringRef::npos)
      return 0;
    llvm::StringRef before = line.take_front(at).rtrim();
    llvm::StringRef digits = before.substr(before.find_last_not_of("0123456789") + 1);
    int64_t value = 0;
    return digits.getAsInteger(10, value) ? 0 : value;
  };
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (size_t at = line.find("Compiling entry function '"); at != llvm::StringRef::npos) {
      llvm::StringRef rest = line.drop_front(at + strlen("Compiling entry function '"));
      kernels.push_back({rest.take_until([](char c) { return c == '\''; }).str()});
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &kernel = kernels.back();
    if (line.contains("bytes stack frame")) {
      kernel.stackBytes = figure(line, " bytes stack frame");
      kernel.spillStores = figure(line, " bytes spill stores");
      kernel.spillLoads = figure(line, " bytes spill loads");
    } else if (line.contains(" registers")) {
      kernel.registers = figure(line, " registers");
      kernel.sharedBytes = figure(line, " bytes smem");
    }
  }
  return kernels;
}

bool ptxasIgnoredSetMaxNReg(llvm::StringRef log) {
  // Only this reason (C7507): ptxas also ignores setmaxnreg for debugging (-G), across
  // compilation units (-rdc) and around calls, which raising a role's count does not cure.
  return log.contains("'setmaxnreg' ignored to maintain minimum register requirements");
}

int reportResourceUsage(const pipeline::Compilation &compilation,
                        const std::vector<std::string> &nvrtcOptions,
                        DiagnosticEngine &diagnostics) {
  unsigned errorsBefore = diagnostics.errorCount(); // -Werror turns the warning into one
  std::vector<std::string> options = nvrtcOptions;
  options.push_back("--ptxas-options=-v");
  const std::string &prefix = compilation.options().symbolPrefix;
  for (const auto &fusion : compilation.program()->fusions) {
    std::optional<codegen::NvrtcResult> compiled = compilation.compile(
        *fusion, compilation.generate(*fusion), /*cubin=*/true, options, diagnostics);
    if (!compiled)
      return kExitDiagnostics;
    const kir::Program &program = *compilation.programOf(*fusion);
    for (const KernelResources &kernel : parsePtxasReport(compiled->log)) {
      // ptxas sees only static shared memory; the launcher asks for the rest.
      std::string dynamicShared = "no dynamic shared memory";
      for (const kir::Kernel &lowered : program.kernels)
        if (prefix + lowered.name == kernel.name && lowered.launch.sharedBytes) {
          std::optional<int64_t> bytes = kir::asConstant(lowered.launch.sharedBytes);
          if (!bytes)
            dynamicShared = "dynamic shared memory set at launch";
          else if (*bytes != 0)
            dynamicShared = std::to_string(*bytes) + " bytes dynamic shared memory";
        }
      diagnostics.report(DiagId::ResourceUsage, llvm::SMRange(), kernel.name, kernel.registers,
                         kernel.spillStores, kernel.spillLoads, kernel.stackBytes,
                         kernel.sharedBytes, dynamicShared);
    }
    // The checker cannot know what a role's code needs; ptxas does, and drops the
    // instruction rather than spill past it: correct, but the registers warp_specialize
    // asked to move stay where they were.
    if (ptxasIgnoredSetMaxNReg(compiled->log))
      diagnostics.report(DiagId::SetMaxNRegIgnored, llvm::SMRange(), fusion->name);
  }
  return diagnostics.errorCount() == errorsBefore ? kExitSuccess : kExitDiagnostics;
}

} // namespace fsl
