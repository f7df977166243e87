// LaunchContract.cpp — a launch's contract from the Fusion IR and its lowered program.
#include "codegen/LaunchContract.h"

#include "kir/Mutator.h"
#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>

#include <map>
#include <set>

namespace fsl::codegen {

llvm::StringRef roleName(TensorRole role) {
  switch (role) {
  case TensorRole::In:
    return "in";
  case TensorRole::InOut:
    return "inout";
  case TensorRole::Out:
    return "out";
  }
  FSL_UNREACHABLE("tensor role");
}

namespace {

/// The launcher's own locals: no parameter, dimension, workspace or tensor map may take
/// these names (a tensor named `status` or `grid` is renamed in C, not in messages).
constexpr const char *kLauncherLocals[] = {
    "status",          "stream",       "grid",     "block",         "shared_bytes", "opt_in",
    "attributes",      "max_clusters", "probe",    "cluster_shape", "occupancy",    "resident",
    "persistent_grid", "config",       "launched", "sizes",         "strides",      "box"};

/// The launcher's names: its locals and symbols reserved, then its parameters declared in
/// signature order (the header prints the same names).
void declareSignature(const ir::Fusion &fusion, const std::string &launcher, NameScope &names) {
  for (const char *local : kLauncherLocals)
    names.reserve(local);
  names.reserve(launcher);
  names.reserve(launcher + "_error");
  for (const ir::Param &param : fusion.params)
    names.declare(&param, param.name);
  for (const ir::Output &output : fusion.outputs)
    if (!output.isInout)
      names.declare(&output, output.name);
}

void addTensor(LaunchContract &contract, const void *entity, const std::string &name,
               ir::DType dtype, TensorRole role, const std::vector<ir::DimId> &dims, bool strided) {
  ContractTensor tensor;
  tensor.entity = entity;
  tensor.name = name;
  tensor.cName = contract.names.lookup(entity).str();
  tensor.dtype = dtype;
  tensor.elementBytes = ir::dtypeBytes(dtype);
  tensor.role = role;
  tensor.dims = dims;
  tensor.strided = strided;
  contract.signature.push_back({ContractParam::Kind::Tensor, contract.tensors.size()});
  contract.tensors.push_back(std::move(tensor));
}

/// The dimensions some reduction (or matrix product) of the fusion reduces.
std::set<ir::DimId> reducedDims(const ir::Fusion &fusion) {
  std::set<ir::DimId> reduced;
  for (const auto &value : fusion.values)
    if (ir::isReduction(value->op) || value->op == ir::Op::MatMul)
      reduced.insert(value->reduced.begin(), value->reduced.end());
  return reduced;
}

/// The launcher's tensor a kernel's global buffer stands for: a workspace's buffer, a
/// fusion output or a fusion parameter (the IR object the launcher's scope names).
const void *tensorEntity(const kir::Program &program, const kir::KernelParam &param) {
  const ir::Fusion &fusion = *program.fusion;
  for (const kir::Workspace &workspace : program.workspaces)
    if (workspace.buffer == param.buffer)
      return workspace.buffer.get();
  if (param.isOutput) {
    FSL_INTERNAL_ASSERT(param.fusionParam < fusion.outputs.size(), "no such fusion output");
    return &fusion.outputs[param.fusionParam];
  }
  FSL_INTERNAL_ASSERT(param.fusionParam < fusion.params.size(), "no such fusion parameter");
  return &fusion.params[param.fusionParam];
}

/// The user's name of the launcher's tensor a kernel's global buffer stands for.
std::string tensorName(const kir::Program &program, const kir::KernelParam &param) {
  const ir::Fusion &fusion = *program.fusion;
  if (tensorEntity(program, param) == param.buffer.get())
    return param.buffer->name;
  return param.isOutput ? fusion.outputs[param.fusionParam].name
                        : fusion.params[param.fusionParam].name;
}

bool isWorkspace(const kir::Program &program, const kir::BufferPtr &buffer) {
  for (const kir::Workspace &workspace : program.workspaces)
    if (workspace.buffer == buffer)
      return true;
  return false;
}

/// Per launcher tensor (tensorEntity), the widest vector access any kernel makes to it.
std::map<const void *, int64_t> widestVectorAccess(const kir::Program &program) {
  std::map<const void *, int64_t> widest;
  for (const kir::Kernel &kernel : program.kernels) {
    std::map<const kir::Buffer *, const void *> tensors;
    for (const kir::KernelParam &param : kernel.params)
      if (param.kind == kir::KernelParam::Kind::Tensor)
        tensors[param.buffer.get()] = tensorEntity(program, param);
    if (!kernel.body)
      continue;
    kir::forEachStmt(kernel.body, [&](const kir::Stmt &s) {
      if (s->kind != kir::StmtKind::VectorCopy)
        return;
      int64_t bytes = s->lanes * ir::dtypeBytes(s->buffer->dtype);
      for (const kir::Buffer *side : {s->buffer.get(), s->source.get()}) {
        if (side->space != kir::MemorySpace::Global)
          continue;
        auto tensor = tensors.find(side);
        FSL_INTERNAL_ASSERT(tensor != tensors.end(),
                            "a vector access to a global buffer that is no kernel parameter");
        widest[tensor->second] = std::max(widest[tensor->second], bytes);
      }
    });
  }
  return widest;
}

bool isClustered(const kir::LaunchShape &launch) {
  if (!launch.cluster[0])
    return false;
  for (const kir::Expr &e : launch.cluster)
    if (e && kir::asConstant(e) != 1)
      return true;
  return false;
}

/// The launcher's C name of an entity it declared.
std::string nameOf(const LaunchContract &contract, const void *entity) {
  llvm::StringRef name = contract.names.lookup(entity);
  FSL_INTERNAL_ASSERT(!name.empty(), "a launcher name used outside its declaration");
  return name.str();
}

/// Every identifier the launcher declares besides its parameters, in the scope that
/// keeps them apart (Naming.h): the kernels' symbols, the runtime dimensions' locals
/// (each kernel's dimension variables stand for them) and workspaces.
void declareLocals(const kir::Program &program, const CodegenOptions &options,
                   LaunchContract &contract) {
  const ir::Fusion &fusion = *program.fusion;
  NameScope &names = contract.names;
  for (const kir::Kernel &kernel : program.kernels)
    names.reserve(kernelSymbol(kernel, options));
  std::map<std::string, const kir::Var *> dimsByName;
  for (ir::DimId dim = 0; dim < fusion.dims.size(); ++dim)
    if (dim < program.dims.size() && program.dims[dim]) {
      const kir::Var *var = program.dims[dim].get();
      contract.dims[dim].var = var;
      contract.dims[dim].cName = names.declare(var, var->name);
      dimsByName[var->name] = var;
    }
  for (const kir::Workspace &workspace : program.workspaces)
    names.declare(workspace.buffer.get(), workspace.buffer->name);
  for (const kir::Kernel &kernel : program.kernels)
    for (const kir::KernelParam &param : kernel.params) {
      if (param.kind == kir::KernelParam::Kind::Dim && names.lookup(param.var.get()).empty()) {
        auto found = dimsByName.find(param.var->name);
        FSL_INTERNAL_ASSERT(found != dimsByName.end(), "a kernel's dimension the program lacks");
        names.alias(param.var.get(), found->second);
      }
    }
}

ContractKernel describeKernel(const kir::Program &program, const kir::Kernel &kernel,
                              const CodegenOptions &options, const LaunchContract &contract) {
  const ir::Fusion &fusion = *program.fusion;
  ContractKernel described;
  described.name = kernel.name;
  described.symbol = kernelSymbol(kernel, options);
  const kir::LaunchShape &launch = kernel.launch;
  described.grid = launch.grid;
  described.block = launch.block;
  described.cluster = launch.cluster;
  described.sharedBytes = launch.sharedBytes;
  described.maxThreads = launch.maxThreads;
  described.gridFromOccupancy = launch.gridFromOccupancy;
  described.fullGrid = launch.fullGrid;
  described.cooperative = launch.cooperative;
  described.clustered = isClustered(launch);
  for (const kir::KernelParam &param : kernel.params) {
    ContractArg arg;
    switch (param.kind) {
    case kir::KernelParam::Kind::Tensor:
      arg.kind = ContractArg::Kind::Tensor;
      arg.name = tensorName(program, param);
      arg.cName = nameOf(contract, tensorEntity(program, param));
      arg.dtype = param.buffer->dtype;
      arg.written = param.buffer->written;
      arg.workspace = isWorkspace(program, param.buffer);
      break;
    case kir::KernelParam::Kind::Scalar:
      FSL_INTERNAL_ASSERT(param.fusionParam < fusion.params.size(), "no such scalar");
      arg.kind = ContractArg::Kind::Scalar;
      arg.name = fusion.params[param.fusionParam].name;
      arg.cName = nameOf(contract, &fusion.params[param.fusionParam]);
      break;
    case kir::KernelParam::Kind::Stride:
      FSL_INTERNAL_ASSERT(param.fusionParam < fusion.params.size(), "no such strided tensor");
      arg.kind = ContractArg::Kind::Stride;
      arg.name = fusion.params[param.fusionParam].name;
      arg.cName = nameOf(contract, &fusion.params[param.fusionParam]);
      arg.axis = param.axis;
      break;
    case kir::KernelParam::Kind::Dim:
      arg.kind = ContractArg::Kind::Dim;
      arg.varName = param.var->name;
      arg.cName = nameOf(contract, param.var.get());
      for (ir::DimId dim = 0; dim < contract.dims.size(); ++dim)
        if (contract.dims[dim].var == param.var.get()) {
          arg.dim = dim;
          arg.name = contract.dims[dim].name;
        }
      break;
    case kir::KernelParam::Kind::TensorMap: {
      const kir::TensorMap &map = *param.tensorMap;
      ContractTensorMap tensorMap;
      tensorMap.map = &map;
      tensorMap.tensor = map.global->name;
      tensorMap.cTensor = map.global->name;
      // The launcher's tensor the map's global buffer is (the last kernel parameter that
      // names it).
      for (const kir::Kernel &other : program.kernels)
        for (const kir::KernelParam &p : other.params)
          if (p.kind == kir::KernelParam::Kind::Tensor && p.buffer.get() == map.global.get()) {
            tensorMap.cTensor = nameOf(contract, tensorEntity(program, p));
            tensorMap.tensor = tensorName(program, p);
          }
      tensorMap.dtype = map.global->dtype;
      tensorMap.extents = map.extents;
      tensorMap.box = map.box;
      tensorMap.swizzle = map.swizzle;
      arg.kind = ContractArg::Kind::TensorMap;
      arg.name = map.name;
      arg.tensorMap = described.tensorMaps.size();
      described.tensorMaps.push_back(std::move(tensorMap));
      break;
    }
    }
    described.args.push_back(std::move(arg));
  }
  return described;
}

} // namespace

LaunchContract describeSignature(const ir::Fusion &fusion, const CodegenOptions &options) {
  LaunchContract contract;
  contract.fusion = fusion.name;
  contract.launcher = launcherSymbol(fusion.name, options);
  contract.limits = options.limits;
  declareSignature(fusion, contract.launcher, contract.names);

  // Parameters in declaration order (scalars among the tensors), then the outputs that
  // are no inout parameter.
  for (const ir::Param &param : fusion.params) {
    if (!param.dims.empty()) {
      addTensor(contract, &param, param.name, param.dtype,
                param.isInout ? TensorRole::InOut : TensorRole::In, param.dims, param.isStrided);
      continue;
    }
    ContractScalar scalar;
    scalar.param = &param;
    scalar.name = param.name;
    scalar.cName = contract.names.lookup(&param).str();
    scalar.dtype = param.dtype;
    scalar.defaultValue = param.defaultValue;
    scalar.strided = param.isStrided;
    contract.signature.push_back({ContractParam::Kind::Scalar, contract.scalars.size()});
    contract.scalars.push_back(std::move(scalar));
  }
  for (const ir::Output &output : fusion.outputs)
    if (!output.isInout)
      addTensor(contract, &output, output.name, output.dtype, TensorRole::Out, output.dims, false);

  std::set<ir::DimId> reduced = reducedDims(fusion);
  for (ir::DimId dim = 0; dim < fusion.dims.size(); ++dim) {
    const ir::Dim &d = fusion.dims[dim];
    ContractDim described;
    described.name = d.name;
    described.cName = d.name;
    described.staticExtent = d.staticExtent;
    described.reduced = reduced.count(dim) > 0;
    for (size_t t = 0; t < contract.tensors.size(); ++t)
      for (size_t axis = 0; axis < contract.tensors[t].dims.size(); ++axis)
        if (contract.tensors[t].dims[axis] == dim)
          described.axes.push_back({t, axis});
    if (!d.staticExtent)
      for (const ir::Output &output : fusion.outputs)
        if (!llvm::is_contained(output.dims, dim)) {
          described.emptyRefusal = EmptyRefusal{output.name, output.dims};
          break;
        }
    contract.dims.push_back(std::move(described));
  }

  for (const auto &value : fusion.values)
    if (value->op == ir::Op::Window)
      contract.windows.push_back({fusion.params[value->operands[0]->paramIndex].name,
                                  value->indexed[0], value->indexed[1], value->operands[1]});

  // An output and any other tensor, each pair once (an inout parameter is its own
  // output).
  for (size_t i = 0; i < contract.tensors.size(); ++i)
    for (size_t j = 0; j < contract.tensors.size(); ++j)
      if (i != j && contract.tensors[i].written() && !(contract.tensors[j].written() && j < i))
        contract.overlaps.push_back({i, j});
  return contract;
}

LaunchContract describeLaunch(const kir::Program &program, const CodegenOptions &options) {
  FSL_INTERNAL_ASSERT(program.fusion, "a program without its fusion");
  LaunchContract contract = describeSignature(*program.fusion, options);
  declareLocals(program, options, contract);

  std::map<const void *, int64_t> widest = widestVectorAccess(program);
  for (ContractTensor &tensor : contract.tensors)
    if (auto found = widest.find(tensor.entity); found != widest.end())
      tensor.vectorBytes = found->second;

  for (const kir::Workspace &workspace : program.workspaces) {
    const kir::Buffer &buffer = *workspace.buffer;
    ContractWorkspace described;
    described.buffer = &buffer;
    described.name = buffer.name;
    described.cName = nameOf(contract, &buffer);
    described.comment = workspace.comment;
    described.dtype = buffer.dtype;
    described.elements = workspace.elements;
    described.bytes = workspace.elements * kir::index(ir::dtypeBytes(buffer.dtype));
    contract.workspaces.push_back(std::move(described));
  }
  for (const kir::Kernel &kernel : program.kernels)
    contract.kernels.push_back(describeKernel(program, kernel, options, contract));
  for (const kir::Variant &variant : program.variants) {
    for (unsigned k : variant.launches)
      FSL_INTERNAL_ASSERT(k < program.kernels.size(), "a variant launches no such kernel");
    contract.variants.push_back({variant.guard, variant.launches});
  }
  return contract;
}

} // namespace fsl::codegen
