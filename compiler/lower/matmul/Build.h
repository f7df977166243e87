// Build.h — the small builders every matmul component uses: statements annotated with
// their directive, buffers and shared allocations, unrolled loops, and the kernel's own
// names, kept clear of the fusion's.
#pragma once

#include "ir/FusionIR.h"
#include "kir/IR.h"

#include <functional>
#include <set>
#include <string>

namespace fsl::lower {

/// A copy of `s` that comes from the directive of `origin`, with `comment` if given.
inline kir::Stmt fromDirective(const kir::Stmt &s, const kir::Origin &origin,
                               std::string comment = {}) {
  kir::Stmt copy = kir::withOrigin(s, origin);
  return comment.empty() ? copy : kir::withComment(copy, std::move(comment));
}

kir::BufferPtr makeBuffer(std::string name, ir::DType dtype, kir::MemorySpace space,
                          std::vector<int64_t> shape, kir::Swizzle swizzle = kir::Swizzle::None,
                          int64_t alignment = 16);

/// The allocation of a shared buffer at `byteOffset` of the dynamic shared memory.
kir::Stmt sharedAllocation(const kir::BufferPtr &buffer, int64_t byteOffset, std::string comment,
                           kir::Origin origin = {});

/// The names the fusion gives to parameters, outputs, dimensions and values (the
/// kernel's parameters and lets): the kernel's own variables and buffers stay clear of
/// them. Its own names are distinct or in disjoint scopes by construction.
class KernelNames {
public:
  explicit KernelNames(const ir::Fusion &fusion);
  std::string fresh(std::string name) const;
  /// A fresh i64 variable.
  kir::VarPtr var(const std::string &name) const;
  /// `body(index)` in an unrolled loop over a fresh `name`, or `body(0)` alone for one
  /// iteration.
  kir::Stmt unrolled(const std::string &name, int64_t extent,
                     const std::function<kir::Stmt(kir::Expr)> &body) const;

private:
  std::set<std::string> reserved_;
};

} // namespace fsl::lower
