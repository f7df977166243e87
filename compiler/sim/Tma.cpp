// Tma.cpp — TMA loads and stores of a tensor map's box between global and shared memory:
// the tensor map checked as cuTensorMapEncodeTiled would, the box walked in its dense
// row-major order through the swizzle, zero fill outside the tensor, and a load's
// multicast to the CTAs of its mask with its bytes completed on each one's mbarrier.
#include "sim/Interpreter.h"

#include "eval/Evaluator.h"

#include <llvm/Support/FormatVariadic.h>

namespace fsl::sim {

/// A TMA load or store on its way through the steps of `tma`: what the statement names,
/// the box it moves, and where a load's data goes.
struct Interpreter::TmaTransfer {
  TmaTransfer(const StmtNode &s, int thread, bool load, const char *op)
      : s(s), thread(thread), load(load), op(op), map(*s.tensorMap), global(*map.global),
        tile(*s.buffer) {}

  const StmtNode &s;
  int thread;
  bool load;
  const char *op; // "TMA load" or "TMA store", as faults name it
  const kir::TensorMap &map;
  const Buffer &global, &tile;
  std::vector<double> *memory = nullptr;     // the global tensor's elements
  SharedStorage *shared = nullptr;           // the tile's storage in this CTA
  int64_t bytes = 0;                         // of one element
  std::vector<int64_t> extents, coordinates; // the tensor's, and the box's first element's
  int64_t globalElements = 1, boxElements = 1;
  int64_t start = 0; // the tile element the box starts at (before the swizzle)
  /// A load's data is readable once the phase its bytes count in completes: each element
  /// it writes is tagged with that phase (see `clock`). A multicast load writes the same
  /// elements of every CTA of its mask, and completes on the barrier of each.
  struct Destination {
    SharedStorage *shared;
    MBarrier *barrier;
  };
  std::vector<Destination> destinations;
};

void Interpreter::tma(const StmtNode &s, int t, bool load) {
  const char *op = load ? "TMA load" : "TMA store";
  checkTmaStatement(s, t, load, op);
  TmaTransfer transfer(s, t, load, op);
  transfer.memory = &globalAt(transfer.global, t);
  transfer.shared = &sharedOf(transfer.tile, t);
  transfer.bytes = bytesOf(transfer.global.dtype);
  readTmaBox(transfer);
  checkTensorMap(transfer);
  placeTmaBox(transfer);
  if (load)
    findTmaDestinations(transfer);
  else
    cta_->bulkGroups[t].push_back(BulkGroup{{}, &s}); // the printer commits a group a store
  copyTmaBox(transfer);
  completeTmaBytes(transfer);
}

/// What the statement names: a tensor map and a shared tile of the same type and swizzle,
/// box, extents and coordinates of one rank, and no multicast for a store.
void Interpreter::checkTmaStatement(const StmtNode &s, int t, bool load, const char *op) {
  if (!s.tensorMap || !s.tensorMap->global || !s.buffer)
    fault(t, llvm::formatv("{0} without its tensor map or shared buffer", op));
  const kir::TensorMap &map = *s.tensorMap;
  const Buffer &global = *map.global, &tile = *s.buffer;
  size_t rank = map.box.size();
  if (rank < 1 || rank > 5 || map.extents.size() != rank || s.coordinates.size() != rank)
    fault(t, llvm::formatv("{0} through {1}: box, extents and coordinates of ranks {2}, {3}, "
                           "{4} (1 to 5, all equal)",
                           op, map.name, rank, map.extents.size(), s.coordinates.size()));
  if (!load && s.multicastMask)
    fault(t, "a TMA store with a multicast mask");
  if (tile.space != MemorySpace::Shared)
    fault(t, llvm::formatv("{0} into {1}, which is not in shared memory", op, tile.name));
  if (tile.dtype != global.dtype)
    fault(t, llvm::formatv("{0} between {1} ({2}) and {3} ({4})", op, global.name,
                           ir::dtypeName(global.dtype), tile.name, ir::dtypeName(tile.dtype)));
  if (tile.swizzle != map.swizzle)
    fault(t,
          llvm::formatv("tensor map {0} writes {1} with the {2}, but {1} is declared with "
                        "the {3}",
                        map.name, tile.name, swizzleName(map.swizzle), swizzleName(tile.swizzle)));
}

/// The tensor's extents and the box's coordinates, as this thread computes them.
void Interpreter::readTmaBox(TmaTransfer &x) {
  const kir::TensorMap &map = x.map;
  int t = x.thread;
  size_t rank = map.box.size();
  x.extents.resize(rank);
  x.coordinates.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    x.extents[d] = integer(map.extents[d], t, "a tensor-map extent");
    x.coordinates[d] = integer(x.s.coordinates[d], t, "a TMA coordinate");
    if (x.extents[d] < 1)
      fault(t, llvm::formatv("tensor map {0} has extent {1} in dimension {2}", map.name,
                             x.extents[d], d));
    if (map.box[d] < 1 || map.box[d] > 256)
      fault(t, llvm::formatv("tensor map {0} has a box extent of {1} (1 to 256)", map.name,
                             map.box[d]));
    x.globalElements *= x.extents[d];
    x.boxElements *= map.box[d];
  }
}

/// The tensor map as cuTensorMapEncodeTiled accepts it (a 16-byte aligned tensor with
/// 16-byte strides, and an inner box of whole 16-byte chunks), as far as the simulator
/// models it, over a tensor that holds what it covers.
void Interpreter::checkTensorMap(const TmaTransfer &x) {
  const kir::TensorMap &map = x.map;
  int t = x.thread;
  size_t rank = map.box.size();
  int64_t bytes = x.bytes;
  if ((misalign_ * bytes) % 16 != 0)
    fault(t, llvm::formatv("{0} of {1}: the tensor starts {2} bytes past a 16-byte boundary", x.op,
                           x.global.name, misalign_ * bytes));
  int64_t stride = bytes;
  for (size_t d = rank; d-- > 1;) {
    stride *= x.extents[d];
    if (stride % 16 != 0)
      fault(t, llvm::formatv("tensor map {0}: a stride of {1} bytes is not a multiple of 16",
                             map.name, stride));
  }
  int64_t innerBytes = map.box[rank - 1] * bytes;
  if (innerBytes % 16 != 0)
    fault(t, llvm::formatv("tensor map {0}: an inner box of {1} bytes is not a multiple of 16",
                           map.name, innerBytes));
  if (map.swizzle != Swizzle::None && innerBytes != kir::swizzleSpanBytes(map.swizzle))
    fault(t, llvm::formatv("tensor map {0}: an inner box of {1} bytes with the {2} is not "
                           "simulated (only boxes whose rows are the swizzle's {3} bytes)",
                           map.name, innerBytes, swizzleName(map.swizzle),
                           kir::swizzleSpanBytes(map.swizzle)));
  if (x.globalElements > static_cast<int64_t>(x.memory->size()))
    fault(t, llvm::formatv("tensor map {0} covers {1} elements but {2} holds {3}", map.name,
                           x.globalElements, x.global.name, x.memory->size()));
}

/// Where in the tile the box starts: 128-byte aligned, in a tile aligned to its swizzle.
void Interpreter::placeTmaBox(TmaTransfer &x) {
  int t = x.thread;
  const SharedStorage &shared = *x.shared;
  x.start = x.s.index ? integer(x.s.index, t, "a TMA shared-memory offset") : 0;
  if ((shared.offset + x.start * x.bytes) % 128 != 0)
    fault(t, llvm::formatv("{0} at byte {1} of shared memory; TMA needs 128-byte alignment", x.op,
                           shared.offset + x.start * x.bytes));
  checkSwizzleBase(x.tile, shared, x.map.swizzle, t);
}

/// The CTAs a load writes into (this one, or those of its multicast mask) and the
/// mbarrier of each that its bytes complete on. A peer's are reached while it may still
/// be in flight (Cta::unseen).
void Interpreter::findTmaDestinations(TmaTransfer &x) {
  const StmtNode &s = x.s;
  int t = x.thread;
  if (!s.barrier)
    fault(t, "TMA load without an mbarrier to complete on");
  int64_t index = s.barrierIndex ? integer(s.barrierIndex, t, "an mbarrier index") : 0;
  int64_t ctas = static_cast<int64_t>(ctas_.size());
  int64_t mask = int64_t(1) << cta_->rank;
  if (s.multicastMask) {
    mask = integer(s.multicastMask, t, "a multicast mask");
    if (mask < 1 || mask >= (int64_t(1) << ctas))
      fault(t, llvm::formatv("TMA load with multicast mask {0}: a cluster of {1} CTAs has "
                             "masks 1 to {2}",
                             mask, ctas, (int64_t(1) << ctas) - 1));
  }
  for (int64_t rank = 0; rank < ctas; ++rank) {
    if (!(mask >> rank & 1))
      continue;
    Cta &cta = reach(rank, t, "a multicast TMA load");
    MBarrier &barrier = liveBarrier(*s.barrier, index, t, &cta);
    SharedStorage &into = peerShared(cta, x.tile, t);
    if (&cta != cta_)
      cta.unseen.push_back({&barrier, barrier.phase, cta_->rank, /*async=*/true});
    if (into.tags.empty())
      into.tags.assign(static_cast<size_t>(into.elements), Tag{});
    x.destinations.push_back({&into, &barrier});
  }
}

/// Moves the box element by element: a load from the tensor (zero outside it) into each
/// destination, tagged with the phase that makes it readable; a store of what the tile
/// holds, once this thread's warp may read it, into the tensor (nothing outside it).
void Interpreter::copyTmaBox(TmaTransfer &x) {
  const kir::TensorMap &map = x.map;
  const Buffer &tile = x.tile;
  SharedStorage &shared = *x.shared;
  std::vector<double> &memory = *x.memory;
  int t = x.thread;
  size_t rank = map.box.size();
  // Walk the box in row-major order (innermost last), the order of its dense layout.
  std::vector<int64_t> position(rank, 0);
  for (int64_t linear = 0; linear < x.boxElements; ++linear) {
    int64_t at = swizzledElement(tile, shared, (x.start + linear) * x.bytes, map.swizzle);
    if (at < 0 || at >= shared.elements)
      fault(t, llvm::formatv("{0}: a box of {1} elements at element {2} does not fit {3} ({4} "
                             "elements)",
                             x.op, x.boxElements, x.start, tile.name, shared.elements));
    bool inside = true;
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = x.coordinates[d] + position[d];
      inside = inside && c >= 0 && c < x.extents[d];
      offset = offset * x.extents[d] + c;
    }
    if (x.load) {
      double value = inside ? memory[offset] : 0.0; // out of the tensor: zero fill
      for (const TmaTransfer::Destination &d : x.destinations) {
        checkNoAsyncRead(tile, *d.shared, at, t);
        trackAsyncWrite(tile, *d.shared, at, t, /*peer=*/d.shared != &shared);
        d.shared->data[at] = value;
        d.shared->tags[at] = {d.barrier->id, d.barrier->phase + 1};
      }
    } else {
      if (!shared.tags.empty())
        checkVisible(tile, shared, at, t / 32, t);
      trackShared(tile, shared, at, t, /*store=*/false); // read at its issue, and until
      if (shared.storeReads.empty())                     // a wait retires it
        shared.storeReads.assign(shared.elements, 0);
      ++shared.storeReads[at];
      cta_->bulkGroups[t].back().reads.push_back({&tile, &shared, at});
      if (inside)
        memory[offset] = eval::roundTo(shared.data[at], x.global.dtype);
    }
    for (size_t d = rank; d-- > 0;) {
      if (++position[d] < map.box[d])
        break;
      position[d] = 0;
    }
  }
}

/// A load's bytes, the whole box's, complete on the mbarrier of each destination.
void Interpreter::completeTmaBytes(TmaTransfer &x) {
  int64_t boxBytes = x.boxElements * x.bytes;
  for (const TmaTransfer::Destination &d : x.destinations) {
    MBarrier &barrier = *d.barrier;
    barrier.tx -= boxBytes; // the whole box counts, zero-filled parts too
    // Before the phase's last arrival the count may go below zero (the arrival that
    // expects the bytes can come after them); after it, the bytes are too many.
    if (barrier.tx < 0 && barrier.pending == 0)
      fault(x.thread,
            llvm::formatv("TMA load of {0} bytes completes on {1}, which expected {2} bytes "
                          "fewer (tx count {3})",
                          boxBytes, barrierName(barrier), -barrier.tx, barrier.tx));
    settle(barrier);
  }
}

} // namespace fsl::sim
