// cooperative_pdl_test.cu — by hand on the H200: a cooperative launch that carries the
// programmatic-stream-serialization attribute too, as the launcher and the JIT launch a
// `grid_sync` kernel. It checks the facts that launch rests on: the driver accepts both
// attributes together; the cooperative kernel's blocks, started while the previous kernel
// still runs, wait in fsl_grid_dependency_wait and then see all of its writes; every block
// becomes resident (the grid fills the device: 2 blocks of 1024 threads an SM) and meets
// at fsl_grid_sync, after which each block sees every other block's stores. Each pair of
// launches is checked exactly (integers in floats) and timed with and without the second
// attribute.
//
// Build and run from the repository root:
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I runtime/include
//     tests/gpu/cooperative_pdl_test.cu -o cooperative_pdl_test
//   ./cooperative_pdl_test
#include "fsl/device.cuh"

#include <cstdio>
#include <vector>

namespace {

constexpr int kThreads = 1024;

// The primary kernel: a long chain of writes, then lets the next kernel launch early.
__global__ void producer(float *values, int n, float round) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = 0;
    for (int k = 0; k < 4000; ++k)
      v = v * 0.5f + round; // ends at 2 * round, exactly, for small integer rounds
    values[i] = v;
  }
  fsl_grid_launch_dependents();
}

// The cooperative kernel: copies the producer's values, meets at the grid barrier, then
// every block adds a slice of the others' copies (each block reads what other blocks
// stored before the barrier).
__global__ void __launch_bounds__(kThreads, 2)
    cooperative(const float *values, float *copies, float *sums, int n) {
  fsl_grid_dependency_wait();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    copies[i] = values[i];
  fsl_grid_sync();
  // Block b adds the copies of block (b + 1) % blocks: its stores, not this block's.
  int other = (blockIdx.x + 1) % gridDim.x;
  int j = other * blockDim.x + threadIdx.x;
  __shared__ float partial[kThreads];
  partial[threadIdx.x] = j < n ? copies[j] : 0.0f;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    sums[blockIdx.x] = partial[0];
}

bool check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    std::printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

} // namespace

int main() {
  int sms = 0;
  if (!check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "device"))
    return 1;
  int perSm = 0;
  if (!check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, cooperative, kThreads, 0),
             "occupancy"))
    return 1;
  const int blocks = sms * perSm, n = blocks * kThreads;
  float *values, *copies, *sums;
  if (!check(cudaMalloc(&values, n * sizeof(float)), "malloc") ||
      !check(cudaMalloc(&copies, n * sizeof(float)), "malloc") ||
      !check(cudaMalloc(&sums, blocks * sizeof(float)), "malloc"))
    return 1;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf("%d SMs, %d cooperative blocks of %d threads an SM: a grid of %d\n", sms, perSm,
              kThreads, blocks);
  bool passed = true;
  for (int withPdl = 0; withPdl < 2; ++withPdl) {
    cudaLaunchAttribute attributes[2];
    int count = 0;
    attributes[count].id = cudaLaunchAttributeCooperative;
    attributes[count++].val.cooperative = 1;
    if (withPdl) {
      attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attributes[count++].val.programmaticStreamSerializationAllowed = 1;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = count;
    const int pairs = 200;
    int wrong = 0;
    float micros = 0;
    for (int repeat = 0; repeat < 3 && passed; ++repeat) {
      cudaEventRecord(start, stream);
      for (int pair = 0; pair < pairs && passed; ++pair) {
        producer<<<blocks, kThreads, 0, stream>>>(values, n, float(pair % 7 + 1));
        passed =
            check(cudaLaunchKernelEx(&config, cooperative, (const float *)values, copies, sums, n),
                  withPdl ? "launch (cooperative + PDL)" : "launch (cooperative)");
      }
      cudaEventRecord(stop, stream);
      passed = passed && check(cudaStreamSynchronize(stream), "run");
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      micros = ms * 1000 / pairs;
      // The last pair's round: every sum is kThreads copies of 2 * round.
      std::vector<float> host(blocks);
      cudaMemcpy(host.data(), sums, blocks * sizeof(float), cudaMemcpyDeviceToHost);
      float expected = kThreads * 2.0f * float((pairs - 1) % 7 + 1);
      for (float s : host)
        wrong += s != expected;
    }
    passed = passed && wrong == 0;
    std::printf("%s %-26s %d of %d block sums wrong, %.2f us a pair\n", wrong ? "FAIL" : "ok  ",
                withPdl ? "cooperative + PDL:" : "cooperative:", wrong, 3 * blocks, micros);
  }
  std::printf("cooperative launch with programmatic dependent launch: %s\n",
              passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
}
