// Describe.cpp — a Fusion IR value named as the user wrote it, for diagnostics.
#include "ir/Describe.h"

#include <cctype>

namespace fsl::ir {

std::string sourceText(llvm::SMRange range, size_t limit) {
  if (!range.isValid() || range.End.getPointer() <= range.Start.getPointer())
    return "";
  llvm::StringRef text(range.Start.getPointer(), range.End.getPointer() - range.Start.getPointer());
  std::string line;
  for (char c : text.trim()) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (line.back() != ' ')
        line += ' ';
      continue;
    }
    line += c;
  }
  if (line.size() > limit) {
    // Not inside a UTF-8 sequence.
    while (limit > 0 && (static_cast<unsigned char>(line[limit]) & 0xC0) == 0x80)
      --limit;
    line = line.substr(0, limit) + "...";
  }
  return line;
}

std::string userName(const Fusion &fusion, const Value &value) {
  if (!value.name.empty())
    return value.name;
  if (std::string text = sourceText(value.range); !text.empty())
    return text;
  std::string what = "the " + opName(value.op).str();
  for (size_t i = 0; i < value.reduced.size(); ++i)
    what += (i == 0 ? " over " : ", ") + fusion.dims[value.reduced[i]].name;
  return what;
}

} // namespace fsl::ir
