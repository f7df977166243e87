// copy16.cu — the copy ceiling: the fastest of a few 16-byte-vector copy kernels.
//
// One 16-byte access per thread and iteration left bandwidth unused (a fused kernel beat
// it), so the ceiling is the best of: grid-stride with 1, 2 or 4 independent vectors per
// thread and iteration, and one vector per thread over a grid that covers the buffer.
#include <cstdint>

template <int Vectors>
__global__ void copy_grid_stride(const uint4 *__restrict__ from, uint4 *__restrict__ to, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (; i + (Vectors - 1) * stride < n; i += Vectors * stride) {
    uint4 v[Vectors];
#pragma unroll
    for (int k = 0; k < Vectors; ++k)
      v[k] = from[i + k * stride];
#pragma unroll
    for (int k = 0; k < Vectors; ++k)
      to[i + k * stride] = v[k];
  }
  for (; i < n; i += stride)
    to[i] = from[i];
}

__global__ void copy_one_each(const uint4 *__restrict__ from, uint4 *__restrict__ to, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    to[i] = from[i];
}

// variant: 0 = 1 vector, 1 = 2 vectors, 2 = 4 vectors (grid-stride), 3 = one vector a thread.
extern "C" int launch_copy16(const void *from, void *to, int64_t bytes, int variant, void *stream) {
  const int64_t n = bytes / 16;
  const uint4 *a = (const uint4 *)from;
  uint4 *b = (uint4 *)to;
  cudaStream_t s = (cudaStream_t)stream;
  switch (variant) {
  case 0: copy_grid_stride<1><<<132 * 8, 512, 0, s>>>(a, b, n); break;
  case 1: copy_grid_stride<2><<<132 * 8, 512, 0, s>>>(a, b, n); break;
  case 2: copy_grid_stride<4><<<132 * 8, 512, 0, s>>>(a, b, n); break;
  default: copy_one_each<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(a, b, n); break;
  }
  return (int)cudaGetLastError();
}
