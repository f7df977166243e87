// LargeStack.h — runs a function on a thread with a large stack.
//
// Parsing and the recursive AST walks are bounded by ParseLimits, but the bound is set
// generously; running the compiler on a thread with a big (lazily committed) stack
// keeps every accepted input far from the main thread's 8 MiB.
#pragma once

#include <cstddef>
#include <functional>

namespace fsl {

/// Runs `body` on a new thread with `stackBytes` of stack and waits for it.
/// Falls back to the calling thread if such a thread cannot be created.
int runWithLargeStack(const std::function<int()> &body, size_t stackBytes = size_t(512) << 20);

} // namespace fsl
