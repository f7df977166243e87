// Suggestions.h — "did you mean": the known name nearest to a mistyped one.
//
// Used wherever fslc refuses a name it was given (an option, an option's value, a target,
// a -D dimension, a --simulate size): the message names the likely intended one, as
// clang's "did you mean" does, and the callers still list every valid name.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace fsl {

/// The candidate nearest to `typed` by edit distance (ignoring case; a swap of neighbours
/// is one edit), when it is near enough to be a typo of it: at most a quarter of the typed
/// length apart (at least 1), and not a replacement of every character. Ties go to the
/// first candidate given.
std::optional<std::string> nearestName(llvm::StringRef typed,
                                       llvm::ArrayRef<std::string> candidates);

/// "; did you mean 'NAME'?" for the nearest candidate, or "" when none is near.
std::string didYouMean(llvm::StringRef typed, llvm::ArrayRef<std::string> candidates);

} // namespace fsl
