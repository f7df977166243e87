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

/// Parses `assignments` and makes the seeded random inputs, printing one line per input
/// to `out`. Returns false after reporting `invalid-evaluate-argument`.
bool makeEvaluationRequest(const ir::Fusion &fusion, const std::string &assignments, uint64_t seed,
                           const std::vector<const ir::Fusion *> &otherFusions,
                           DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                           eval::EvalRequest &request);

/// Returns false after reporting `invalid-evaluate-argument`. Names in `assignments`
/// that belong to `otherFusions` only (a file with several fusions) are ignored.
bool evaluateAndSummarize(const ir::Fusion &fusion, const std::string &assignments, uint64_t seed,
                          const std::vector<const ir::Fusion *> &otherFusions,
                          DiagnosticEngine &diagnostics, llvm::raw_ostream &out);

} // namespace fsl
