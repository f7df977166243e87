// wgmma_mn_major_test.cu — by hand on the H200: an N-major B operand wider than one
// 128-byte swizzle span, laid out as the simulator reads it (sim/Simulator.cpp, `operand`)
// and described as the CUDA printer describes it (fsl_wgmma_descriptor_mn_sw128), against
// a CPU product. It checks the facts the simulator and the printer rest on before the
// matmul builder uses them: b: [K, N] with N contiguous, loaded by TMA as N / 64 boxes of
// 64 rows of K by 64 columns (128 bytes, the 128-byte swizzle), block j at j * BlockBytes;
// the descriptor's leading byte offset is that block distance, its stride 1024 (8 rows of
// K); k step ks starts 16 rows of K (2048 bytes) down; instruction column ni of an
// m64n128 starts ni * 2 blocks over. Values are small multiples of 1/4, so every product
// and sum is exact and the comparison is exact.
//
// Build and run from the repository root:
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I runtime/include
//     tests/gpu/wgmma_mn_major_test.cu -lcuda -o wgmma_mn_major_test
//   ./wgmma_mn_major_test
#include "fsl/device.cuh"

#include <cuda.h>

#include <cstdio>
#include <vector>

constexpr int M = 64, N = 256, K = 64;

// A [M][K] K-major (one box), B [K][N] N-major (N / 64 boxes); D1 by one m64n256k16 a k
// step, D2 by two m64n128k16 (instruction columns 0 and 1).
template <int BlockBytes>
__global__ void __launch_bounds__(128)
    mn_major(float *d1, float *d2, const __grid_constant__ CUtensorMap a_map,
             const __grid_constant__ CUtensorMap b_map) {
  extern __shared__ __align__(1024) unsigned char shared[];
  __nv_bfloat16 *sa = reinterpret_cast<__nv_bfloat16 *>(shared);
  __nv_bfloat16 *sb = reinterpret_cast<__nv_bfloat16 *>(shared + M * K * 2);
  uint64_t *bar = reinterpret_cast<uint64_t *>(shared + M * K * 2 + (N / 64) * BlockBytes);
  const int t = threadIdx.x;
  constexpr int blockElements = BlockBytes / 2;
  if (t == 0) {
    fsl_mbarrier_init(bar, 1);
    fsl_fence_proxy_async_shared();
  }
  __syncthreads();
  if (t == 0) {
    fsl_mbarrier_arrive_expect_tx(bar, M * K * 2 + K * N * 2);
    fsl_tma_load_2d(sa, &a_map, bar, 0, 0);
    for (int j = 0; j < N / 64; ++j)
      fsl_tma_load_2d(sb + j * blockElements, &b_map, bar, 64 * j, 0); // (n, k) innermost first
  }
  fsl_mbarrier_wait(bar, 0);
  float acc1[N / 2], acc2[N / 2];
  for (int i = 0; i < N / 2; ++i)
    acc1[i] = acc2[i] = 0.0f;
  fsl_wgmma_pin_accumulator<N / 2>(acc1);
  fsl_wgmma_pin_accumulator<N / 2>(acc2);
  fsl_wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < K / 16; ++ks) {
    const uint64_t a = fsl_wgmma_descriptor_sw128(sa + ks * 16);
    fsl_wgmma_m64n256k16_f32_bf16<0, 1>(
        acc1, a, fsl_wgmma_descriptor_mn_sw128(sb + ks * 16 * 64, BlockBytes), 1);
#pragma unroll
    for (int ni = 0; ni < 2; ++ni)
      fsl_wgmma_m64n128k16_f32_bf16<0, 1>(
          acc2 + ni * 64, a,
          fsl_wgmma_descriptor_mn_sw128(sb + ni * 2 * blockElements + ks * 16 * 64, BlockBytes), 1);
  }
  fsl_wgmma_commit_group();
  fsl_wgmma_wait_group<0>();
  fsl_wgmma_pin_accumulator<N / 2>(acc1);
  fsl_wgmma_pin_accumulator<N / 2>(acc2);
  for (int i = 0; i < N / 2; ++i) {
    const int row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
    const int column = 8 * (i / 4) + 2 * (t % 4) + i % 2; // of the m64nNk16 tile
    d1[row * N + column] = acc1[i];
    const int ni = i / 64, j = i % 64; // acc2: two n128 fragments of 64 floats
    const int row2 = 16 * (t / 32) + (t % 32) / 4 + 8 * ((j / 2) % 2);
    d2[row2 * N + ni * 128 + 8 * (j / 4) + 2 * (t % 4) + j % 2] = acc2[i];
  }
}

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t e = (call);                                                                        \
    if (e != cudaSuccess) {                                                                        \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorString(e));                                  \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static bool encode(CUtensorMap *map, void *data, cuuint64_t inner, cuuint64_t outer) {
  const cuuint64_t sizes[2] = {inner, outer}, strides[1] = {inner * 2};
  const cuuint32_t box[2] = {64, 64}, elementStrides[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, data, sizes, strides, box,
                                elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int BlockBytes> static int run(const void *a, const void *b, const double *expected) {
  void *da, *db;
  float *d1, *d2;
  CHECK_CUDA(cudaMalloc(&da, M * K * 2));
  CHECK_CUDA(cudaMalloc(&db, K * N * 2));
  CHECK_CUDA(cudaMalloc(&d1, M * N * 4));
  CHECK_CUDA(cudaMalloc(&d2, M * N * 4));
  CHECK_CUDA(cudaMemcpy(da, a, M * K * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b, K * N * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d1, 0xff, M * N * 4)); // NaN
  CHECK_CUDA(cudaMemset(d2, 0xff, M * N * 4));
  CUtensorMap aMap, bMap;
  if (!encode(&aMap, da, K, M) || !encode(&bMap, db, N, K)) {
    std::printf("FAIL cuTensorMapEncodeTiled\n");
    return 1;
  }
  const int shared = M * K * 2 + (N / 64) * BlockBytes + 8;
  CHECK_CUDA(cudaFuncSetAttribute(mn_major<BlockBytes>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  shared));
  mn_major<BlockBytes><<<1, 128, shared>>>(d1, d2, aMap, bMap);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> h1(M * N), h2(M * N);
  CHECK_CUDA(cudaMemcpy(h1.data(), d1, M * N * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h2.data(), d2, M * N * 4, cudaMemcpyDeviceToHost));
  int wrong1 = 0, wrong2 = 0;
  for (int i = 0; i < M * N; ++i) {
    wrong1 += h1[i] != expected[i];
    wrong2 += h2[i] != expected[i];
  }
  std::printf("%s blocks %d bytes apart: m64n256k16 %d of %d wrong, 2 x m64n128k16 %d wrong\n",
              wrong1 || wrong2 ? "FAIL" : "ok  ", BlockBytes, wrong1, M * N, wrong2);
  cudaFree(da);
  cudaFree(db);
  cudaFree(d1);
  cudaFree(d2);
  return wrong1 || wrong2;
}

int main() {
  std::vector<__nv_bfloat16> a(M * K), b(K * N);
  std::vector<float> af(M * K), bf(K * N);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      a[m * K + k] = __float2bfloat16(af[m * K + k] = ((m * 3 + k * 5) % 7 - 3) * 0.5f);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      b[k * N + n] = __float2bfloat16(bf[k * N + n] = ((n * 7 + k * 3) % 11 - 5) * 0.25f);
  std::vector<double> expected(M * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        expected[m * N + n] += double(af[m * K + k]) * bf[k * N + n];
  int failed = run<8192>(a.data(), b.data(), expected.data()); // packed blocks
  failed += run<16384>(a.data(), b.data(), expected.data());   // blocks with a gap
  std::printf("wgmma N-major: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
