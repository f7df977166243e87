// CommandLineErrors.cpp — unknown options and option values, with the nearest spelling.
#include "driver/CommandLineErrors.h"

#include "support/Suggestions.h"

#include <llvm/ADT/STLExtras.h>

namespace fsl {

std::optional<InvalidOptionValue> &lastInvalidOptionValue() {
  static std::optional<InvalidOptionValue> invalid;
  return invalid;
}

std::optional<std::string> unknownArgumentIn(llvm::StringRef message) {
  constexpr llvm::StringLiteral kUnknown = "Unknown command line argument '";
  size_t at = message.find(kUnknown);
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = message.substr(at + kUnknown.size());
  // The argument itself may hold quotes: it ends at the quote before LLVM's "Try:".
  size_t end = rest.find("'.  Try:");
  if (end == llvm::StringRef::npos)
    end = rest.rfind('\'');
  if (end == llvm::StringRef::npos)
    return std::nullopt;
  return rest.substr(0, end).str();
}

std::optional<std::string> nearestOption(llvm::StringRef argument,
                                         const std::vector<std::string> &optionNames) {
  llvm::StringRef name = argument;
  size_t dashes = 0;
  while (dashes < 2 && name.consume_front("-"))
    ++dashes;
  auto [typed, value] = name.split('=');
  std::optional<std::string> nearest = nearestName(typed, optionNames);
  if (!nearest || *nearest == typed)
    return std::nullopt;
  std::string respelled = std::string(dashes, '-') + *nearest;
  if (name.contains('='))
    respelled += "=" + value.str();
  return respelled;
}

std::vector<std::string> visibleOptionNames(const llvm::cl::OptionCategory &category) {
  std::vector<std::string> names = {"help", "version"};
  for (const auto &entry : llvm::cl::getRegisteredOptions()) {
    const llvm::cl::Option *option = entry.getValue();
    if (option->getOptionHiddenFlag() != llvm::cl::NotHidden ||
        !llvm::is_contained(option->Categories, &category) || entry.getKey().empty())
      continue;
    names.push_back(entry.getKey().str());
  }
  // The registry is a hash map: sort, so that a tie is broken the same way every run.
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

} // namespace fsl
