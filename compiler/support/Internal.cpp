// Internal.cpp — the internal-error path.
#include "support/Internal.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdlib>

namespace fsl {

void internalError(const char *file, int line, const char *condition, const char *message) {
  llvm::errs() << "fslc internal error: " << message << " (" << condition << " at " << file << ":"
               << line << ")\nThis is a bug in fslc, not in your program; please report it.\n";
  llvm::errs().flush();
  std::abort();
}

} // namespace fsl
