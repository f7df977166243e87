// Simulate.h — `fslc --simulate T=7`: runs the generated kernels on the CPU simulator and
// compares every output with the float64 reference on the same random inputs.
#pragma once

#include "driver/Evaluate.h"
#include "eval/Evaluator.h"
#include "kir/IR.h"
#include "support/Target.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl {

class DiagnosticEngine;

/// Tolerance of a comparison with the reference: |sim - ref| <= abs + rel * |ref|.
struct Tolerance {
  double abs;
  double rel;
};
Tolerance toleranceFor(ir::DType type);

/// Compares simulated outputs with the reference; returns a description of the first
/// element out of tolerance, or an empty string. NaN matches only NaN.
std::string compareOutputs(const ir::Fusion &fusion, const eval::EvalResult &simulated,
                           const eval::EvalResult &reference,
                           std::vector<double> *maxErrors = nullptr);

/// Simulates the program's variant for the sizes and compares. `misalign` places every
/// tensor that many elements past an aligned address; `limits` are the target's (a launch
/// beyond them is a fault, as on the GPU). Names in `assignments` that belong only to
/// `otherFusions` are ignored. Refused sizes (`invalid-simulate-argument`,
/// `sizes-over-budget`) and failed runs (`simulation-mismatch`, `simulation-fault`) are
/// reported before returning.
RunResult simulateAndCompare(const ir::Fusion &fusion, const kir::Program &program,
                             const std::string &assignments, uint64_t seed, int64_t misalign,
                             DiagnosticEngine &diagnostics, llvm::raw_ostream &out,
                             const LaunchLimits &limits = {},
                             const std::vector<const ir::Fusion *> &otherFusions = {});

} // namespace fsl
