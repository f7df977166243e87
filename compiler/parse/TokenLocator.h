// TokenLocator.h — maps ANTLR token positions (code point indices) to source locations.
//
// ANTLR decodes UTF-8 into code points and reports positions as code point indices;
// llvm::SourceMgr locations are byte pointers into the buffer. This table converts.
#pragma once

#include <antlr4-runtime.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <vector>

namespace fsl {

class TokenLocator {
public:
  /// `text` must be valid UTF-8 (the parser checks it first).
  explicit TokenLocator(llvm::StringRef text);

  llvm::SMLoc locAt(size_t codePointIndex) const;
  llvm::SMRange range(const antlr4::Token *token) const;
  llvm::SMRange range(const antlr4::Token *first, const antlr4::Token *last) const;
  llvm::SMRange range(antlr4::ParserRuleContext *context) const;
  /// The location just past the end of the text.
  llvm::SMLoc end() const { return llvm::SMLoc::getFromPointer(text_.end()); }

private:
  llvm::StringRef text_;
  std::vector<uint32_t> byteOffset_; // of each code point, plus one past the end
};

} // namespace fsl
