// jit_gpu_test.cu — on the GPU: the runtime's JIT path (NVRTC + cache + driver launch)
// gives bit-identical results to the ahead-of-time launcher for the same kernel.
// usage: jit_gpu_test gpu-build/softmax_4096/softmax.cu CACHE_DIR
#include "fsl/jit.h"
#include "softmax.h"

#include <cuda.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#define CHECK_CUDA(call)                                                                          \
  do {                                                                                            \
    cudaError_t e = (call);                                                                       \
    if (e != cudaSuccess) {                                                                       \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorString(e));                                 \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

int main(int argc, char **argv) {
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  CHECK_CUDA(cudaFree(nullptr)); // a current context for the driver API
  char error[4096] = "";
  fsl_jit_binary binary{}, again{};
  if (fsl_jit_compile(source.c_str(), "softmax.cu", "sm_90a", nullptr, 0, argv[2], &binary, error, sizeof error) != FSL_OK) {
    std::printf("FAIL compile: %s\n", error);
    return 1;
  }
  fsl_jit_compile(source.c_str(), "softmax.cu", "sm_90a", nullptr, 0, argv[2], &again, error, sizeof error);
  void *module = nullptr, *function = nullptr;
  if (fsl_jit_load(&binary, &module, error, sizeof error) != FSL_OK ||
      fsl_jit_function(module, "softmax_v0", &function, error, sizeof error) != FSL_OK) {
    std::printf("FAIL load: %s\n", error);
    return 1;
  }
  const int64_t T = 1000, S = 4096;
  std::vector<__nv_bfloat16> host(T * S);
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  for (auto &v : host)
    v = __float2bfloat16(normal(random));
  __nv_bfloat16 *x, *yAot, *yJit;
  CHECK_CUDA(cudaMalloc(&x, T * S * 2));
  CHECK_CUDA(cudaMalloc(&yAot, T * S * 2));
  CHECK_CUDA(cudaMalloc(&yJit, T * S * 2));
  CHECK_CUDA(cudaMemcpy(x, host.data(), T * S * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(yAot, 0xff, T * S * 2)); // NaN poison
  CHECK_CUDA(cudaMemset(yJit, 0xff, T * S * 2));
  fsl_tensor tx{x, FSL_BF16, 2, {T, S}, {S, 1}}, ty{yAot, FSL_BF16, 2, {T, S}, {S, 1}};
  if (fsl_softmax(&tx, &ty, nullptr) != FSL_OK) {
    std::printf("FAIL aot launch: %s\n", fsl_softmax_error());
    return 1;
  }
  // The same launch the generated launcher makes: 2 rows per block, 128 x 2 threads.
  int64_t rows = T;
  void *args[] = {&x, &yJit, &rows};
  CUresult launched = cuLaunchKernel(reinterpret_cast<CUfunction>(function), (T + 1) / 2, 1, 1, 128, 2, 1,
                                     128 * 2 * 8, nullptr, args, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<__nv_bfloat16> a(T * S), b(T * S);
  CHECK_CUDA(cudaMemcpy(a.data(), yAot, T * S * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), yJit, T * S * 2, cudaMemcpyDeviceToHost));
  int failures = 0;
  auto expect = [&](bool ok, const char *what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
  };
  expect(launched == CUDA_SUCCESS, "cuLaunchKernel of the JIT-compiled softmax_v0");
  expect(std::memcmp(a.data(), b.data(), a.size() * 2) == 0, "JIT and ahead-of-time outputs are bit-identical");
  bool written = true;
  for (auto v : b)
    written &= !std::isnan(__bfloat162float(v));
  expect(written, "every output element written (no NaN left from the poison)");
  expect(!binary.cache_hit || again.cache_hit, "the second compile reads the cache");
  expect(again.cache_hit == 1, "cache hit on the second compile");
  std::printf("jit on gpu: %d passed, %d failed\n", 5 - failures, failures);
  return failures ? 1 : 0;
}
