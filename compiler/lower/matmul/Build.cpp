// Build.cpp — buffers, shared allocations and the kernel's own names.
#include "lower/matmul/Build.h"

#include "lower/Pointwise.h"

namespace fsl::lower {

kir::BufferPtr makeBuffer(std::string name, ir::DType dtype, kir::MemorySpace space,
                          std::vector<int64_t> shape, kir::Swizzle swizzle, int64_t alignment) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = space;
  b->shape = std::move(shape);
  b->swizzle = swizzle;
  b->alignment = alignment;
  return b;
}

kir::Stmt sharedAllocation(const kir::BufferPtr &buffer, int64_t byteOffset, std::string comment,
                           kir::Origin origin) {
  return kir::withOrigin(
      kir::withComment(kir::allocateStmt(buffer, kir::index(byteOffset), nullptr),
                       std::move(comment)),
      std::move(origin));
}

KernelNames::KernelNames(const ir::Fusion &fusion) {
  for (const ir::Param &param : fusion.params)
    reserved_.insert(param.name);
  for (const ir::Output &output : fusion.outputs)
    reserved_.insert(output.name);
  for (const ir::Dim &dim : fusion.dims)
    reserved_.insert(dim.name);
  for (const auto &value : fusion.values)
    reserved_.insert(valueName(*value));
}

std::string KernelNames::fresh(std::string name) const {
  while (reserved_.count(name))
    name += "_";
  return name;
}

kir::VarPtr KernelNames::var(const std::string &name) const {
  return kir::makeVar(fresh(name), ir::DType::I64);
}

kir::Stmt KernelNames::unrolled(const std::string &name, int64_t extent,
                                const std::function<kir::Stmt(kir::Expr)> &body) const {
  if (extent == 1)
    return body(kir::index(0));
  kir::VarPtr v = var(name);
  return kir::forLoop(v, kir::index(extent), kir::LoopKind::Unrolled, body(kir::var(v)));
}

} // namespace fsl::lower
