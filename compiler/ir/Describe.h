// Describe.h — a Fusion IR value named as the user wrote it, for diagnostics.
//
// A value no let names has only generated names after sema: `%3` in the Fusion IR,
// `max%3` as a schedule tensor, `v3` in the Kernel IR. The user never wrote these, and
// cannot find them in the file; a message names the let instead, or quotes the
// expression that computed the value (its source range).
#pragma once

#include "ir/FusionIR.h"

#include <llvm/Support/SMLoc.h>

#include <string>

namespace fsl::ir {

/// The text of `range` on one line (each run of whitespace one space), shortened to
/// about `limit` characters with "..."; empty when the range is not valid.
std::string sourceText(llvm::SMRange range, size_t limit = 48);

/// `value` as a diagnostic names it, without quotes: its let or parameter name, else the
/// expression the user wrote for it (`max(x, over H)`), else what it computes (`the max
/// over H`).
std::string userName(const Fusion &fusion, const Value &value);

} // namespace fsl::ir
