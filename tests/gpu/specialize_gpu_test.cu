// specialize_gpu_test.cu — on the GPU: the specializing JIT launches rms_norm_add of
// norms.fsl with H runtime at H = 4096 and H = 7168 in one process, and its outputs are
// bit-identical to the ahead-of-time static kernels (fslc -D H=... --prefix=h<H>_).
//
// The GPU machine has no compiler (fslc needs LLVM and ANTLR), so the specializations
// come from files that libfslc wrote on the build machine (tests/gpu/generate.sh runs
// fsl_specialize into gpu-build/specialize/): the session core (jit/src/session.cpp,
// launch_plan.cpp) is built here from source with the runtime, and runs as in the full
// JIT: the signature's checks, the policy, NVRTC for the device through the on-disk cache,
// the memory cache, the metadata's variants and shapes, cuLaunchKernel.
//
// usage: specialize_gpu_test gpu-build/specialize CACHE_DIR   (tests/gpu/run.sh builds it)
#include "h4096_rms_norm_add.h"
#include "h7168_rms_norm_add.h"
#include "session.h" // jit/src

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../runtime/Expect.h"

namespace {

using fsl_test::expect;
using fsl_test::readFile;

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t e = (call);                                                                        \
    if (e != cudaSuccess) {                                                                        \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorString(e));                                  \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

fsl_tensor tensor(void *data, int64_t T, int64_t H) {
  return fsl_tensor{data, FSL_BF16, 2, {T, H}, {H, 1}};
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: specialize_gpu_test SPECIALIZE_DIR CACHE_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  CHECK_CUDA(cudaFree(nullptr)); // a current context for the driver API
  std::map<std::string, std::string> signatures = {
      {"rms_norm_add", readFile(dir + "/rms_norm_add.signature")}};
  int specialized = 0;
  // The specializations libfslc wrote on the build machine, by the name it gives them.
  fsl::jit::Specializer fromFiles = [&](const std::string &fusion,
                                        const std::vector<std::pair<std::string, int64_t>> &dims,
                                        fsl::jit::Specialized &out, std::string &error) {
    out.name = fusion;
    for (const auto &[dim, value] : dims)
      out.name += "." + dim + std::to_string(value);
    out.source = readFile(dir + "/" + out.name + ".cu");
    out.launch = readFile(dir + "/" + out.name + ".launch");
    ++specialized;
    if (out.source.empty() || out.launch.empty()) {
      error = "no specialization " + out.name + " in " + dir + " (tests/gpu/generate.sh)";
      return FSL_ERROR_COMPILE;
    }
    return FSL_OK;
  };
  fsl_jit_session_options options{};
  options.policy = FSL_SPECIALIZE_REDUCED;
  options.cache_dir = argv[2];
  std::unique_ptr<fsl::jit::Session> session;
  std::string error;
  expect(fsl::jit::Session::create(signatures, "sm_90a", fromFiles, options, session, error) ==
             FSL_OK,
         "a session over the signature", error);
  if (!session)
    return 1;

  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  for (int64_t H : {4096, 7168}) {
    for (int64_t T : {1, 131, 132, 1000}) {
      std::string at = "H = " + std::to_string(H) + ", T = " + std::to_string(T);
      const size_t rowBytes = H * 2, bytes = T * rowBytes;
      std::vector<__nv_bfloat16> hx(T * H), hres(T * H), hw(H);
      for (auto *v : {&hx, &hres, &hw})
        for (auto &e : *v)
          e = __float2bfloat16(normal(random));
      __nv_bfloat16 *x, *w, *resAot, *resJit, *yAot, *yJit;
      CHECK_CUDA(cudaMalloc(&x, bytes));
      CHECK_CUDA(cudaMalloc(&w, rowBytes));
      CHECK_CUDA(cudaMalloc(&resAot, bytes));
      CHECK_CUDA(cudaMalloc(&resJit, bytes));
      CHECK_CUDA(cudaMalloc(&yAot, bytes));
      CHECK_CUDA(cudaMalloc(&yJit, bytes));
      CHECK_CUDA(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(w, hw.data(), rowBytes, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(resAot, hres.data(), bytes, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(resJit, hres.data(), bytes, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemset(yAot, 0xff, bytes)); // NaN poison
      CHECK_CUDA(cudaMemset(yJit, 0xff, bytes));
      fsl_tensor tx = tensor(x, T, H), tra = tensor(resAot, T, H), trj = tensor(resJit, T, H),
                 tya = tensor(yAot, T, H), tyj = tensor(yJit, T, H);
      fsl_tensor tw{w, FSL_BF16, 1, {H}, {1}};
      fsl_status aot = H == 4096 ? h4096_rms_norm_add(&tx, &tra, &tw, 1e-6f, &tya, nullptr)
                                 : h7168_rms_norm_add(&tx, &tra, &tw, 1e-6f, &tya, nullptr);
      expect(aot == FSL_OK, at + ": the ahead-of-time static kernel",
             H == 4096 ? h4096_rms_norm_add_error() : h7168_rms_norm_add_error());
      const fsl_tensor *args[] = {&tx, &trj, &tw, &tyj};
      fsl_jit_stats before = session->stats();
      fsl_jit_launch_info info{};
      fsl_status jit =
          session->run("rms_norm_add", args, 4, nullptr, 0, nullptr, true, &info, error);
      fsl_jit_stats after = session->stats();
      expect(jit == FSL_OK && after.launches == before.launches + 1,
             at + ": the JIT launch (" + std::string(info.specialization) + ", " +
                 (info.memory_hit ? "memory hit"
                  : info.disk_hit ? "disk hit"
                                  : "NVRTC") +
                 ")",
             error);
      expect((T == 1) != (info.memory_hit == 1),
             at + ": the first T of an H specializes, the others hit the memory cache");
      CHECK_CUDA(cudaDeviceSynchronize());
      std::vector<__nv_bfloat16> a(T * H), b(T * H), ra(T * H), rb(T * H);
      CHECK_CUDA(cudaMemcpy(a.data(), yAot, bytes, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(b.data(), yJit, bytes, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(ra.data(), resAot, bytes, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(rb.data(), resJit, bytes, cudaMemcpyDeviceToHost));
      bool written = true;
      for (auto v : b)
        written &= !std::isnan(__bfloat162float(v));
      expect(std::memcmp(a.data(), b.data(), bytes) == 0 &&
                 std::memcmp(ra.data(), rb.data(), bytes) == 0 && written,
             at + ": y and residual bit-identical to the static kernel's, every element written");
      for (void *p :
           {(void *)x, (void *)w, (void *)resAot, (void *)resJit, (void *)yAot, (void *)yJit})
        CHECK_CUDA(cudaFree(p));
    }
  }
  fsl_jit_stats stats = session->stats();
  expect(specialized == 2 && stats.specializations == 2 && stats.memory_hits == 6,
         "two specializations in one process, six memory hits");
  // A refused call launches nothing.
  fsl_tensor bad = tensor(nullptr, 4, 4096), w{nullptr, FSL_BF16, 1, {5120}, {1}};
  const fsl_tensor *args[] = {&bad, &bad, &w, &bad};
  fsl_status refused =
      session->run("rms_norm_add", args, 4, nullptr, 0, nullptr, true, nullptr, error);
  expect(refused == FSL_ERROR_SIZE && session->stats().launches == stats.launches,
         "weight of 5120 with x of 4096: refused, nothing launched", error);
  return fsl_test::report("specializing jit on gpu");
}
