// Calls both generated launchers with tensors of the wrong static size: each refuses
// them before any CUDA call (no GPU needed), and its message shows its own H, so both
// libraries are linked and distinct.
#include "h1024_gated.h"
#include "h2048_gated.h"

#include <cstdio>
#include <cstring>

namespace {

fsl_tensor tensor(void *data, int64_t rows, int64_t h) {
  fsl_tensor t{};
  t.data = data;
  t.dtype = FSL_BF16;
  t.rank = 2;
  t.sizes[0] = rows;
  t.sizes[1] = h;
  t.strides[0] = h;
  t.strides[1] = 1;
  return t;
}

int check(const char *name, fsl_status status, const char *message, const char *expected) {
  bool ok = status == FSL_ERROR_SIZE && std::strstr(message, expected) != nullptr;
  std::printf("%s %s: status %d, \"%s\"\n", ok ? "ok  " : "FAIL", name, status, message);
  return ok ? 0 : 1;
}

} // namespace

int main() {
  // Distinct, aligned addresses that are never dereferenced.
  void *x = reinterpret_cast<void *>(0x10000000), *gate = reinterpret_cast<void *>(0x20000000),
       *y = reinterpret_cast<void *>(0x30000000);
  int failures = 0;
  {
    fsl_tensor tx = tensor(x, 4, 2048), tg = tensor(gate, 4, 2048), ty = tensor(y, 4, 2048);
    failures += check("h1024_gated", h1024_gated(&tx, &tg, &ty, nullptr), h1024_gated_error(),
                      "expected 1024");
  }
  {
    fsl_tensor tx = tensor(x, 4, 1024), tg = tensor(gate, 4, 1024), ty = tensor(y, 4, 1024);
    failures += check("h2048_gated", h2048_gated(&tx, &tg, &ty, nullptr), h2048_gated_error(),
                      "expected 2048");
  }
  return failures == 0 ? 0 : 1;
}
