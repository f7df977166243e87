// Wgmma.cpp — wgmma m64nNk16 issued by the four warps of a warpgroup together: its
// operands read from swizzled shared memory (kir/Layout.h) and checked for their layout,
// the exact tile product, and the accumulator fragments of each thread updated.
#include "sim/Interpreter.h"

#include "eval/Evaluator.h"
#include "kir/Layout.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FormatVariadic.h>

#include <bit>

namespace fsl::sim {

/// Element (mn, k) of a wgmma operand tile in shared memory, `start` elements into the
/// buffer, laid out as kir::wgmmaOperandByteOffset says (K-major, or M/N-major in
/// span-wide blocks `blockBytes` apart). The swizzle applies to the address reached.
double Interpreter::operand(const Buffer &buffer, int64_t start, bool mnMajor, int64_t blockBytes,
                            int64_t mn, int64_t k, int t, const char *which) {
  SharedStorage &shared = sharedOf(buffer, t);
  int64_t bytes = bytesOf(buffer.dtype);
  int64_t relative = start * bytes +
                     kir::wgmmaOperandByteOffset(buffer.swizzle, bytes, mnMajor, blockBytes, mn, k);
  int64_t at = swizzledElement(buffer, shared, relative, buffer.swizzle);
  if (at < 0 || at >= shared.elements)
    fault(t, llvm::formatv("wgmma operand {0} reads element {1} of {2} ({3} elements)", which, at,
                           buffer.name, shared.elements));
  if (!shared.tags.empty())
    for (int w = t / 32; w < t / 32 + 4; ++w) // the warpgroup of `t`, its first thread
      checkVisible(buffer, shared, at, w, w * 32);
  // A read by the warpgroup, ordered for the others by what its first warp does after it
  // (the thread that releases a stage is one a warpgroup); the product reads the element
  // until a wgmma.wait_group retires its group (retireWgmmaGroups).
  trackShared(buffer, shared, at, t, /*store=*/false);
  if (shared.wgmmaReads.empty())
    shared.wgmmaReads.assign(shared.elements, 0);
  ++shared.wgmmaReads[at];
  cta_->openWgmmaReads[t / 128].push_back({&buffer, &shared, at});
  return shared.data[at];
}

/// The span-wide blocks of an operand `extent` elements along M (or N), read from
/// element `start`: an M/N-major operand wider than a span needs their distance, which
/// keeps each block where the swizzle's pattern starts (the descriptor's base offset is
/// 0) and its 16 rows of K clear of the next block; the operand starts at a row's start,
/// where the blocks are cut.
void Interpreter::checkBlocks(const Buffer &buffer, bool mnMajor, int64_t blockBytes,
                              int64_t extent, int64_t start, int t, const char *which) {
  int64_t bytes = bytesOf(buffer.dtype), span = kir::swizzleSpanBytes(buffer.swizzle);
  const char *dimension = which[0] == 'A' ? "rows" : "columns";
  if (!mnMajor) {
    if (blockBytes != 0)
      fault(t, llvm::formatv("K-major wgmma operand {0} ({1}) with blocks {2} bytes apart", which,
                             buffer.name, blockBytes));
    return;
  }
  if (extent * bytes <= span)
    return;
  if (blockBytes == 0)
    fault(t, llvm::formatv("an M/N-major wgmma operand {0} ({1}) of {2} {3}, wider than one "
                           "{4}-byte swizzle span, without the distance of its span-wide blocks",
                           which, buffer.name, extent, dimension, span));
  int64_t repeat = kir::swizzleRepeatBytes(buffer.swizzle), rows = 16;
  if (blockBytes % repeat != 0)
    fault(t, llvm::formatv("wgmma operand {0} ({1}) has blocks {2} bytes apart: the {3} "
                           "starts its pattern every {4} bytes, and so must each block",
                           which, buffer.name, blockBytes, swizzleName(buffer.swizzle), repeat));
  if (blockBytes < rows * span)
    fault(t, llvm::formatv("wgmma operand {0} ({1}) has blocks {2} bytes apart, fewer than "
                           "its {3} rows of K take ({4} bytes)",
                           which, buffer.name, blockBytes, rows, rows * span));
  if (start * bytes % span != 0)
    fault(t, llvm::formatv("wgmma operand {0} ({1}) of span-wide blocks starts at element "
                           "{2}, {3} bytes into a {4}-byte row",
                           which, buffer.name, start, start * bytes % span, span));
}

void Interpreter::execWgmma(const StmtNode &s, const Mask &mask) {
  const kir::WgmmaShape &shape = s.shape;
  int t0 = mask.front();
  if (shape.m != 64 || shape.k != 16 || shape.n < 8 || shape.n > 256 || shape.n % 8 != 0)
    fault(t0, llvm::formatv("wgmma m{0}n{1}k{2}: m64nNk16 with N a multiple of 8 up to 256 is "
                            "simulated",
                            shape.m, shape.n, shape.k));
  if (s.inputType != DType::BF16 && s.inputType != DType::F16)
    fault(t0, "wgmma with " + ir::dtypeName(s.inputType).str() + " inputs is not simulated");
  if (!s.buffer || !s.operandA || !s.operandB)
    fault(t0, "wgmma without its accumulator or operands");
  const Buffer &acc = *s.buffer;
  if (acc.space != MemorySpace::Local || acc.dtype != DType::F32)
    fault(t0, "wgmma accumulator " + acc.name + " must be a local f32 buffer");
  for (const Buffer *b : {s.operandA.get(), s.operandB.get()}) {
    if (b->space != MemorySpace::Shared || b->dtype != s.inputType)
      fault(t0, "wgmma operand " + b->name + " must be a shared " +
                    ir::dtypeName(s.inputType).str() + " buffer");
    if (b->swizzle == Swizzle::None)
      fault(t0, "wgmma operand " + b->name +
                    " without a swizzle (the interleaved core-matrix layout) is not simulated");
    checkSwizzleBase(*b, sharedOf(*b, t0), b->swizzle, t0);
  }
  // The four warps of each warpgroup issue one wgmma together.
  std::map<int, std::vector<int>> warpgroups;
  for (int t : mask)
    warpgroups[t / 128].push_back(t);
  for (const auto &[group, members] : warpgroups) {
    if (members.size() != 128)
      fault(members.front(), llvm::formatv("wgmma reached by {0} of the 128 threads of "
                                           "warpgroup {1}",
                                           members.size(), group));
    int64_t a = uniform(s.offsetA, members, "wgmma operand A's offset");
    int64_t b = uniform(s.offsetB, members, "wgmma operand B's offset");
    checkBlocks(*s.operandA, s.transposeA, s.blockBytesA, shape.m, a, members.front(), "A");
    checkBlocks(*s.operandB, s.transposeB, s.blockBytesB, shape.n, b, members.front(), "B");
    // D += A B, each product exact, their sum over k added to the f32 accumulator.
    std::vector<double> product(static_cast<size_t>(shape.m * shape.n), 0.0);
    for (int64_t k = 0; k < shape.k; ++k) {
      std::vector<double> column(shape.m);
      for (int64_t m = 0; m < shape.m; ++m)
        column[m] =
            operand(*s.operandA, a, s.transposeA, s.blockBytesA, m, k, members.front(), "A");
      for (int64_t n = 0; n < shape.n; ++n) {
        double bv =
            operand(*s.operandB, b, s.transposeB, s.blockBytesB, n, k, members.front(), "B");
        for (int64_t m = 0; m < shape.m; ++m)
          product[m * shape.n + n] += column[m] * bv;
      }
    }
    // scale-d: the product replaces the accumulator when the flag is 0.
    bool accumulate =
        !s.accumulate || uniform(s.accumulate, members, "the wgmma accumulate flag") != 0;
    // The products write each thread's fragments until the wait that retires their group
    // (retireWgmmaGroups): the thread's own accesses before it are faults (element()).
    auto found = cta_->locals.find(&acc);
    if (found == cta_->locals.end() || found->second.data.empty())
      fault(members.front(), "local buffer " + acc.name + " is used before its allocation");
    LocalStorage &local = found->second;
    if (local.wgmmaWrites.empty())
      local.wgmmaWrites.assign(local.data.size(), 0);
    for (int t : members) {
      int64_t base = s.index ? integer(s.index, t, "a wgmma accumulator offset") : 0;
      std::vector<AccumulatorWrite> &open = cta_->openWgmmaWrites[t / 32];
      for (int64_t i = 0; i < shape.n / 2; ++i) {
        auto [row, col] = kir::wgmmaAccumulatorPosition(t % 128, i);
        double *d = nullptr;
        {
          wgmmaWritingAccumulators_ = true;
          auto reset = llvm::make_scope_exit([&] { wgmmaWritingAccumulators_ = false; });
          d = &element(acc, base + i, t, true);
        }
        *d = eval::roundTo((accumulate ? *d : 0.0) + product[row * shape.n + col], DType::F32);
        int64_t at = static_cast<int64_t>(t) * local.elements + base + i;
        ++local.wgmmaWrites[at];
        open.push_back({&local, at});
      }
    }
  }
}

/// The four warps of a warpgroup issue a wgmma together: the last of them to reach it
/// runs it for all four, whose operands each warp must have seen arrive (`clock`).
bool Interpreter::arriveWgmma(Warp &warp, const StmtNode &s, LaneMask lanes) {
  int group = warp.id / 4;
  if (lanes != warp.lanes)
    fault(warp.first + std::countr_zero(lanes),
          llvm::formatv("wgmma reached by {0} of the 128 threads of warpgroup {1}",
                        std::popcount(lanes) + threadsWaiting(Wait::Wgmma, &s, group), group));
  await(warp, Wait::Wgmma, s, lanes);
  std::vector<Warp *> met = warpsWaiting(Wait::Wgmma, &s, group);
  if (met.size() < 4)
    return false;
  Mask members;
  for (const Warp *w : met)
    for (LaneMask m = w->waiting; m; m &= m - 1)
      members.push_back(w->first + std::countr_zero(m));
  execWgmma(s, members);
  for (Warp *w : met)
    w->wait = Wait::None;
  return true;
}

} // namespace fsl::sim
