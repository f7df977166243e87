// Context.cpp — sizes and addresses as Kernel IR expressions.
#include "lower/Context.h"

#include "support/Internal.h"

namespace fsl::lower {

namespace {
/// The matmul path plans no loop nests: its context's `plan` is this empty one.
const Plan &noLoopNests() {
  static const Plan none;
  return none;
}
} // namespace

LowerContext::LowerContext(const MatmulPlan &matmul, const LowerOptions &options,
                           DiagnosticEngine &diagnostics)
    : plan(noLoopNests()), matmul(&matmul), fusion(*matmul.fusion), options(options),
      diagnostics(diagnostics) {}

void LowerContext::addParameters(
    const std::function<kir::TensorMapPtr(unsigned, const kir::BufferPtr &)> &tensorMapOf) {
  auto globalBuffer = [](const std::string &name, ir::DType dtype, bool written, bool inout) {
    auto buffer = std::make_shared<kir::Buffer>();
    buffer->name = name;
    buffer->dtype = dtype;
    buffer->space = kir::MemorySpace::Global;
    buffer->written = written;
    buffer->inout = inout;
    return buffer;
  };
  paramBuffers.resize(fusion.params.size());
  scalarVars.resize(fusion.params.size());
  for (unsigned i = 0; i < fusion.params.size(); ++i) {
    const ir::Param &param = fusion.params[i];
    kir::KernelParam kp;
    kp.fusionParam = i;
    if (param.dims.empty()) {
      kp.kind = kir::KernelParam::Kind::Scalar;
      kp.var = scalarVars[i] = kir::makeVar(param.name, param.dtype);
    } else {
      kir::BufferPtr buffer = globalBuffer(param.name, param.dtype, param.isInout, param.isInout);
      paramBuffers[i] = buffer;
      bufferDims[buffer.get()] = param.dims;
      kir::TensorMapPtr map = tensorMapOf ? tensorMapOf(i, buffer) : nullptr;
      kp.kind = map ? kir::KernelParam::Kind::TensorMap : kir::KernelParam::Kind::Tensor;
      if (map)
        kp.tensorMap = map;
      else
        kp.buffer = buffer;
    }
    kernel.params.push_back(kp);
  }
  outputBuffers.resize(fusion.outputs.size());
  for (unsigned o = 0; o < fusion.outputs.size(); ++o) {
    const ir::Output &output = fusion.outputs[o];
    if (output.isInout) {
      outputBuffers[o] = paramBuffers[output.paramIndex];
      continue;
    }
    kir::BufferPtr buffer = globalBuffer(output.name, output.dtype, true, false);
    outputBuffers[o] = buffer;
    bufferDims[buffer.get()] = output.dims;
    kir::KernelParam kp;
    kp.kind = kir::KernelParam::Kind::Tensor;
    kp.buffer = buffer;
    kp.fusionParam = o;
    kp.isOutput = true;
    kernel.params.push_back(kp);
  }
  for (ir::DimId d = 0; d < fusion.dims.size(); ++d)
    if (dimVars[d]) {
      kir::KernelParam kp;
      kp.kind = kir::KernelParam::Kind::Dim;
      kp.var = dimVars[d];
      kernel.params.push_back(kp);
    }
  // After everything else, so that the parameters of a fusion without strided inputs are
  // what they always were.
  strideVars.assign(fusion.params.size(), {});
  for (unsigned i = 0; i < fusion.params.size(); ++i) {
    const ir::Param &param = fusion.params[i];
    if (!param.isStrided || param.dims.empty())
      continue;
    for (unsigned axis = 0; axis + 1 < param.dims.size(); ++axis) {
      kir::VarPtr stride = kir::makeVar(
          param.name + "_stride_" + fusion.dims[param.dims[axis]].name, ir::DType::I64);
      strideVars[i].push_back(stride);
      kir::KernelParam kp;
      kp.kind = kir::KernelParam::Kind::Stride;
      kp.var = stride;
      kp.fusionParam = i;
      kp.axis = axis;
      kernel.params.push_back(kp);
    }
  }
}

kir::Expr LowerContext::dimExtent(ir::DimId dim) const {
  if (fusion.dims[dim].staticExtent)
    return kir::index(*fusion.dims[dim].staticExtent);
  return kir::var(dimVars[dim]);
}

kir::Expr LowerContext::extentOf(const sched::SizeExpr &size) const {
  switch (size.kind) {
  case sched::SizeExpr::Kind::Const:
    return kir::index(size.value);
  case sched::SizeExpr::Kind::Dim:
    return dimExtent(size.dim);
  case sched::SizeExpr::Kind::CeilDiv:
    return (extentOf(*size.lhs) + kir::index(size.value - 1)) / kir::index(size.value);
  case sched::SizeExpr::Kind::Mul:
    return extentOf(*size.lhs) * extentOf(*size.rhs);
  }
  FSL_UNREACHABLE("size expression");
}

kir::Expr LowerContext::extentOf(const sched::Extent &extent) const {
  if (extent.isStatic())
    return kir::index(*extent.value);
  FSL_INTERNAL_ASSERT(extent.expr, "a runtime extent without an expression");
  return extentOf(*extent.expr);
}

kir::Expr LowerContext::offsetOf(const std::vector<ir::DimId> &dims) const {
  kir::Expr offset;
  for (ir::DimId dim : dims)
    offset = offset ? offset * dimExtent(dim) + rootIndex[dim] : rootIndex[dim];
  return offset ? offset : kir::index(0);
}

kir::Expr LowerContext::paramOffset(unsigned param, const std::vector<kir::Expr> &index) const {
  const std::vector<ir::DimId> &dims = fusion.params[param].dims;
  FSL_INTERNAL_ASSERT(index.size() == dims.size(), "an index per axis of the parameter");
  const std::vector<kir::VarPtr> *strides =
      param < strideVars.size() && !strideVars[param].empty() ? &strideVars[param] : nullptr;
  kir::Expr offset;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (!strides) {
      offset = offset ? offset * dimExtent(dims[axis]) + index[axis] : index[axis];
      continue;
    }
    // A strided input: each outer axis at its runtime stride, the innermost at 1.
    kir::Expr term =
        axis + 1 < dims.size() ? index[axis] * kir::var((*strides)[axis]) : index[axis];
    offset = offset ? offset + term : term;
  }
  return offset ? offset : kir::index(0);
}

kir::Expr LowerContext::paramOffset(unsigned param) const {
  std::vector<kir::Expr> index;
  for (ir::DimId dim : fusion.params[param].dims)
    index.push_back(rootIndex[dim]);
  return paramOffset(param, index);
}

kir::VarPtr LowerContext::vectorVar() const {
  return plan.vectorLoop >= 0 ? loopVars[plan.vectorLoop] : nullptr;
}

std::string labelOf(const kir::Stmt &s) { return s ? s->label : ""; }

kir::Expr blockThreads() {
  using kir::Builtin;
  return kir::var(kir::makeVar("blockDim.x", ir::DType::I64, Builtin::BlockDimX)) *
         kir::var(kir::makeVar("blockDim.y", ir::DType::I64, Builtin::BlockDimY)) *
         kir::var(kir::makeVar("blockDim.z", ir::DType::I64, Builtin::BlockDimZ));
}

kir::Expr linearThreadId() {
  using kir::Builtin;
  auto b = [](const char *name, Builtin builtin) {
    return kir::var(kir::makeVar(name, ir::DType::I64, builtin));
  };
  return (b("threadIdx.z", Builtin::ThreadIdxZ) * b("blockDim.y", Builtin::BlockDimY) +
          b("threadIdx.y", Builtin::ThreadIdxY)) *
             b("blockDim.x", Builtin::BlockDimX) +
         b("threadIdx.x", Builtin::ThreadIdxX);
}

kir::Expr alignTo16(kir::Expr bytes) {
  return (bytes + kir::index(15)) / kir::index(16) * kir::index(16);
}

} // namespace fsl::lower
