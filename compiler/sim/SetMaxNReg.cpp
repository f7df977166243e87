// SetMaxNReg.cpp — setmaxnreg by whole warpgroups: registers given up (dec) go to the
// block's pool, and an increase waits until the pool holds what it asks for.
#include "sim/Interpreter.h"

#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <bit>

namespace fsl::sim {

/// setmaxnreg: the same instruction by the four warps of a warpgroup (PTX ISA,
/// setmaxnreg). Each warp then gives registers to the block's pool (dec) or takes them
/// from it (inc), waiting until the pool holds enough: only what other warps gave up
/// can be taken, so counts whose total exceeds the block's registers never run.
bool Interpreter::execSetMaxNReg(Warp &warp, const StmtNode &s, LaneMask lanes) {
  int t0 = warp.first + std::countr_zero(lanes);
  if (s.registers < 24 || s.registers > 256 || s.registers % 8 != 0)
    fault(t0, llvm::formatv("setmaxnreg {0}: 24 to 256 in steps of 8", s.registers));
  int group = warp.id / 4;
  int arrived = std::popcount(lanes) + threadsWaiting(Wait::SetMaxNReg, &s, group);
  if (lanes != warp.lanes)
    fault(t0, llvm::formatv("setmaxnreg reached by {0} of the 128 threads of warpgroup {1}",
                            arrived, group));
  await(warp, Wait::SetMaxNReg, s, lanes);
  std::vector<Warp *> met = warpsWaiting(Wait::SetMaxNReg, &s, group);
  if (met.size() < 4)
    return false;
  if (arrived != 128)
    fault(t0, llvm::formatv("setmaxnreg reached by {0} of the 128 threads of warpgroup {1}",
                            arrived, group));
  for (Warp *w : met) {
    w->wait = Wait::None;
    if (w->registersKnown && (s.increase ? s.registers < w->registers : s.registers > w->registers))
      fault(w->first, llvm::formatv("setmaxnreg.{0} {1} in a warp that holds {2} registers per "
                                    "thread",
                                    s.increase ? "inc" : "dec", s.registers, w->registers));
    if (s.increase) {
      if (!takeRegisters(*w, s.registers)) {
        await(*w, Wait::Registers, s, w->lanes);
        w->want = s.registers;
      }
      continue;
    }
    cta_->registerPool += 32 * std::max<int64_t>(w->registers - s.registers, 0);
    w->registers = s.registers;
    w->registersKnown = true;
  }
  return warp.wait == Wait::None;
}

/// setmaxnreg.inc of `warp` to `want` registers per thread, if the pool holds them.
bool Interpreter::takeRegisters(Warp &warp, int64_t want) {
  int64_t need = 32 * std::max<int64_t>(want - warp.registers, 0);
  if (need > cta_->registerPool)
    return false;
  cta_->registerPool -= need;
  warp.registers = want;
  warp.registersKnown = true;
  return true;
}

} // namespace fsl::sim
