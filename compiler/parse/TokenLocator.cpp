// TokenLocator.cpp — code point index to byte offset table.
#include "parse/TokenLocator.h"

namespace fsl {

TokenLocator::TokenLocator(llvm::StringRef text) : text_(text) {
  byteOffset_.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); ++i) {
    // Every byte that does not continue a sequence starts a code point.
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      byteOffset_.push_back(static_cast<uint32_t>(i));
  }
  byteOffset_.push_back(static_cast<uint32_t>(text.size()));
}

llvm::SMLoc TokenLocator::locAt(size_t codePointIndex) const {
  size_t index = std::min(codePointIndex, byteOffset_.size() - 1);
  return llvm::SMLoc::getFromPointer(text_.data() + byteOffset_[index]);
}

llvm::SMRange TokenLocator::range(const antlr4::Token *first, const antlr4::Token *last) const {
  if (first->getType() == antlr4::Token::EOF)
    return llvm::SMRange(end(), end());
  size_t start = first->getStartIndex();
  size_t stop =
      last->getType() == antlr4::Token::EOF ? byteOffset_.size() - 1 : last->getStopIndex() + 1;
  if (stop < start)
    stop = start;
  return llvm::SMRange(locAt(start), locAt(stop));
}

llvm::SMRange TokenLocator::range(const antlr4::Token *token) const { return range(token, token); }

llvm::SMRange TokenLocator::range(antlr4::ParserRuleContext *context) const {
  return range(context->getStart(), context->getStop());
}

} // namespace fsl
