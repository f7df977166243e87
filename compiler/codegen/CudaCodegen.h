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

/// `kernels` are the variants of one fusion, guarded ones first, with their schedules.
GeneratedSources generateCuda(const ir::Fusion &fusion,
                              const std::vector<const kir::Kernel *> &kernels,
                              const std::string &sourcePath);

} // namespace fsl::codegen
