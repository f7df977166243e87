// jit.cpp — NVRTC compile with an on-disk cubin cache; driver API loaded with dlopen.
#include "fsl/jit.h"

#include "fsl_device_header.inc" // generated: the text of fsl/device.cuh

#include <nvrtc.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

fsl_status fail(fsl_status status, char *error, size_t size, const std::string &message) {
  if (error && size) {
    std::snprintf(error, size, "%s", message.c_str());
  }
  return status;
}

/// FNV-1a, 64 bits: a stable key for the cache (not for security).
uint64_t fnv1a(const std::string &text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string cacheDirectory(const char *requested) {
  if (requested && *requested)
    return requested;
  if (const char *env = std::getenv("FSL_CACHE_DIR"); env && *env)
    return env;
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fslc";
}

bool makeDirectories(const std::string &path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  }
  return true;
}

bool readFile(const std::string &path, std::string &contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  contents = buffer.str();
  return !contents.empty();
}

fsl_status deliver(const std::string &bytes, int hit, const std::string &path,
                   fsl_jit_binary *binary) {
  binary->data = static_cast<char *>(std::malloc(bytes.size()));
  std::memcpy(binary->data, bytes.data(), bytes.size());
  binary->size = bytes.size();
  binary->cache_hit = hit;
  std::snprintf(binary->path, sizeof binary->path, "%s", path.c_str());
  return FSL_OK;
}

// The driver API, found at run time.
struct Driver {
  using ModuleLoadData = int (*)(void **, const void *);
  using ModuleGetFunction = int (*)(void **, void *, const char *);
  ModuleLoadData moduleLoadData = nullptr;
  ModuleGetFunction moduleGetFunction = nullptr;
  bool load(std::string &why) {
    if (moduleLoadData)
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
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::vector<std::string> all = {std::string("--gpu-architecture=") + arch, "-std=c++17"};
  const char *cudaHome = std::getenv("CUDA_HOME");
  all.push_back(std::string("-I") + (cudaHome && *cudaHome ? cudaHome : "/usr/local/cuda") +
                "/include");
  for (int i = 0; i < option_count; ++i)
    all.push_back(options[i]);
  std::string key = "nvrtc " + std::to_string(major) + "." + std::to_string(minor) + "\n";
  for (const std::string &option : all)
    key += option + "\n";
  // The helpers the source includes are part of what is compiled.
  key += kFslDeviceHeaderText;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(source, fnv1a(key))));
  std::string directory = cacheDirectory(cache_dir);
  std::string path = directory + "/" + name + "-" + hex + ".cubin";

  std::string cached;
  if (readFile(path, cached))
    return deliver(cached, 1, path, binary);

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
  nvrtcGetCUBINSize(program, &size);
  std::string cubin(size, '\0');
  nvrtcGetCUBIN(program, cubin.data());
  nvrtcDestroyProgram(&program);

  // Write atomically: a concurrent reader sees the whole file or none.
  if (!makeDirectories(directory))
    return fail(FSL_ERROR_CACHE, error, error_size,
                "cannot create the cache directory " + directory);
  std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out)
      return fail(FSL_ERROR_CACHE, error, error_size, "cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return fail(FSL_ERROR_CACHE, error, error_size, "cannot rename " + temporary + " to " + path);
  return deliver(cubin, 0, path, binary);
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
