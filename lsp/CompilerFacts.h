// CompilerFacts.h — what the compiler derived about a piece of the document, found by
// the syntax tree's positions: the schedules built from a schedule declaration, a loop's
// extent and binding in one of them, a fusion's IR and its kernels' launch shapes.
//
// The server's syntax tree and the compilation's are two parses of one buffer, so their
// nodes are matched by where they start, never by pointer.
#pragma once

#include "lsp/Analysis.h"

#include "ir/FusionIR.h"
#include "schedule/ScheduleIR.h"

#include <string>
#include <vector>

namespace fsl::lsp {

/// The planned schedules a declaration became (one for a user's block, those the
/// heuristics chose for `= auto`), in order.
std::vector<const pipeline::PlannedSchedule *> plannedFrom(const Analysis &analysis,
                                                           const ast::ScheduleDecl &decl);
/// Every planned schedule of a fusion (the heuristics' for a fusion without one too).
std::vector<const pipeline::PlannedSchedule *> plannedFor(const Analysis &analysis,
                                                          llvm::StringRef fusion);
/// The schedule declaration of the document around `loc`, if any.
const ast::ScheduleDecl *scheduleAt(const Analysis &analysis, llvm::SMLoc loc);
/// The fusion a position belongs to: the fusion declared around it, or the one a
/// schedule around it names. Empty when none.
std::string fusionAt(const Analysis &analysis, llvm::SMLoc loc);

const ir::Fusion *fusionIR(const Analysis &analysis, llvm::StringRef name);

/// `Hx: 64 (TIDx), static` — a loop after the schedule: its extent, binding and
/// annotations, as found in the first tensor that has it; empty when none has.
std::string describeLoop(const sched::Schedule &schedule, llvm::StringRef loop);
/// `bf16[T, H]` for a parameter, output or let of the fusion, and what it is (`inout
/// parameter`); empty when unknown.
std::string describeValue(const ir::Fusion &fusion, llvm::StringRef name, std::string &role);
/// `H = 4096 (static)` or `T (a runtime size)`.
std::string describeDim(const ir::Fusion &fusion, llvm::StringRef name);
/// The lowered fusion's variants and kernels: the guard, grid, block (threads), cluster,
/// dynamic shared memory, and registers where the schedule fixes them; empty when the
/// fusion was not lowered.
std::string describeKernels(const Analysis &analysis, const ir::Fusion &fusion);

} // namespace fsl::lsp
