// Expect.h — the check-and-report helpers of the runtime's test programs (jit_test,
// jit_session_test, and tests/gpu/specialize_gpu_test.cu): one "ok"/"FAIL" line a check,
// a summary line, the exit status.
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace fsl_test {

inline int checks = 0, failures = 0;

inline void expect(bool ok, const std::string &what, const std::string &detail = "") {
  ++checks;
  failures += !ok;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
  std::fflush(stdout);
}

/// "NAME: P passed, F failed"; the exit status (1 on any failure).
inline int report(const char *name) {
  std::printf("%s: %d passed, %d failed\n", name, checks - failures, failures);
  return failures ? 1 : 0;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace fsl_test
