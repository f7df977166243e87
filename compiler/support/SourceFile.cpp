// SourceFile.cpp — opened, checked by descriptor, then read.
#include "support/SourceFile.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>

namespace fsl {
namespace {

const char *describe(llvm::sys::fs::file_type type) {
  using llvm::sys::fs::file_type;
  switch (type) {
  case file_type::character_file:
    return "a character device";
  case file_type::block_file:
    return "a block device";
  case file_type::fifo_file:
    return "a pipe";
  case file_type::socket_file:
    return "a socket";
  case file_type::symlink_file:
    return "a symbolic link";
  default:
    return "not a regular file";
  }
}

SourceFile unreadable(std::error_code error) {
  SourceFile file;
  file.status = SourceFile::Status::Unreadable;
  file.message = error.message();
  return file;
}

} // namespace

SourceFile readSourceFile(const std::string &path) {
  SourceFile file;
  // A directory cannot be opened for reading everywhere: ask first.
  if (llvm::sys::fs::is_directory(path)) {
    file.status = SourceFile::Status::Directory;
    return file;
  }
  // Opening a pipe for reading blocks until a writer comes; a pipe is refused anyway.
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return unreadable(error);
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    file.status = SourceFile::Status::NotRegular;
    file.message = describe(status.type());
    return file;
  }
  llvm::Expected<llvm::sys::fs::file_t> handle = llvm::sys::fs::openNativeFileForRead(path);
  if (!handle)
    return unreadable(llvm::errorToErrorCode(handle.takeError()));
  // What is read is what is checked: the status of the open file.
  std::error_code error = llvm::sys::fs::status(*handle, status);
  if (!error && status.type() != llvm::sys::fs::file_type::regular_file) {
    llvm::sys::fs::closeFile(*handle);
    file.status = SourceFile::Status::NotRegular;
    file.message = describe(status.type());
    return file;
  }
  if (!error && status.getSize() > kMaxSourceBytes) {
    llvm::sys::fs::closeFile(*handle);
    file.status = SourceFile::Status::TooLarge;
    file.size = status.getSize();
    return file;
  }
  if (error) {
    llvm::sys::fs::closeFile(*handle);
    return unreadable(error);
  }
  auto buffer = llvm::MemoryBuffer::getOpenFile(*handle, path, status.getSize(),
                                                /*RequiresNullTerminator=*/false);
  llvm::sys::fs::closeFile(*handle);
  if (!buffer)
    return unreadable(buffer.getError());
  file.status = SourceFile::Status::Ok;
  file.buffer = std::move(*buffer);
  file.size = file.buffer->getBufferSize();
  return file;
}

SourceFile readStandardInput() {
  SourceFile file;
  llvm::SmallString<0> bytes;
  llvm::sys::fs::file_t input = llvm::sys::fs::getStdinHandle();
  for (;;) {
    // One byte past the limit tells a file at the limit from a larger one.
    size_t room = kMaxSourceBytes + 1 - bytes.size();
    if (room == 0)
      break;
    size_t chunk = std::min<size_t>(room, 1 << 16);
    size_t start = bytes.size();
    bytes.resize_for_overwrite(start + chunk);
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFile(
        input, llvm::MutableArrayRef<char>(bytes.data() + start, chunk));
    if (!read)
      return unreadable(llvm::errorToErrorCode(read.takeError()));
    bytes.truncate(start + *read);
    if (*read == 0)
      break;
  }
  if (bytes.size() > kMaxSourceBytes) {
    file.status = SourceFile::Status::TooLarge;
    file.size = bytes.size();
    return file;
  }
  file.status = SourceFile::Status::Ok;
  file.buffer = llvm::MemoryBuffer::getMemBufferCopy(bytes, "<stdin>");
  file.size = bytes.size();
  return file;
}

} // namespace fsl
