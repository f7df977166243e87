// launch_cost.cu — the host time of one kernel launch, by the way it is launched, next to
// the JIT session's launch of a small fusion (docs/performance.md, "host time of an eager
// call"). Not a test: it runs on the GPU machine and prints a table.
//
// Each row: the median over rounds of the time per call of `calls` back-to-back calls,
// each round started on an idle GPU (a synchronize between rounds), so the stream's queue
// never fills and the time is the host's. The kernel takes the argument list of a row
// kernel (two pointers and three 64-bit sizes) and does nothing with it.
//
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ijit/include -Iruntime/include \
//        tests/bench/launch_cost.cu -o launch_cost -Lbuild/lib -lfsl -lcuda -ldl
//   ./launch_cost [stdlib_dir]       (without it: the driver's and runtime's rows only)
#include "fsl/compiler.h"
#include "fsl/jit_session.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

__global__ void rowKernel(const void *x, void *y, int64_t rows, int64_t columns, int64_t stride) {
  if (x == y && rows < 0 && columns == stride)
    static_cast<char *>(y)[0] = 0; // never taken: keeps the arguments live
}

constexpr int kCalls = 100, kRounds = 101;

double perCallMicroseconds(const std::function<void()> &call) {
  for (int i = 0; i < 50; ++i)
    call();
  cudaDeviceSynchronize();
  std::vector<double> times;
  for (int r = 0; r < kRounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i)
      call();
    auto end = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::micro>(end - start).count() / kCalls);
    cudaDeviceSynchronize();
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "launch_cost: %s failed\n", what);
    std::exit(1);
  }
}

} // namespace

int main(int argc, char **argv) {
  check(cudaFree(nullptr) == cudaSuccess, "cudaFree(0)");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  const int64_t H = 4096;
  void *x = nullptr, *y = nullptr;
  check(cudaMalloc(&x, H * 2) == cudaSuccess && cudaMalloc(&y, H * 2) == cudaSuccess, "malloc");
  int64_t rows = 1, columns = H, stride = H;
  void *args[] = {&x, &y, &rows, &columns, &stride};

  CUfunction function = nullptr;
  check(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t *>(&function),
                            reinterpret_cast<const void *>(rowKernel)) == cudaSuccess,
        "cudaGetFuncBySymbol");
  CUlaunchAttribute pdl{};
  pdl.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  pdl.value.programmaticStreamSerializationAllowed = 1;
  auto driverConfig = [&](CUlaunchAttribute *attrs, unsigned count) {
    CUlaunchConfig config{};
    config.gridDimX = 1;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream;
    config.attrs = attrs;
    config.numAttrs = count;
    return config;
  };
  cudaLaunchAttribute runtimePdl{};
  runtimePdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  runtimePdl.val.programmaticStreamSerializationAllowed = 1;

  struct Row {
    const char *what;
    double us;
  };
  std::vector<Row> table;
  auto time = [&](const char *what, const std::function<void()> &call) {
    table.push_back({what, perCallMicroseconds(call)});
  };
  CUcontext context = nullptr;
  time("cuCtxGetCurrent", [&] { cuCtxGetCurrent(&context); });
  time("runtime <<<>>>", [&] { rowKernel<<<1, 256, 0, stream>>>(x, y, rows, columns, stride); });
  time("cudaLaunchKernelExC, programmatic serialization", [&] {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(1);
    config.blockDim = dim3(256);
    config.stream = stream;
    config.attrs = &runtimePdl;
    config.numAttrs = 1;
    cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(rowKernel), args);
  });
  time("cuLaunchKernel",
       [&] { cuLaunchKernel(function, 1, 1, 1, 256, 1, 1, 0, stream, args, nullptr); });
  time("cuLaunchKernelEx, no attribute", [&] {
    CUlaunchConfig config = driverConfig(nullptr, 0);
    cuLaunchKernelEx(&config, function, args, nullptr);
  });
  time("cuLaunchKernelEx, programmatic serialization", [&] {
    CUlaunchConfig config = driverConfig(&pdl, 1);
    cuLaunchKernelEx(&config, function, args, nullptr);
  });

  if (argc > 1) {
    // The JIT session's softmax at T = 1, S = 4096 (stdlib/std/norms.fsl, S a runtime
    // size as the Python package loads it): prepare (its checks and plan, no launch) and
    // launch.
    char error[8192] = "";
    fsl_program_options options{};
    options.runtime_dims = "H,S";
    options.stdlib_dir = argv[1];
    std::string path = std::string(argv[1]) + "/std/norms.fsl";
    fsl_program *program = nullptr;
    if (fsl_program_load(path.c_str(), &options, &program, error, sizeof error) != FSL_OK) {
      std::fprintf(stderr, "launch_cost: %s\n", error);
      return 1;
    }
    fsl_jit_session *session = nullptr;
    check(fsl_jit_session_create(program, nullptr, &session, error, sizeof error) == FSL_OK, error);
    fsl_tensor in{}, out{};
    for (fsl_tensor *t : {&in, &out}) {
      t->dtype = FSL_BF16;
      t->rank = 2;
      t->sizes[0] = 1;
      t->sizes[1] = H;
      t->strides[0] = H;
      t->strides[1] = 1;
    }
    in.data = x;
    out.data = y;
    const fsl_tensor *tensors[] = {&in, &out};
    auto launch = [&] {
      if (fsl_jit_session_launch(session, "softmax", tensors, 2, nullptr, 0, stream, error,
                                 sizeof error) != FSL_OK) {
        std::fprintf(stderr, "launch_cost: %s\n", error);
        std::exit(1);
      }
    };
    launch();
    time("fsl_jit_session_prepare (softmax)", [&] {
      fsl_jit_session_prepare(session, "softmax", tensors, 2, nullptr, 0, nullptr, error,
                              sizeof error);
    });
    time("fsl_jit_session_launch (softmax)", launch);
    fsl_jit_session_destroy(session);
    fsl_program_free(program);
  }

  std::printf("| launch | host µs a call |\n|---|---|\n");
  for (const Row &row : table)
    std::printf("| %s | %.2f |\n", row.what, row.us);
  return 0;
}
