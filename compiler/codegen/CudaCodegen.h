// CudaCodegen.h — Kernel IR to readable CUDA, a C-ABI launcher and its header.
//
// One .cu per fusion holds every kernel variant (one per schedule block), the launcher
// that checks the tensors and picks the variant by the `when` guards, and an error
// message function; the .h documents each parameter's type and dimensions. Names come
// from the fusion's tensors and loops, and each loop carries a comment naming the
// directive that made it. Generated code needs only the CUDA toolkit and
// runtime/include.
#pragma once

#include "lower/KernelIR.h"

#include <string>
#include <vector>

namespace fsl::codegen {

struct GeneratedSources {
  std::string header; // <fusion>.h
  std::string source; // <fusion>.cu
};

struct CodegenOptions {
  /// Launch with the programmatic-stream-serialization attribute (sm_90 and later), so a
  /// kernel's launch overlaps the end of the previous one in the stream.
  bool programmaticDependentLaunch = false;
  /// The register file of an SM: `maxrregcount N` becomes a minimum of blocks an SM.
  int64_t registersPerSm = 65536;
};

/// Whether `arch` (sm_90a, sm_80...) supports programmatic dependent launch.
bool supportsProgrammaticLaunch(const std::string &arch);

/// `kernels` are the variants of one fusion, guarded ones first, with their schedules.
GeneratedSources generateCuda(const ir::Fusion &fusion,
                              const std::vector<const kir::Kernel *> &kernels,
                              const std::string &sourcePath, const CodegenOptions &options = {});

} // namespace fsl::codegen
