// Hover.h — textDocument/hover: what the compiler knows about the name or directive
// under the cursor.
//
// A dimension: its extent (with -D and fsl.toml applied). A value: its dtype and shape.
// A loop: its derived extent and binding after the schedule, what `--emit=schedule`
// prints. A directive: the note its build derived. A `when` guard: the variant and the
// kernels it launches. A fusion: its signature and, once lowered, each kernel's grid,
// threads, shared memory and the registers the schedule fixes. A fn, an import, a knob:
// what they are.
#pragma once

#include "lsp/Analysis.h"
#include "lsp/SymbolIndex.h"

#include <optional>
#include <string>

namespace fsl::lsp {

struct HoverText {
  std::string markdown;
  llvm::SMRange range; // what it is about
};

std::optional<HoverText> hoverAt(const Analysis &analysis, const SymbolIndex &index,
                                 llvm::SMLoc loc);

} // namespace fsl::lsp
