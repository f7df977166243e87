// validation_test.cpp — the generated launcher refuses bad tensors before launching.
//
// Built with nvcc against the generated rms_norm_add.cu and run without a GPU: every
// case here fails its checks before any CUDA call, so the pointers are never touched
// (they are addresses of a host array, never dereferenced).
#include "rms_norm_add.h"

#include "FakeTensor.h"

#include <cstdio>
#include <cstring>

namespace {

using fsl_test::tensor;

int failures = 0;
int checks = 0;

struct Case {
  fsl_tensor x = tensor(0, FSL_BF16, {4, 4096});
  fsl_tensor residual = tensor(0, FSL_BF16, {4, 4096});
  fsl_tensor weight = tensor(0, FSL_BF16, {4096});
  fsl_tensor y = tensor(0, FSL_BF16, {4, 4096});
  Case() {
    // Separate, aligned regions for each tensor: 4 x 4096 bf16 = 32 KiB would not fit
    // four times, but nothing is dereferenced: give them distinct far-apart addresses.
    x.data = reinterpret_cast<void *>(0x10000000);
    residual.data = reinterpret_cast<void *>(0x20000000);
    weight.data = reinterpret_cast<void *>(0x30000000);
    y.data = reinterpret_cast<void *>(0x40000000);
  }
  fsl_status run() { return fsl_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr); }
};

void expect(const char *name, fsl_status got, fsl_status want, const char *fragment) {
  ++checks;
  const char *message = fsl_rms_norm_add_error();
  if (got != want || (fragment && !std::strstr(message, fragment))) {
    ++failures;
    std::printf("FAIL %s: status %d (want %d), message \"%s\" (want \"%s\")\n", name, got, want,
                message, fragment ? fragment : "");
  } else {
    std::printf("ok   %s: %s\n", name, fragment ? message : "FSL_OK");
  }
}

} // namespace

int main() {
  {
    Case c;
    c.x.data = nullptr;
    expect("null pointer", c.run(), FSL_ERROR_NULL_POINTER, "x: null data pointer");
  }
  {
    Case c;
    c.x.dtype = FSL_F32;
    expect("dtype", c.run(), FSL_ERROR_DTYPE, "x: dtype f32, expected bf16");
  }
  {
    Case c;
    c.weight = tensor(0, FSL_BF16, {1, 4096});
    c.weight.data = reinterpret_cast<void *>(0x30000000);
    expect("rank", c.run(), FSL_ERROR_RANK, "weight: rank 2, expected 1");
  }
  {
    Case c;
    c.residual.sizes[0] = 5;
    c.residual.strides[0] = 4096;
    expect("shared dimension", c.run(), FSL_ERROR_SIZE,
           "residual: size 5 of dimension T, expected 4");
  }
  {
    Case c;
    c.weight.sizes[0] = 2048;
    expect("static dimension", c.run(), FSL_ERROR_SIZE,
           "weight: size 2048 of dimension H, expected 4096 (static)");
  }
  {
    Case c;
    c.y.strides[0] = 8192;
    expect("layout", c.run(), FSL_ERROR_LAYOUT, "y: stride 8192 in dimension 0, expected 4096");
  }
  {
    Case c;
    c.x.data = reinterpret_cast<void *>(0x10000002);
    expect("alignment", c.run(), FSL_ERROR_ALIGNMENT,
           "x: data pointer 0x10000002 is not aligned to 16 bytes");
  }
  {
    Case c;
    c.y.data = reinterpret_cast<void *>(0x10000010);
    expect("overlap", c.run(), FSL_ERROR_OVERLAP, "y overlaps x in memory");
  }
  {
    Case c;
    c.residual.data = c.x.data;
    expect("inout overlap", c.run(), FSL_ERROR_OVERLAP, "residual overlaps x in memory");
  }
  {
    Case c;
    c.x.sizes[0] = c.residual.sizes[0] = c.y.sizes[0] = 0;
    expect("no rows: nothing to launch", c.run(), FSL_OK, nullptr);
  }
  {
    // The message is the last call's: a call that succeeds clears the one an earlier
    // failure left. (A call that launches clears it too; the launch's own status, not an
    // earlier CUDA error of the program, decides its result: launch_status_test.cu checks
    // that on a GPU.)
    Case bad;
    bad.x.data = nullptr;
    expect("a failure leaves its message", bad.run(), FSL_ERROR_NULL_POINTER, "x: null");
    Case empty;
    empty.x.sizes[0] = empty.residual.sizes[0] = empty.y.sizes[0] = 0;
    expect("a later success clears it", empty.run(), FSL_OK, nullptr);
    ++checks;
    if (*fsl_rms_norm_add_error() != '\0') {
      ++failures;
      std::printf("FAIL message after success: \"%s\" (want \"\")\n", fsl_rms_norm_add_error());
    } else {
      std::printf("ok   message after success: \"\"\n");
    }
  }
  std::printf("launcher validation: %d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
