// CommandLineErrors.h — llvm::cl's command-line errors as fslc reports them: an unknown
// option, or an unknown value of an option with a fixed set of values, named with the
// nearest valid spelling ("did you mean") and, for a value, every valid one.
#pragma once

#include "driver/Driver.h"

#include <llvm/Support/CommandLine.h>

#include <optional>
#include <string>
#include <vector>

namespace fsl {

/// The invalid value ChoiceParser met last, for main to report after parsing.
std::optional<InvalidOptionValue> &lastInvalidOptionValue();

/// The parser of a cl::opt with cl::values: an unknown value is recorded (above) and
/// refused without llvm::cl's own message, which goes straight to standard error and
/// names no valid value.
template <class T> class ChoiceParser : public llvm::cl::parser<T> {
public:
  using llvm::cl::parser<T>::parser;

  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg, T &value) {
    if (this->findOption(arg) != this->getNumOptions())
      return llvm::cl::parser<T>::parse(option, argName, arg, value);
    InvalidOptionValue invalid{argName.str(), arg.str(), {}};
    for (unsigned i = 0; i < this->getNumOptions(); ++i)
      invalid.valid.push_back(this->getOption(i).str());
    lastInvalidOptionValue() = std::move(invalid);
    return true; // an error: ParseCommandLineOptions returns false
  }
};

/// The argument llvm::cl's message calls unknown ("Unknown command line argument
/// '--emti=cuda'"), if that is what `message` says.
std::optional<std::string> unknownArgumentIn(llvm::StringRef message);

/// `argument` (`--emti=cuda`) respelled with the nearest of `optionNames` (`emit`), its
/// dashes and value kept (`--emit=cuda`); none when no name is near.
std::optional<std::string> nearestOption(llvm::StringRef argument,
                                         const std::vector<std::string> &optionNames);

/// The names of the options --help shows for `category`, and help and version.
std::vector<std::string> visibleOptionNames(const llvm::cl::OptionCategory &category);

} // namespace fsl
