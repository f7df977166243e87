// CudaCodegen.h — a Kernel IR program as readable CUDA, a C-ABI launcher and its header.
//
// One .cu per fusion holds every kernel of the program (KernelPrinter.h), the launcher
// that checks the tensors, picks the variant by its guard and launches its kernels, and an
// error message function (LauncherPrinter.h); the .h documents each parameter's type and
// dimensions. Names come from the fusion's tensors and loops, and each loop carries a
// comment naming the directive that made it. Generated code needs only the CUDA toolkit
// and runtime/include (the device helpers are fsl/device.cuh).
#pragma once

#include "kir/IR.h"

#include <string>

namespace fsl::codegen {

struct GeneratedSources {
  std::string header; // <fusion>.h
  std::string source; // <fusion>.cu
};

struct CodegenOptions {
  /// Launch with the programmatic-stream-serialization attribute (sm_90 and later), so a
  /// kernel's launch overlaps the end of the previous one in the stream.
  bool programmaticDependentLaunch = false;
};

/// Whether `arch` (sm_90a, sm_80...) supports programmatic dependent launch.
bool supportsProgrammaticLaunch(const std::string &arch);

/// The sources of `program` (its fusion, kernels and variants); `sourcePath` is named in
/// their first comment.
GeneratedSources generateCuda(const kir::Program &program, const std::string &sourcePath,
                              const CodegenOptions &options = {});

} // namespace fsl::codegen
