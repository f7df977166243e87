// Memory.cpp — global, shared and local memory as a thread reaches it: allocation (shared
// buffers placed, aligned and kept from overlapping), bounds and vector alignment checks,
// one statement's writes checked for races, shared memory's swizzled addresses, and the
// check that TMA-loaded data is read only after its mbarrier wait.
#include "sim/Interpreter.h"

#include "eval/Evaluator.h"
#include "kir/Layout.h"
#include "support/Internal.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <cmath>

namespace fsl::sim {

llvm::StringRef swizzleName(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return "no swizzle";
  case Swizzle::Bytes32:
    return "32B swizzle";
  case Swizzle::Bytes64:
    return "64B swizzle";
  case Swizzle::Bytes128:
    return "128B swizzle";
  }
  FSL_UNREACHABLE("swizzle");
}

namespace {

int64_t positiveMod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

} // namespace

std::vector<double> &Interpreter::globalData(const Buffer &buffer) {
  if (buffer.space != MemorySpace::Global)
    fail(buffer.name + " is used as a global buffer but lives in " +
         kir::memorySpaceName(buffer.space).str() + " memory");
  const Buffer *key = &buffer;
  if (auto alias = memory_.aliases.find(key); alias != memory_.aliases.end())
    key = alias->second;
  auto it = memory_.global.find(key);
  if (it == memory_.global.end())
    fail("global buffer " + buffer.name + " has no memory (not a parameter or workspace)");
  return it->second;
}

std::vector<double> &Interpreter::globalAt(const Buffer &buffer, int t) {
  return *located(t, [&] { return &globalData(buffer); });
}

Interpreter::SharedStorage &Interpreter::sharedOf(const Buffer &buffer, int t) {
  auto it = cta_->shared.find(&buffer);
  if (it == cta_->shared.end())
    fault(t, "shared buffer " + buffer.name + " is used before its allocation");
  return it->second;
}

/// The element `index` of `buffer` as thread `t` sees it, bounds-checked.
double &Interpreter::element(const Buffer &buffer, int64_t index, int t, bool store) {
  std::vector<double> *data = nullptr;
  SharedStorage *sharedStorage = nullptr;
  int64_t offset = 0, size = 0;
  switch (buffer.space) {
  case MemorySpace::Global:
    data = &globalAt(buffer, t);
    size = static_cast<int64_t>(data->size());
    break;
  case MemorySpace::Shared:
    sharedStorage = &sharedOf(buffer, t);
    data = &sharedStorage->data;
    size = sharedStorage->elements;
    break;
  case MemorySpace::Local: {
    auto it = cta_->locals.find(&buffer);
    if (it == cta_->locals.end() || !it->second.allocated[t])
      fault(t, "local buffer " + buffer.name + " is used before its allocation");
    data = &it->second.data;
    size = it->second.elements;
    offset = static_cast<int64_t>(t) * size;
    if (!it->second.wgmmaWrites.empty() && !wgmmaWritingAccumulators_ && index >= 0 &&
        index < size && it->second.wgmmaWrites[offset + index] > 0)
      fault(t, llvm::formatv("{0} of accumulator {1}[{2}] while a wgmma product still writes "
                             "it: no wgmma.wait_group of warp {3} has retired its group (a "
                             "missing wait or commit, or a wait that leaves it pending)",
                             store ? "store to" : "load", buffer.name, index, t / 32));
    break;
  }
  }
  if (index < 0 || index >= size)
    fault(t, llvm::formatv("out-of-bounds {0} {1} {2}: element {3} of {4}",
                           store ? "store to" : "load from", kir::memorySpaceName(buffer.space),
                           buffer.name, index, size));
  if (store && sharedStorage)
    checkNoAsyncRead(buffer, *sharedStorage, index, t);
  if (sharedStorage && !sharedStorage->tags.empty()) {
    if (store)
      sharedStorage->tags[index] = Tag{}; // the thread's own value from now on
    else
      checkVisible(buffer, *sharedStorage, index, t / 32, t);
  }
  if (sharedStorage)
    trackShared(buffer, *sharedStorage, index, t, store);
  return (*data)[offset + index];
}

/// A read of TMA-loaded data by a warp that has not seen the load complete is a missing
/// (or wrong-parity) mbarrier wait. The simulator's TMA completes at once, so without
/// this the read would see the right data under this schedule only.
void Interpreter::checkVisible(const Buffer &buffer, const SharedStorage &shared, int64_t at,
                               int warp, int t) {
  const Tag &tag = shared.tags[at];
  if (tag.barrier < 0)
    return;
  const std::vector<int64_t> &clock = cta_->warps[warp].clock;
  if (static_cast<size_t>(tag.barrier) < clock.size() && clock[tag.barrier] >= tag.phase)
    return;
  fault(t, llvm::formatv("{0}[{1}] is read before warp {2} has seen the TMA load that wrote "
                         "it complete: that load completes phase {3} (parity {4}) of mbarrier "
                         "{5} (a missing mbarrier wait, or one on the wrong parity)",
                         buffer.name, at, warp, tag.phase - 1, (tag.phase - 1) & 1,
                         barrierName(*barrierById_[tag.barrier])));
}

/// A vector access of `lanes` elements at `index` starts on a multiple of its size.
void Interpreter::checkVectorAlignment(const Buffer &buffer, int64_t index, int64_t lanes, int t) {
  int64_t bytes = lanes * bytesOf(buffer.dtype);
  int64_t address = 0;
  switch (buffer.space) {
  case MemorySpace::Global:
    // The tensor itself starts `misalign` elements past an aligned address.
    address = (index + misalign_) * bytesOf(buffer.dtype);
    break;
  case MemorySpace::Shared:
    address = sharedOf(buffer, t).offset + index * bytesOf(buffer.dtype);
    break;
  case MemorySpace::Local:
    address = index * bytesOf(buffer.dtype);
    break;
  }
  if (positiveMod(address, bytes) != 0)
    fault(t, llvm::formatv("misaligned vector access of {0}: {1} lanes ({2} bytes) at element "
                           "{3}{4}, {5} bytes past a {2}-byte boundary",
                           buffer.name, lanes, bytes, index,
                           buffer.space == MemorySpace::Global && misalign_
                               ? llvm::formatv(" (tensor misaligned by {0})", misalign_).str()
                               : std::string(),
                           positiveMod(address, bytes)));
}

void Interpreter::commit(std::vector<Write> &writes) {
  std::stable_sort(writes.begin(), writes.end(),
                   [](const Write &a, const Write &b) { return a.target < b.target; });
  for (size_t i = 1; i < writes.size(); ++i) {
    const Write &a = writes[i - 1], &b = writes[i];
    bool same = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
    if (a.target == b.target && !same)
      fault(b.thread, llvm::formatv("threads {0} and {1} store different values ({2}, {3}) to "
                                    "{4}[{5}] in one statement: a race",
                                    a.thread, b.thread, a.value, b.value, b.buffer->name, b.index));
  }
  for (const Write &w : writes)
    *w.target = w.value;
}

void Interpreter::execAllocate(const StmtNode &s, const Mask &mask) {
  if (!s.buffer)
    fail("an allocation without a buffer");
  const Buffer &buffer = *s.buffer;
  switch (buffer.space) {
  case MemorySpace::Global:
    fault(mask.front(), "global buffer " + buffer.name +
                            " is allocated inside the kernel; global memory comes from "
                            "parameters and workspaces");
  case MemorySpace::Local: {
    // A declaration: each time a thread reaches it, the array is new and undefined.
    LocalStorage &local = cta_->locals[&buffer];
    if (local.data.empty()) {
      local.elements = buffer.elements();
      if (local.elements < 1 || local.elements > (int64_t(1) << 24))
        fault(mask.front(),
              llvm::formatv("local buffer {0} of {1} elements", buffer.name, local.elements));
      local.data.assign(static_cast<size_t>(threads_ * local.elements), NAN);
      local.allocated.assign(threads_, 0);
    }
    for (int t : mask) {
      std::fill_n(local.data.begin() + t * local.elements, local.elements, NAN);
      local.allocated[t] = 1;
    }
    return;
  }
  case MemorySpace::Shared:
    return allocateShared(s, mask);
  }
  FSL_UNREACHABLE("memory space");
}

void Interpreter::allocateShared(const StmtNode &s, const Mask &mask) {
  const Buffer &buffer = *s.buffer;
  int64_t elements =
      s.count ? uniform(s.count, mask, "a shared buffer's element count") : buffer.elements();
  int64_t bytes = elements * bytesOf(buffer.dtype);
  int64_t alignment = std::max<int64_t>(buffer.alignment, 1);
  if (elements < 1)
    fault(mask.front(), llvm::formatv("shared buffer {0} of {1} elements", buffer.name, elements));
  int64_t offset = 0;
  if (s.index) {
    // A slice of the dynamic shared memory the launch provides.
    offset = uniform(s.index, mask, "a shared buffer's byte offset");
    if (offset < 0 || offset + bytes > dynamicShared_)
      fault(mask.front(),
            llvm::formatv("shared buffer {0} needs bytes [{1}, {2}) but the launch provides {3} "
                          "bytes of dynamic shared memory",
                          buffer.name, offset, offset + bytes, dynamicShared_));
  } else {
    // A static __shared__ array: laid out after the ones before it.
    auto it = cta_->shared.find(&buffer);
    offset = it != cta_->shared.end()
                 ? it->second.offset
                 : (cta_->staticSharedEnd + alignment - 1) / alignment * alignment;
  }
  // The printer makes the buffer a typed pointer into the shared memory: scalar accesses
  // need their element's alignment, and only that. Vector copies, TMA and wgmma check what
  // they need where they access it (checkVectorAlignment, placeTmaBox, checkSwizzleBase):
  // `alignment` is what the lowering provides for those, not a requirement of its own.
  if (offset % bytesOf(buffer.dtype) != 0)
    fault(mask.front(), llvm::formatv("shared buffer {0} at byte offset {1} is not aligned to "
                                      "its {2}-byte elements",
                                      buffer.name, offset, bytesOf(buffer.dtype)));
  if (auto it = cta_->shared.find(&buffer); it != cta_->shared.end()) {
    // Reached again (a loop): the same memory, its contents kept.
    if (it->second.offset != offset || it->second.elements != elements)
      fault(mask.front(), "shared buffer " + buffer.name + " is allocated again elsewhere");
    return;
  }
  // Each buffer has its own storage here, so two live buffers on the same bytes would
  // not see each other's writes as they do on the GPU: refuse rather than differ.
  for (const auto &[other, storage] : cta_->shared)
    if (storage.dynamic == (s.index != nullptr) && offset < storage.offset + storage.bytes &&
        storage.offset < offset + bytes)
      fault(mask.front(),
            llvm::formatv("shared buffers {0} (bytes [{1}, {2})) and {3} (bytes [{4}, {5})) "
                          "overlap; shared memory reused by two buffers is not simulated",
                          buffer.name, offset, offset + bytes, other->name, storage.offset,
                          storage.offset + storage.bytes));
  if (!s.index)
    cta_->staticSharedEnd = offset + bytes;
  if (cta_->staticSharedEnd + dynamicShared_ > limits_.maxSharedBytesPerBlock)
    fault(mask.front(),
          llvm::formatv("{0} bytes of static and {1} of dynamic shared memory "
                        "exceed the target's {2} per block",
                        cta_->staticSharedEnd, dynamicShared_, limits_.maxSharedBytesPerBlock));
  SharedStorage &shared = cta_->shared[&buffer];
  shared.offset = offset;
  shared.elements = elements;
  shared.bytes = bytes;
  shared.dynamic = s.index != nullptr;
  shared.data.assign(static_cast<size_t>(elements), NAN);
  shared.history.assign(static_cast<size_t>(elements), AccessHistory{});
}

/// The element of shared buffer `shared` that byte `relative` of a swizzled tile starting
/// at its element 0 lands in.
int64_t Interpreter::swizzledElement(const Buffer &buffer, const SharedStorage &shared,
                                     int64_t relative, Swizzle swizzle) {
  int64_t address = kir::swizzleAddress(shared.offset + relative, swizzle);
  return (address - shared.offset) / bytesOf(buffer.dtype);
}

void Interpreter::checkSwizzleBase(const Buffer &buffer, const SharedStorage &shared,
                                   Swizzle swizzle, int t) {
  if (swizzle != Swizzle::None && shared.offset % kir::swizzleRepeatBytes(swizzle) != 0)
    fault(t, llvm::formatv("shared buffer {0} at byte offset {1} is used with the {2}, whose "
                           "pattern repeats every {3} bytes: align it to {3}",
                           buffer.name, shared.offset, swizzleName(swizzle),
                           kir::swizzleRepeatBytes(swizzle)));
}

} // namespace fsl::sim
