// Nvrtc.h — compiles generated CUDA to PTX or a cubin with NVRTC (`--emit=ptx|cubin`).
//
// The generated source's kernel part is NVRTC-clean (the host launcher is skipped under
// __CUDACC_RTC__), so what nvcc builds ahead of time NVRTC builds in process. The
// helpers it includes (fsl/device.cuh) are built into fslc and given to NVRTC by content.
#pragma once

#include <string>
#include <vector>

namespace fsl::codegen {

struct NvrtcResult {
  bool ok = false;
  std::string output; // PTX text or cubin bytes
  std::string log;    // NVRTC's messages
};

/// Compiles `source` for `arch` (sm_90a): a cubin when `cubin`, else PTX for compute_90a.
NvrtcResult compileWithNvrtc(const std::string &source, const std::string &name,
                             const std::string &arch, bool cubin,
                             const std::vector<std::string> &extraOptions);

/// NVRTC's version, as major.minor.
std::string nvrtcVersion();

} // namespace fsl::codegen
