// jit.cpp — NVRTC compile with an on-disk cubin cache; driver API loaded with dlopen.
#include "fsl/jit.h"

#include "fsl_device_header.inc" // generated: the text of fsl/device.cuh
#include "jit_cache.h"
#include "sha256.h"

#include <nvrtc.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

namespace jit = fsl::jit_detail;

fsl_status fail(fsl_status status, char *error, size_t size, const std::string &message) {
  if (error && size) {
    std::snprintf(error, size, "%s", message.c_str());
  }
  return status;
}

std::string cacheDirectory(const char *requested) {
  if (requested && *requested)
    return requested;
  if (const char *env = std::getenv("FSL_CACHE_DIR"); env && *env)
    return env;
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fslc";
}

fsl_status deliver(std::string &bytes, int hit, const std::string &path, fsl_jit_binary *binary,
                   char *error, size_t error_size) {
  binary->data = static_cast<char *>(std::malloc(bytes.size()));
  if (!binary->data)
    return fail(FSL_ERROR_CACHE, error, error_size,
                "out of memory for a cubin of " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(binary->data, bytes.data(), bytes.size());
  binary->size = bytes.size();
  binary->cache_hit = hit;
  std::snprintf(binary->path, sizeof binary->path, "%s", path.c_str());
  if (error && error_size)
    error[0] = '\0';
  return FSL_OK;
}

// The driver API, found at run time (once, whichever thread asks first).
struct Driver {
  using ModuleLoadData = int (*)(void **, const void *);
  using ModuleGetFunction = int (*)(void **, void *, const char *);
  std::mutex mutex;
  ModuleLoadData moduleLoadData = nullptr;
  ModuleGetFunction moduleGetFunction = nullptr;
  bool load(std::string &why) {
    std::lock_guard<std::mutex> lock(mutex);
    if (moduleLoadData && moduleGetFunction)
      return true;
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      why = std::string("cannot load the CUDA driver (libcuda.so.1): ") + dlerror();
      return false;
    }
    moduleLoadData = reinterpret_cast<ModuleLoadData>(dlsym(library, "cuModuleLoadData"));
    moduleGetFunction = reinterpret_cast<ModuleGetFunction>(dlsym(library, "cuModuleGetFunction"));
    if (!moduleLoadData || !moduleGetFunction) {
      why = "the CUDA driver lacks cuModuleLoadData or cuModuleGetFunction";
      return false;
    }
    return true;
  }
};
Driver driver;

} // namespace

extern "C" fsl_status fsl_jit_compile(const char *source, const char *name, const char *arch,
                                      const char *const *options, int option_count,
                                      const char *cache_dir, fsl_jit_binary *binary, char *error,
                                      size_t error_size) {
  if (!source || !name || !arch || !binary)
    return fail(FSL_ERROR_NULL_POINTER, error, error_size,
                "source, name, arch and binary are required");
  *binary = fsl_jit_binary{};
  if (option_count < 0 || (option_count > 0 && !options))
    return fail(FSL_ERROR_NULL_POINTER, error, error_size,
                "options must hold option_count (>= 0) strings");
  for (int i = 0; i < option_count; ++i)
    if (!options[i])
      return fail(FSL_ERROR_NULL_POINTER, error, error_size,
                  "option " + std::to_string(i) + " is null");
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return fail(FSL_ERROR_COMPILE, error, error_size, "nvrtcVersion failed");
  std::vector<std::string> all = {std::string("--gpu-architecture=") + arch, "-std=c++17"};
  const char *cudaHome = std::getenv("CUDA_HOME");
  all.push_back(std::string("-I") + (cudaHome && *cudaHome ? cudaHome : "/usr/local/cuda") +
                "/include");
  for (int i = 0; i < option_count; ++i)
    all.push_back(options[i]);

  // The complete key is stored in the entry and compared on load; its SHA-256 names the
  // file, after the name reduced to [A-Za-z0-9_] (never a path: "../x" stays inside).
  jit::KeyMaterial material;
  material.runtimeVersion = FSL_RUNTIME_VERSION;
  material.nvrtcVersion = std::to_string(major) + "." + std::to_string(minor);
  material.arch = arch;
  material.name = name;
  material.options = all;
  // The helpers the source includes are part of what is compiled.
  material.deviceHeaderSha256 = jit::sha256Hex(kFslDeviceHeaderText);
  material.sourceSha256 = jit::sha256Hex(source);
  std::string key = jit::makeKey(material);
  std::string directory = cacheDirectory(cache_dir);
  uint64_t maxBytes = jit::kDefaultCacheBytes;
  if (const char *bound = std::getenv("FSL_CACHE_MAX_BYTES");
      bound && *bound && !jit::parseByteCount(bound, maxBytes))
    return fail(FSL_ERROR_CACHE, error, error_size,
                std::string("FSL_CACHE_MAX_BYTES='") + bound +
                    "' is not a byte count (digits, optionally K, M or G; 0: no bound)");
  std::string path = directory + "/" + jit::entryFileName(name, key);

  std::string cubin;
  if (jit::readEntry(path, key, cubin))
    return deliver(cubin, 1, path, binary, error, error_size);

  // Generated sources include "fsl/device.cuh": NVRTC gets it by content, so no include
  // path to the runtime's headers is needed where the JIT runs.
  const char *headers[] = {kFslDeviceHeaderText};
  const char *headerNames[] = {kFslDeviceHeaderName};
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source, name, 1, headers, headerNames) != NVRTC_SUCCESS)
    return fail(FSL_ERROR_COMPILE, error, error_size, "nvrtcCreateProgram failed");
  std::vector<const char *> pointers;
  for (const std::string &option : all)
    pointers.push_back(option.c_str());
  nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    if (size)
      nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    return fail(FSL_ERROR_COMPILE, error, error_size, std::string(name) + ": " + log.c_str());
  }
  size_t size = 0;
  result = nvrtcGetCUBINSize(program, &size);
  if (result == NVRTC_SUCCESS && size > 0) {
    cubin.assign(size, '\0');
    result = nvrtcGetCUBIN(program, cubin.data());
  }
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS || size == 0)
    return fail(FSL_ERROR_COMPILE, error, error_size,
                std::string(name) + ": NVRTC produced no cubin for " + arch +
                    (result != NVRTC_SUCCESS ? std::string(" (") + nvrtcGetErrorString(result) + ")"
                                             : std::string()) +
                    ": a real architecture (sm_XX) is needed");

  // A corrupt or mismatching entry was a miss above and is replaced here. A cache that
  // cannot be written is an error, with nothing left behind: the JIT never compiles
  // without its cache silently.
  std::string why;
  if (!jit::makeDirectories(directory, why) ||
      !jit::writeAtomically(path, jit::encodeEntry(key, cubin), why))
    return fail(FSL_ERROR_CACHE, error, error_size,
                why + " (the JIT cache must be writable: pass cache_dir or set FSL_CACHE_DIR)");
  // The new entry may take the directory over its bound: the least recently used go.
  jit::evictToFit(directory, maxBytes, path);
  return deliver(cubin, 0, path, binary, error, error_size);
}

extern "C" void fsl_jit_free(fsl_jit_binary *binary) {
  if (!binary)
    return;
  std::free(binary->data);
  binary->data = nullptr;
  binary->size = 0;
}

extern "C" fsl_status fsl_jit_load(const fsl_jit_binary *binary, void **module, char *error,
                                   size_t error_size) {
  if (!binary || !binary->data || !module)
    return fail(FSL_ERROR_NULL_POINTER, error, error_size, "binary and module are required");
  std::string why;
  if (!driver.load(why))
    return fail(FSL_ERROR_DRIVER, error, error_size, why);
  int result = driver.moduleLoadData(module, binary->data);
  if (result != 0)
    return fail(FSL_ERROR_DRIVER, error, error_size,
                "cuModuleLoadData failed with CUresult " + std::to_string(result) +
                    " (is a context current?)");
  return FSL_OK;
}

extern "C" fsl_status fsl_jit_function(void *module, const char *name, void **function, char *error,
                                       size_t error_size) {
  if (!module || !name || !function)
    return fail(FSL_ERROR_NULL_POINTER, error, error_size,
                "module, name and function are required");
  std::string why;
  if (!driver.load(why))
    return fail(FSL_ERROR_DRIVER, error, error_size, why);
  int result = driver.moduleGetFunction(function, module, name);
  if (result != 0)
    return fail(FSL_ERROR_DRIVER, error, error_size,
                std::string("no kernel '") + name + "' in the module (CUresult " +
                    std::to_string(result) + ")");
  return FSL_OK;
}
