// OutputPath.cpp — a folder or the one output file.
#include "driver/OutputPath.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace fsl {

llvm::StringRef emitName(EmitKind emit) {
  switch (emit) {
  case EmitKind::Check:
    return "check";
  case EmitKind::Format:
    return "format";
  case EmitKind::AST:
    return "ast";
  case EmitKind::FusionIR:
    return "fusion-ir";
  case EmitKind::Schedule:
    return "schedule";
  case EmitKind::KernelIR:
    return "kernel-ir";
  case EmitKind::Cuda:
    return "cuda";
  case EmitKind::Ptx:
    return "ptx";
  case EmitKind::Cubin:
    return "cubin";
  }
  return "";
}

llvm::StringRef outputExtension(EmitKind emit, bool resolved) {
  switch (emit) {
  case EmitKind::Check:
    return ".txt"; // <input>.eval.txt
  case EmitKind::Format:
    return ".fsl";
  case EmitKind::AST:
    return ".ast";
  case EmitKind::FusionIR:
    return ".fusion-ir";
  case EmitKind::Schedule:
    return resolved ? ".txt" : ".fsl"; // <input>.schedule.txt or <input>.fsl
  case EmitKind::KernelIR:
    return ".kernel-ir";
  case EmitKind::Cuda:
    return ".cu";
  case EmitKind::Ptx:
    return ".ptx";
  case EmitKind::Cubin:
    return ".cubin";
  }
  return "";
}

bool writesPerFusion(EmitKind emit) {
  return emit == EmitKind::Cuda || emit == EmitKind::Ptx || emit == EmitKind::Cubin;
}

OutputPathKind classifyOutputPath(llvm::StringRef path, EmitKind emit, bool resolved) {
  // A folder that exists stays one, whatever its name: `-o build/x.cu/` keeps working.
  if (path.empty() || llvm::sys::path::is_separator(path.back()) ||
      llvm::sys::fs::is_directory(path))
    return OutputPathKind::Folder;
  llvm::StringRef extension = llvm::sys::path::extension(path);
  if (extension == outputExtension(emit, resolved))
    return OutputPathKind::File;
  // The extension of some output (or of the header beside a .cu): a file was meant, just
  // not one this --emit writes. Creating a folder by that name would hide the mistake.
  static constexpr llvm::StringLiteral kOutputExtensions[] = {
      ".txt", ".fsl", ".ast", ".fusion-ir", ".kernel-ir", ".cu", ".h", ".ptx", ".cubin"};
  if (llvm::is_contained(kOutputExtensions, extension))
    return OutputPathKind::WrongExtension;
  return OutputPathKind::Folder;
}

} // namespace fsl
