// Simulator.cpp — the simulator's entry points: `simulate` picks the program's variant,
// binds the fusion's tensors, outputs and workspaces to global memory and runs the
// variant's kernels in order; `runKernel` runs one launch on the machine of
// Interpreter.h and turns its fault into an error. The machine lives in the files next to
// this one, one concern each.
#include "sim/Simulator.h"

#include "kir/Layout.h"
#include "sim/Expressions.h"
#include "sim/Fault.h"
#include "sim/Interpreter.h"

#include <llvm/Support/FormatVariadic.h>

#include <cmath>
#include <new>
#include <stdexcept>

namespace fsl::sim {

using kir::Buffer;
using kir::Var;

std::array<int64_t, 2> wgmmaAccumulatorPosition(int64_t t, int64_t i) {
  return kir::wgmmaAccumulatorPosition(t, i);
}

int64_t swizzleAddress(int64_t address, kir::Swizzle swizzle) {
  return kir::swizzleAddress(address, swizzle);
}

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The strides (elements, outermost first) at which a `strided` input with `dims` lies in
/// its storage: every row padded (NaN) past its extent rounded up to 16 elements by 16
/// more, each outer dimension likewise, so that a kernel that indexed it as contiguous
/// would read the wrong elements or the padding, and rows start as aligned as in a
/// contiguous tensor whose rows the vectors divide (16 elements: any vector of 16 bytes).
std::vector<int64_t> paddedStrides(const std::vector<ir::DimId> &dims,
                                   const std::vector<int64_t> &extents) {
  constexpr int64_t kPadding = 16;
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t axis = dims.size(); axis-- > 1;) {
    int64_t inner = strides[axis] * extents[dims[axis]];
    strides[axis - 1] = (inner + kPadding - 1) / kPadding * kPadding + kPadding;
  }
  return strides;
}

/// `data` (row-major over `dims`) laid out at `strides`, NaN between the rows.
std::vector<double> placeStrided(const std::vector<double> &data,
                                 const std::vector<ir::DimId> &dims,
                                 const std::vector<int64_t> &extents,
                                 const std::vector<int64_t> &strides) {
  int64_t span = 1;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (extents[dims[axis]] == 0)
      return {};
    span += (extents[dims[axis]] - 1) * strides[axis];
  }
  std::vector<double> placed(static_cast<size_t>(span), NAN);
  for (size_t element = 0; element < data.size(); ++element) {
    int64_t rest = static_cast<int64_t>(element), at = 0;
    for (size_t axis = dims.size(); axis-- > 0;) {
      int64_t extent = extents[dims[axis]];
      at += rest % extent * strides[axis];
      rest /= extent;
    }
    placed[static_cast<size_t>(at)] = data[element];
  }
  return placed;
}

} // namespace

llvm::Error runKernel(const kir::Kernel &kernel, Memory &memory, int64_t misalign,
                      const SimulatorLimits &limits) {
  try {
    Interpreter(kernel, memory, misalign, limits).run();
    return llvm::Error::success();
  } catch (const Fault &fault) {
    return error("kernel " + kernel.name + ": " + fault.what());
  } catch (const std::bad_alloc &) {
    return error("kernel " + kernel.name + ": out of memory while simulating");
  } catch (const std::length_error &) {
    return error("kernel " + kernel.name + ": a buffer too large to simulate");
  }
}

llvm::Expected<eval::EvalResult> simulate(const kir::Program &program,
                                          const eval::EvalRequest &request, int64_t misalign,
                                          const SimulatorLimits &limits) {
  if (!program.fusion)
    return error("the program has no fusion");
  const ir::Fusion &fusion = *program.fusion;
  // Sizes and inputs are checked, and the extents computed, as the reference does.
  llvm::Expected<eval::EvalResult> probe = eval::evaluate(fusion, request);
  if (!probe)
    return probe.takeError();
  const std::vector<int64_t> &extents = probe->extents;

  std::map<const Var *, double> dims;
  for (size_t d = 0; d < program.dims.size() && d < extents.size(); ++d)
    if (program.dims[d])
      dims[program.dims[d].get()] = static_cast<double>(extents[d]);

  const kir::Variant *variant = nullptr;
  for (const kir::Variant &candidate : program.variants) {
    if (candidate.guard) {
      try {
        LaunchScope scope(dims);
        if (evaluate(*candidate.guard, scope) == 0)
          continue;
      } catch (const Fault &fault) {
        return error("the guard " + candidate.guardText + ": " + fault.what());
      }
    }
    variant = &candidate;
    break;
  }
  if (!variant)
    return error("no variant of " + fusion.name + " applies to these sizes");

  // Storage: the parameters (rounded to their types), the outputs (NaN until written;
  // an inout output is its parameter's storage), the workspaces (NaN).
  // A strided input is laid out with padding between its rows (paddedStrides).
  std::vector<std::vector<double>> storage;
  std::vector<std::vector<int64_t>> strides(fusion.params.size());
  for (size_t i = 0; i < fusion.params.size(); ++i) {
    const ir::Param &param = fusion.params[i];
    std::vector<double> data = request.params[i];
    if (param.dims.empty() && data.empty() && param.defaultValue)
      data = {*param.defaultValue};
    for (double &element : data)
      element = eval::roundTo(element, param.dtype);
    if (param.isStrided && !param.dims.empty()) {
      strides[i] = paddedStrides(param.dims, extents);
      data = placeStrided(data, param.dims, extents, strides[i]);
    }
    storage.push_back(std::move(data));
  }
  std::vector<size_t> outputSlot;
  for (const ir::Output &output : fusion.outputs) {
    if (output.isInout) {
      outputSlot.push_back(output.paramIndex);
      continue;
    }
    outputSlot.push_back(storage.size());
    storage.emplace_back(static_cast<size_t>(eval::elementCount(output.dims, extents)), NAN);
  }
  std::map<const Buffer *, size_t> workspaceSlot;
  for (const kir::Workspace &workspace : program.workspaces) {
    int64_t elements = 0;
    try {
      LaunchScope scope(dims);
      elements = exactInteger(evaluate(*workspace.elements, scope), "a workspace size");
    } catch (const Fault &fault) {
      return error("workspace " + workspace.buffer->name + ": " + fault.what());
    }
    if (elements < 0 || elements > (int64_t(1) << 28))
      return error(llvm::formatv("workspace {0} of {1} elements: the simulator holds at most 2^28",
                                 workspace.buffer->name, elements));
    workspaceSlot[workspace.buffer.get()] = storage.size();
    // NaN, as the GPU's fresh allocation holds garbage: a read before a write shows.
    storage.emplace_back(static_cast<size_t>(elements), NAN);
  }

  for (unsigned launch : variant->launches) {
    if (launch >= program.kernels.size())
      return error(
          llvm::formatv("variant launches kernel {0} of {1}", launch, program.kernels.size()));
    const kir::Kernel &kernel = program.kernels[launch];
    std::map<const Buffer *, size_t> slotOf = workspaceSlot;
    Memory memory;
    memory.scalars = dims;
    auto tensorSlot = [&](const kir::KernelParam &param) -> llvm::Expected<size_t> {
      if (param.isOutput) {
        if (param.fusionParam >= fusion.outputs.size())
          return error(llvm::formatv("{0}: output {1} of {2}", kernel.name, param.fusionParam,
                                     fusion.outputs.size()));
        return outputSlot[param.fusionParam];
      }
      if (param.fusionParam >= fusion.params.size())
        return error(llvm::formatv("{0}: parameter {1} of {2}", kernel.name, param.fusionParam,
                                   fusion.params.size()));
      return static_cast<size_t>(param.fusionParam);
    };
    // Tensors first: a tensor map's tensor is often one of them.
    for (bool maps : {false, true}) {
      for (const kir::KernelParam &param : kernel.params) {
        const Buffer *buffer = nullptr;
        if (!maps && param.kind == kir::KernelParam::Kind::Tensor)
          buffer = param.buffer.get();
        else if (maps && param.kind == kir::KernelParam::Kind::TensorMap && param.tensorMap)
          buffer = param.tensorMap->global.get();
        if (!buffer || slotOf.count(buffer))
          continue;
        llvm::Expected<size_t> slot = tensorSlot(param);
        if (!slot)
          return slot.takeError();
        slotOf[buffer] = *slot;
      }
    }
    for (const kir::KernelParam &param : kernel.params) {
      if (param.kind == kir::KernelParam::Kind::Scalar && param.var) {
        if (param.fusionParam >= fusion.params.size() || storage[param.fusionParam].empty())
          return error(kernel.name + ": no value for scalar " + param.var->name);
        memory.scalars[param.var.get()] = storage[param.fusionParam][0];
      } else if (param.kind == kir::KernelParam::Kind::Stride && param.var) {
        if (param.fusionParam >= fusion.params.size() ||
            param.axis >= strides[param.fusionParam].size())
          return error(kernel.name + ": no stride for parameter " + param.var->name);
        memory.scalars[param.var.get()] =
            static_cast<double>(strides[param.fusionParam][param.axis]);
      } else if (param.kind == kir::KernelParam::Kind::Dim && param.var &&
                 !memory.scalars.count(param.var.get())) {
        // A dimension variable of the program is bound above; another one is found by
        // the dimension's name.
        std::optional<ir::DimId> dim = fusion.findDim(param.var->name);
        if (!dim)
          return error(kernel.name + ": no dimension for parameter " + param.var->name);
        memory.scalars[param.var.get()] = static_cast<double>(extents[*dim]);
      }
    }
    // Each storage slot moves into the memory once; other buffers of the slot alias it.
    std::map<size_t, const Buffer *> owner;
    for (const auto &[buffer, slot] : slotOf) {
      auto [it, first] = owner.emplace(slot, buffer);
      if (first)
        memory.global[buffer] = std::move(storage[slot]);
      else
        memory.aliases[buffer] = it->second;
    }
    llvm::Error status = runKernel(kernel, memory, misalign, limits);
    for (const auto &[slot, buffer] : owner)
      storage[slot] = std::move(memory.global[buffer]);
    if (status)
      return status;
  }

  eval::EvalResult result;
  result.extents = extents;
  for (size_t slot : outputSlot)
    result.outputs.push_back(storage[slot]);
  return result;
}

} // namespace fsl::sim
