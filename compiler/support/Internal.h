// Internal.h — compiler bugs, kept apart from user diagnostics.
//
// A user's mistake is reported through the DiagnosticEngine with a registry id and a
// location. A broken invariant of the compiler itself is not the user's fault and has no
// registry id: FSL_INTERNAL_ASSERT prints "fslc internal error" with the file and line
// and aborts (with LLVM's stack trace), in release builds too (Halide's internal_assert
// against user_error).
#pragma once

#include <llvm/Support/ErrorHandling.h>

namespace fsl {

[[noreturn]] void internalError(const char *file, int line, const char *condition,
                                const char *message);

} // namespace fsl

#define FSL_INTERNAL_ASSERT(condition, message)                                                    \
  do {                                                                                             \
    if (!(condition))                                                                              \
      ::fsl::internalError(__FILE__, __LINE__, #condition, message);                               \
  } while (false)

/// After an exhaustive switch: reached only when an enum holds a value outside its list.
#define FSL_UNREACHABLE(what) ::fsl::internalError(__FILE__, __LINE__, "unreachable", what)
