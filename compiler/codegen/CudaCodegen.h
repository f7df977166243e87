// CudaCodegen.h — a Kernel IR program as readable CUDA, a C-ABI launcher and its header.
//
// One .cu per fusion holds every kernel of the program (KernelPrinter.h), the launcher
// that checks the tensors, picks the variant by its guard and launches its kernels, and an
// error message function (LauncherPrinter.h); the .h documents each parameter's type and
// dimensions. Names come from the fusion's tensors and loops, and each loop carries a
// comment naming the directive that made it (and, given a sourceLocation, its line).
// Generated code needs only the CUDA toolkit and runtime/include (the device helpers are
// fsl/device.cuh), and builds without warnings under -Werror.
#pragma once

#include "kir/IR.h"
#include "support/Target.h"

#include <llvm/Support/SMLoc.h>

#include <functional>
#include <string>

namespace fsl::codegen {

struct GeneratedSources {
  /// `<symbolPrefix><fusion>`: the files are `<name>.cu` and `<name>.h` (the .cu includes
  /// the header by that name).
  std::string name;
  std::string header; // <name>.h
  std::string source; // <name>.cu
};

struct CodegenOptions {
  /// Names the external symbols and the header, so that several specializations of one
  /// fusion (other -D values, other targets) link into one executable. With a prefix P:
  /// the launcher `P<fusion>` and `P<fusion>_error`, the kernels `P<fusion>_v<i>`, the
  /// header `P<fusion>.h` (its include guard and the .cu's #include follow). Empty: the
  /// plain names `fsl_<fusion>`, `fsl_<fusion>_error`, `<fusion>_v<i>`, `<fusion>.h`.
  /// It must be a C identifier prefix ([A-Za-z_][A-Za-z0-9_]*), which the driver checks.
  std::string symbolPrefix;
  /// "file.fsl:LINE" of a range of the sources (empty: unknown), for the comments that
  /// map the kernels' statements back to the fusion's statements and the schedule's
  /// directives. The path must be relative, so that generated sources do not depend on
  /// where they were generated (docs/runtime.md): the input's bare file name, a module
  /// relative to the input's directory or to the import directory it was found in.
  /// Unset: no location comments.
  std::function<std::string(llvm::SMRange)> sourceLocation;
  /// Launch with the programmatic-stream-serialization attribute (sm_90 and later), so a
  /// kernel's launch overlaps the end of the previous one in the stream.
  bool programmaticDependentLaunch = false;
  /// The target's grid, block, cluster and shared-memory limits: the launcher refuses a
  /// launch beyond them (FSL_ERROR_SIZE) before launching anything.
  LaunchLimits limits;
};

/// The C identifiers and the header name `options` give the fusion `fusion` (see
/// CodegenOptions::symbolPrefix).
std::string launcherSymbol(const std::string &fusion, const CodegenOptions &options);
std::string kernelSymbol(const kir::Kernel &kernel, const CodegenOptions &options);
std::string generatedName(const std::string &fusion, const CodegenOptions &options);

/// Whether `arch` (sm_90a, sm_80...) supports programmatic dependent launch.
bool supportsProgrammaticLaunch(const std::string &arch);

/// The sources of `program` (its fusion, kernels and variants). `sourcePath` is named in
/// their first comment as given: a relative path (the input's file name), so that the
/// sources do not depend on the directory they were generated in.
GeneratedSources generateCuda(const kir::Program &program, const std::string &sourcePath,
                              const CodegenOptions &options = {});

} // namespace fsl::codegen
