// Sources.cpp — files read into the source manager, with the reason one cannot be.
#include "pipeline/Sources.h"

#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

namespace fsl::pipeline {

std::optional<unsigned> readSource(llvm::SourceMgr &sources, const std::string &path,
                                   DiagnosticEngine &diagnostics) {
  return addSource(sources, readSourceFile(path), path, diagnostics);
}

std::optional<unsigned> addSource(llvm::SourceMgr &sources, SourceFile file,
                                  const std::string &path, DiagnosticEngine &diagnostics) {
  switch (file.status) {
  case SourceFile::Status::Ok:
    return sources.AddNewSourceBuffer(std::move(file.buffer), llvm::SMLoc());
  case SourceFile::Status::Directory:
    diagnostics.report(DiagId::InputIsDirectory, llvm::SMRange(), path);
    return std::nullopt;
  case SourceFile::Status::NotRegular:
    diagnostics.report(DiagId::InputNotRegularFile, llvm::SMRange(), path, file.message);
    return std::nullopt;
  case SourceFile::Status::TooLarge:
    diagnostics.report(DiagId::InputTooLarge, llvm::SMRange(), path,
                       file.size > kMaxSourceBytes && path == "<stdin>"
                           ? "more than " + std::to_string(kMaxSourceBytes)
                           : std::to_string(file.size),
                       kMaxSourceBytes);
    return std::nullopt;
  case SourceFile::Status::Unreadable:
    diagnostics.report(DiagId::InputNotReadable, llvm::SMRange(), path, file.message);
    return std::nullopt;
  }
  FSL_UNREACHABLE("source file status");
}

unsigned addSourceText(llvm::SourceMgr &sources, const std::string &path, const std::string &text) {
  return sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path),
                                    llvm::SMLoc());
}

} // namespace fsl::pipeline
