// Printer.h — schedules as text: typed directives and blocks (what --emit=schedule
// writes, with the notes the builder derived), and resolved loop nests.
#pragma once

#include "schedule/ScheduleIR.h"

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl::sched {

/// One directive as it is written: `split H by 8 -> (Ho, Hv);`.
void printDirective(const Directive &directive, llvm::raw_ostream &out);
std::string directiveText(const Directive &directive);

/// A block as schedule text: the comments above it (the user's, then the heuristics'
/// reasons), its header and directives, each directive followed by its note from
/// `notes` (by index; `// Hx: 64 threads, static`) when there is one.
void printBlock(const ScheduleBlock &block, const std::vector<std::string> &notes,
                llvm::raw_ostream &out);

/// Blocks without notes, a blank line apart: how the heuristics' choices read.
std::string formatBlocks(const std::vector<ScheduleBlock> &blocks);

/// `--emit=schedule --resolved`: every tensor's loop nest after all directives.
void printResolved(const Schedule &schedule, llvm::raw_ostream &out);

} // namespace fsl::sched
