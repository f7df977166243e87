// sha256.h — SHA-256 (FIPS 180-4) for the JIT cache's keys; internal to the runtime.
//
// The runtime links only the CUDA toolkit (and libdl), so neither LLVM's SHA256 nor a
// crypto library is available to it (docs/runtime.md, "The JIT cache" says why). This is
// the standard's algorithm, checked against its test vectors in tests/runtime/jit_test.cpp.
#ifndef FSL_RUNTIME_SHA256_H
#define FSL_RUNTIME_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fsl::jit_detail {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;
  Sha256();
  void update(const void *data, size_t size);
  void update(const std::string &text) { update(text.data(), text.size()); }
  /// The digest of everything given; the object is spent afterwards.
  Digest final();

private:
  void compress(const uint8_t block[64]);
  std::array<uint32_t, 8> state_;
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes given so far
};

Sha256::Digest sha256(const void *data, size_t size);
/// Lowercase hexadecimal of a digest: 64 characters.
std::string hex(const Sha256::Digest &digest);
inline std::string sha256Hex(const std::string &text) {
  return hex(sha256(text.data(), text.size()));
}

} // namespace fsl::jit_detail

#endif // FSL_RUNTIME_SHA256_H
