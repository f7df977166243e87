// LineTable.cpp — line starts once, then UTF-16 columns counted within one line.
#include "lsp/LineTable.h"

#include <algorithm>

namespace fsl::lsp {
namespace {

/// Bytes of the UTF-8 sequence starting with `lead`, and its UTF-16 code units. Invalid
/// bytes count as one byte and one unit, as editors show them (the parser reports them).
std::pair<size_t, int> utf8Sequence(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8)
    return {4, 2}; // outside the BMP: a surrogate pair
  if (lead >= 0xE0 && lead < 0xF0)
    return {3, 1};
  if (lead >= 0xC0 && lead < 0xE0)
    return {2, 1};
  return {1, 1};
}

} // namespace

LineTable::LineTable(llvm::StringRef text) : text_(text) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      lineStarts_.push_back(i + 1);
}

size_t LineTable::offsetOf(const mlir::lsp::Position &position) const {
  if (position.line < 0)
    return 0;
  if (size_t(position.line) >= lineStarts_.size())
    return text_.size();
  size_t offset = lineStarts_[position.line];
  size_t lineEnd = size_t(position.line) + 1 < lineStarts_.size()
                       ? lineStarts_[position.line + 1] - 1
                       : text_.size();
  int units = 0;
  while (offset < lineEnd && units < position.character) {
    auto [bytes, codeUnits] = utf8Sequence(static_cast<unsigned char>(text_[offset]));
    offset = std::min(offset + bytes, lineEnd);
    units += codeUnits;
  }
  return offset;
}

mlir::lsp::Position LineTable::positionOf(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line =
      std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset) - lineStarts_.begin() - 1;
  int units = 0;
  for (size_t i = lineStarts_[line]; i < offset;) {
    auto [bytes, codeUnits] = utf8Sequence(static_cast<unsigned char>(text_[i]));
    i += bytes;
    units += codeUnits;
  }
  return mlir::lsp::Position(int(line), units);
}

mlir::lsp::Range LineTable::rangeOf(size_t begin, size_t end) const {
  return mlir::lsp::Range(positionOf(begin), positionOf(std::max(begin, end)));
}

} // namespace fsl::lsp
