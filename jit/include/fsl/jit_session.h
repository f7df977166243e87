/* fsl/jit_session.h — the specializing JIT: launch a fusion of a loaded program
 * (fsl/compiler.h) on tensors of any shape.
 *
 * For each call, the session checks the tensors against the fusion's signature (as the
 * generated launcher does: descriptors, dtypes, ranks, sizes, layout), takes the runtime
 * dimensions' values from their sizes, and picks the ones to specialize by its policy.
 * The first call with a new set of values generates the specialized kernels
 * (fsl_program_specialize: the static schedule the heuristics choose for those values),
 * compiles them with NVRTC for the device's architecture through the on-disk cache of
 * fsl/jit.h (its key holds the whole source and the options), and keeps the compiled
 * kernels and their launch metadata in memory. Later calls with the same values find
 * them in memory: no compile, no file read, no compiler. The launch then checks the data
 * (null, alignment, overlaps), picks the variant whose `when` guard holds, computes and
 * checks every kernel's grid, block and shared memory, and launches through the CUDA
 * driver (loaded at run time, as fsl_jit_load does), with programmatic dependent launch
 * on sm_90 and later as the generated launcher. Matrix products are launched as their
 * launcher launches them: TMA descriptors encoded for the call's tensors (refused, naming
 * the tensor, where TMA cannot copy them), workspaces from a memory pool the session keeps,
 * thread-block clusters, persistent grids sized by the clusters resident at once, and
 * every kernel of a split-K or stream-K program. A call that fails a check launches
 * nothing and says why.
 *
 * Links libfslc (the compiler); programs that only launch ahead-of-time kernels need
 * only the runtime (fsl/runtime.h).
 */
#ifndef FSL_JIT_SESSION_H
#define FSL_JIT_SESSION_H

#include "fsl/compiler.h"
#include "fsl/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fsl_specialize_policy {
  FSL_SPECIALIZE_REDUCED = 0, /* the runtime dimensions some reduction reduces, and the innermost
                                 of each tensor of 2 or more dimensions (default) */
  FSL_SPECIALIZE_ALL = 1,     /* every runtime dimension */
  FSL_SPECIALIZE_NONE = 2     /* none: one kernel for all sizes, as fslc compiles it */
} fsl_specialize_policy;

typedef struct fsl_jit_session_options {
  fsl_specialize_policy policy;
  /* The architecture to compile for; NULL: the current device's, which must be the
   * program's target's (sm_90a for h200). Give it to prepare without a GPU. */
  const char *arch;
  /* The on-disk cache (fsl/jit.h); NULL: $FSL_CACHE_DIR, else ~/.cache/fslc. */
  const char *cache_dir;
} fsl_jit_session_options;

typedef struct fsl_jit_session fsl_jit_session;

/* A session over `program`, which must outlive it. `options` may be NULL. */
fsl_status fsl_jit_session_create(const fsl_program *program,
                                  const fsl_jit_session_options *options, fsl_jit_session **session,
                                  char *error, size_t error_size);
void fsl_jit_session_destroy(fsl_jit_session *session);

/* Launches `fusion` on `stream`. `tensors` are the generated launcher's tensor
 * parameters in its order (the fusion's tensor parameters, then its outputs that are not
 * inout); `scalars` its scalar parameters in order, as doubles (fewer than declared: the
 * rest take their defaults). A context must be current.
 * Workspaces (split-K, stream-K) are allocated on `stream` from the session's memory
 * pool (one a device, kept until the session is destroyed) and freed on it after the
 * launches; during CUDA graph capture these become the graph's own allocation and free
 * nodes. The first call at a specialization loads its kernels, which must not happen
 * during capture. */
fsl_status fsl_jit_session_launch(fsl_jit_session *session, const char *fusion,
                                  const fsl_tensor *const *tensors, int tensor_count,
                                  const double *scalars, int scalar_count, cudaStream_t stream,
                                  char *error, size_t error_size);

#define FSL_JIT_MAX_LAUNCHES 8
#define FSL_JIT_MAX_WORKSPACES 4

/* What a call would launch: the specialization and its launches. */
typedef struct fsl_jit_launch_info {
  char specialization[256]; /* "rms_norm_add.H7168" */
  char cache_path[1024];    /* the cache entry of its cubin */
  int memory_hit;           /* 1: found in memory (no compiler, no NVRTC, no file) */
  int disk_hit;             /* on a miss: 1 when the cubin came from the disk cache */
  int launch_count;
  struct {
    char kernel[128];
    int64_t grid[3], block[3], shared_bytes;
    int64_t cluster[3];      /* thread-block cluster extents (1, 1, 1: none) */
    int grid_from_occupancy; /* 1: grid[0] is an upper bound; the launch takes at most the
                                clusters resident at once (a persistent kernel's grid) */
    int tensor_maps;         /* TMA descriptors encoded for the launch */
    int cooperative;         /* 1: a cooperative launch (grid_sync: every block resident) */
  } launches[FSL_JIT_MAX_LAUNCHES];
  int workspace_count; /* temporaries allocated for the call (split-K, stream-K) */
  struct {
    char name[128];
    int64_t bytes;
  } workspaces[FSL_JIT_MAX_WORKSPACES];
} fsl_jit_launch_info;

/* Everything fsl_jit_session_launch does but loading and launching (no GPU needed):
 * the checks (data pointers too, unless they are all NULL: then descriptors and sizes
 * only), the specialization, the NVRTC compile into the cache, the memory cache, the
 * variant and its launch shapes. `info` may be NULL. */
fsl_status fsl_jit_session_prepare(fsl_jit_session *session, const char *fusion,
                                   const fsl_tensor *const *tensors, int tensor_count,
                                   const double *scalars, int scalar_count,
                                   fsl_jit_launch_info *info, char *error, size_t error_size);

typedef struct fsl_jit_stats {
  int64_t calls;               /* launch and prepare calls */
  int64_t refused;             /* calls that failed a check or a compile */
  int64_t memory_hits;         /* calls whose specialization was in memory */
  int64_t specializations;     /* kernels generated by the compiler */
  int64_t nvrtc_compiles;      /* of those, compiled by NVRTC (the rest read from the disk) */
  int64_t launches;            /* kernels launched */
  int64_t tensor_maps_encoded; /* TMA descriptors encoded (the rest of those launched with
                                  were the session's, encoded before for the same tensor) */
} fsl_jit_stats;

void fsl_jit_session_stats(const fsl_jit_session *session, fsl_jit_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* FSL_JIT_SESSION_H */
