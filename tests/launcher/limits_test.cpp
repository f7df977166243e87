// limits_test.cpp — generated launchers refuse what cannot launch, or what would launch
// wrong, before any CUDA call; and a call with nothing to do returns FSL_OK whatever its
// data pointers (issue 16).
//
// Built with nvcc against the generated rms_norm_add.cu (examples/rms_norm_add.fsl: rows
// on BIDx, 16-byte vectors) and rows.cu (tests/launcher/rows.fsl: rows on BIDy, a runtime
// block, f32 without vectors) and run without a GPU. Every case but the empty ones fails
// its checks before any CUDA call: the addresses are never dereferenced. On today's main
// these launched (or tried to), returned FSL_OK, or refused the empty call.
#include "rms_norm_add.h"
#include "row_sum.h"
#include "rows.h"

#include "FakeTensor.h"

#include <cstdio>
#include <cstring>

namespace {

using fsl_test::tensor;

int failures = 0;
int checks = 0;

void expect(const char *name, fsl_status got, fsl_status want, const char *message,
            const char *fragment) {
  ++checks;
  if (got != want || (fragment && !std::strstr(message, fragment))) {
    ++failures;
    std::printf("FAIL %s: status %d (want %d), message \"%s\" (want \"%s\")\n", name, got, want,
                message, fragment ? fragment : "");
  } else {
    std::printf("ok   %s: %s\n", name, fragment ? message : "FSL_OK");
  }
}

/// A far-away address: the tensors below are large, and must not overlap.
void *at(uint64_t terabytes) { return reinterpret_cast<void *>(terabytes << 40); }

/// rms_norm_add with T rows, each tensor in its own terabyte-spaced region.
struct Norm {
  fsl_tensor x, residual, weight, y;
  explicit Norm(int64_t T)
      : x(tensor(0, FSL_BF16, {T, 4096})), residual(tensor(0, FSL_BF16, {T, 4096})),
        weight(tensor(0, FSL_BF16, {4096})), y(tensor(0, FSL_BF16, {T, 4096})) {
    x.data = at(64);
    residual.data = at(128);
    weight.data = at(192);
    y.data = at(256);
  }
  fsl_status run() { return fsl_rms_norm_add(&x, &residual, &weight, 1e-6f, &y, nullptr); }
  void expect(const char *name, fsl_status want, const char *fragment) {
    fsl_status got = run();
    ::expect(name, got, want, fsl_rms_norm_add_error(), fragment);
  }
};

struct Rows {
  fsl_tensor x, y;
  Rows(int64_t T, int64_t H) : x(tensor(0, FSL_F32, {T, H})), y(tensor(0, FSL_F32, {T, H})) {
    x.data = at(64);
    y.data = at(128);
  }
  void expect(const char *name, fsl_status want, const char *fragment) {
    fsl_status got = fsl_rows(&x, &y, nullptr);
    ::expect(name, got, want, fsl_rows_error(), fragment);
  }
};

/// row_sum (tests/launcher/row_sum.fsl): a grid reduction of T rows of H.
struct RowSum {
  fsl_tensor x, s;
  RowSum(int64_t T, int64_t H) : x(tensor(0, FSL_F32, {T, H})), s(tensor(0, FSL_F32, {T})) {
    x.data = at(64);
    s.data = at(128);
  }
  void expect(const char *name, fsl_status want, const char *fragment) {
    fsl_status got = fsl_row_sum(&x, &s, nullptr);
    ::expect(name, got, want, fsl_row_sum_error(), fragment);
  }
};

} // namespace

int main() {
  // --- Grid and block limits of the target, for runtime extents ----------------------
  {
    // (unsigned)T launched 5 blocks and returned FSL_OK on an H200.
    Norm c((int64_t(1) << 32) + 5);
    c.expect("BIDx over 2^31 - 1", FSL_ERROR_SIZE,
             "grid extent 4294967301 along x (T) is outside 1..2147483647 on h200");
  }
  {
    // --simulate said "matches"; the GPU said "invalid argument".
    Rows c(70000, 128);
    c.expect("BIDy over 65535", FSL_ERROR_SIZE,
             "rows_v0: grid extent 70000 along y (T) is outside 1..65535 on h200");
  }
  {
    Rows c(4, 2048);
    c.expect("a block of 2048 threads", FSL_ERROR_SIZE,
             "rows_v0: block extent 2048 along x (H) is outside 1..1024 on h200");
  }
  // --- Element and byte counts are checked, never wrapped ----------------------------
  {
    // 2^51 x 4096 x 2 bytes = 2^64: the overlap check saw 0 bytes and let y == x through.
    Norm c(int64_t(1) << 51);
    c.y.data = c.x.data;
    c.expect("y == x with 2^64 bytes", FSL_ERROR_SIZE,
             "x: size 2251799813685248 in dimension 0 makes more than 2^63 - 1 bytes");
  }
  {
    Norm c((int64_t(1) << 60) + 1);
    c.y.data = c.x.data;
    c.expect("y == x with T = 2^60 + 1", FSL_ERROR_SIZE, "makes more than 2^63 - 1 bytes");
  }
  {
    // Byte counts that fit: the overlap check sees the whole tensors (2^45 bytes each).
    Norm c((int64_t(1) << 32) + 5);
    c.y.data = static_cast<char *>(c.x.data) + (int64_t(1) << 44);
    c.expect("y inside x, far from its start", FSL_ERROR_OVERLAP, "y overlaps x in memory");
  }
  {
    fsl_tensor x = tensor(0, FSL_F32, {4, 8}), y = tensor(0, FSL_F32, {4, 8});
    x.data = reinterpret_cast<void *>(UINTPTR_MAX - 63);
    y.data = at(1);
    fsl_status got = fsl_rows(&x, &y, nullptr);
    expect("a tensor past the end of the address space", got, FSL_ERROR_SIZE, fsl_rows_error(),
           "x: 128 bytes at");
  }
  // --- Natural alignment of every tensor, vectors or not -----------------------------
  {
    // An f32 pointer 2 bytes off faulted with a sticky "misaligned address".
    Rows c(4, 128);
    c.x.data = static_cast<char *>(c.x.data) + 2;
    c.expect("f32 two bytes off, no vectors", FSL_ERROR_ALIGNMENT,
             "is not aligned to its 4-byte elements");
  }
  {
    Norm c(4);
    c.weight.data = static_cast<char *>(c.weight.data) + 1;
    c.expect("bf16 one byte off", FSL_ERROR_ALIGNMENT,
             "weight: data pointer 0xc00000000001 is not aligned to its 2-byte elements");
  }
  // --- Empty tensors: no launch, FSL_OK, whatever the data pointer -------------------
  {
    // PyTorch's empty tensors have null data.
    Norm c(0);
    c.x.data = c.residual.data = c.y.data = nullptr;
    c.expect("no rows, null data", FSL_OK, nullptr);
  }
  {
    Norm c(0);
    c.x.data = reinterpret_cast<void *>(0x3);
    c.y.data = c.x.data;
    c.weight.data = nullptr;
    c.expect("no rows: no pointer is looked at", FSL_OK, nullptr);
  }
  {
    Rows c(5, 0);
    c.x.data = c.y.data = nullptr;
    c.x.strides[0] = c.y.strides[0] = 0;
    c.expect("empty rows, null data and any stride", FSL_OK, nullptr);
  }
  {
    // A sum over an empty row has no elements to reduce: the launcher returned FSL_OK and
    // left s unwritten. No rows at all is still nothing to do.
    RowSum c(5, 0);
    c.x.data = nullptr;
    c.expect("rows without elements to reduce", FSL_ERROR_SIZE,
             "H is 0, but s[T] has elements, which cannot be computed over an empty H");
    RowSum d(0, 0);
    d.x.data = d.s.data = nullptr;
    d.expect("no rows and empty rows", FSL_OK, nullptr);
    RowSum e(0, 9);
    e.x.data = e.s.data = nullptr;
    e.expect("no rows", FSL_OK, nullptr);
  }
  {
    // What is not a data pointer is still checked.
    Norm c(0);
    c.x.data = nullptr;
    c.y.dtype = FSL_F32;
    c.expect("no rows, but a wrong dtype", FSL_ERROR_DTYPE, "y: dtype f32, expected bf16");
    Rows d(0, 128);
    fsl_status got = fsl_rows(nullptr, &d.y, nullptr);
    ::expect("no rows, but a null descriptor", got, FSL_ERROR_NULL_POINTER, fsl_rows_error(),
             "x: null tensor descriptor");
  }
  std::printf("launcher limits: %d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
