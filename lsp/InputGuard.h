// InputGuard.h — lets only JSON-RPC 2.0 objects through to MLIR's transport.
//
// MLIR 19's JSONTransport stops serving at the first message that parses as JSON but is
// not a JSON-RPC 2.0 object (`[]`, `42`, an object without "jsonrpc"), as if the client
// had said `exit`. A language server must outlive a confused client, so standard input
// is read here first: each Content-Length framed message that is such an object is passed
// on through a pipe, the rest are logged and dropped.
#pragma once

#include <cstdio>

namespace fsl::lsp {

class InputGuard {
public:
  /// Starts reading `input` on a thread of its own. The thread owns what it uses and is
  /// never joined: it may be blocked on `input` when the server exits.
  explicit InputGuard(std::FILE *input);
  InputGuard(const InputGuard &) = delete;
  InputGuard &operator=(const InputGuard &) = delete;

  /// What the transport reads: the checked messages, ending when `input` ends. Null
  /// when no pipe could be made (then the transport reads `input` itself).
  std::FILE *checked() const { return checked_; }

private:
  std::FILE *checked_ = nullptr;
};

} // namespace fsl::lsp
