// program_specializer.h — the session's specializer over a loaded program: the compiler's
// fsl_program_specialize, its result copied into a Specialized.
#pragma once

#include "fsl/compiler.h"
#include "session.h"

namespace fsl::jit {

/// Generates a fusion of `program` (which must outlive the specializer) with sizes static.
Specializer programSpecializer(const fsl_program *program);

} // namespace fsl::jit
