// LineTable.h — LSP positions (a line and a UTF-16 column) to and from byte offsets of a
// text.
//
// The protocol counts columns in UTF-16 code units; llvm::SourceMgr counts bytes. The
// two agree on ASCII only, and a comment with `µ` or `→` before a name on its line would
// shift every position after it, so conversions go through this table.
#pragma once

#include <mlir/Tools/lsp-server-support/Protocol.h>

#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <vector>

namespace fsl::lsp {

class LineTable {
public:
  explicit LineTable(llvm::StringRef text);

  /// The byte offset of `position`, clamped into the text (past the end of a line: its
  /// end; past the last line: the end of the text).
  size_t offsetOf(const mlir::lsp::Position &position) const;
  /// The position of byte `offset` (clamped to the text's length).
  mlir::lsp::Position positionOf(size_t offset) const;
  mlir::lsp::Range rangeOf(size_t begin, size_t end) const;

  size_t lineCount() const { return lineStarts_.size(); }
  llvm::StringRef text() const { return text_; }

private:
  llvm::StringRef text_;
  std::vector<size_t> lineStarts_; // byte offset of each line's first character
};

} // namespace fsl::lsp
