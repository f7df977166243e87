// Checker.cpp — one function per rule family, in the order of Diagnostics.def.
//
// Sizes are combined with checked arithmetic (llvm/Support/CheckedArithmetic.h): a
// product that wraps can come out small (2^32 x 2^32 threads is 0 in 64 bits) and pass
// the very limit it breaks. A product that does not fit is over every limit; messages
// then say "more than 2^63 - 1" next to the factors.
#include "check/Checker.h"

#include "ir/OnePass.h"
#include "ir/RegisterPressure.h"
#include "schedule/ScheduleBuilder.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CheckedArithmetic.h>

#include <algorithm>
#include <map>
#include <set>

namespace fsl {
namespace {

using sched::Loop;

/// `a * b`, none when either is none or the product does not fit in 64 bits.
std::optional<int64_t> mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  return a && b ? llvm::checkedMul(*a, *b) : std::nullopt;
}
std::optional<int64_t> add(std::optional<int64_t> a, std::optional<int64_t> b) {
  return a && b ? llvm::checkedAdd(*a, *b) : std::nullopt;
}
/// A checked size for a message.
std::string sizeText(std::optional<int64_t> value) {
  return value ? std::to_string(*value) : "more than 2^63 - 1";
}

using sched::Parallel;
using sched::TensorSchedule;

/// `unroll D by N` becomes `#pragma unroll N`, which takes a positive int: a factor
/// beyond 2^16 is no unrolling any loop needs, only code size.
constexpr int64_t kMaxUnrollFactor = 65536;
/// `swizzle G`: the tile walk computes `tile / (G * tiles along N)` in 64-bit indices.
/// With G at most 2^16 and tiles at least 64 wide (fewer than 2^46 + 1 of them along an
/// N below 2^52), that product fits; 2^62 overflowed it.
constexpr int64_t kMaxSwizzle = 65536;
/// `hilbert B`: the curve is unrolled in the kernel, one step per two bits of a block's
/// B * B tiles; 64 (six steps) is a block of 4096 tiles, more than any grid has along M.
constexpr int64_t kMaxHilbertBlock = 64;
/// `split_k N`: the parts of K the lowering takes (as auto(matmul)'s split_k knob).
constexpr int64_t kMaxSplitK = 64;

class Checker {
public:
  Checker(const sched::Schedule &schedule, const Target &target, DiagnosticEngine &diagnostics)
      : schedule_(schedule), target_(target), diagnostics_(diagnostics) {}

  bool run() {
    unsigned errorsBefore = diagnostics_.errorCount();
    checkReductionParallelization();
    checkParallelTypes();
    checkProducerConsumer();
    checkLaunchLimits();
    checkVectorizeAndUnroll();
    checkPlacement();
    checkNotLowered();
    checkStridedParameters();
    checkPersistentBuffers();
    checkColumnPartials();
    checkCache();
    checkMatmul();
    checkMatmulSchedule();
    checkReduceForm();
    checkFastMath();
    return diagnostics_.errorCount() == errorsBefore;
  }

private:
  /// Where a decision's directive is written; the schedule header when none made it.
  llvm::SMRange at(const std::optional<sched::Origin> &origin) const {
    return origin ? origin->range : schedule_.header.fusionRange;
  }

  std::string rootNames(const Loop &loop) const {
    std::vector<std::string> names;
    for (ir::DimId dim : loop.roots)
      names.push_back(schedule_.fusion->dims[dim].name);
    return llvm::join(names, "*");
  }

  /// A reduction loop on a block index is a grid reduction: each block reduces its piece
  /// of the row, and a second kernel combines the pieces and computes the row outputs
  /// (lower/Plan.cpp). That holds only while no value needs the result per element of a
  /// reduced dimension (softmax's exp(x - max) does): then every block would need the
  /// others' pieces before going on, unless `grid_sync` has every block store its piece's
  /// result, meet the others at a grid barrier and combine the row's pieces itself
  /// (lower/Plan.cpp checks the rest).
  void checkReductionParallelization() {
    if (schedule_.gridSync)
      return;
    for (const TensorSchedule &tensor : schedule_.tensors)
      for (const Loop &loop : tensor.loops) {
        if (!loop.isReduction || !sched::isBlockIndex(loop.parallel))
          continue;
        const ir::Value *user = elementUserOf(*tensor.value);
        if (!user)
          continue;
        diagnostics_
            .report(DiagId::ReductionOnBlockIndex, at(loop.parallelizedBy), loop.name,
                    sched::userName(tensor, *schedule_.fusion), sched::parallelName(loop.parallel),
                    valueLabel(*user), rootNames(loop))
            .note(DiagId::NoteFusionLine, user->range,
                  "'" + sched::userName(tensor, *schedule_.fusion) + "' is used per element of " +
                      rootNames(loop) + " here");
      }
  }

  /// A value that depends on `reduction` and has one of its reduced dimensions, if any.
  /// With `reduce one_pass`, a pair's exp(a - max) or (a - mean)^2 is not one: the pair's
  /// accumulators stand for it (ir::absorbedValueIds), and the blocks' partial pairs combine
  /// in the grid reduction's second kernel. A value that uses it is still one.
  const ir::Value *elementUserOf(const ir::Value &reduction) const {
    std::set<unsigned> absorbed;
    if (schedule_.onePass())
      absorbed = ir::absorbedValueIds(*schedule_.fusion);
    std::set<unsigned> reached{reduction.id};
    for (const auto &value : schedule_.fusion->values) {
      if (!llvm::any_of(value->operands,
                        [&](const ir::Value *operand) { return reached.count(operand->id); }))
        continue;
      reached.insert(value->id);
      if (absorbed.count(value->id))
        continue;
      for (ir::DimId dim : reduction.reduced)
        if (llvm::is_contained(value->dims, dim))
          return value.get();
    }
    return nullptr;
  }

  static std::string valueLabel(const ir::Value &value) {
    return value.name.empty() ? "an expression" : "'" + value.name + "'";
  }

  /// How many other tensors share a mistake reported once, for the message's end.
  static std::string alsoIn(size_t others, llvm::StringRef preposition = "in") {
    if (others == 0)
      return "";
    return (", and " + preposition + " " + std::to_string(others) + " other tensor" +
            (others == 1 ? "" : "s"))
        .str();
  }

  /// Two loops on one parallel type is one mistake, whichever tensors have both loops:
  /// one error per parallel type, naming the first tensor; the extents of that type then
  /// differ as a consequence and are not reported again.
  void checkParallelTypes() {
    struct Reuse {
      const Loop *first, *second;
      const TensorSchedule *tensor;
      size_t others = 0;
    };
    std::map<Parallel, Reuse> reused;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      std::map<Parallel, const Loop *> seen;
      for (const Loop &loop : tensor.loops) {
        if (loop.parallel == Parallel::Serial)
          continue;
        auto [it, inserted] = seen.emplace(loop.parallel, &loop);
        if (inserted)
          continue;
        reusedIn_.insert({&tensor, loop.parallel});
        // Named in the order they were bound; reported at the later binding.
        const Loop *earlier = it->second, *later = &loop;
        auto index = [](const Loop *l) { return l->parallelizedBy ? l->parallelizedBy->index : 0; };
        if (index(earlier) > index(later))
          std::swap(earlier, later);
        auto [entry, firstTime] = reused.emplace(loop.parallel, Reuse{earlier, later, &tensor});
        if (!firstTime && entry->second.tensor != &tensor)
          ++entry->second.others;
      }
    }
    for (const auto &[parallel, reuse] : reused)
      diagnostics_.report(DiagId::ParallelTypeReused, at(reuse.second->parallelizedBy),
                          sched::parallelName(parallel), reuse.first->name, reuse.second->name,
                          sched::userName(*reuse.tensor, *schedule_.fusion),
                          alsoIn(reuse.others, "of"));
    // One extent per parallel type across the kernel: one error per parallel type.
    struct Mismatch {
      const Loop *loop;
      const TensorSchedule *tensor;
      size_t others = 0;
    };
    std::map<Parallel, std::pair<const Loop *, const TensorSchedule *>> first;
    std::map<Parallel, Mismatch> mismatched;
    for (const TensorSchedule &tensor : schedule_.tensors)
      for (const Loop &loop : tensor.loops) {
        if (loop.parallel == Parallel::Serial || reused.count(loop.parallel))
          continue;
        auto [it, inserted] = first.emplace(loop.parallel, std::make_pair(&loop, &tensor));
        if (inserted || it->second.first->extent.text == loop.extent.text)
          continue;
        auto [entry, firstTime] = mismatched.emplace(loop.parallel, Mismatch{&loop, &tensor});
        if (!firstTime)
          ++entry->second.others;
      }
    for (const auto &[parallel, mismatch] : mismatched) {
      const auto &[loop, tensor] = first[parallel];
      diagnostics_.report(DiagId::ParallelExtentMismatch, at(mismatch.loop->parallelizedBy),
                          sched::parallelName(parallel), loop->extent.text,
                          sched::userName(*tensor, *schedule_.fusion), mismatch.loop->extent.text,
                          sched::userName(*mismatch.tensor, *schedule_.fusion),
                          alsoIn(mismatch.others));
    }
  }

  void checkProducerConsumer() {
    for (const TensorSchedule &producer : schedule_.tensors) {
      // Inputs are read from global memory, which any thread or block can reach.
      if (producer.isInput)
        continue;
      bool shared = producer.persistent == sched::MemoryKind::Shared ||
                    producer.cache == sched::MemoryKind::Shared;
      for (unsigned consumerIndex : producer.consumers) {
        const TensorSchedule &consumer = schedule_.tensors[consumerIndex];
        for (const Loop &loop : producer.loops) {
          if (loop.isReduction)
            continue; // a reduction's result is broadcast to its consumers
          int position = consumer.findLoop(loop.name);
          if (position < 0)
            continue;
          const Loop &theirs = consumer.loops[position];
          if (theirs.parallel == loop.parallel)
            continue;
          // A parallel type bound twice was reported; what it binds is meaningless.
          if (reusedIn_.count({&producer, loop.parallel}) ||
              reusedIn_.count({&consumer, theirs.parallel}))
            continue;
          std::optional<sched::Origin> where =
              theirs.parallelizedBy ? theirs.parallelizedBy : loop.parallelizedBy;
          if (sched::isBlockIndex(loop.parallel) || sched::isBlockIndex(theirs.parallel))
            diagnostics_.report(
                DiagId::ParallelNeedsGlobal, at(where), loop.name,
                sched::parallelName(loop.parallel), sched::userName(producer, *schedule_.fusion),
                sched::parallelName(theirs.parallel), sched::userName(consumer, *schedule_.fusion));
          else if (!shared)
            diagnostics_
                .report(DiagId::ParallelNeedsShared, at(where), loop.name,
                        sched::parallelName(loop.parallel),
                        sched::userName(producer, *schedule_.fusion),
                        sched::parallelName(theirs.parallel),
                        sched::userName(consumer, *schedule_.fusion))
                .note(DiagId::NoteFusionLine, consumer.value->range,
                      "'" + sched::userName(consumer, *schedule_.fusion) + "' reads '" +
                          sched::userName(producer, *schedule_.fusion) + "' here");
        }
      }
    }
  }

  /// Static threads per block of a tensor (none: more than fit in 64 bits), and the loop
  /// that completes the count.
  std::pair<std::optional<int64_t>, const Loop *>
  threadsPerBlock(const TensorSchedule &tensor) const {
    std::optional<int64_t> threads = 1;
    const Loop *last = nullptr;
    for (const Loop &loop : tensor.loops)
      if (sched::isThreadIndex(loop.parallel) && loop.extent.isStatic()) {
        threads = mul(threads, *loop.extent.value);
        last = &loop;
      }
    return {threads, last};
  }

  void checkLaunchLimits() {
    std::optional<int64_t> most = 1;
    const TensorSchedule *widest = nullptr;
    // Per-axis limits are the directive's, whichever tensors share the loop: once each.
    std::set<std::pair<size_t, Parallel>> axisReported;
    // Too many threads is one mistake for every tensor of the block: reported once, at
    // the first tensor over the limit, counting the others.
    const TensorSchedule *firstOver = nullptr;
    size_t othersOver = 0;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      auto [threads, last] = threadsPerBlock(tensor);
      bool tooManyThreads = !threads || *threads > target_.maxThreadsPerBlock;
      // A thread index bound twice multiplies both loops: that was the mistake reported.
      for (Parallel thread : {Parallel::TIDx, Parallel::TIDy, Parallel::TIDz})
        if (reusedIn_.count({&tensor, thread}))
          tooManyThreads = false;
      if (tooManyThreads && firstOver)
        ++othersOver;
      else if (tooManyThreads)
        firstOver = &tensor;
      if (most && (!threads || *threads > *most)) {
        most = threads;
        widest = &tensor;
      }
      for (const Loop &loop : tensor.loops) {
        if (loop.parallel == Parallel::Serial || !loop.extent.isStatic())
          continue; // runtime extents: the launcher checks them before launching
        bool block = sched::isBlockIndex(loop.parallel);
        if (!block && tooManyThreads)
          continue; // one error for one mistake: the count is over already
        int axis = static_cast<int>(loop.parallel) -
                   static_cast<int>(block ? Parallel::BIDx : Parallel::TIDx);
        int64_t limit = block ? target_.maxGridDim[axis] : target_.maxBlockDim[axis];
        if (*loop.extent.value <= limit ||
            !axisReported
                 .insert(
                     {loop.parallelizedBy ? loop.parallelizedBy->index : SIZE_MAX, loop.parallel})
                 .second)
          continue;
        diagnostics_.report(block ? DiagId::GridTooLarge : DiagId::BlockTooLarge,
                            at(loop.parallelizedBy), sched::parallelName(loop.parallel),
                            *loop.extent.value, loop.name, limit, target_.name);
      }
    }
    if (firstOver) {
      auto [threads, last] = threadsPerBlock(*firstOver);
      std::vector<std::string> factors;
      for (const Loop &loop : firstOver->loops)
        if (sched::isThreadIndex(loop.parallel) && loop.extent.isStatic())
          factors.push_back(loop.name + " " + loop.extent.text);
      diagnostics_.report(DiagId::TooManyThreads, at(last->parallelizedBy), sizeText(threads),
                          sched::userName(*firstOver, *schedule_.fusion),
                          llvm::join(factors, " x "), target_.name, target_.maxThreadsPerBlock,
                          alsoIn(othersOver));
    }
    // A bound the target cannot launch (the lowering multiplies it with the register cap).
    if (schedule_.launchBounds &&
        (schedule_.launchBounds->threads.value < 1 ||
         schedule_.launchBounds->threads.value > target_.maxThreadsPerBlock))
      diagnostics_.report(DiagId::LaunchBoundsOutOfRange, schedule_.launchBounds->origin.range,
                          schedule_.launchBounds->threads.value, target_.maxThreadsPerBlock,
                          target_.name);
    // Too many threads for the target was reported above; launch bounds compare counts.
    else if (schedule_.launchBounds && widest && most &&
             schedule_.launchBounds->threads.value < *most)
      diagnostics_.report(DiagId::LaunchBoundsTooSmall, schedule_.launchBounds->origin.range,
                          schedule_.launchBounds->threads.value, *most,
                          sched::userName(*widest, *schedule_.fusion));
    // ptxas allocates at least 24 registers a thread; the target sets the most.
    if (schedule_.maxRRegCount &&
        (schedule_.maxRRegCount->registers.value < 24 ||
         schedule_.maxRRegCount->registers.value > target_.maxRegistersPerThread))
      diagnostics_.report(DiagId::MaxRRegCountOutOfRange, schedule_.maxRRegCount->origin.range,
                          schedule_.maxRRegCount->registers.value, target_.maxRegistersPerThread,
                          target_.name);
  }

  void checkVectorizeAndUnroll() {
    // A directive names a loop of several tensors: report each rule once per directive.
    std::set<std::pair<size_t, int>> reported;
    auto once = [&](const std::optional<sched::Origin> &origin, int rule) {
      return reported.insert({origin ? origin->index : SIZE_MAX, rule}).second;
    };
    for (const TensorSchedule &tensor : schedule_.tensors) {
      // The copies of the innermost body the unrolls make, from the outermost loop in: a
      // full unroll inside another multiplies them (2^16 inside 2^16 were 2^32 copies).
      int64_t copies = 1;
      bool nested = false;
      for (size_t i = 0; i < tensor.loops.size(); ++i) {
        const Loop &loop = tensor.loops[i];
        if (loop.unrolled && !loop.unrollFactor && !loop.extent.isStatic() &&
            once(loop.unrolledBy, 0))
          diagnostics_.report(DiagId::UnrollNotStatic, at(loop.unrolledBy), loop.name,
                              loop.extent.text);
        if (loop.unrolled && (loop.unrollFactor || loop.extent.isStatic())) {
          int64_t here = loop.unrollFactor ? *loop.unrollFactor : *loop.extent.value;
          if (loop.unrollFactor && loop.extent.isStatic())
            here = std::min(here, *loop.extent.value);
          std::optional<int64_t> total = mul(copies, std::max<int64_t>(here, 1));
          bool validFactor = !loop.unrollFactor ||
                             (*loop.unrollFactor >= 1 && *loop.unrollFactor <= kMaxUnrollFactor);
          if (validFactor && (!total || *total > kMaxUnrollFactor) && once(loop.unrolledBy, 9))
            diagnostics_.report(DiagId::UnrollTooLong, at(loop.unrolledBy), loop.name,
                                total ? std::to_string(*total) : std::string("more than 2^63"),
                                nested ? " (with the unrolled loops around it)" : "");
          copies = total ? *total : INT64_MAX;
          nested = true;
        }
        if (loop.unrolled && loop.unrollFactor &&
            (*loop.unrollFactor < 1 || *loop.unrollFactor > kMaxUnrollFactor) &&
            once(loop.unrolledBy, 8))
          diagnostics_.report(DiagId::UnrollFactor, at(loop.unrolledBy), loop.name,
                              *loop.unrollFactor);
        if (!loop.vectorized)
          continue;
        const std::optional<sched::Origin> &where = loop.vectorizedBy;
        if (!loop.extent.isStatic()) {
          if (once(where, 1))
            diagnostics_.report(DiagId::VectorizeNotStatic, at(where), loop.name, loop.extent.text);
          continue;
        }
        int64_t width = *loop.extent.value;
        if ((width & (width - 1)) != 0) {
          if (once(where, 2))
            diagnostics_.report(DiagId::VectorizeNotPowerOfTwo, at(where), width, loop.name);
          continue;
        }
        if (tensor.computeAtPosition && i <= *tensor.computeAtPosition && once(where, 3))
          diagnostics_.report(DiagId::VectorizeOutsideComputeAt, at(where), loop.name, tensor.name)
              .note(DiagId::NoteDirective, tensor.computeAtBy->range, "compute_at is here");
        // The remaining rules are about memory accesses: inputs and outputs, along the
        // loops that index them. An output's reduction loop walks what it reduces (a
        // reduction stored as `s = sum(f32(x), over H)` is stored once a row): it is
        // the inputs' vectors that access memory there. A reduction stored as an output
        // is stored an element at a time after it is complete (a row's value, or a column
        // of `dweight = sum(.., over T)` by the column totals or the grid reduction's
        // second kernel), so its kept loops make no vector access either.
        if ((!tensor.isInput && !tensor.isOutput) || loop.isReduction ||
            (tensor.isOutput && ir::isReduction(tensor.value->op)))
          continue;
        if (i + 1 != tensor.loops.size()) {
          if (once(where, 4))
            diagnostics_.report(DiagId::VectorizeNotInnermost, at(where), loop.name, tensor.name,
                                sched::loopNames(tensor));
        } else if (!loop.contiguous) {
          if (once(where, 5))
            diagnostics_.report(DiagId::VectorizeNotContiguous, at(where), loop.name, tensor.name);
        } else if (width > 16 / ir::dtypeBytes(tensor.dtype)) {
          if (once(where, 6))
            diagnostics_.report(DiagId::VectorizeTooWide, at(where), width,
                                ir::dtypeName(tensor.dtype),
                                sizeText(mul(width, ir::dtypeBytes(tensor.dtype))), tensor.name);
        } else if (!loop.exact) {
          // Runtime extents are checked at launch (a scalar variant takes over); a
          // static extent must divide now.
          const ir::Dim &root = schedule_.fusion->dims[loop.roots[0]];
          if (root.staticExtent && once(where, 7))
            diagnostics_.report(DiagId::VectorizeNotDividing, at(where), width, *root.staticExtent,
                                root.name);
        }
      }
    }
  }

  void checkPlacement() {
    for (const TensorSchedule &tensor : schedule_.tensors) {
      if (tensor.computeWithBy) {
        if (tensor.consumers.empty())
          diagnostics_.report(DiagId::ComputeWithNotPersistent, tensor.computeWithBy->range,
                              tensor.name, "it has no consumer to be computed with");
        else if (!tensor.isPersistentBuffer)
          diagnostics_.report(DiagId::ComputeWithNotPersistent, tensor.computeWithBy->range,
                              tensor.name,
                              "it is not a persistent buffer (a value a reduction consumes and a "
                              "later use needs again)");
      }
      if (tensor.isOutput && (tensor.persistentBy || tensor.cacheBy)) {
        const sched::Origin &where = tensor.persistentBy ? *tensor.persistentBy : *tensor.cacheBy;
        diagnostics_.report(DiagId::OutputNotGlobal, where.range, tensor.name,
                            tensor.persistentBy ? "a persistent buffer" : "cached");
      }
    }
  }

  /// Directives of the normalization schedules that the lowering cannot honour
  /// (lower/Plan.cpp asserts that none reaches it). A matrix product's schedule refuses
  /// every such directive as matmul-loop-directive, so these rules leave it alone.
  void checkNotLowered() {
    if (matmulValue())
      return;
    // A directive may name a loop of several tensors: one error a directive.
    std::set<std::pair<const char *, DiagId>> reported;
    auto once = [&](llvm::SMRange at, DiagId id) {
      return reported.insert({at.Start.getPointer(), id}).second;
    };
    for (const TensorSchedule &tensor : schedule_.tensors) {
      if (tensor.rfactorBy && once(tensor.rfactorBy->range, DiagId::RfactorNotLowered))
        diagnostics_.report(DiagId::RfactorNotLowered, tensor.rfactorBy->range, tensor.name);
      if (tensor.computeAtBy)
        diagnostics_.report(DiagId::ComputeAtNotLowered, tensor.computeAtBy->range, tensor.name);
      bool kept = tensor.persistent == sched::MemoryKind::Registers ||
                  tensor.persistent == sched::MemoryKind::Shared;
      bool reduction = ir::isReduction(tensor.value->op);
      if (tensor.inlinedBy && kept) {
        auto report =
            diagnostics_.report(DiagId::InlinePersistent, tensor.inlinedBy->range, tensor.name);
        if (tensor.persistentBy)
          report.note(DiagId::NoteDirective, tensor.persistentBy->range, "persistent is here");
      } else if (tensor.inlinedBy && reduction) {
        diagnostics_.report(DiagId::InlineReduction, tensor.inlinedBy->range, tensor.name);
      }
      // A reduction that is no buffer at all is persistent-not-buffer, and an output
      // output-not-global (checkPersistentBuffers, checkPlacement): one error a mistake.
      bool reportedElsewhere =
          tensor.persistentBy && (tensor.isOutput || !tensor.isPersistentBuffer);
      if (kept && reduction && !reportedElsewhere)
        diagnostics_.report(DiagId::PersistentReduction, at(tensor.persistentBy), tensor.name);
      for (const Loop &loop : tensor.loops)
        if (loop.overrunningSplit && once(*loop.overrunningSplit, DiagId::SplitOverrunsPiece))
          diagnostics_.report(DiagId::SplitOverrunsPiece, *loop.overrunningSplit);
    }
  }

  /// A strided input is read at its runtime strides by the loop-nest kernels (pointwise,
  /// row and column reductions); a matrix product's kernel reads its operands and
  /// epilogue inputs as contiguous rows (TMA boxes, vector loads), so a strided parameter
  /// it reads is refused at the parameter, for each schedule. Kernels write outputs and
  /// inout tensors contiguous: a strided inout parameter is refused whatever the kernel.
  void checkStridedParameters() {
    const ir::Fusion &fusion = *schedule_.fusion;
    for (const ir::Param &param : fusion.params)
      if (param.isStrided && param.isInout && !param.dims.empty())
        diagnostics_.report(DiagId::StridedInout, param.range, param.name);
    if (!matmulValue())
      return;
    std::set<unsigned> read;
    std::vector<const ir::Value *> work;
    for (const ir::Output &output : fusion.outputs)
      work.push_back(output.value);
    for (const auto &value : fusion.values)
      if (value->op == ir::Op::MatMul)
        work.push_back(value.get());
    std::set<unsigned> seen;
    while (!work.empty()) {
      const ir::Value *value = work.back();
      work.pop_back();
      if (!seen.insert(value->id).second)
        continue;
      if (value->op == ir::Op::Input)
        read.insert(value->paramIndex);
      work.insert(work.end(), value->operands.begin(), value->operands.end());
    }
    for (unsigned index : read)
      if (fusion.params[index].isStrided && !fusion.params[index].isInout)
        diagnostics_.report(DiagId::StridedParameter, fusion.params[index].range,
                            fusion.params[index].name);
  }

  /// The block's threads when every thread extent is static (the widest tensor's count).
  std::optional<int64_t> staticBlockThreads() const {
    std::optional<int64_t> most = 1;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      for (const Loop &loop : tensor.loops)
        if (sched::isThreadIndex(loop.parallel) && !loop.extent.isStatic())
          return std::nullopt;
      std::optional<int64_t> threads = threadsPerBlock(tensor).first;
      if (!threads)
        return std::nullopt;
      most = std::max(*most, *threads);
    }
    return most;
  }

  /// `reduce one_pass|two_pass` chooses how reduction pairs are computed: a fusion
  /// without one has nothing for it to choose.
  void checkReduceForm() {
    if (schedule_.reduceForm && ir::findOnePassPairs(*schedule_.fusion).empty())
      diagnostics_.report(DiagId::ReduceFormNoPattern, schedule_.reduceForm->origin.range,
                          schedule_.reduceForm->onePass ? "one_pass" : "two_pass",
                          schedule_.fusion->name);
  }

  /// `fast_exp`, `fast_tanh` and `fast_div` make the fusion's f32 exps, tanhs and
  /// divisions approximate: one without any has nothing for the directive to change.
  void checkFastMath() {
    checkApproximated(schedule_.fastExp, ir::Op::Exp, DiagId::FastExpNoExp);
    checkApproximated(schedule_.fastTanh, ir::Op::Tanh, DiagId::FastTanhNoTanh);
    checkApproximated(schedule_.fastDiv, ir::Op::Div, DiagId::FastDivNoDiv);
  }

  /// A directive that makes the fusion's f32 `op` approximate needs one to act on.
  void checkApproximated(const std::optional<sched::Origin> &directive, ir::Op op, DiagId id) {
    if (!directive)
      return;
    for (const auto &value : schedule_.fusion->values)
      if (value->op == op && value->dtype == ir::DType::F32)
        return;
    diagnostics_.report(id, directive->range, schedule_.fusion->name);
  }

  /// Registers a thread needs to keep `values` of `tensor` in registers, with the row
  /// inputs read beside it: the estimate auto(inner_persistent) places buffers by.
  int64_t neededRegisters(const TensorSchedule &tensor, int64_t values, int64_t perValue) const {
    // The buffers the later phases read instead of the inputs, and those in registers.
    std::set<const ir::Value *> kept, inRegisters;
    for (const TensorSchedule &other : schedule_.tensors)
      if (other.persistentBy && other.isPersistentBuffer && other.value &&
          other.persistent != sched::MemoryKind::Recompute) {
        kept.insert(other.value);
        if (other.persistent == sched::MemoryKind::Registers)
          inRegisters.insert(other.value);
      }
    int64_t lateBytes =
        tensor.value && !tensor.value->dims.empty()
            ? ir::lateRowInputBytes(*schedule_.fusion, tensor.value->dims.back(), kept)
            : 0;
    int64_t live = ir::liveBufferRegistersPerValue(*schedule_.fusion, inRegisters);
    return ir::persistentRegistersNeeded(values, std::max(perValue, live), lateBytes);
  }

  /// The inner-outer row walk (a row reduction over the columns next to column sums over
  /// the rows: the backward norms) keeps each thread's partial columns in registers for
  /// the whole walk: past the registers a thread of the block has, ptxas spills them. A
  /// lower bound (ir/RegisterPressure.h), so the warning names only kernels that spill.
  void checkColumnPartials() {
    const ir::Fusion &fusion = *schedule_.fusion;
    // A column sum keeps the columns on threadIdx.x; the row reduction beside it reduces
    // them across threadIdx.x, keeping the rows (walked, or also on threadIdx.y).
    auto columnsOnLanes = [&](const ir::Value *value, const std::vector<ir::DimId> &dims) {
      for (const TensorSchedule &tensor : schedule_.tensors)
        if (tensor.value == value)
          return llvm::any_of(tensor.loops, [&](const Loop &loop) {
            return loop.parallel == Parallel::TIDx && loop.roots == dims;
          });
      return false;
    };
    std::optional<ir::DimId> rows, columns;
    for (const auto &column : fusion.values) {
      if (!ir::isReduction(column->op) || column->dims.size() != 1 || column->reduced.size() != 1 ||
          !columnsOnLanes(column.get(), column->dims))
        continue;
      bool rowBeside = llvm::any_of(fusion.values, [&](const auto &row) {
        return ir::isReduction(row->op) && row->dims == column->reduced &&
               row->reduced == column->dims && columnsOnLanes(row.get(), row->reduced);
      });
      if (rowBeside) {
        rows = column->reduced[0];
        columns = column->dims[0];
        break;
      }
    }
    if (!rows)
      return;
    std::optional<int64_t> threads = staticBlockThreads();
    if (!threads)
      return;
    int64_t threadRegisters = target_.registersPerThreadOfBlock(*threads);
    if (threadRegisters >= target_.maxRegistersPerThread)
      return;
    int64_t reductions = 0, perThread = 0;
    llvm::SMRange at;
    bool prefetch = false;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      for (const Loop &loop : tensor.loops)
        prefetch |= loop.prefetchedBy.has_value() && loop.roots == std::vector<ir::DimId>{*rows};
      const ir::Value *value = tensor.value;
      if (!value || !ir::isReduction(value->op) ||
          value->reduced != std::vector<ir::DimId>{*rows} ||
          value->dims != std::vector<ir::DimId>{*columns})
        continue;
      ++reductions;
      std::optional<int64_t> own = 1;
      for (const Loop &loop : tensor.loops) {
        if (loop.roots != std::vector<ir::DimId>{*columns})
          continue;
        if (sched::isThreadIndex(loop.parallel)) {
          if (!at.isValid() && loop.parallelizedBy)
            at = loop.parallelizedBy->range;
          continue;
        }
        if (sched::isBlockIndex(loop.parallel))
          continue;
        if (!loop.extent.isStatic())
          return; // a runtime count of partial columns: refused elsewhere
        own = mul(own, *loop.extent.value);
      }
      if (!own)
        return;
      perThread = std::max(perThread, *own);
    }
    if (reductions == 0)
      return;
    if (!at.isValid()) // the heuristics' schedule: at its declaration
      at = schedule_.header.range.isValid() ? schedule_.header.range : schedule_.header.fusionRange;
    int64_t heldBytes = ir::rowWalkInputs(fusion, *rows, *columns).heldBytes;
    int64_t needed =
        ir::columnPartialsRegistersNeeded(perThread, reductions, prefetch ? heldBytes : 0);
    if (needed <= threadRegisters)
      return;
    // More threads leave each as many fewer registers as columns: only the prefetch may
    // help, where the partial columns alone fit.
    bool withoutPrefetchFits =
        prefetch && ir::columnPartialsRegistersNeeded(perThread, reductions, 0) <= threadRegisters;
    std::optional<int64_t> partials = mul(perThread, reductions);
    diagnostics_.report(DiagId::ColumnPartialsSpill, at, sizeText(partials), perThread, reductions,
                        fusion.dims[*rows].name,
                        prefetch ? std::string(", and prefetches the next row") : std::string(),
                        needed, threadRegisters, *threads, target_.registersPerSm, target_.name,
                        withoutPrefetchFits ? std::string("drop the prefetch, or ")
                                            : std::string());
  }

  void checkPersistentBuffers() {
    // Shared memory as the lowering allocates it (lower/LaunchShape.cpp): 8 bytes a thread
    // of block-reduction scratch (16 with argmax), and each persistent buffer in shared memory at 4
    // bytes a value (8 for 64-bit types: values are kept at their register width). Buffers are
    // added in order; the one that takes the block past the target's limit is reported.
    std::optional<int64_t> threads = staticBlockThreads();
    std::optional<int64_t> scratch =
        threads ? mul(*threads,
                      ir::reductionScratchBytesPerThread(*schedule_.fusion, schedule_.onePass()))
                : 0;
    std::optional<int64_t> sharedSoFar = scratch;
    bool sharedReported = false; // one error a block
    for (const TensorSchedule &tensor : schedule_.tensors) {
      if (!tensor.persistentBy || tensor.isOutput)
        continue;
      if (!tensor.isPersistentBuffer) {
        diagnostics_.report(DiagId::PersistentNotBuffer, tensor.persistentBy->range, tensor.name);
        continue;
      }
      // Elements each thread keeps (registers) or each block keeps (shared memory). The
      // builder saw that a tensor's static extents multiply to 64 bits; bytes may not.
      std::optional<int64_t> perThread = 1, perBlock = 1;
      bool known = true;
      for (const Loop &loop : tensor.loops) {
        if (sched::isBlockIndex(loop.parallel))
          continue;
        if (!loop.extent.isStatic()) {
          known = false;
          break;
        }
        perBlock = mul(perBlock, *loop.extent.value);
        if (!sched::isThreadIndex(loop.parallel))
          perThread = mul(perThread, *loop.extent.value);
      }
      if (!known)
        continue; // runtime extents: the launcher checks the size
      unsigned bytes = ir::dtypeBytes(tensor.dtype);
      if (tensor.persistent == sched::MemoryKind::Registers) {
        std::optional<int64_t> registers = mul(perThread, (bytes + 3) / 4);
        // Leave room for addresses, indices and the reduction's own values.
        int64_t budget = target_.maxRegistersPerThread - 32;
        // A block's threads share the SM's registers: past 256 threads a thread has fewer
        // than it may (64 of 1024), and a buffer over half of them spills. The block is
        // the widest of its tensors' thread loops, this buffer's own or another's.
        std::optional<int64_t> bufferThreads = perBlock && perThread && *perThread > 0
                                                   ? std::optional<int64_t>(*perBlock / *perThread)
                                                   : std::nullopt;
        std::optional<int64_t> blockThreads = threads;
        if (bufferThreads && (!blockThreads || *bufferThreads > *blockThreads))
          blockThreads = bufferThreads;
        int64_t threadRegisters = blockThreads ? target_.registersPerThreadOfBlock(*blockThreads)
                                               : target_.maxRegistersPerThread;
        if (!registers || *registers > budget)
          diagnostics_.report(
              DiagId::PersistentTooLarge, tensor.persistentBy->range, tensor.name,
              llvm::formatv("{0} registers per thread ({1} values of {2})", sizeText(registers),
                            sizeText(perThread), ir::dtypeName(tensor.dtype))
                  .str(),
              llvm::formatv("{0} leaves about {1} of its {2} for buffers; use more "
                            "threads, or persistent {3} in shared",
                            target_.name, budget, target_.maxRegistersPerThread, tensor.name)
                  .str());
        else if (int64_t needed = neededRegisters(tensor, *perThread, (bytes + 3) / 4);
                 threadRegisters < target_.maxRegistersPerThread && needed > threadRegisters)
          diagnostics_.report(DiagId::PersistentRegistersSpill, tensor.persistentBy->range,
                              tensor.name, *registers, sizeText(perThread),
                              ir::dtypeName(tensor.dtype), needed, *blockThreads, threadRegisters,
                              target_.registersPerSm, target_.name);
      } else if (tensor.persistent == sched::MemoryKind::Shared) {
        int64_t storage = bytes == 8 ? 8 : 4;
        std::optional<int64_t> own = mul(perBlock, storage);
        std::optional<int64_t> others = sharedSoFar && scratch ? *sharedSoFar - *scratch : 0;
        std::optional<int64_t> total = add(sharedSoFar, own);
        sharedSoFar = total;
        if (!sharedReported && (!total || *total > target_.sharedMemoryPerBlock)) {
          sharedReported = true;
          std::string parts = llvm::formatv("{0} values of {1} at {2} bytes", sizeText(perBlock),
                                            ir::dtypeName(tensor.dtype), storage)
                                  .str();
          if (others && *others > 0)
            parts += llvm::formatv(", {0} bytes of other persistent buffers", *others).str();
          if (scratch && *scratch > 0)
            parts += llvm::formatv(", {0} bytes of reduction scratch", *scratch).str();
          diagnostics_.report(
              DiagId::PersistentTooLarge, tensor.persistentBy->range, tensor.name,
              llvm::formatv("{0} bytes of shared memory per block ({1})", sizeText(total), parts)
                  .str(),
              llvm::formatv("{0} has {1}; recompute it instead", target_.name,
                            target_.sharedMemoryPerBlock)
                  .str());
        }
      }
    }
    perThreadShared_ = sharedSoFar;
    perThreadSharedReported_ = sharedReported;
  }

  /// `cache t in shared`: the kernel stages the input t in shared memory once a block
  /// (lower/CacheInputs.cpp), which holds only for a tensor parameter the kernel reads and
  /// never writes, and that every block reads whole: no dimension of it varies with a block
  /// index. Its bytes (16-byte aligned) come after the per-thread buffers
  /// (checkPersistentBuffers) and must fit the target's shared memory. A matrix product's
  /// schedule refuses it as matmul-loop-directive; a cached output is output-not-global.
  void checkCache() {
    if (matmulValue())
      return;
    const ir::Fusion &fusion = *schedule_.fusion;
    std::optional<int64_t> perThread = alignTo16(perThreadShared_.value_or(0));
    std::optional<int64_t> sharedSoFar = perThread, cachedSoFar = 0;
    std::vector<std::string> cachedBefore;
    bool sharedReported = perThreadSharedReported_;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      if (!tensor.cacheBy || tensor.isOutput)
        continue;
      llvm::SMRange where = tensor.cacheBy->range;
      if (tensor.cache == sched::MemoryKind::Registers) {
        diagnostics_.report(DiagId::CacheNotLowered, where, tensor.name);
        continue;
      }
      const ir::Value &value = *tensor.value;
      // Scalars are no tensors of the schedule (schedule-unknown-tensor).
      if (value.op != ir::Op::Input || fusion.params[value.paramIndex].isInout) {
        std::string why =
            value.op != ir::Op::Input
                ? "'" + tensor.name + "' is computed by the fusion, not read from a parameter"
                : "'" + tensor.name + "' is an inout parameter, which the kernel writes back";
        diagnostics_.report(DiagId::CacheNotInput, where, tensor.name, why);
        continue;
      }
      if (const Loop *varying = blockLoopOver(fusion.params[value.paramIndex].dims)) {
        std::vector<std::string> along;
        for (ir::DimId dim : varying->roots)
          if (llvm::is_contained(fusion.params[value.paramIndex].dims, dim))
            along.push_back(fusion.dims[dim].name);
        diagnostics_.report(DiagId::CacheBlockVarying, where, tensor.name, llvm::join(along, ", "),
                            varying->name, sched::parallelName(varying->parallel));
        continue;
      }
      // Elements of the whole tensor; runtime extents are checked by the launcher.
      std::optional<int64_t> elements = 1;
      bool known = true;
      for (ir::DimId dim : fusion.params[value.paramIndex].dims) {
        if (!fusion.dims[dim].staticExtent) {
          known = false;
          break;
        }
        elements = mul(elements, *fusion.dims[dim].staticExtent);
      }
      if (!known)
        continue;
      std::optional<int64_t> own = mul(elements, ir::dtypeBytes(tensor.dtype));
      sharedSoFar = add(sharedSoFar, alignTo16(own));
      if (!sharedReported && (!sharedSoFar || *sharedSoFar > target_.sharedMemoryPerBlock)) {
        sharedReported = true;
        std::string parts = llvm::formatv("{0} values of {1} at {2} bytes", sizeText(elements),
                                          ir::dtypeName(tensor.dtype), ir::dtypeBytes(tensor.dtype))
                                .str();
        if (perThread && *perThread > 0)
          parts += llvm::formatv(", after {0} bytes of reduction scratch and persistent buffers",
                                 *perThread)
                       .str();
        if (!cachedBefore.empty())
          parts += llvm::formatv(" and {0} bytes of {1}", sizeText(cachedSoFar),
                                 llvm::join(cachedBefore, ", "))
                       .str();
        diagnostics_.report(DiagId::CacheTooLarge, where, tensor.name, sizeText(sharedSoFar), parts,
                            target_.name, target_.sharedMemoryPerBlock);
      }
      cachedSoFar = add(cachedSoFar, alignTo16(own));
      cachedBefore.push_back("cache " + tensor.name);
    }
  }

  /// A loop of the kernel on a block index over one of `dims` (a loop that only iterates a
  /// merge of them counts: its block index picks their elements), or null.
  const Loop *blockLoopOver(const std::vector<ir::DimId> &dims) const {
    for (const TensorSchedule &tensor : schedule_.tensors)
      for (const Loop &loop : tensor.loops)
        if (sched::isBlockIndex(loop.parallel))
          for (ir::DimId dim : loop.roots)
            if (llvm::is_contained(dims, dim))
              return &loop;
    return nullptr;
  }

  /// `bytes` rounded up to 16 (each cached input starts 16-byte aligned for vector copies).
  static std::optional<int64_t> alignTo16(std::optional<int64_t> bytes) {
    std::optional<int64_t> padded = add(bytes, 15);
    return padded ? std::optional<int64_t>(*padded / 16 * 16) : std::nullopt;
  }

  /// A cluster's blocks: each extent at least 1, at most the target's cluster size.
  void checkCluster(const sched::Applied<sched::Cluster> &cluster) {
    std::vector<std::string> extents;
    std::optional<int64_t> blocks = 1;
    for (const sched::Count &extent : cluster.shape) {
      extents.push_back(std::to_string(extent.value));
      blocks = mul(blocks, extent.value);
    }
    std::string shape = llvm::join(extents, ", ");
    for (const sched::Count &extent : cluster.shape)
      if (extent.value < 1) {
        clusterRefused_ = true;
        diagnostics_.report(
            DiagId::InvalidCluster, extent.range, shape,
            llvm::formatv("extent {0}; each extent is at least 1", extent.value).str());
        return;
      }
    clusterRefused_ = !blocks || *blocks > target_.maxClusterSize;
    if (clusterRefused_)
      diagnostics_.report(DiagId::InvalidCluster, cluster.origin.range, shape,
                          target_.maxClusterSize == 1
                              ? llvm::formatv("{0} blocks; {1} ({2}) has no thread-block clusters",
                                              sizeText(blocks), target_.name, target_.arch)
                                    .str()
                              : llvm::formatv("{0} blocks; {1} allows at most {2} in a cluster",
                                              sizeText(blocks), target_.name,
                                              target_.maxClusterSize)
                                    .str());
  }

  const ir::Value *matmulValue() const {
    for (const auto &value : schedule_.fusion->values)
      if (value->op == ir::Op::MatMul)
        return value.get();
    return nullptr;
  }

  /// The parameters a matrix product's operands read are bf16 or f16: the tiles TMA loads
  /// and wgmma multiplies. One of another dtype is refused at its declaration
  /// (matmul-operand, once, however many products read it); false then. Any other operand
  /// form (computed, chained, accumulated in bf16) is the lowering's refusal, which names the
  /// form it reads.
  bool checkMatmulOperands() {
    std::set<size_t> refused; // parameter indices
    for (const auto &value : schedule_.fusion->values) {
      if (value->op != ir::Op::MatMul)
        continue;
      for (size_t i = 0; i < value->operands.size(); ++i) {
        const ir::Value *source = value->operands[i];
        while (source->op == ir::Op::Cast)
          source = source->operands[0];
        if (source->op != ir::Op::Input || source->dtype == ir::DType::BF16 ||
            source->dtype == ir::DType::F16 || !refused.insert(source->paramIndex).second)
          continue;
        const ir::Param &param = schedule_.fusion->params[source->paramIndex];
        diagnostics_
            .report(DiagId::MatmulOperand, param.range,
                    llvm::formatv("'{0}', the {1} operand of the matrix product, is {2}: wgmma "
                                  "multiplies bf16 or f16 tiles that TMA loads; declare '{0}' "
                                  "bf16 or f16 and write f32({0}) in the product",
                                  param.name, i == 0 ? "left" : "right",
                                  ir::dtypeName(source->dtype))
                        .str())
            .note(DiagId::NoteFusionLine, value->range, "the matrix product is here");
      }
    }
    return refused.empty();
  }

  void checkMatmul() {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.any())
      return;
    const ir::Value *product = matmulValue();
    if (!product) {
      const sched::Origin &first = mm.mma              ? mm.mma->origin
                                   : mm.pipeline       ? mm.pipeline->origin
                                   : mm.warpSpecialize ? mm.warpSpecialize->origin
                                   : !mm.tiles.empty() ? mm.tiles[0].origin
                                   : mm.cluster        ? mm.cluster->origin
                                                       : mm.epilogue->origin;
      diagnostics_.report(
          DiagId::MmaWithoutMatmul, first.range,
          "'" + schedule_.fusion->name +
              "' has no matrix product (sum(a * b, over K) with a: [M, K] and b: [N, K])");
      return;
    }
    const std::string &contracted = schedule_.fusion->dims[product->reduced[0]].name;
    if (mm.mma && mm.mma->reductionDim.text != contracted)
      diagnostics_
          .report(DiagId::MmaWithoutMatmul, mm.mma->reductionDim.range,
                  "'" + mm.mma->reductionDim.text +
                      "' is not the contracted dimension of the matrix product; it is " +
                      contracted)
          .note(DiagId::NoteFusionLine, product->range, "the matrix product is here");

    // The operands first: the shared-memory budget below counts their tiles in the
    // parameters' dtype, which is meaningless for a parameter wgmma cannot read.
    bool operandsTiled = checkMatmulOperands();

    bool sm90 = target_.arch == "sm_90a";
    auto needSm90 = [&](const sched::Origin &origin, const char *what) {
      if (!sm90)
        diagnostics_.report(DiagId::NeedsSm90, origin.range, what, target_.name, target_.arch);
    };
    if (mm.warpSpecialize)
      needSm90(mm.warpSpecialize->origin, "warp specialization (setmaxnreg)");
    if (mm.pipeline && mm.pipeline->viaTma)
      needSm90(mm.pipeline->origin, "TMA");
    if (mm.mma && mm.mma->instruction.text == "wgmma")
      needSm90(mm.mma->origin, "wgmma");
    if (mm.cluster && mm.cluster->multicast)
      needSm90(mm.cluster->origin, "cluster multicast");
    // Multicast off sm_90a is needs-sm90 alone: the cluster is not looked at again.
    clusterRefused_ = mm.cluster && mm.cluster->multicast && !sm90;
    if (mm.cluster && !clusterRefused_)
      checkCluster(*mm.cluster);

    for (size_t i = 1; i < mm.tiles.size(); ++i) {
      sched::TileOrder firstOrder = mm.tiles[0].order, order = mm.tiles[i].order;
      bool persistentAndSplitK =
          (firstOrder == sched::TileOrder::Persistent && order == sched::TileOrder::SplitK) ||
          (firstOrder == sched::TileOrder::SplitK && order == sched::TileOrder::Persistent);
      if (persistentAndSplitK)
        diagnostics_
            .report(DiagId::TilesConflict, mm.tiles[i].origin.range, sched::tileOrderName(order),
                    sched::tileOrderName(firstOrder))
            .note(DiagId::NoteDirective, mm.tiles[0].origin.range, "the first tile order is here");
      else
        diagnostics_.report(DiagId::DuplicateDirective, mm.tiles[i].origin.range, "the tile order")
            .note(DiagId::NoteDirective, mm.tiles[0].origin.range, "set here");
    }

    if (mm.warpSpecialize) {
      const sched::Applied<sched::WarpSpecialize> &ws = *mm.warpSpecialize;
      auto validCount = [](int64_t regs) { return regs >= 24 && regs <= 256 && regs % 8 == 0; };
      for (const sched::Count *regs : {&ws.producerRegs, &ws.consumerRegs})
        if (!validCount(regs->value))
          diagnostics_.report(
              DiagId::WarpRolesRegisters, regs->range,
              llvm::formatv("{0} registers per thread: setmaxnreg takes a multiple of 8 "
                            "from 24 to 256",
                            regs->value)
                  .str());
      // setmaxnreg moves registers within what the CTA was launched with: each thread
      // gets the register file over the block's threads (in steps of 8, at most 256), and
      // the roles' counts must fit that pool, or setmaxnreg.inc waits forever.
      std::optional<int64_t> total =
          mul(128, add(ws.producerRegs.value, mul(ws.consumerCount.value, ws.consumerRegs.value)));
      std::optional<int64_t> threads = mul(128, add(ws.consumerCount.value, 1));
      int64_t atLaunch = threads && *threads > 0
                             ? std::min<int64_t>(256, target_.registersPerSm / *threads / 8 * 8)
                             : 0;
      std::optional<int64_t> pool = mul(threads, atLaunch);
      bool countsValid = validCount(ws.producerRegs.value) && validCount(ws.consumerRegs.value);
      std::string need = llvm::formatv("warp roles need 128 x ({0} + {1} x {2}) = {3} registers",
                                       ws.producerRegs.value, ws.consumerCount.value,
                                       ws.consumerRegs.value, sizeText(total))
                             .str();
      // The producer gives registers away (setmaxnreg.dec) and the consumers take them
      // (.inc): ptxas sizes the kernel for the consumers' count, and a producer count above
      // it is a decrease to more than the warp holds, which ptxas refuses (C7406).
      if (countsValid && ws.producerRegs.value > ws.consumerRegs.value)
        diagnostics_.report(
            DiagId::WarpRolesRegisters, ws.producerRegs.range,
            llvm::formatv("producer(regs {0}) above the consumers' {1}: the producer gives "
                          "registers to the consumers (setmaxnreg.dec, then .inc), so its count "
                          "is at most theirs",
                          ws.producerRegs.value, ws.consumerRegs.value)
                .str());
      if (countsValid && ws.consumerCount.value >= 1 && (!total || !pool || *total > *pool))
        diagnostics_.report(
            DiagId::WarpRolesRegisters, ws.origin.range,
            !total || !pool
                ? need
                : llvm::formatv("{0}; a block of {1} threads is launched with {2} a thread on {3} "
                                "({4} in all)",
                                need, *threads, atLaunch, target_.name, *pool)
                      .str());
    }

    if (operandsTiled && mm.pipeline && mm.mma && mm.mma->ctaTile.size() == 3) {
      int64_t m = mm.mma->ctaTile[0].value, n = mm.mma->ctaTile[1].value,
              k = mm.mma->ctaTile[2].value;
      int64_t operandBytes = 2;
      for (const ir::Value *operand : product->operands) {
        const ir::Value *source = operand;
        while (source->op == ir::Op::Cast)
          source = source->operands[0];
        operandBytes = ir::dtypeBytes(source->dtype);
      }
      // Each stage has a `full` mbarrier, and an `empty` one with a producer warpgroup.
      int64_t barrierBytes = 8 * (mm.warpSpecialize ? 2 : 1);
      // A second product of the same a (SwiGLU's gate and up) loads a second b tile.
      int64_t products = llvm::count_if(schedule_.fusion->values,
                                        [](const auto &v) { return v->op == ir::Op::MatMul; });
      std::optional<int64_t> stageBytes =
          add(mul(add(mul(m, k), mul(mul(n, k), std::min<int64_t>(products, 2))), operandBytes),
              barrierBytes);
      std::optional<int64_t> total = mul(mm.pipeline->stages.value, stageBytes);
      std::string parts =
          stageBytes
              ? llvm::formatv("{0} stages of {1} bytes", mm.pipeline->stages.value, *stageBytes)
                    .str()
              : llvm::formatv("{0} stages of ({1} + {2}) x {3} x {4} bytes",
                              mm.pipeline->stages.value, m, n, k, operandBytes)
                    .str();
      if (mm.epilogue && mm.epilogue->via != sched::EpilogueKind::Registers) {
        // Two consumer groups (twice the warpgroups of a tile) have a tile each.
        int64_t groups = 1;
        if (mm.warpSpecialize && mm.mma->warpTile.size() == 2 && mm.mma->warpTile[0].value > 0 &&
            mm.mma->warpTile[1].value > 0) {
          int64_t perTile = (m / mm.mma->warpTile[0].value) * (n / mm.mma->warpTile[1].value);
          if (perTile > 0 && mm.warpSpecialize->consumerCount.value == 2 * perTile)
            groups = 2;
        }
        int64_t outputBytes =
            ir::dtypeBytes(schedule_.fusion->outputs.empty() ? ir::DType::BF16
                                                             : schedule_.fusion->outputs[0].dtype);
        // The lowering lays the tile out in whole swizzled column blocks: rows whose bytes
        // no 32-byte box divides are rounded up to 128-byte blocks (lower/matmul/Epilogue.cpp).
        int64_t columns = n * outputBytes % 32 == 0 ? n
                                                    : (n + 128 / outputBytes - 1) /
                                                          (128 / outputBytes) * (128 / outputBytes);
        // An epilogue tile (BM, C): two pieces of C columns a consumer group instead.
        const std::vector<sched::Count> &pieces = mm.epilogue->tile;
        bool inPieces = pieces.size() == 2 && pieces[1].value > 0 && pieces[1].value < n;
        if (inPieces)
          columns = 2 * pieces[1].value;
        std::optional<int64_t> epilogueBytes = mul(mul(mul(m, columns), groups), outputBytes);
        total = add(total, epilogueBytes);
        parts +=
            inPieces ? llvm::formatv(" and two {0}-byte pieces of the epilogue tile{1}",
                                     sizeText(mul(mul(m, pieces[1].value), outputBytes)),
                                     groups > 1 ? " a consumer group" : "")
                           .str()
            : groups > 1
                ? llvm::formatv(" and two {0}-byte epilogue tiles (a consumer group each)",
                                sizeText(mul(mul(m, n), outputBytes)))
                      .str()
                : llvm::formatv(" and a {0}-byte epilogue tile", sizeText(epilogueBytes)).str();
      }
      // Two consumer groups take turns through two more mbarriers.
      if (mm.warpSpecialize && mm.mma->warpTile.size() == 2 && mm.mma->warpTile[0].value > 0 &&
          mm.mma->warpTile[1].value > 0 &&
          mm.warpSpecialize->consumerCount.value ==
              2 * (m / mm.mma->warpTile[0].value) * (n / mm.mma->warpTile[1].value)) {
        total = add(total, 16);
        parts += " and two 8-byte turn barriers";
      }
      if (!total || *total > target_.sharedMemoryPerBlock)
        diagnostics_.report(DiagId::PipelineSharedMemory, mm.pipeline->origin.range, parts,
                            sizeText(total), target_.name, target_.sharedMemoryPerBlock);
    }
  }

  // --- What the matmul lowering takes (lower/MatmulPlan.cpp asserts these) --------------

  /// The mma tile in the shapes the lowering takes.
  struct MmaTiles {
    /// The kernel's tiles: (N, M) of the output with swap_ab.
    int64_t tileM, tileN, warpM, warpN, instructionN;
    bool swapAB = false;
    /// As the mma directive writes them, (M, N) of the output.
    std::string warpText() const {
      return llvm::formatv("({0}, {1})", swapAB ? warpN : warpM, swapAB ? warpM : warpN).str();
    }
    std::string tileText() const {
      return llvm::formatv("({0}, {1})", swapAB ? tileN : tileM, swapAB ? tileM : tileN).str();
    }
    int64_t warpgroups() const { return (tileM / warpM) * (tileN / warpN); }
    /// f32 accumulators a thread holds: its warpgroup's tile over 128 threads.
    int64_t accumulators() const { return warpM * warpN / 128; }
  };

  /// The element type of the tensor parameter behind a product operand `f32(x)`; none for
  /// other operands (the lowering refuses those: a rule of the fusion, not the schedule).
  static std::optional<ir::DType> operandType(const ir::Value *operand) {
    if (operand->op != ir::Op::Cast || operand->dtype != ir::DType::F32)
      return std::nullopt;
    const ir::Value *input = operand->operands[0];
    if (input->op != ir::Op::Input ||
        (input->dtype != ir::DType::BF16 && input->dtype != ir::DType::F16))
      return std::nullopt;
    return input->dtype;
  }

  static std::optional<unsigned> operandParam(const ir::Value *operand) {
    if (operand->op != ir::Op::Cast || operand->operands[0]->op != ir::Op::Input)
      return std::nullopt;
    return operand->operands[0]->paramIndex;
  }

  size_t productCount() const {
    return llvm::count_if(schedule_.fusion->values,
                          [](const auto &v) { return v->op == ir::Op::MatMul; });
  }

  /// The rules of a matrix product's schedule that hold on any target (needs-sm90 and
  /// the target's limits are checkMatmul's): the directives it needs, the tile shapes,
  /// the ranges of counts, and the directives that do not combine.
  void checkMatmulSchedule() {
    const ir::Value *product = matmulValue();
    if (!product)
      return; // matrix-product directives without a product are mma-without-matmul
    checkMatmulLoopDirectives();
    const sched::MatmulSchedule &mm = schedule_.matmul;
    if (!mm.mma)
      diagnostics_.report(DiagId::MatmulScheduleIncomplete, schedule_.header.fusionRange,
                          "a matrix product is lowered from its mma tile: write, say, 'mma over " +
                              schedule_.fusion->dims[product->reduced[0]].name +
                              ": tile (128, 128, 64), warp (64, 128), instruction wgmma(64, 128, "
                              "16);' and 'pipeline 3 stages via tma;'");
    else if (!mm.pipeline)
      diagnostics_.report(DiagId::MatmulScheduleIncomplete, mm.mma->origin.range,
                          "a matrix product needs its operand pipeline: write 'pipeline 3 stages "
                          "via tma;'");
    if (mm.pipeline && !mm.pipeline->viaTma)
      diagnostics_.report(DiagId::MatmulScheduleIncomplete, mm.pipeline->origin.range,
                          "pipeline without 'via tma': the operand tiles are loaded by TMA only "
                          "(pipeline N stages via tma)");
    if (mm.pipeline && mm.pipeline->stages.value < 1)
      diagnostics_.report(DiagId::PipelineStages, mm.pipeline->stages.range,
                          mm.pipeline->stages.value);
    checkTileOrders();
    std::optional<MmaTiles> tiles = mm.mma ? checkMmaShape(*product) : std::nullopt;
    checkMatmulConflicts(tiles);
    checkClusterShape(tiles, *product);
    checkSharedEpilogue(*product, tiles);
  }

  /// `epilogue via shared [tma_store]`: the output tile of one output over [M, N] with N
  /// contiguous goes through shared memory, in 16-byte pieces of its rows.
  void checkSharedEpilogue(const ir::Value &product, const std::optional<MmaTiles> &tiles) {
    const auto &epilogue = schedule_.matmul.epilogue;
    if (!epilogue || epilogue->via == sched::EpilogueKind::Registers)
      return;
    const ir::Fusion &fusion = *schedule_.fusion;
    std::string what = epilogue->via == sched::EpilogueKind::SharedTmaStore
                           ? "epilogue via shared tma_store"
                           : "epilogue via shared";
    if (fusion.outputs.size() != 1) {
      diagnostics_.report(DiagId::SharedEpilogueOutput, epilogue->origin.range,
                          what + ": the output tile of one output goes through shared memory; " +
                              std::to_string(fusion.outputs.size()) +
                              " outputs take the epilogue via registers");
      return;
    }
    if (schedule_.matmul.mma && schedule_.matmul.mma->swapAB) {
      diagnostics_
          .report(DiagId::SharedEpilogueOutput, epilogue->origin.range,
                  what + ": with swap_ab the kernel's tile is the output tile transposed, which "
                         "the shared output tile does not store; take the epilogue via registers")
          .note(DiagId::NoteDirective, schedule_.matmul.mma->swapABRange, "swap_ab is here");
      return;
    }
    const ir::Output &output = fusion.outputs[0];
    ir::DimId m = product.lhsLayout->rowDim, n = product.rhsLayout->rowDim;
    const std::string &mName = fusion.dims[m].name, &nName = fusion.dims[n].name;
    if (output.dims.size() != 2 || output.dims[0] != m || output.dims[1] != n)
      diagnostics_.report(DiagId::SharedEpilogueOutput, epilogue->origin.range,
                          what + ": output " + output.name + " is not [" + mName + ", " + nName +
                              "] (" + nName +
                              " contiguous); write it so, or take the epilogue via registers");
    // TMA stores the tile in boxes of one swizzle span of columns (32, 64 or 128 bytes: the
    // widest that divides the tile's rows); the threads' copy takes any width.
    if (epilogue->via == sched::EpilogueKind::SharedTmaStore && tiles &&
        tiles->tileN * ir::dtypeBytes(output.dtype) % 32 != 0)
      diagnostics_.report(
          DiagId::SharedEpilogueOutput, epilogue->origin.range,
          llvm::formatv("{0}: a tile {1} columns wide is {2} bytes of {3}; TMA stores the tile "
                        "in boxes of 32, 64 or 128 bytes of a row, so they must divide it (or "
                        "write 'epilogue via shared', which the threads copy)",
                        what, tiles->tileN, tiles->tileN * ir::dtypeBytes(output.dtype),
                        ir::dtypeName(output.dtype))
              .str());
    checkEpilogueTile(*epilogue, output, tiles);
    std::optional<int64_t> extent = fusion.dims[n].staticExtent;
    std::optional<int64_t> rowBytes = extent ? mul(*extent, ir::dtypeBytes(output.dtype)) : 16;
    if (!rowBytes || *rowBytes % 16 != 0)
      diagnostics_.report(
          DiagId::SharedEpilogueOutput, epilogue->origin.range,
          llvm::formatv("{0}: rows of {1} are {2} x {3} = {4} bytes apart; the shared output "
                        "tile is written in 16-byte pieces (take the epilogue via registers)",
                        what, output.name, nName, ir::dtypeName(output.dtype), sizeText(rowBytes))
              .str());
  }

  /// `epilogue via shared tma_store, tile (BM, C)`: the output tile goes out C columns at a
  /// time through two pieces of shared memory (lower/matmul/Epilogue.cpp), each piece the
  /// columns of every consumer warpgroup's fragments in it, stored by TMA boxes.
  void checkEpilogueTile(const sched::Applied<sched::Epilogue> &epilogue, const ir::Output &output,
                         const std::optional<MmaTiles> &tiles) {
    if (epilogue.tile.empty())
      return;
    llvm::SMRange at =
        epilogue.tile.front().range.isValid() ? epilogue.tile.front().range : epilogue.origin.range;
    auto refuse = [&](const std::string &why) {
      diagnostics_.report(DiagId::EpilogueTileShape, at, "epilogue tile: " + why);
    };
    if (epilogue.via != sched::EpilogueKind::SharedTmaStore)
      return refuse("the pieces of an epilogue tile are stored by TMA, each while the next is "
                    "written; write 'epilogue via shared tma_store, tile (...)'");
    if (epilogue.tile.size() != 2)
      return refuse(llvm::formatv("({0} sizes) is not (rows, columns)", epilogue.tile.size()));
    if (streamK())
      return refuse("stream_k with the output tile in pieces is not lowered yet; take the "
                    "whole tile (remove ', tile (...)')");
    if (!tiles)
      return;
    int64_t rows = epilogue.tile[0].value, columns = epilogue.tile[1].value;
    int64_t bytes = ir::dtypeBytes(output.dtype);
    if (rows != tiles->tileM)
      return refuse(llvm::formatv("{0} rows; each piece is every row of the {1}-row mma tile "
                                  "(write ({1}, {2}))",
                                  rows, tiles->tileM, columns));
    if (tiles->warpN != tiles->tileN)
      return refuse(llvm::formatv("the warp tile {0} is narrower than the mma tile's {1} "
                                  "columns; pieces of columns take warp tiles as wide as the tile",
                                  tiles->warpText(), tiles->tileN));
    if (columns <= 0 || columns >= tiles->tileN || tiles->tileN % columns != 0 ||
        columns * bytes % 32 != 0)
      return refuse(llvm::formatv(
          "{0} columns; a piece is a divisor of the tile's {1} columns, fewer than all of them, "
          "of whole 32-byte TMA boxes ({2} {3} elements)",
          columns, tiles->tileN, 32 / bytes, ir::dtypeName(output.dtype)));
  }

  /// A matrix product's loops are its mma tiles: the loop, placement and kernel
  /// directives of the normalization schedules do not apply. Each is reported once.
  void checkMatmulLoopDirectives() {
    std::set<std::pair<const char *, std::string>> reported;
    auto refuse = [&](llvm::SMRange at, const std::string &what, const char *why) {
      if (reported.insert({at.Start.getPointer(), what}).second)
        diagnostics_.report(DiagId::MatmulLoopDirective, at, what + why);
    };
    const char *loops = ": a matrix product's loops are its mma tiles; the loop directives of "
                        "the other schedules do not apply (remove it)";
    std::vector<TensorSchedule> roots;
    for (const TensorSchedule &tensor : schedule_.tensors) {
      for (const sched::LoopTransform &t : tensor.transforms)
        refuse(t.range, t.kind == sched::LoopTransform::Kind::Split ? "split" : "merge", loops);
      for (const Loop &loop : tensor.loops) {
        if (loop.parallelizedBy)
          refuse(loop.parallelizedBy->range, "parallelize", loops);
        if (loop.vectorizedBy)
          refuse(loop.vectorizedBy->range, "vectorize", loops);
        if (loop.unrolledBy)
          refuse(loop.unrolledBy->range, "unroll", loops);
        if (loop.unswitched) // no directive range is kept: the schedule's
          refuse(schedule_.header.fusionRange, "unswitch", loops);
        if (loop.prefetchedBy)
          refuse(loop.prefetchedBy->range, "prefetch", loops);
      }
      // A reorder keeps no range either: a tensor whose loops are not its root loops.
      if (tensor.transforms.empty()) {
        if (roots.empty())
          roots = sched::rootTensors(*schedule_.fusion);
        for (const TensorSchedule &root : roots)
          if (root.value == tensor.value &&
              !llvm::equal(root.loops, tensor.loops,
                           [](const Loop &a, const Loop &b) { return a.name == b.name; }))
            refuse(schedule_.header.fusionRange, "reorder", loops);
      }
      auto placement = [&](const std::optional<sched::Origin> &origin, const char *what) {
        if (origin)
          refuse(origin->range, std::string(what) + " '" + tensor.name + "'", loops);
      };
      placement(tensor.rfactorBy, "rfactor of");
      placement(tensor.computeAtBy, "compute_at");
      placement(tensor.computeWithBy, "compute_with");
      placement(tensor.persistentBy, "persistent");
      // The product's TMA pipeline stages its operands in shared memory already.
      if (tensor.cacheBy)
        refuse(tensor.cacheBy->range, "cache '" + tensor.name + "'",
               ": a matrix product stages its operands in shared memory by its TMA pipeline "
               "(pipeline N stages), and its epilogue reads each other input once an element "
               "of the tile (remove it)");
      placement(tensor.inlinedBy, "inline");
    }
    if (schedule_.inlineAll)
      refuse(schedule_.inlineAll->range, "inline all", loops);
    if (schedule_.reduceForm)
      refuse(schedule_.reduceForm->origin.range, "reduce one_pass|two_pass",
             ": a matrix product's epilogue has no reduction pair to combine");
    if (schedule_.launchBounds)
      refuse(schedule_.launchBounds->origin.range, "launch_bounds",
             ": the block of a matmul kernel is its warpgroups (128 threads each), which the "
             "mma warp tile sets");
    if (schedule_.maxRRegCount)
      refuse(schedule_.maxRRegCount->origin.range, "maxrregcount",
             ": a register cap would spill the wgmma accumulators; the register split of "
             "matmul kernels is warp_specialize's");
  }

  /// The count of each `tiles` directive: a swizzle group, or the parts of K.
  void checkTileOrders() {
    for (const sched::Applied<sched::Tiles> &tiles : schedule_.matmul.tiles) {
      if (!tiles.parameter)
        continue;
      int64_t value = tiles.parameter->value;
      if (tiles.order == sched::TileOrder::SplitK && (value < 1 || value > kMaxSplitK))
        diagnostics_.report(DiagId::SplitKRange, tiles.parameter->range, value);
      else if (tiles.hilbert && (value < 2 || value > kMaxHilbertBlock || (value & (value - 1))))
        diagnostics_.report(DiagId::HilbertBlock, tiles.parameter->range, value);
      else if (tiles.order != sched::TileOrder::SplitK && (value < 1 || value > kMaxSwizzle))
        diagnostics_.report(DiagId::SwizzleRange, tiles.parameter->range, value);
    }
  }

  /// The mma tile: a K tile of one 128-byte row, wgmma m64nNk16 with N a multiple of 8 up
  /// to 256 (of 64 when b is [K, N]), warpgroup tiles of whole instructions dividing the CTA
  /// tile, TMA boxes of at most 256 rows (b's tile in two boxes up to 512), at most 128
  /// accumulators a thread (160 with consumers of 232 registers; 128 for both products) and
  /// 4 warpgroups. Each rule needs the ones before it: the first broken one is reported.
  static constexpr int64_t kWideAccumulators = 160, kWideConsumerRegisters = 232;
  std::optional<MmaTiles> checkMmaShape(const ir::Value &product) {
    const sched::Applied<sched::Mma> &mma = *schedule_.matmul.mma;
    auto refuse = [&](llvm::SMRange at, const std::string &why) -> std::optional<MmaTiles> {
      diagnostics_.report(DiagId::MmaShape, at, why);
      return std::nullopt;
    };
    if (mma.instruction.text != "wgmma")
      return refuse(mma.instruction.range,
                    "instruction " + mma.instruction.text + ": only wgmma is lowered");
    if (mma.ctaTile.size() != 3 || mma.warpTile.size() != 2 || mma.instructionShape.size() != 3)
      return refuse(mma.origin.range, "the mma directive needs a tile (M, N, K), a warp tile "
                                      "(M, N) and an instruction shape (M, N, K)");
    // With swap_ab the instruction's 64 rows run along N: the rules below read the tiles
    // as (N, M), the order the kernel computes them in.
    const bool swap = mma.swapAB;
    const sched::Count &bm = mma.ctaTile[swap ? 1 : 0], &bn = mma.ctaTile[swap ? 0 : 1],
                       &bk = mma.ctaTile[2];
    const sched::Count &wm = mma.warpTile[swap ? 1 : 0], &wn = mma.warpTile[swap ? 0 : 1];
    const sched::Count &im = mma.instructionShape[0], &in = mma.instructionShape[1],
                       &ik = mma.instructionShape[2];
    const std::string swapped = swap ? " (swap_ab: read as (N, M))" : "";
    if (swap) {
      // b becomes wgmma's left operand, read K-major; one tensor map cannot load both.
      if (product.rhsLayout && !product.rhsLayout->contractedIsInner)
        return refuse(mma.swapABRange,
                      "swap_ab: b is [K, N] (N contiguous); with the operands swapped b is "
                      "wgmma's left operand, which is read with K contiguous: write b as [N, K]");
      // a becomes wgmma's right operand; read with M contiguous it would take whole
      // 64-element blocks of M, which few rows do not fill (not lowered).
      if (product.lhsLayout && !product.lhsLayout->contractedIsInner)
        return refuse(mma.swapABRange,
                      "swap_ab: a is [K, M] (M contiguous); with the operands swapped a is "
                      "wgmma's right operand, read here with K contiguous: write a as [M, K]");
      std::optional<unsigned> a = operandParam(product.operands[0]),
                              b = operandParam(product.operands[1]);
      if (a && a == b)
        return refuse(mma.swapABRange, "swap_ab: both operands are " +
                                           schedule_.fusion->params[*a].name +
                                           "; swapping them changes nothing");
      if (productCount() == 2)
        return refuse(mma.swapABRange, "swap_ab with two products (not lowered)");
    }
    if (std::optional<ir::DType> a = operandType(product.operands[0])) {
      int64_t rowElements = 128 / ir::dtypeBytes(*a);
      if (bk.value != rowElements)
        return refuse(bk.range, llvm::formatv("a K tile of {0}: the operand tiles are rows of "
                                              "one 128-byte swizzle span, {1} {2} elements",
                                              bk.value, rowElements, ir::dtypeName(*a))
                                    .str());
    }
    if (im.value != 64 || ik.value != 16 || in.value < 8 || in.value > 256 || in.value % 8 != 0)
      return refuse(im.value != 64   ? im.range
                    : ik.value != 16 ? ik.range
                                     : in.range,
                    llvm::formatv("instruction wgmma({0}, {1}, {2}): m64nNk16 with N a multiple "
                                  "of 8 from 8 to 256 is lowered",
                                  im.value, in.value, ik.value)
                        .str());
    // An N-major b ([K, N]) is read by wgmma in blocks of one 128-byte swizzle span of N.
    if (std::optional<ir::DType> b = operandType(product.operands[1]);
        b && product.rhsLayout && !product.rhsLayout->contractedIsInner) {
      int64_t span = 128 / ir::dtypeBytes(*b);
      if (in.value % span != 0)
        return refuse(in.range, llvm::formatv("instruction wgmma(64, {0}, 16): b is [K, N] (N "
                                              "contiguous), which wgmma reads in blocks of {1} "
                                              "columns; N must be a multiple of {1}",
                                              in.value, span)
                                    .str());
    }
    if (wm.value < 64 || wm.value % 64 != 0 || wn.value < in.value || wn.value % in.value != 0)
      return refuse(wm.range, llvm::formatv("warp tile ({0}, {1}){3}: a warpgroup's tile is "
                                            "whole wgmma instructions (a multiple of 64 by a "
                                            "multiple of {2})",
                                            wm.value, wn.value, in.value, swapped)
                                  .str());
    if (bm.value < wm.value || bn.value < wn.value || bm.value % wm.value != 0 ||
        bn.value % wn.value != 0)
      return refuse(wm.range, llvm::formatv("warp tile ({0}, {1}) does not divide the tile "
                                            "({2}, {3}){4}",
                                            wm.value, wn.value, bm.value, bn.value, swapped)
                                  .str());
    // A TMA box has at most 256 rows: a's tile is one box; b's loads in equal boxes of
    // whole 8-row swizzle atoms (a 320-column tile in two of 160).
    if (bm.value > 256 || bn.value > 512 ||
        (bn.value > 256 && (bn.value % 2 != 0 || bn.value / 2 % 8 != 0)))
      return refuse(bm.value > 256 ? bm.range : bn.range,
                    llvm::formatv("a tile of ({0}, {1}): a TMA box has at most 256 rows; the "
                                  "tile's M is one box and its N at most two equal boxes of "
                                  "a multiple of 8 rows (up to 512)",
                                  bm.value, bn.value)
                        .str());
    std::optional<unsigned> a = operandParam(product.operands[0]),
                            b = operandParam(product.operands[1]);
    if (a && a == b && bm.value != bn.value)
      return refuse(bm.range, llvm::formatv("both operands are {0}: one tensor map loads both "
                                            "tiles, so the tile's M and N must be equal ({1} "
                                            "and {2})",
                                            schedule_.fusion->params[*a].name, bm.value, bn.value)
                                  .str());
    MmaTiles tiles{bm.value, bn.value, wm.value, wn.value, in.value, swap};
    if (tiles.accumulators() > kWideAccumulators)
      return refuse(wm.range,
                    llvm::formatv("warp tile ({0}, {1}): {2} f32 accumulators a "
                                  "thread; at most {3} fit its registers (64 x 320 or "
                                  "128 x 160 a warpgroup)",
                                  wm.value, wn.value, tiles.accumulators(), kWideAccumulators)
                        .str());
    // More than 128 accumulators fit beside the addresses only in consumers raised to 232
    // registers by warp_specialize: ptxas keeps 64 x 320 and 128 x 160 warp tiles without
    // spills in persistent and stream-K walks; split-K, one tile a CTA with the whole output
    // tile stored by TMA, and clusters spill 8-136 bytes (`--resource-usage` shows them).
    if (const auto &ws = schedule_.matmul.warpSpecialize;
        tiles.accumulators() > 128 && (!ws || ws->consumerRegs.value < kWideConsumerRegisters))
      return refuse(wm.range,
                    llvm::formatv("warp tile ({0}, {1}): {2} f32 accumulators a thread; more "
                                  "than 128 need warp_specialize with consumers of at least {3} "
                                  "registers (setmaxnreg)",
                                  wm.value, wn.value, tiles.accumulators(), kWideConsumerRegisters)
                        .str());
    if (tiles.warpgroups() > 4)
      return refuse(
          wm.range,
          llvm::formatv("{0} warpgroups a CTA; at most 4 are lowered", tiles.warpgroups()).str());
    if (productCount() == 2 && 2 * tiles.accumulators() > 128)
      return refuse(mma.origin.range,
                    llvm::formatv("two products: warp tile ({0}, {1}) gives {2} f32 accumulators "
                                  "a thread for each; at most 128 fit (64 x 128 a warpgroup for "
                                  "two products)",
                                  wm.value, wn.value, 2 * tiles.accumulators())
                        .str());
    return tiles;
  }

  /// The first tile order, which the lowering follows (a second is duplicate-directive).
  const sched::Applied<sched::Tiles> *tileOrder() const {
    return schedule_.matmul.tiles.empty() ? nullptr : &schedule_.matmul.tiles.front();
  }
  int64_t splitParts() const {
    const sched::Applied<sched::Tiles> *order = tileOrder();
    return order && order->order == sched::TileOrder::SplitK && order->parameter
               ? order->parameter->value
               : 1;
  }
  bool streamK() const { return tileOrder() && tileOrder()->order == sched::TileOrder::StreamK; }
  /// The tiles directive's text, or the default, for messages.
  std::string tileOrderText() const {
    const sched::Applied<sched::Tiles> *order = tileOrder();
    if (!order)
      return "tiles one_per_cta";
    std::string text = "tiles " + sched::tileOrderName(order->order).str();
    if (order->parameter)
      text += (order->order == sched::TileOrder::SplitK ? " "
               : order->hilbert                         ? " hilbert "
                                                        : " swizzle ") +
              std::to_string(order->parameter->value);
    return text;
  }
  /// The CTAs of a cluster in a shape the lowering takes ((C, 1) or (1, C)), or 1.
  int64_t clusterTiles() const {
    const auto &cluster = schedule_.matmul.cluster;
    return cluster && cluster->shape.size() == 2 &&
                   (cluster->shape[0].value == 1 || cluster->shape[1].value == 1)
               ? cluster->shape[0].value * cluster->shape[1].value
               : 1;
  }

  /// Matrix-product directives that each hold but do not combine. Reported at the later
  /// directive of each pair in the lowering's order, with a note at the other.
  void checkMatmulConflicts(const std::optional<MmaTiles> &tiles) {
    const sched::MatmulSchedule &mm = schedule_.matmul;
    auto conflict = [&](llvm::SMRange at, const std::string &why,
                        std::optional<llvm::SMRange> other, const std::string &otherText) {
      auto report = diagnostics_.report(DiagId::MatmulDirectiveConflict, at, why);
      if (other)
        report.note(DiagId::NoteDirective, *other, otherText);
    };
    std::optional<llvm::SMRange> tilesAt;
    if (tileOrder())
      tilesAt = tileOrder()->origin.range;
    std::string tilesHere = "the tile order is here";
    int64_t parts = splitParts();
    bool twoGroups = false;
    if (mm.warpSpecialize && tiles) {
      const sched::Count &consumers = mm.warpSpecialize->consumerCount;
      int64_t perTile = tiles->warpgroups();
      if (consumers.value != perTile && consumers.value != 2 * perTile)
        conflict(consumers.range,
                 llvm::formatv("consumers({0}): the warp tile {1} of the tile {2} gives {3} "
                               "consumer warpgroups a tile; write {3}, or {4} for two groups "
                               "taking alternate tiles",
                               consumers.value, tiles->warpText(), tiles->tileText(), perTile,
                               2 * perTile)
                     .str(),
                 mm.mma->origin.range, "the mma tile is here");
      else if (consumers.value == 2 * perTile) {
        twoGroups = true;
        bool persistentWalk =
            tileOrder() && (tileOrder()->order == sched::TileOrder::Persistent || streamK());
        if (!persistentWalk)
          conflict(consumers.range,
                   llvm::formatv("consumers({0}): two groups of {1} take alternate tiles of a CTA; "
                                 "with one tile a CTA ({2}) the second would idle: write tiles "
                                 "persistent or stream_k",
                                 consumers.value, perTile, tileOrderText())
                       .str(),
                   tilesAt, tilesHere);
        else if (2 * perTile > 4)
          conflict(consumers.range,
                   llvm::formatv("consumers({0}): at most 4 consumer warpgroups are lowered",
                                 consumers.value)
                       .str(),
                   mm.mma->origin.range, "the mma tile is here");
      }
    }
    bool twoProducts = productCount() == 2;
    if (twoProducts && (parts > 1 || streamK()))
      conflict(tileOrder()->origin.range,
               tileOrderText() + " with two products: the partial tiles would carry two "
                                 "accumulators (not lowered); write tiles persistent",
               std::nullopt, "");
    int64_t c = clusterTiles();
    if (!mm.cluster || c <= 1)
      return;
    llvm::SMRange clusterAt = mm.cluster->origin.range;
    if (parts > 1)
      conflict(clusterAt, "cluster with split_k: the parts of K run as a grid z of their own",
               tilesAt, tilesHere);
    if (streamK())
      conflict(clusterAt,
               "cluster with stream_k: the CTAs of a cluster would take different runs of K, so "
               "they share no operand tile",
               tilesAt, tilesHere);
    if (twoGroups)
      conflict(clusterAt,
               "cluster with two consumer groups: the groups of a cluster's CTAs would release a "
               "shared stage at different times (not lowered)",
               mm.warpSpecialize->origin.range, "the consumer groups are here");
    if (twoProducts)
      conflict(clusterAt, "cluster with two products (not lowered)", std::nullopt, "");
    if (mm.cluster->multicast && !mm.warpSpecialize)
      conflict(clusterAt,
               "cluster multicast without warp_specialize: a stage another CTA writes into is "
               "freed by the consumers' empty barriers, which only the producer warpgroup waits "
               "on",
               std::nullopt, "");
  }

  /// `cluster (C, 1) [multicast]`: C = 1, 2 or 4 consecutive M tiles of one N tile; with
  /// multicast, each CTA loads an equal part of the b tile. `cluster (1, C) [multicast]`:
  /// C = 2 or 4 consecutive N tiles of one M tile, in persistent walks; with multicast,
  /// each CTA loads an equal part of the a tile. The target's limits (invalid-cluster) are
  /// checked first, and a cluster over them is not looked at again.
  void checkClusterShape(const std::optional<MmaTiles> &tiles, const ir::Value &product) {
    const auto &cluster = schedule_.matmul.cluster;
    if (!cluster || clusterRefused_)
      return;
    std::vector<std::string> extents;
    for (const sched::Count &extent : cluster->shape)
      extents.push_back(std::to_string(extent.value));
    std::string shape = llvm::join(extents, ", ");
    if (cluster->shape.size() != 2) {
      diagnostics_.report(DiagId::ClusterShape, cluster->origin.range, shape,
                          "a cluster is (C, 1) or (1, C): C consecutive M tiles of one N tile, "
                          "or C consecutive N tiles of one M tile");
      return;
    }
    if (cluster->shape[0].value != 1 && cluster->shape[1].value != 1) {
      diagnostics_.report(DiagId::ClusterShape, cluster->origin.range, shape,
                          "a cluster along both M and N: (C, 1) or (1, C) are lowered");
      return;
    }
    bool alongN = cluster->shape[1].value != 1;
    const sched::Count &extent = cluster->shape[alongN ? 1 : 0];
    int64_t c = extent.value;
    if (c != 1 && c != 2 && c != 4) {
      diagnostics_.report(
          DiagId::ClusterShape, extent.range, shape,
          llvm::formatv("a cluster of {0} {1} tiles: 1, 2 or 4 are lowered", c, alongN ? "N" : "M")
              .str());
      return;
    }
    if (alongN) {
      // The persistent walk hands a cluster C consecutive N tiles of one M tile; one tile a
      // CTA puts M along x, where clusters run, and the swapped product has N there.
      if (tiles && tiles->swapAB) {
        diagnostics_.report(DiagId::ClusterShape, extent.range, shape,
                            "a cluster along N with swap_ab: write (C, 1), whose CTAs share the "
                            "swapped product's a tile");
        return;
      }
      const sched::Applied<sched::Tiles> *order = tileOrder();
      if (!order || order->order != sched::TileOrder::Persistent) {
        auto report = diagnostics_.report(DiagId::ClusterShape, extent.range, shape,
                                          "a cluster along N is lowered for tiles persistent");
        if (order)
          report.note(DiagId::NoteDirective, order->origin.range, "the tile order is here");
        return;
      }
    }
    // Along N each CTA loads 1/C of the a tile's rows: every tile height (a multiple of 64)
    // splits into 2 or 4 parts of whole 8-row swizzle atoms.
    if (!cluster->multicast || c == 1 || !tiles || alongN)
      return;
    // Each CTA loads 1/C of the b tile: whole 64-column blocks when N is contiguous.
    std::optional<ir::DType> b = operandType(product.operands[1]);
    if (!b)
      return;
    int64_t span = 128 / ir::dtypeBytes(*b);
    // With swap_ab the shared tile is a's (K contiguous): consecutive N tiles share it.
    bool kContiguous = tiles->swapAB || product.rhsLayout->contractedIsInner;
    if (tiles->tileN % c != 0 || (!kContiguous && (tiles->tileN / span) % c != 0) ||
        tiles->tileN / c < 8)
      diagnostics_
          .report(DiagId::ClusterShape, cluster->origin.range, shape,
                  llvm::formatv("multicast: the {2} tile of {0} rows does not split into {1} "
                                "equal boxes",
                                tiles->tileN, c, tiles->swapAB ? "a" : "b")
                      .str())
          .note(DiagId::NoteDirective, schedule_.matmul.mma->origin.range, "the mma tile is here");
  }

  const sched::Schedule &schedule_;
  /// Tensors with a parallel type bound to two of their loops (parallel-type-reused):
  /// rules that read that type's loop say nothing more about them.
  std::set<std::pair<const TensorSchedule *, Parallel>> reusedIn_;
  /// The cluster broke a target limit (invalid-cluster) or needs sm_90a: its shape is
  /// not checked against what the lowering takes.
  bool clusterRefused_ = false;
  /// Shared memory of the per-thread buffers (block reduction scratch, persistent buffers in
  /// shared) when the block's threads are static, else 0; and whether it was already
  /// reported over the target's (checkPersistentBuffers). The cached inputs come after it.
  std::optional<int64_t> perThreadShared_ = 0;
  bool perThreadSharedReported_ = false;
  const Target &target_;
  DiagnosticEngine &diagnostics_;
};

std::string describePoint(const std::map<std::string, int64_t> &point) {
  std::vector<std::string> parts;
  for (const auto &[dim, value] : point)
    parts.push_back(dim + " = " + std::to_string(value));
  return parts.empty() ? "always" : llvm::join(parts, " and ");
}

} // namespace

bool checkSchedule(const sched::Schedule &schedule, const Target &target,
                   DiagnosticEngine &diagnostics) {
  return Checker(schedule, target, diagnostics).run();
}

namespace {

/// Where one schedule's guards hold on the grid of candidate sizes: per dimension, an
/// interval of candidate indices (from its comparisons of the size itself) and the guards
/// an interval cannot express (`!=`, remainders), tested at each point.
struct GuardRegion {
  const sched::ScheduleHeader *header = nullptr;
  std::vector<size_t> lo, hi;                              // per dimension, inclusive
  std::vector<std::vector<const sched::SizeGuard *>> rest; // per dimension
  bool empty = false;
};

GuardRegion regionOf(const sched::ScheduleHeader &header, const std::vector<std::string> &names,
                     const std::vector<std::vector<int64_t>> &candidates) {
  GuardRegion region;
  region.header = &header;
  region.lo.assign(names.size(), 0);
  region.rest.resize(names.size());
  for (size_t d = 0; d < names.size(); ++d)
    region.hi.push_back(candidates[d].size() - 1);
  for (const sched::SizeGuard &guard : header.when) {
    size_t d = std::find(names.begin(), names.end(), guard.dimName) - names.begin();
    const std::vector<int64_t> &values = candidates[d];
    auto firstAtLeast = [&](int64_t v) {
      return size_t(std::lower_bound(values.begin(), values.end(), v) - values.begin());
    };
    auto firstAbove = [&](int64_t v) {
      return size_t(std::upper_bound(values.begin(), values.end(), v) - values.begin());
    };
    // The candidates a comparison keeps, [from, to) (bounds are candidates' neighbours,
    // so values past them exist when any size does).
    size_t from = 0, to = values.size();
    if (guard.modulus > 0 || guard.comparison == sched::Comparison::Ne) {
      region.rest[d].push_back(&guard);
      continue;
    }
    switch (guard.comparison) {
    case sched::Comparison::Lt:
      to = firstAtLeast(guard.bound);
      break;
    case sched::Comparison::Le:
      to = firstAbove(guard.bound);
      break;
    case sched::Comparison::Gt:
      from = firstAbove(guard.bound);
      break;
    case sched::Comparison::Ge:
      from = firstAtLeast(guard.bound);
      break;
    case sched::Comparison::Eq:
      from = firstAtLeast(guard.bound);
      to = firstAbove(guard.bound);
      break;
    case sched::Comparison::Ne:
      break;
    }
    if (from >= to) {
      region.empty = true;
      return region;
    }
    region.lo[d] = std::max(region.lo[d], from);
    region.hi[d] = std::min(region.hi[d], to - 1);
    if (region.lo[d] > region.hi[d]) {
      region.empty = true;
      return region;
    }
  }
  return region;
}

} // namespace

bool checkGuards(const ir::Fusion &fusion,
                 const std::vector<const sched::ScheduleHeader *> &schedules,
                 DiagnosticEngine &diagnostics) {
  unsigned errorsBefore = diagnostics.errorCount();
  // Sizes between which no guard changes its answer (keyed by name, so that messages
  // list the dimensions alphabetically).
  std::vector<const std::vector<sched::SizeGuard> *> guards;
  for (const sched::ScheduleHeader *header : schedules)
    guards.push_back(&header->when);
  std::map<std::string, std::vector<int64_t>> byName = sched::sizeCandidates(guards);
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> candidates;
  for (auto &[dim, values] : byName) {
    names.push_back(dim);
    candidates.push_back(std::move(values));
  }
  // The points of the grid are walked with the first dimension fastest: a row is one
  // choice of the other dimensions. Along a row the schedules that apply change only
  // where one's interval starts or ends, so each point costs the schedules that apply
  // there, not all of them (20,000 guards check in a fraction of a second).
  std::vector<GuardRegion> regions;
  for (const sched::ScheduleHeader *header : schedules)
    regions.push_back(regionOf(*header, names, candidates));
  size_t rowLength = names.empty() ? 1 : candidates[0].size();
  std::vector<size_t> index(names.size(), 0);
  std::set<std::pair<const sched::ScheduleHeader *, const sched::ScheduleHeader *>> overlapReported;
  bool uncoveredReported = false;
  size_t steps = 0;
  std::vector<std::vector<size_t>> starting(rowLength), ending(rowLength);
  for (bool more = true; more;) {
    // The schedules whose guards on the other dimensions hold for this row.
    for (auto &bucket : starting)
      bucket.clear();
    for (auto &bucket : ending)
      bucket.clear();
    for (size_t r = 0; r < regions.size(); ++r) {
      const GuardRegion &region = regions[r];
      if (region.empty)
        continue;
      bool inRow = true;
      for (size_t d = 1; d < names.size() && inRow; ++d) {
        inRow = region.lo[d] <= index[d] && index[d] <= region.hi[d];
        for (const sched::SizeGuard *guard : region.rest[d])
          inRow = inRow && guard->holds(candidates[d][index[d]]);
      }
      if (!inRow)
        continue;
      starting[names.empty() ? 0 : region.lo[0]].push_back(r);
      ending[names.empty() ? 0 : region.hi[0]].push_back(r);
    }
    std::set<size_t> active; // in schedule order
    for (size_t i = 0; i < rowLength && more; ++i) {
      if (!names.empty())
        index[0] = i;
      for (size_t r : starting[i])
        active.insert(r);
      std::map<std::string, int64_t> point;
      for (size_t d = 0; d < names.size(); ++d)
        point[names[d]] = candidates[d][index[d]];
      std::vector<const sched::ScheduleHeader *> applying;
      for (size_t r : active) {
        bool holds = true;
        if (!names.empty())
          for (const sched::SizeGuard *guard : regions[r].rest[0])
            holds = holds && guard->holds(candidates[0][i]);
        if (holds)
          applying.push_back(regions[r].header);
      }
      // A guarded schedule takes precedence over the unguarded one, so only two guarded
      // schedules (or two unguarded ones) conflict.
      for (size_t a = 0; a < applying.size(); ++a)
        for (size_t b = a + 1; b < applying.size(); ++b) {
          if (applying[a]->when.empty() != applying[b]->when.empty())
            continue;
          if (overlapReported.insert({applying[a], applying[b]}).second)
            diagnostics
                .report(DiagId::WhenOverlap, applying[b]->fusionRange, fusion.name,
                        describePoint(point))
                .note(DiagId::NoteDirective, applying[a]->fusionRange,
                      "the other schedule is here");
        }
      if (applying.empty() && !uncoveredReported) {
        uncoveredReported = true;
        diagnostics.report(DiagId::WhenUncovered, schedules.back()->fusionRange, fusion.name,
                           describePoint(point));
      }
      for (size_t r : ending[i])
        active.erase(r);
      more = ++steps <= 100000;
    }
    // The next row: the other dimensions counted like an odometer.
    size_t d = 1;
    while (d < names.size() && ++index[d] == candidates[d].size()) {
      index[d] = 0;
      ++d;
    }
    if (d >= names.size())
      more = false;
  }
  return diagnostics.errorCount() == errorsBefore;
}

} // namespace fsl
