// tma_validation_test.cpp — a matmul launcher refuses what TMA cannot copy, by name,
// before any CUDA call.
//
// Built with nvcc against the generated linear_bias_gelu.cu (examples/
// linear_bias_gelu_simple.fsl) and run without a GPU: the tensor-map checks come before
// the driver is asked for cuTensorMapEncodeTiled, so nothing is launched and the host
// addresses below are never dereferenced.
#include "linear_bias_gelu.h"

#include "FakeTensor.h"

#include <cstdio>
#include <cstring>

namespace {


fsl_tensor tensor(size_t offsetBytes, std::initializer_list<int64_t> sizes) {
  return fsl_test::tensor(offsetBytes, FSL_BF16, sizes);
}

int failures = 0;

void expect(const char *what, fsl_status status, fsl_status expected, const char *message) {
  const char *got = fsl_linear_bias_gelu_error();
  bool ok = status == expected && std::strstr(got, message) != nullptr;
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", what, got);
  failures += !ok;
}

} // namespace

int main() {
  // M = 8, N = 16; a, w, bias and y in separate regions.
  {
    // a two bytes past an aligned address: bf16-aligned, but not what TMA can read.
    fsl_tensor a = tensor(2, {8, 64}), w = tensor(65536, {16, 64}), bias = tensor(131072, {16}),
               y = tensor(196608, {8, 16});
    expect("misaligned a", fsl_linear_bias_gelu(&a, &w, &bias, &y, nullptr), FSL_ERROR_ALIGNMENT,
           "a: data pointer");
  }
  {
    // K = 4: rows of 8 bytes.
    fsl_tensor a = tensor(0, {8, 4}), w = tensor(65536, {16, 4}), bias = tensor(131072, {16}),
               y = tensor(196608, {8, 16});
    expect("rows of 8 bytes", fsl_linear_bias_gelu(&a, &w, &bias, &y, nullptr), FSL_ERROR_SIZE,
           "a: rows of 8 bytes are not a multiple of 16 bytes");
  }
  std::printf("tma validation: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
