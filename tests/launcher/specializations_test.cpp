// specializations_test.cpp — two specializations of one fusion in one program.
//
// cuda_checks.sh generates examples/rms_norm_add.fsl twice, with -D H=4096 --prefix=h4096_
// and -D H=8192 --prefix=h8192_, compiles both with nvcc and links them with this file:
// their kernels, launchers and headers must not collide. Runs without a GPU: each call
// stops at a size check or at the empty-tensor return, before any CUDA call.
#include "FakeTensor.h"
#include "h4096_rms_norm_add.h"
#include "h8192_rms_norm_add.h"

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

fsl_tensor tensor(uintptr_t address, std::initializer_list<int64_t> sizes) {
  return fsl_test::contiguous(reinterpret_cast<void *>(address), FSL_BF16,
                              sizes); // never dereferenced
}

void expect(const char *name, fsl_status got, fsl_status want, const char *message,
            const char *fragment) {
  bool ok = got == want && (fragment ? std::strstr(message, fragment) != nullptr : !*message);
  failures += ok ? 0 : 1;
  std::printf("%s %s: status %d, message \"%s\"\n", ok ? "ok  " : "FAIL", name, got, message);
}

} // namespace

int main() {
  // No rows of H = 8192: the H = 8192 specialization accepts them, the H = 4096 one
  // refuses the static size. Both are linked, and each is itself.
  fsl_tensor x = tensor(0x10000000, {0, 8192}), residual = tensor(0x20000000, {0, 8192});
  fsl_tensor weight = tensor(0x30000000, {8192}), y = tensor(0x40000000, {0, 8192});
  expect("h8192 takes H = 8192", h8192_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr),
         FSL_OK, h8192_rms_norm_add_error(), nullptr);
  expect("h4096 refuses H = 8192", h4096_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr),
         FSL_ERROR_SIZE, h4096_rms_norm_add_error(), "expected 4096 (static)");
  // Each launcher has its own message.
  expect("h8192's message is untouched by h4096's failure", FSL_OK, FSL_OK,
         h8192_rms_norm_add_error(), nullptr);
  std::printf("specializations: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
