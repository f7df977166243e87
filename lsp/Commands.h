// Commands.h — workspace/executeCommand: the generated CUDA (`fsl.showGeneratedCuda`)
// or the Kernel IR (`fsl.showKernelIR`) of the fusion under the cursor, as
// `fslc --emit=cuda` and `fslc --emit=kernel-ir` print them.
#pragma once

#include "lsp/Analysis.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/JSON.h>

namespace fsl::lsp {

/// `{"fusion": NAME, "language": "cuda" | "kernel-ir", "text": ...}`; an error naming
/// what is missing when there is no fusion at `loc` or it was not lowered.
llvm::Expected<llvm::json::Value> runCommand(const Analysis &analysis, llvm::StringRef command,
                                             llvm::SMLoc loc);

} // namespace fsl::lsp
