// LauncherPrinter.h — the host side of a Kernel IR program: a C-ABI launcher and its header.
//
// It prints a LaunchContract (LaunchContract.h), which says what is checked and launched:
// the launcher checks every tensor (type, rank, contiguity, sizes against the static
// dimensions and each other, element and byte counts in checked 64-bit arithmetic) before
// any CUDA call and takes the runtime dimensions from the tensors' sizes. A call with
// nothing to do returns FSL_OK there, whatever its data pointers (PyTorch's empty tensors
// have null data). Otherwise it checks the data (not null, aligned to its elements and to
// the kernels' vector accesses, outputs overlapping nothing) and runs the first variant
// whose guard holds: every kernel's grid, block, cluster and shared memory (its
// LaunchShape) computed with checked arithmetic and held to the target's limits, then its
// kernels in order. On an error
// nothing is launched or written and `fsl_<fusion>_error()` says why. The launcher makes
// no CUDA call that reports another call's error (it reads each call's own status), so an
// earlier failure in the program stays for its caller to see.
#pragma once

#include "codegen/CudaCodegen.h"
#include "codegen/LaunchContract.h"

#include <string>

namespace llvm {
class raw_ostream;
}

namespace fsl::codegen {

/// `<name>.h` (see generatedName): the launcher's signature, each parameter's type and
/// dimensions.
std::string printLauncherHeader(const LaunchContract &contract, const std::string &sourcePath,
                                const CodegenOptions &options);

/// The launcher of a program, from its contract (describeLaunch under the same
/// `options`), and its error function. Host code: the caller keeps it out of NVRTC's
/// sight (`#ifndef __CUDACC_RTC__`).
void printLauncher(const LaunchContract &contract, const CodegenOptions &options,
                   llvm::raw_ostream &out);

} // namespace fsl::codegen
