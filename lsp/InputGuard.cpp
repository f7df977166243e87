// InputGuard.cpp — read a frame, check it, write it on.
#include "lsp/InputGuard.h"

#include <mlir/Tools/lsp-server-support/Logging.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>

#include <string>
#include <thread>
#include <unistd.h>

namespace fsl::lsp {
namespace {

/// The largest message accepted: far above any request an editor sends for a 4 MiB file.
constexpr size_t kMaxMessageBytes = size_t(64) << 20;

bool writeAll(int fd, llvm::StringRef data) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written <= 0)
      return false;
    data = data.drop_front(written);
  }
  return true;
}

void forward(std::FILE *input, int writeEnd) {
  char line[4096];
  while (true) {
    // The header: lines up to an empty one; Content-Length is the one that matters.
    size_t length = 0;
    bool sawHeader = false, sawLength = false, complete = false;
    while (std::fgets(line, sizeof line, input)) {
      llvm::StringRef text = llvm::StringRef(line).trim();
      if (text.empty()) {
        if (!sawHeader)
          continue; // blank lines between messages
        complete = true;
        break;
      }
      sawHeader = true;
      auto [name, value] = text.split(':');
      if (name.trim().equals_insensitive("content-length"))
        sawLength = !value.trim().getAsInteger(10, length);
    }
    if (!complete)
      break; // the input ended
    if (!sawLength || length > kMaxMessageBytes) {
      mlir::lsp::Logger::error("dropped a message without a usable Content-Length");
      continue;
    }
    std::string body(length, '\0');
    if (std::fread(body.data(), 1, length, input) != length)
      break;
    llvm::Expected<llvm::json::Value> message = llvm::json::parse(body);
    const llvm::json::Object *object = message ? message->getAsObject() : nullptr;
    if (!object || object->getString("jsonrpc") != llvm::StringRef("2.0")) {
      if (!message)
        llvm::consumeError(message.takeError());
      mlir::lsp::Logger::error("dropped a message that is not a JSON-RPC 2.0 object");
      continue;
    }
    std::string frame = "Content-Length: " + std::to_string(length) + "\r\n\r\n" + body;
    if (!writeAll(writeEnd, frame))
      break;
  }
  ::close(writeEnd);
}

} // namespace

InputGuard::InputGuard(std::FILE *input) {
  int fds[2];
  if (::pipe(fds) != 0)
    return;
  checked_ = ::fdopen(fds[0], "r");
  std::thread(forward, input, fds[1]).detach();
}

} // namespace fsl::lsp
