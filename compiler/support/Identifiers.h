// Identifiers.h — the names generated C++ may not declare.
//
// The printers' naming scope (codegen/Naming.h) renames an entity named so; a fusion's
// name is also a C symbol (its launcher `fsl_<fusion>`, kernels `<fusion>_vN`), so sema
// refuses the few fusion names whose symbols are not legal or not free.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace fsl {

/// Whether C++, CUDA, the C library or fslc's runtime own `name`, so that generated code
/// may not declare it: keywords, types, builtins (`threadIdx`), math functions, the
/// runtime's `fsl_`/`FSL_` and CUDA's `cuda`/`CU_` prefixes, and the identifiers C++
/// reserves (`__x`, `_X`).
bool isReservedIdentifier(llvm::StringRef name);

/// Whether `name` is a global name of fslc's runtime (fsl/runtime.h, fsl/device.cuh) or
/// of every launcher (its helpers).
bool isRuntimeName(llvm::StringRef name);

/// Why a fusion may not be called `fusion` (its kernels' symbols would be reserved by
/// C++, or its launcher would redeclare a type or variable of the runtime), if it may not.
std::optional<std::string> reservedFusionName(llvm::StringRef fusion);

} // namespace fsl
