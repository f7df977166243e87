// SourceFile.h — reading an input file (an .fsl source, an import, fsl.toml, a target)
// with limits, so that a device, a pipe or a huge file is refused instead of read until
// memory runs out.
//
// The file is opened first and its status taken from the open descriptor, so what is
// checked is what is read. Only regular files are read, and at most kMaxSourceBytes of
// them (docs/driver.md); standard input is read up to the same limit.
#pragma once

#include <llvm/Support/MemoryBuffer.h>

#include <cstdint>
#include <memory>
#include <string>

namespace fsl {

/// The largest source file fslc reads, 4 MiB. A fusion file is kilobytes; 40,000 fusions
/// with `= auto` fit (3.5 MB, checked in seconds), and nothing this size takes gigabytes.
constexpr uint64_t kMaxSourceBytes = uint64_t(4) << 20;

struct SourceFile {
  enum class Status { Ok, Directory, NotRegular, TooLarge, Unreadable };
  Status status = Status::Unreadable;
  std::unique_ptr<llvm::MemoryBuffer> buffer; // when Ok
  std::string message;                        // Unreadable: the system's reason;
                                              // NotRegular: what the file is
  uint64_t size = 0;                          // TooLarge: bytes seen (a lower bound on stdin)
};

/// Reads `path` under the limits above.
SourceFile readSourceFile(const std::string &path);

/// Reads standard input, named `<stdin>`, under the size limit.
SourceFile readStandardInput();

} // namespace fsl
