// FakeTensor.h — tensor descriptors for the launcher tests: `contiguous` over any address,
// and `tensor` over a host array for tests that run without a GPU (every case fails the
// launcher's checks before any CUDA call, so the addresses are never dereferenced).
#pragma once

#include "fsl/runtime.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace fsl_test {

alignas(64) inline unsigned char fake[1 << 20];

/// A contiguous row-major tensor of `sizes` at `data`.
inline fsl_tensor contiguous(void *data, fsl_dtype dtype, std::initializer_list<int64_t> sizes) {
  fsl_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(sizes.size());
  int i = 0;
  for (int64_t size : sizes)
    t.sizes[i++] = size;
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.sizes[d];
  }
  return t;
}

/// A contiguous row-major tensor of `sizes` at `offsetBytes` into the host array.
inline fsl_tensor tensor(size_t offsetBytes, fsl_dtype dtype,
                         std::initializer_list<int64_t> sizes) {
  return contiguous(fake + offsetBytes, dtype, sizes);
}

} // namespace fsl_test
