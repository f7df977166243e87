// jit_test.cpp — the runtime's NVRTC compile and on-disk cache, without a GPU.
// usage: jit_test GENERATED.cu CACHE_DIR
#include "fsl/jit.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {
int checks = 0, failures = 0;
void expect(bool ok, const char *what, const char *detail = "") {
  ++checks;
  if (!ok)
    ++failures;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, *detail ? ": " : "", detail);
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: jit_test GENERATED.cu CACHE_DIR\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  char error[4096] = "";

  fsl_jit_binary first{}, second{}, other{};
  fsl_status status = fsl_jit_compile(source.c_str(), "softmax.cu", "sm_90a", nullptr, 0, argv[2],
                                      &first, error, sizeof error);
  expect(status == FSL_OK && first.size > 0 && !first.cache_hit, "first compile misses the cache",
         error);
  status = fsl_jit_compile(source.c_str(), "softmax.cu", "sm_90a", nullptr, 0, argv[2], &second,
                           error, sizeof error);
  expect(status == FSL_OK && second.cache_hit, "second compile reads the cache", second.path);
  expect(first.size == second.size && std::memcmp(first.data, second.data, first.size) == 0,
         "the cached cubin is the compiled one");
  const char *options[] = {"-DFSL_TEST_VARIANT=1"};
  status = fsl_jit_compile(source.c_str(), "softmax.cu", "sm_90a", options, 1, argv[2], &other,
                           error, sizeof error);
  expect(status == FSL_OK && !other.cache_hit && std::strcmp(other.path, first.path) != 0,
         "other options are another cache entry");
  fsl_jit_binary broken{};
  std::string bad = source + "\n__global__ void broken() { undeclared_name = 1; }\n";
  status = fsl_jit_compile(bad.c_str(), "broken.cu", "sm_90a", nullptr, 0, argv[2], &broken, error,
                           sizeof error);
  expect(status == FSL_ERROR_COMPILE && std::strstr(error, "undeclared_name"),
         "a compile error returns NVRTC's log",
         status == FSL_ERROR_COMPILE ? "FSL_ERROR_COMPILE" : "");
  status =
      fsl_jit_compile(nullptr, "x.cu", "sm_90a", nullptr, 0, argv[2], &broken, error, sizeof error);
  expect(status == FSL_ERROR_NULL_POINTER, "a null source is refused", error);
  fsl_jit_free(&first);
  fsl_jit_free(&second);
  fsl_jit_free(&other);
  std::printf("jit: %d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
