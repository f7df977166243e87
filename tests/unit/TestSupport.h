// TestSupport.h — parsing snippets in unit tests.
#pragma once

#include "ast/AST.h"
#include "parse/Parser.h"
#include "support/Diagnostics.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>

#include <memory>
#include <string>

namespace fsl::test {

/// Owns the sources and diagnostics of one parsed snippet.
struct Parsed {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diagnostics{collected};
  std::unique_ptr<ast::File> file;
  unsigned buffer = 0;

  explicit Parsed(const std::string &text, ParseLimits limits = {}) {
    buffer = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "test.fsl"),
                                        llvm::SMLoc());
    file = parseFile(sources, buffer, diagnostics, limits);
  }

  /// The source text a range covers.
  std::string text(llvm::SMRange range) const {
    return std::string(range.Start.getPointer(), range.End.getPointer());
  }
  std::string firstMessage() const {
    return collected.diagnostics.empty() ? "" : messageWithId(collected.diagnostics.front());
  }
};

} // namespace fsl::test
