// ResourceUsage.h — --resource-usage: ptxas's figures for each kernel (registers,
// spills, stack, shared memory), one diagnostic line per kernel.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fsl {

class DiagnosticEngine;
namespace pipeline {
class Compilation;
}

/// What ptxas -v says of one kernel.
struct KernelResources {
  std::string name;
  int64_t registers = 0, stackBytes = 0, spillStores = 0, spillLoads = 0, sharedBytes = 0;
};

/// Reads ptxas -v's report, one block per kernel:
///   ptxas info    : Compiling entry function 'k' for 'sm_90a'
///   ptxas info    : Function properties for k
///       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
///   ptxas info    : Used 18 registers, 1024 bytes smem, 384 bytes cmem[0]
std::vector<KernelResources> parsePtxasReport(llvm::StringRef log);

/// Whether ptxas says it ignored a `setmaxnreg` because a warp role's count is below what
/// the role's code needs (its info C7507: the kernel keeps the registers it was launched
/// with and setmaxnreg moves none). The line names no kernel.
bool ptxasIgnoredSetMaxNReg(llvm::StringRef log);

/// Compiles each fusion's kernels to a cubin with ptxas -v and reports their figures.
/// An exit code: kExitDiagnostics when it reported an error (a warning under -Werror).
int reportResourceUsage(const pipeline::Compilation &compilation,
                        const std::vector<std::string> &nvrtcOptions,
                        DiagnosticEngine &diagnostics);

} // namespace fsl
