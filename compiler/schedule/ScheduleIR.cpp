// ScheduleIR.cpp — names and lookups.
#include "schedule/ScheduleIR.h"

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
  return "serial";
}

bool isBlockIndex(Parallel parallel) {
  return parallel == Parallel::BIDx || parallel == Parallel::BIDy || parallel == Parallel::BIDz;
}

bool isThreadIndex(Parallel parallel) {
  return parallel == Parallel::TIDx || parallel == Parallel::TIDy || parallel == Parallel::TIDz;
}

Parallel fromAst(ast::ParallelType type) {
  switch (type) {
  case ast::ParallelType::BIDx:
    return Parallel::BIDx;
  case ast::ParallelType::BIDy:
    return Parallel::BIDy;
  case ast::ParallelType::BIDz:
    return Parallel::BIDz;
  case ast::ParallelType::TIDx:
    return Parallel::TIDx;
  case ast::ParallelType::TIDy:
    return Parallel::TIDy;
  case ast::ParallelType::TIDz:
    return Parallel::TIDz;
  }
  return Parallel::Serial;
}

int TensorSchedule::findLoop(llvm::StringRef loopName) const {
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].name == loopName)
      return static_cast<int>(i);
  return -1;
}

int Schedule::findTensor(llvm::StringRef name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name)
      return static_cast<int>(i);
    for (const std::string &alias : tensors[i].aliases)
      if (alias == name)
        return static_cast<int>(i);
  }
  return -1;
}

std::string loopNames(const TensorSchedule &tensor) {
  std::string text;
  for (size_t i = 0; i < tensor.loops.size(); ++i)
    text += (i ? ", " : "") + tensor.loops[i].name;
  return text.empty() ? "none" : text;
}

} // namespace fsl::sched
