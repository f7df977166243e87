// Nvrtc.cpp — one NVRTC program per call.
#include "codegen/Nvrtc.h"

#include "fsl_device_header.inc" // generated: the text of runtime/include/fsl/device.cuh

#include <nvrtc.h>

#ifndef FSL_CUDA_INCLUDE_DIR
#define FSL_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace fsl::codegen {

NvrtcResult compileWithNvrtc(const std::string &source, const std::string &name,
                             const std::string &arch, bool cubin,
                             const std::vector<std::string> &extraOptions) {
  NvrtcResult result;
  // Generated sources include "fsl/device.cuh": NVRTC gets the copy built into fslc, so
  // the kernels compile without an include path to the runtime's headers.
  const char *headers[] = {kFslDeviceHeaderText};
  const char *headerNames[] = {kFslDeviceHeaderName};
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 1, headers, headerNames) !=
      NVRTC_SUCCESS) {
    result.log = "nvrtcCreateProgram failed";
    return result;
  }
  std::string architecture = arch;
  if (!cubin && architecture.rfind("sm_", 0) == 0)
    architecture = "compute_" + architecture.substr(3);
  std::vector<std::string> options = {"--gpu-architecture=" + architecture, "-std=c++17",
                                      std::string("-I") + FSL_CUDA_INCLUDE_DIR};
  options.insert(options.end(), extraOptions.begin(), extraOptions.end());
  std::vector<const char *> pointers;
  for (const std::string &option : options)
    pointers.push_back(option.c_str());
  nvrtcResult compiled =
      nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(program, &logSize);
  result.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(program, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n'))
    result.log.pop_back();
  if (compiled == NVRTC_SUCCESS) {
    size_t size = 0;
    if (cubin) {
      nvrtcGetCUBINSize(program, &size);
      result.output.resize(size);
      nvrtcGetCUBIN(program, result.output.data());
    } else {
      nvrtcGetPTXSize(program, &size);
      result.output.resize(size);
      nvrtcGetPTX(program, result.output.data());
      while (!result.output.empty() && result.output.back() == '\0')
        result.output.pop_back();
    }
    result.ok = true;
  } else if (result.log.empty()) {
    result.log = nvrtcGetErrorString(compiled);
  }
  nvrtcDestroyProgram(&program);
  return result;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace fsl::codegen
