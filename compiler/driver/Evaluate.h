// Evaluate.h — `fslc --evaluate T=4,eps=1e-5`: runs the float64 reference on random inputs.
//
// Sizes of runtime dimensions and values of scalar parameters come from the list;
// scalars default to their declared defaults; tensor inputs are uniform in [-1, 1),
// rounded to their types, from a seeded generator that is the same on every platform.
// Prints one line per input and a summary (min, max, mean, first values) per output.
#pragma once

#include "eval/Evaluator.h"
#include "ir/FusionIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl {

class DiagnosticEngine;

/// Which option the sizes came from: diagnostics name it (`--evaluate:`, `--simulate:`).
enum class RunMode { Evaluate, Simulate };

/// The inputs' values: uniform in [-1, 1) (floats), or with `--special-values` rows that
/// cycle through ties, NaNs, infinities and all -inf (see makeEvaluationRequest).
enum class InputValues { Uniform, Special };

/// How a run ended: its sizes and values refused (a usage error: exit code 2), or the
/// run failing (a simulated mismatch or fault: exit code 1).
enum class RunResult { Ok, Refused, Failed };

/// Parses `assignments` and makes the seeded random inputs, printing one line per input
/// to `out`. Returns false after reporting `invalid-evaluate-argument` (or
/// `invalid-simulate-argument`), or `sizes-over-budget` when the sizes need more memory
/// than eval::kMemoryBudgetBytes; nothing large is allocated before that check.
bool makeEvaluationRequest(const ir::Fusion &fusion, const std::string &assignments, uint64_t seed,
                           const std::vector<const ir::Fusion *> &otherFusions,
                           DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                           eval::EvalRequest &request, RunMode mode = RunMode::Evaluate,
                           InputValues values = InputValues::Uniform);

/// Names in `assignments` that belong to `otherFusions` only (a file with several
/// fusions) are ignored.
RunResult evaluateAndSummarize(const ir::Fusion &fusion, const std::string &assignments,
                               uint64_t seed, const std::vector<const ir::Fusion *> &otherFusions,
                               DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                               InputValues values = InputValues::Uniform);

} // namespace fsl
