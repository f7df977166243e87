// Directive.cpp — the names of directive operands.
#include "schedule/Directive.h"

#include "support/Internal.h"

namespace fsl::sched {

llvm::StringRef parallelName(Parallel parallel) {
  switch (parallel) {
  case Parallel::Serial:
    return "serial";
  case Parallel::BIDx:
    return "BIDx";
  case Parallel::BIDy:
    return "BIDy";
  case Parallel::BIDz:
    return "BIDz";
  case Parallel::TIDx:
    return "TIDx";
  case Parallel::TIDy:
    return "TIDy";
  case Parallel::TIDz:
    return "TIDz";
  }
  FSL_UNREACHABLE("a parallel type");
}

bool isBlockIndex(Parallel parallel) {
  return parallel == Parallel::BIDx || parallel == Parallel::BIDy || parallel == Parallel::BIDz;
}

bool isThreadIndex(Parallel parallel) {
  return parallel == Parallel::TIDx || parallel == Parallel::TIDy || parallel == Parallel::TIDz;
}

llvm::StringRef memoryKindName(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Registers:
    return "registers";
  case MemoryKind::Shared:
    return "shared";
  case MemoryKind::Recompute:
    return "recompute";
  }
  FSL_UNREACHABLE("a memory kind");
}

llvm::StringRef tileOrderName(TileOrder order) {
  switch (order) {
  case TileOrder::OnePerCta:
    return "one_per_cta";
  case TileOrder::Persistent:
    return "persistent";
  case TileOrder::StreamK:
    return "stream_k";
  case TileOrder::SplitK:
    return "split_k";
  }
  FSL_UNREACHABLE("a tile order");
}

} // namespace fsl::sched
