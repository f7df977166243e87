// Printer.h — schedules as text: resolved loop nests, and notes for --emit=schedule.
#pragma once

#include "schedule/ScheduleIR.h"

namespace llvm {
class raw_ostream;
}

namespace fsl::sched {

/// `--emit=schedule --resolved`: every tensor's loop nest after all directives.
void printResolved(const Schedule &schedule, llvm::raw_ostream &out);

/// `--emit=schedule`: sets each directive's trailing comment to what it derived
/// (`// Hx: 64 threads, static`), so the printed file explains its extents.
void annotateDirectives(const Schedule &schedule);

} // namespace fsl::sched
