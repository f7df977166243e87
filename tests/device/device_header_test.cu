// device_header_test.cu — every helper of fsl/device.cuh, instantiated in kernels.
//
// Compiled (not run) for sm_90a by tests/tools/cuda_checks.sh with nvcc and by the unit
// tests with NVRTC (tests/unit/KernelPrinterTest.cpp), so that each inline-PTX helper is
// assembled by ptxas under both: a wrong operand or instruction fails the build. The
// kernels compute nothing meaningful; they only call every helper.
#include "fsl/device.cuh"

#ifdef __CUDACC_RTC__
typedef struct alignas(64) CUtensorMap_st {
  unsigned long long opaque[16];
} CUtensorMap;
#else
#include <cuda.h>
#endif

extern __shared__ __align__(1024) unsigned char fsl_shared[];

// Arithmetic, vector accesses, reductions, barriers and programmatic dependent launch.
extern "C" __global__ void __launch_bounds__(256)
    portable_helpers(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ y,
                     double *__restrict__ wide, int64_t *__restrict__ integers) {
  fsl_grid_dependency_wait();
  fsl_grid_launch_dependents();
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  __align__(16) __nv_bfloat16 v16[8];
  __align__(8) __nv_bfloat16 v8[4];
  __align__(4) __nv_bfloat16 v4[2];
  __nv_bfloat16 v2[1];
  fsl_load_vector<16>(v16, x + i * 8);
  fsl_load_vector<8>(v8, x + i * 4);
  fsl_load_vector<4>(v4, x + i * 2);
  fsl_load_vector<2>(v2, x + i);
  float sum = 0.0f, largest = -FSL_INF32, smallest = FSL_INF32;
#pragma unroll
  for (int lane = 0; lane < 8; ++lane) {
    const float value = __bfloat162float(v16[lane]);
    sum += value;
    largest = fsl_max(largest, value);
    smallest = fsl_min(smallest, value);
  }
  sum += __bfloat162float(v8[0]) + __bfloat162float(v4[1]) + __bfloat162float(v2[0]);
  float *scratch = reinterpret_cast<float *>(fsl_shared);
  sum = fsl_block_reduce_x(sum, FslSum(), scratch, 0);
  largest = fsl_block_reduce_x(largest, FslMax(), scratch, 1);
  smallest = fsl_warp_reduce(smallest, FslMin());
  const double total = fsl_warp_reduce(fsl_max(wide[i], -FSL_INF64), FslSum());
  integers[i] = fsl_min<int64_t>(integers[i], 7) + fsl_warp_reduce(integers[i], FslMax());
  wide[i] =
      total + fsl_block_reduce_x(wide[i], FslMin(), reinterpret_cast<double *>(fsl_shared), 0);
  // argmax/argmin pairs of each value type the lowering accumulates in.
  int64_t at = i, wideAt = i, integerAt = i;
  fsl_block_argmax_x(largest, at, fsl_shared, 0);
  fsl_warp_argmin(smallest, at);
  double widest = wide[i];
  fsl_block_argmin_x(widest, wideAt, fsl_shared, 1);
  int32_t narrow = static_cast<int32_t>(integers[i]);
  fsl_warp_argmax(narrow, integerAt);
  integers[i] += at + wideAt + integerAt + narrow + static_cast<int64_t>(widest);
  // Welford triples and online-softmax pairs, f32 and f64.
  float count = 1.0f, mean = sum, m2 = 0.0f, runningMax = largest, expSum = 1.0f;
  fsl_block_welford_x(count, mean, m2, fsl_shared, 0);
  fsl_warp_welford(count, mean, m2);
  fsl_block_max_exp_sum_x(runningMax, expSum, fsl_shared, 1);
  fsl_warp_max_exp_sum(runningMax, expSum);
  double wideCount = 1.0, wideMean = wide[i], wideM2 = 0.0, wideMax = wide[i], wideSum = 1.0;
  fsl_block_welford_x(wideCount, wideMean, wideM2, fsl_shared, 0);
  fsl_block_max_exp_sum_x(wideMax, wideSum, fsl_shared, 1);
  wide[i] += wideMean + wideM2 + wideSum + wideMax + wideCount;
  sum += mean + m2 + count + runningMax + expSum;
  fsl_named_barrier_sync(1, 128);
  fsl_named_barrier_sync(2);
  v16[0] = __float2bfloat16_rn(sum + largest + smallest);
  fsl_store_vector<16>(y + i * 8, v16);
  fsl_store_vector<8>(y + i * 4, v8);
  fsl_store_vector<4>(y + i * 2, v4);
  fsl_store_vector<2>(y + i, v2);
}

// The Hopper helpers: mbarriers, TMA loads (plain and multicast) and stores of every
// rank, the async-proxy fence, wgmma of every wrapped shape, setmaxnreg.
extern "C" __global__ void __launch_bounds__(384)
    hopper_helpers(const __grid_constant__ CUtensorMap map2,
                   const __grid_constant__ CUtensorMap map3,
                   const __grid_constant__ CUtensorMap map4,
                   const __grid_constant__ CUtensorMap map5, float *__restrict__ out) {
  uint64_t *barriers = reinterpret_cast<uint64_t *>(fsl_shared);
  __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(fsl_shared + 1024);
  const int32_t c = static_cast<int32_t>(blockIdx.x);
  if (threadIdx.x == 0) {
    fsl_mbarrier_init(&barriers[0], 1);
    fsl_mbarrier_init(&barriers[1], 128);
    fsl_fence_proxy_async_shared();
  }
  __syncthreads();
  const unsigned warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) { // producer
    fsl_setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      fsl_mbarrier_arrive_expect_tx(&barriers[0], 8 * 16384);
      fsl_tma_load_2d(tile, &map2, &barriers[0], c, 0);
      fsl_tma_load_3d(tile + 8192, &map3, &barriers[0], c, 0, 1);
      fsl_tma_load_4d(tile + 16384, &map4, &barriers[0], c, 0, 1, 2);
      fsl_tma_load_5d(tile + 24576, &map5, &barriers[0], c, 0, 1, 2, 3);
      fsl_tma_load_2d_multicast(tile + 32768, &map2, &barriers[0], 0x3, c, 0);
      fsl_tma_load_3d_multicast(tile + 40960, &map3, &barriers[0], 0x3, c, 0, 1);
      fsl_tma_load_4d_multicast(tile + 49152, &map4, &barriers[0], 0x3, c, 0, 1, 2);
      fsl_tma_load_5d_multicast(tile + 57344, &map5, &barriers[0], 0x3, c, 0, 1, 2, 3);
    }
    return;
  }
  fsl_setmaxnreg_inc<232>(); // consumers
  fsl_mbarrier_wait(&barriers[0], 0);
  float accumulator[128];
#pragma unroll
  for (int r = 0; r < 128; ++r)
    accumulator[r] = 0.0f;
  const uint64_t a = fsl_wgmma_descriptor_sw128(tile);
  const uint64_t b = fsl_wgmma_descriptor(tile + 8192, 16, 1024, FSL_WGMMA_SWIZZLE_128B);
  const uint64_t b64 = fsl_wgmma_descriptor(tile + 16384, 16, 512, FSL_WGMMA_SWIZZLE_64B);
  // N-major, four 64-column blocks 8192 bytes apart (each 64 rows of K of 128 bytes).
  const uint64_t bn = fsl_wgmma_descriptor_mn_sw128(tile + 8192, 8192);
  // The accumulators pinned around each fence and wait (ptxas then injects no
  // warpgroup.arrive/wait of its own); wait_group<1> leaves the newest group in flight.
  fsl_wgmma_pin_accumulator<128>(accumulator);
  fsl_wgmma_fence();
  fsl_wgmma_m64n64k16_f32_bf16<0, 0>(accumulator, a, b64, 0);
  fsl_wgmma_commit_group();
  fsl_wgmma_m64n64k16_f32_f16<0, 0>(accumulator, a, b64, 1);
  fsl_wgmma_commit_group();
  fsl_wgmma_wait_group<1>();
  fsl_wgmma_wait_group<0>();
  fsl_wgmma_pin_accumulator<128>(accumulator);
  fsl_wgmma_fence();
  fsl_wgmma_m64n128k16_f32_bf16<0, 1>(accumulator, a, b, 1);
  fsl_wgmma_m64n128k16_f32_f16<0, 0>(accumulator, a, b, 1);
  fsl_wgmma_commit_group();
  fsl_wgmma_wait_group<0>();
  fsl_wgmma_pin_accumulator<128>(accumulator);
  fsl_wgmma_fence();
  fsl_wgmma_m64n256k16_f32_bf16<1, 0>(accumulator, a, b, 1);
  fsl_wgmma_m64n256k16_f32_f16<0, 0>(accumulator, a, b, 1);
  fsl_wgmma_m64n256k16_f32_bf16<0, 1>(accumulator, a, bn, 1);
  fsl_wgmma_commit_group();
  fsl_wgmma_wait_group<0>();
  fsl_wgmma_pin_accumulator<128>(accumulator);
  fsl_mbarrier_arrive(&barriers[1]);
  fsl_mbarrier_wait(&barriers[1], 0);
  float *staging = reinterpret_cast<float *>(tile);
#pragma unroll
  for (int r = 0; r < 128; ++r)
    staging[r * 256 + threadIdx.x] = accumulator[r];
  fsl_fence_proxy_async_shared();
  fsl_named_barrier_sync(1, 256);
  if (threadIdx.x == 128) {
    fsl_tma_store_2d(&map2, staging, c, 0);
    fsl_tma_store_3d(&map3, staging, c, 0, 1);
    fsl_tma_store_4d(&map4, staging, c, 0, 1, 2);
    fsl_tma_store_5d(&map5, staging, c, 0, 1, 2, 3);
    fsl_bulk_commit_group();
    fsl_bulk_wait_group_read<0>();
    fsl_bulk_wait_group_read<2>();
  }
  // stmatrix of 4, 2 and 1 matrices from a warp's registers (bf16 and f16).
  __align__(4) __nv_bfloat16 pairs[8];
  __align__(4) __half halves[2];
#pragma unroll
  for (int i = 0; i < 8; ++i)
    pairs[i] = __float2bfloat16_rn(accumulator[i]);
  halves[0] = __float2half_rn(accumulator[8]);
  halves[1] = __float2half_rn(accumulator[9]);
  __nv_bfloat16 *rows = reinterpret_cast<__nv_bfloat16 *>(tile) + (threadIdx.x % 32) * 8;
  fsl_stmatrix<4>(rows, pairs);
  fsl_stmatrix<2>(rows, pairs);
  fsl_stmatrix<1>(reinterpret_cast<__half *>(rows), halves);
  out[threadIdx.x] = accumulator[0];
}

// The cluster helpers: a cluster of two CTAs, each multicasting half of a tile into both
// and freeing the peer's stage with a remote arrival, between cluster barriers.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128)
    cluster_helpers(const __grid_constant__ CUtensorMap map2, float *__restrict__ out) {
  uint64_t *barriers = reinterpret_cast<uint64_t *>(fsl_shared);
  __nv_bfloat16 *tile = reinterpret_cast<__nv_bfloat16 *>(fsl_shared + 1024);
  const unsigned rank = fsl_cluster_cta_rank();
  if (threadIdx.x == 0) {
    fsl_mbarrier_init(&barriers[0], 1);
    fsl_mbarrier_init(&barriers[1], 2);
    fsl_fence_proxy_async_shared();
  }
  fsl_cluster_sync();
  if (threadIdx.x == 0) {
    fsl_mbarrier_arrive_expect_tx(&barriers[0], 2 * 8192);
    fsl_tma_load_2d_multicast(tile + rank * 4096, &map2, &barriers[0], 0x3,
                              static_cast<int32_t>(rank) * 64, 0);
  }
  fsl_mbarrier_wait(&barriers[0], 0);
  out[threadIdx.x] = __bfloat162float(tile[threadIdx.x]);
  if (threadIdx.x == 0) {
    fsl_mbarrier_arrive_cluster(&barriers[1], rank);
    fsl_mbarrier_arrive_cluster(&barriers[1], rank ^ 1u);
  }
  fsl_cluster_sync();
}
