// launch_status_test.cu — the launcher's status is its own launch's (needs a GPU).
//
// Built by cuda_checks.sh against the generated rms_norm_add.cu (run there when a GPU is
// visible, else only compiled; tests/gpu/run.sh-style machines run it). Checks:
//   1. An earlier, unrelated CUDA error (a failed cudaMalloc) is neither returned by the
//      launcher nor cleared by it: the launcher succeeds, and the program still sees its
//      own error with cudaGetLastError afterwards.
//   2. A launch that fails (into the legacy stream during a global stream capture) is
//      reported as FSL_ERROR_LAUNCH with the kernel's name and the CUDA error; a grid
//      beyond the target's limits is FSL_ERROR_SIZE, refused before any CUDA call.
//   3. A call that succeeds leaves fsl_rms_norm_add_error() empty, after a failure.
#include "FakeTensor.h"
#include "rms_norm_add.h"

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void check(const char *name, bool ok, const char *detail = "") {
  failures += ok ? 0 : 1;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name, *detail ? ": " : "", detail);
}

fsl_tensor tensor(void *data, std::initializer_list<int64_t> sizes) {
  return fsl_test::contiguous(data, FSL_BF16, sizes);
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("launch status: no GPU, skipped\n");
    return 0;
  }
  const int64_t T = 256, H = 4096;
  void *buffers[4] = {};
  for (void *&b : buffers)
    if (cudaMalloc(&b, T * H * 2) != cudaSuccess) {
      std::printf("cudaMalloc failed\n");
      return 1;
    }
  cudaMemset(buffers[0], 0, T * H * 2);
  cudaMemset(buffers[1], 0, T * H * 2);
  cudaMemset(buffers[2], 0, H * 2);
  fsl_tensor x = tensor(buffers[0], {T, H}), residual = tensor(buffers[1], {T, H});
  fsl_tensor weight = tensor(buffers[2], {H}), y = tensor(buffers[3], {T, H});

  // 1. An earlier error of the program: an allocation far too large (not sticky).
  void *huge = nullptr;
  cudaError_t earlier = cudaMalloc(&huge, size_t(1) << 62);
  check("setup: the huge cudaMalloc fails", earlier != cudaSuccess, cudaGetErrorString(earlier));
  fsl_status status = fsl_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr);
  check("the launcher ignores the earlier error", status == FSL_OK, fsl_rms_norm_add_error());
  check("... and leaves it to the program", cudaGetLastError() == earlier);
  check("... and the kernel ran", cudaDeviceSynchronize() == cudaSuccess);
  check("no message after a success", *fsl_rms_norm_add_error() == '\0', fsl_rms_norm_add_error());

  // 2. A launch that fails: into the legacy default stream while a blocking stream captures
  // in global mode, which CUDA refuses (cudaErrorStreamCaptureImplicit; not sticky).
  cudaStream_t capturing = nullptr;
  cudaStreamCreate(&capturing); // a blocking stream: the legacy stream waits on it
  cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal);
  status = fsl_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr);
  const char *message = fsl_rms_norm_add_error();
  check("a failed launch is FSL_ERROR_LAUNCH", status == FSL_ERROR_LAUNCH, message);
  check("... named after its kernel", std::strstr(message, "rms_norm_add_v") == message, message);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capturing, &graph); // invalidated by the refused launch
  if (graph)
    cudaGraphDestroy(graph);
  cudaStreamDestroy(capturing);
  cudaGetLastError(); // the failed launch's error, which CUDA records as usual

  // 2b. A grid beyond the target's limits is refused before any CUDA call: 2^31 rows is
  // one block more than gridDim.x allows. The tensors are far-apart fake addresses (never
  // dereferenced: nothing launches), and CUDA records no error.
  const int64_t rows = int64_t(1) << 31;
  fsl_tensor bx = tensor(reinterpret_cast<void *>(uintptr_t(1) << 45), {rows, H});
  fsl_tensor br = tensor(reinterpret_cast<void *>(uintptr_t(2) << 45), {rows, H});
  fsl_tensor by = tensor(reinterpret_cast<void *>(uintptr_t(3) << 45), {rows, H});
  status = fsl_rms_norm_add(&bx, &br, &weight, 1e-6f, &by, nullptr);
  message = fsl_rms_norm_add_error();
  check("a grid beyond the limits is FSL_ERROR_SIZE", status == FSL_ERROR_SIZE, message);
  check("... named after its kernel and the extent",
        std::strstr(message, "rms_norm_add_v0: grid extent 2147483648 along x (T)") == message,
        message);
  check("... and nothing was launched", cudaGetLastError() == cudaSuccess);

  // 3. A success after the failure clears the message.
  status = fsl_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr);
  check("a later success", status == FSL_OK && cudaDeviceSynchronize() == cudaSuccess,
        fsl_rms_norm_add_error());
  check("... clears the message", *fsl_rms_norm_add_error() == '\0', fsl_rms_norm_add_error());

  for (void *b : buffers)
    cudaFree(b);
  std::printf("launch status: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
