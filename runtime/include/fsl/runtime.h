/* fsl/runtime.h — what generated launchers and their callers share.
 *
 * A launcher takes one fsl_tensor per tensor parameter and plain values for scalar
 * parameters, checks every tensor before launching, and returns FSL_OK or an error
 * status whose message the fusion's *_error() function returns ("" after a call that
 * succeeded). Nothing is launched or written when a check fails: sizes are checked in
 * 64-bit arithmetic that never wraps, every launch against the target's grid, block and
 * cluster limits (FSL_ERROR_SIZE). A call with nothing to do (a tensor without elements)
 * returns FSL_OK without looking at any data pointer: PyTorch's empty tensors have null
 * data; unless an output without the empty dimension has elements (a row's sum over an
 * empty row), which is FSL_ERROR_SIZE. The status is the call's own: an earlier CUDA error of the program is neither
 * returned nor cleared.
 * C and C++ callers; needs only the CUDA runtime.
 */
#ifndef FSL_RUNTIME_H
#define FSL_RUNTIME_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fsl_dtype {
  FSL_BOOL = 0,
  FSL_I32 = 1,
  FSL_I64 = 2,
  FSL_F16 = 3,
  FSL_BF16 = 4,
  FSL_F32 = 5,
  FSL_F64 = 6
} fsl_dtype;

#define FSL_MAX_RANK 8

/* A tensor in device memory: sizes and strides in elements, outermost first. */
typedef struct fsl_tensor {
  void *data;
  fsl_dtype dtype;
  int32_t rank;
  int64_t sizes[FSL_MAX_RANK];
  int64_t strides[FSL_MAX_RANK];
} fsl_tensor;

typedef enum fsl_status {
  FSL_OK = 0,
  FSL_ERROR_NULL_POINTER = 1,
  FSL_ERROR_DTYPE = 2,
  FSL_ERROR_RANK = 3,
  FSL_ERROR_SIZE = 4,
  FSL_ERROR_LAYOUT = 5,
  FSL_ERROR_ALIGNMENT = 6,
  FSL_ERROR_OVERLAP = 7,
  FSL_ERROR_LAUNCH = 8,
  FSL_ERROR_COMPILE = 9,
  FSL_ERROR_CACHE = 10,
  FSL_ERROR_DRIVER = 11,
  FSL_ERROR_ARGUMENT = 12 /* the JIT's API: an unknown fusion or dimension, a wrong count */
} fsl_status;

#ifdef __cplusplus
}
#endif

#endif /* FSL_RUNTIME_H */
