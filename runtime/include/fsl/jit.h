/* fsl/jit.h — compiling generated CUDA at run time, with an on-disk cache.
 *
 * fsl_jit_compile runs NVRTC on a source fslc generated (the kernels compile under
 * NVRTC; the host launcher is skipped there) and keeps the cubin in a cache directory,
 * keyed by the runtime's version, the NVRTC version, the architecture, the program name,
 * the options and the source: a second compile of the same program reads the file
 * instead. An entry stores its whole key and a SHA-256 of itself and is checked on every
 * read; anything else under its name is a miss and is replaced. Entries are written to
 * an exclusively created temporary file and renamed into place, so concurrent compiles
 * (threads or processes) are safe. A cache that cannot be written is an error
 * (FSL_ERROR_CACHE; docs/runtime.md, "The JIT cache"). The sources include
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

/* Compiles `source` for `arch` (a real architecture: "sm_90a"). `name` names the
 * program for NVRTC's messages; the cache file's name is not taken from it (only its
 * letters, digits and '_'). `cache_dir` NULL: $FSL_CACHE_DIR, else $HOME/.cache/fslc
 * (created if missing). On failure, `error` holds NVRTC's log or the reason, and
 * `binary` is empty: FSL_ERROR_COMPILE, or FSL_ERROR_CACHE when the cache directory
 * cannot be created or the entry cannot be written. */
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
