// OutputPath.h — what -o names: a folder for every output, or the one output file.
//
// `-o out` puts each output, named after its input or fusion, into the folder `out`.
// `-o x.cu` names the file itself when it has the extension of what --emit writes, as
// clang's -o does; there must then be exactly one such output (one input, and for the
// kinds written per fusion, one fusion), which the driver checks. docs/driver.md states
// the rules.
#pragma once

#include "driver/Driver.h"

#include <llvm/ADT/StringRef.h>

#include <string>

namespace fsl {

/// `--emit=<name>`'s name: `cuda`.
llvm::StringRef emitName(EmitKind emit);

/// The extension of the file --emit writes for each input or fusion (`.cu` for cuda: the
/// header `.h` goes beside it; `.txt` for check, written by --evaluate only).
llvm::StringRef outputExtension(EmitKind emit, bool resolved);

/// Whether --emit writes one output per fusion (cuda, ptx, cubin) rather than per input.
bool writesPerFusion(EmitKind emit);

enum class OutputPathKind {
  Folder,        // an existing folder, a path ending in '/', or with no output extension
  File,          // the extension of what --emit writes: `x.cu` for cuda
  WrongExtension // the extension of another kind's output: `x.cu` for --emit=format
};

/// How fslc reads `path`, given with -o (or fsl.toml's output) for `emit`.
OutputPathKind classifyOutputPath(llvm::StringRef path, EmitKind emit, bool resolved);

} // namespace fsl
