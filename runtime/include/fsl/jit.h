/* fsl/jit.h — compiling generated CUDA at run time, with an on-disk cache.
 *
 * fsl_jit_compile runs NVRTC on a source fslc generated (the kernels compile under
 * NVRTC; the host launcher is skipped there) and keeps the cubin in a cache directory,
 * keyed by the NVRTC version, the architecture, the options and the source: a second
 * compile of the same program reads the file instead. The sources include
 * "fsl/device.cuh"; the runtime holds a copy of it and gives it to NVRTC, so no include
 * path is needed (it is part of the cache key too). fsl_jit_load loads a cubin into
 * the current CUDA context (driver API, loaded at run time, so programs that only
 * compile need no GPU driver). Kernels are extern "C": find them by their names.
 */
#ifndef FSL_JIT_H
#define FSL_JIT_H

#include "fsl/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fsl_jit_binary {
  char *data; /* the cubin, owned; release with fsl_jit_free */
  size_t size;
  int cache_hit;   /* 1 when read from the cache */
  char path[1024]; /* the cache file */
} fsl_jit_binary;

/* Compiles `source` for `arch` ("sm_90a"). `cache_dir` NULL: $FSL_CACHE_DIR, else
 * $HOME/.cache/fslc. On failure, `error` holds NVRTC's log or the reason. */
fsl_status fsl_jit_compile(const char *source, const char *name, const char *arch,
                           const char *const *options, int option_count, const char *cache_dir,
                           fsl_jit_binary *binary, char *error, size_t error_size);

void fsl_jit_free(fsl_jit_binary *binary);

/* Loads a cubin into the current context (cuModuleLoadData); `module` receives a
 * CUmodule. A context must be current (any runtime-API call creates the primary one). */
fsl_status fsl_jit_load(const fsl_jit_binary *binary, void **module, char *error,
                        size_t error_size);

/* Finds kernel `name` in a loaded module (cuModuleGetFunction); `function` receives a
 * CUfunction for cuLaunchKernel. */
fsl_status fsl_jit_function(void *module, const char *name, void **function, char *error,
                            size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* FSL_JIT_H */
