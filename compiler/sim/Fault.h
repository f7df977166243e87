// Fault.h — how the simulator stops at a kernel's mistake: a Fault thrown from wherever it
// is found, turned into runKernel's llvm::Error with the block and thread it happened in.
#pragma once

#include <llvm/ADT/Twine.h>

#include <stdexcept>
#include <string>

namespace fsl::sim {

/// A kernel fault: becomes the llvm::Error of runKernel, never escapes it. `located`: the
/// message already says which block and thread.
struct Fault : std::runtime_error {
  Fault(const std::string &message, bool located) : std::runtime_error(message), located(located) {}
  bool located;
};

/// A fault whose block and thread the caller adds (Interpreter::located).
[[noreturn]] inline void fail(const llvm::Twine &message) { throw Fault(message.str(), false); }

} // namespace fsl::sim
