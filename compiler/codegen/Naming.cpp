// Naming.cpp — reserved identifiers and the scope that keeps generated names apart.
#include "codegen/Naming.h"

#include "support/Identifiers.h"
#include "support/Internal.h"

namespace fsl::codegen {

NameScope::NameScope() { frames_.emplace_back(); }

void NameScope::open() { frames_.emplace_back(); }

void NameScope::close() {
  FSL_INTERNAL_ASSERT(frames_.size() > 1, "closing the outermost naming scope");
  Frame &frame = frames_.back();
  for (const void *entity : frame.entities) {
    auto found = bound_.find(entity);
    found->second.pop_back();
    if (found->second.empty())
      bound_.erase(found);
  }
  for (const std::string &name : frame.names) {
    auto found = inUse_.find(name);
    if (--found->second == 0)
      inUse_.erase(found);
  }
  frames_.pop_back();
}

bool NameScope::taken(llvm::StringRef name) const {
  return isReservedIdentifier(name) || inUse_.count(name);
}

void NameScope::reserve(llvm::StringRef name) {
  frames_.back().names.push_back(name.str());
  ++inUse_[name];
}

std::string NameScope::declare(const void *entity, llvm::StringRef wanted) {
  std::string base = wanted.empty() ? std::string("v") : wanted.str();
  // A prefix makes a reserved name legal (`float` -> `v_float`, `fsl_fail` ->
  // `v_fsl_fail`); double underscores, reserved anywhere, become one first.
  if (isReservedIdentifier(base)) {
    for (size_t at; (at = base.find("__")) != std::string::npos;)
      base.erase(at, 1);
    base = (base[0] == '_' ? "v" : "v_") + base;
  }
  // `x_` numbers as `x_1`, not `x__1`.
  std::string separator = base.back() == '_' ? "" : "_";
  std::string name = base;
  for (unsigned n = 1; taken(name); ++n)
    name = base + separator + std::to_string(n);
  reserve(name);
  frames_.back().entities.push_back(entity);
  bound_[entity].push_back(name);
  return name;
}

void NameScope::alias(const void *entity, const void *sameAs) {
  std::string name = lookup(sameAs).str();
  FSL_INTERNAL_ASSERT(!name.empty(), "an alias of an undeclared name");
  frames_.back().entities.push_back(entity);
  bound_[entity].push_back(name);
}

llvm::StringRef NameScope::lookup(const void *entity) const {
  auto found = bound_.find(entity);
  return found == bound_.end() ? llvm::StringRef() : llvm::StringRef(found->second.back());
}

} // namespace fsl::codegen
