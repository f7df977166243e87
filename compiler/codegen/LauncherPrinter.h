// LauncherPrinter.h — the host side of a Kernel IR program: a C-ABI launcher and its header.
//
// The launcher checks every tensor (pointer, type, rank, contiguity, sizes against the
// static dimensions and each other, alignment for the vector accesses the kernels make,
// overlap of outputs) before any CUDA call, takes the runtime dimensions from the tensors'
// sizes, and runs the first variant whose guard holds: its kernels in order, each with
// the grid, block, cluster and shared memory its LaunchShape computes. On an error
// nothing is launched or written and `fsl_<fusion>_error()` says why. The launcher makes
// no CUDA call that reports another call's error (it reads each call's own status), so an
// earlier failure in the program stays for its caller to see.
#pragma once

#include "codegen/CudaCodegen.h"
#include "kir/IR.h"

#include <string>

namespace llvm {
class raw_ostream;
}

namespace fsl::codegen {

/// `<name>.h` (see generatedName): the launcher's signature, each parameter's type and
/// dimensions.
std::string printLauncherHeader(const kir::Program &program, const std::string &sourcePath,
                                const CodegenOptions &options);

/// The launcher of `program` and its error function. Host code: the caller keeps it out
/// of NVRTC's sight (`#ifndef __CUDACC_RTC__`).
void printLauncher(const kir::Program &program, const CodegenOptions &options,
                   llvm::raw_ostream &out);

} // namespace fsl::codegen
