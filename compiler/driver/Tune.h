// Tune.h — `fslc tune`: a fusion's schedule candidates at given sizes, compiled, pruned
// and written with a manifest for the timing runner (python/fslc/tune.py), which measures
// them on a GPU and records the winners in a tuning database (docs/tuning.md).
//
//   fslc tune FILE --fusion NAME --shapes "M=4096,N=14336,K=5120;M=128,N=4096,K=4096"
//             [--shapes-file FILE] -o DIR [--target NAME] [-I DIR] [-D NAME=VALUE]
//             [--config fsl.toml] [--stdlib DIR]
#pragma once

#include <llvm/ADT/ArrayRef.h>

namespace llvm {
class raw_ostream;
}

namespace fsl {

/// Runs `fslc tune` with the arguments after `tune`; the exit code (0: the manifest was
/// written, 1: the input has errors, 2: usage or file errors).
int runTune(llvm::ArrayRef<const char *> args, const char *executablePath, llvm::raw_ostream &out,
            llvm::raw_ostream &err);

} // namespace fsl
