// Evaluator.h — the float64 reference: runs a fusion's IR on the CPU.
//
// Every later phase is checked against this. Values are computed in double precision;
// the program's storage types are applied where it stores: inputs are rounded to their
// parameter types, casts round to their target type, and outputs are rounded to their
// declared types (so a bf16 output holds bf16 values). NaN and infinity propagate as in
// IEEE arithmetic; max and min propagate NaN like torch.max.
#pragma once

#include "ir/FusionIR.h"

#include <llvm/Support/Error.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fsl::eval {

/// Rounds `value` to what `type` can hold (round to nearest even; integers truncate
/// toward zero and saturate; NaN becomes 0 for integers).
double roundTo(double value, ir::DType type);

struct EvalRequest {
  /// Extents of the runtime dimensions; static ones come from the IR.
  std::map<std::string, int64_t> sizes;
  /// One buffer per parameter, row-major in its declared dimension order; a scalar's
  /// buffer holds one value (empty: use the declared default).
  std::vector<std::vector<double>> params;
};

struct EvalResult {
  /// Extent of every fusion dimension, by dimension id.
  std::vector<int64_t> extents;
  /// One buffer per fusion output, row-major in its declared dimension order.
  std::vector<std::vector<double>> outputs;
};

/// Evaluates `fusion`. Fails (without evaluating) on missing or wrong-sized inputs.
llvm::Expected<EvalResult> evaluate(const ir::Fusion &fusion, const EvalRequest &request);

/// The value of a pointwise operation (neg ... where) on its operands, in double
/// precision; max and min propagate NaN. Shared with the simulator.
double applyOp(ir::Op op, const double *operands);

/// The elements of a Gather or Window value: its parameter's elements `input` (in fusion
/// order) read at the index `index` (the gathered indices, or the window's offset). A
/// gathered index outside [0, extent) gives 0. Shared with the error bounds.
std::vector<double> indexElements(const ir::Value &value, const std::vector<int64_t> &extents,
                                  const std::vector<double> &input,
                                  const std::vector<double> &index);

/// Why the window `window` with offset `offset` does not fit its dimension at `extents`
/// (a message naming the parameter and the sizes), or nullopt when it fits.
std::optional<std::string> windowOutOfRange(const ir::Fusion &fusion, const ir::Value &window,
                                            const std::vector<int64_t> &extents, double offset);

/// Element count of a parameter or output with `dims` under `extents`.
int64_t elementCount(const std::vector<ir::DimId> &dims, const std::vector<int64_t> &extents);

/// The most float64 data the reference evaluator holds at once (its inputs, every value
/// of the fusion, its outputs): 2 GiB (docs/driver.md). The simulator runs the reference
/// first and holds no more than it, so the budget bounds both; sizes beyond it are
/// refused before anything is allocated.
constexpr uint64_t kMemoryBudgetBytes = uint64_t(2) << 30;

/// Bytes of float64 data evaluating `fusion` at `extents` holds; nullopt when the count
/// does not fit in 64 bits (far beyond the budget).
std::optional<uint64_t> evaluationBytes(const ir::Fusion &fusion,
                                        const std::vector<int64_t> &extents);

} // namespace fsl::eval
