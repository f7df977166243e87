// Plan.cpp — reference nest, support checks, phases and the persistent buffer.
#include "lower/Plan.h"
#include "lower/HoistLoads.h"
#include "lower/Pointwise.h"

#include "ir/Describe.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/MathExtras.h>

#include <functional>

namespace fsl::lower {

using sched::Parallel;

bool reportUnsupported(DiagnosticEngine &diagnostics, const sched::Schedule &schedule,
                       const std::string &why, llvm::SMRange at) {
  diagnostics.report(DiagId::LoweringUnsupported, at.isValid() ? at : schedule.header.fusionRange,
                     why);
  return false;
}

std::vector<int> Plan::serialLoops() const {
  std::vector<int> result;
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].parallel == Parallel::Serial && !llvm::is_contained(rowLoops, int(i)))
      result.push_back(static_cast<int>(i));
  return result;
}

std::optional<int64_t> Plan::staticThreads() const {
  int64_t threads = 1;
  for (const PlannedLoop &loop : loops)
    if (sched::isThreadIndex(loop.parallel)) {
      if (!loop.extent.isStatic())
        return std::nullopt;
      threads *= *loop.extent.value;
    }
  return threads;
}

int64_t Plan::sharedBytesPerThread() const {
  int64_t bytes = ir::reductionScratchBytesPerThread(*fusion, onePass());
  for (unsigned id : persistentShared) {
    ir::DType type = fusion->values[id]->dtype;
    bytes += bufferElements * (type == ir::DType::F64 || type == ir::DType::I64 ? 8 : 4);
  }
  return bytes;
}

namespace {

class Planner {
public:
  Planner(const sched::Schedule &schedule, DiagnosticEngine &diagnostics, const PlanLimits &limits)
      : schedule_(schedule), fusion_(*schedule.fusion), diagnostics_(diagnostics), limits_(limits) {
  }

  std::unique_ptr<Plan> run() {
    plan_ = std::make_unique<Plan>();
    plan_->schedule = &schedule_;
    plan_->fusion = &fusion_;
    assertChecked();
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (tensor.cache)
        plan_->cachedInputs.push_back(
            {tensor.value->paramIndex,
             {"cache " + tensor.name + " in shared", tensor.cacheBy->range}});
    if (!chooseReference() || !checkTensors() || !checkInoutCoverage() || !planColumns() ||
        !checkReductions() || !assignPhases() || !checkRegisterArrays() || !checkGridReduction() ||
        !checkPrefetch() || !checkGridSync())
      return nullptr;
    chooseClampedRoots();
    return std::move(plan_);
  }

private:
  bool unsupported(const std::string &why, llvm::SMRange at = {}) {
    return reportUnsupported(diagnostics_, schedule_, why, at);
  }

  /// `grid_sync`: the inner-outer form's column sums finished after a grid barrier in the
  /// first kernel (BuildLoopNests.cpp, makeGridSyncColumns). Its blocks all stay resident
  /// (a cooperative launch), so the grid is one loop on blockIdx.x of a static extent and
  /// the block a static thread count; the lowering checks the extent against the SMs.
  bool checkGridSync() {
    if (!schedule_.gridSync)
      return true;
    llvm::SMRange at = schedule_.gridSync->range;
    auto refuse = [&](const std::string &why) {
      diagnostics_.report(DiagId::GridSyncUnsupported, at, why);
      return false;
    };
    std::string name = "'" + fusion_.name + "'";
    if (plan_->gridLoop < 0)
      return refuse("the schedule of " + name +
                    " has no grid reduction (a reduced dimension on a block index) to finish "
                    "in one kernel");
    // The row form: the blocks of a row's pieces combine them after each phase's barrier
    // (BuildLoopNests.cpp, gridSyncRowResults); the rows may take other block indices.
    if (!plan_->innerOuter()) {
      if (!plan_->staticThreads())
        return refuse("the block's thread count is not static");
      if (!plan_->loops[plan_->gridLoop].extent.isStatic())
        return refuse("the grid reduction's loop '" + plan_->loops[plan_->gridLoop].name +
                      "' has a runtime extent; every block must be resident at once, so the "
                      "number of pieces a row must be static");
      return checkLaunchBoundsThreads(refuse);
    }
    for (const PlannedLoop &loop : plan_->loops) {
      if (!sched::isBlockIndex(loop.parallel) || &loop == &plan_->loops[plan_->gridLoop])
        continue;
      if (!(loop.extent.isStatic() && *loop.extent.value == 1))
        return refuse("loop '" + loop.name + "' is on " + sched::parallelName(loop.parallel).str() +
                      " beside the grid reduction's; the blocks that meet at a grid barrier are "
                      "the grid reduction's alone");
    }
    const PlannedLoop &grid = plan_->loops[plan_->gridLoop];
    if (grid.parallel != Parallel::BIDx)
      return refuse("the grid reduction's loop '" + grid.name + "' is on " +
                    sched::parallelName(grid.parallel).str() + "; bind it to BIDx");
    if (!grid.extent.isStatic())
      return refuse("the grid reduction's loop '" + grid.name +
                    "' has a runtime extent; every block must be resident at once, so the "
                    "number of blocks must be static (`split T into N`)");
    if (!plan_->staticThreads())
      return refuse("the block's thread count is not static");
    return checkLaunchBoundsThreads(refuse);
  }

  /// A cooperative launch's residency is counted in the block's threads: launch_bounds
  /// must be that count.
  template <typename Refuse> bool checkLaunchBoundsThreads(Refuse &refuse) {
    if (schedule_.launchBounds && schedule_.launchBounds->threads.value != *plan_->staticThreads())
      return refuse("launch_bounds " + std::to_string(schedule_.launchBounds->threads.value) +
                    " is not the block's " + std::to_string(*plan_->staticThreads()) +
                    " threads: the blocks an SM that every block's residency needs are counted "
                    "in the block's threads");
    return true;
  }

  /// Directives the lowering cannot honour are the checker's rules (rfactor-not-lowered,
  /// compute-at-not-lowered, cache-not-lowered and the cache-* rules next to it,
  /// inline-persistent, inline-reduction, split-overruns-piece, strided-inout,
  /// mma-without-matmul), and every path to the lowering (pipeline/SchedulePlanning.cpp)
  /// lowers only schedules the checker passed.
  void assertChecked() const {
    for (const sched::TensorSchedule &tensor : schedule_.tensors) {
      FSL_INTERNAL_ASSERT(!tensor.rfactorBy, "an unchecked rfactor reached the lowering");
      FSL_INTERNAL_ASSERT(!tensor.computeAtBy, "an unchecked compute_at reached the lowering");
      FSL_INTERNAL_ASSERT(!tensor.cache || (tensor.cache == sched::MemoryKind::Shared &&
                                            tensor.value->op == ir::Op::Input &&
                                            !fusion_.params[tensor.value->paramIndex].isInout),
                          "an unchecked cache reached the lowering");
      FSL_INTERNAL_ASSERT(!tensor.inlinedBy || (tensor.persistent != sched::MemoryKind::Registers &&
                                                tensor.persistent != sched::MemoryKind::Shared &&
                                                !ir::isReduction(tensor.value->op)),
                          "an unchecked inline reached the lowering");
      FSL_INTERNAL_ASSERT(!tensor.isInput || !fusion_.params[tensor.value->paramIndex].isStrided ||
                              !fusion_.params[tensor.value->paramIndex].isInout,
                          "an unchecked strided inout parameter reached the lowering");
      for (const sched::Loop &loop : tensor.loops)
        FSL_INTERNAL_ASSERT(!loop.overrunningSplit,
                            "an unchecked overrunning split reached the lowering");
    }
    // Matrix products take the matmul path (lower/MatmulPlan.h).
    for (const auto &value : fusion_.values)
      FSL_INTERNAL_ASSERT(value->op != ir::Op::MatMul,
                          "a matrix product reached the plan of the normalizations");
    FSL_INTERNAL_ASSERT(!schedule_.matmul.any(),
                        "matrix-product directives without a product reached the lowering");
  }

  /// The output tensor with the most iteration loops sets the kernel's loop nest.
  bool chooseReference() {
    const sched::TensorSchedule *reference = nullptr;
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (tensor.isOutput &&
          (!reference || tensor.value->dims.size() > reference->value->dims.size()))
        reference = &tensor;
    if (!reference)
      return unsupported("no output of the fusion is a tensor");
    // A reduction stored as an output keeps its reduced loops; take any loops the
    // reference lacks from the reductions, so every root has its loops. Not from the
    // inputs: a dimension that only an input has is read through a select, gather or
    // window at the index that gives (the H of a concatenation's `a[H = index(H2)]`), and
    // a loop over it would repeat the body (inside a vector loop, which then cannot take
    // whole vectors).
    for (const sched::Loop &loop : reference->loops)
      addLoop(loop);
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (!tensor.isInput)
        for (const sched::Loop &loop : tensor.loops)
          if (findLoop(loop.name) < 0)
            addLoop(loop);
    // The transforms that made the loops, each once (they act on every tensor by name).
    std::set<std::string> seen;
    auto addTransforms = [&](const sched::TensorSchedule &tensor) {
      for (const sched::LoopTransform &t : tensor.transforms) {
        std::string key = t.kind == sched::LoopTransform::Kind::Split ? t.outer : t.result;
        if (seen.insert(key).second)
          plan_->transforms.push_back(t);
      }
    };
    addTransforms(*reference);
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      addTransforms(tensor);
    // A loop that a transform consumed elsewhere (H of a broadcast weight, next to the
    // merged TH of the output) is no loop of the kernel: the transform's result indexes
    // its dimension.
    std::set<std::string> consumed;
    for (const sched::LoopTransform &t : plan_->transforms) {
      consumed.insert(t.input);
      if (t.kind == sched::LoopTransform::Kind::Merge)
        consumed.insert(t.secondInput);
    }
    llvm::erase_if(plan_->loops,
                   [&](const PlannedLoop &loop) { return consumed.count(loop.name) != 0; });
    for (size_t i = 0; i < plan_->loops.size(); ++i) {
      const PlannedLoop &loop = plan_->loops[i];
      if (loop.vectorized) {
        if (plan_->vectorLoop >= 0)
          return unsupported("two vectorized loops", loop.origin.range);
        plan_->vectorLoop = static_cast<int>(i);
      }
      if (!loop.exact)
        plan_->inexactRoots.insert(loop.roots.begin(), loop.roots.end());
    }
    if (plan_->vectorLoop >= 0) {
      const PlannedLoop &vector = plan_->loops[plan_->vectorLoop];
      if (vector.parallel != Parallel::Serial)
        return unsupported("a vectorized loop bound to " +
                               sched::parallelName(vector.parallel).str(),
                           vector.origin.range);
      // Accesses are whole vectors when the vector loop is innermost among the serial
      // loops, is the innermost piece of its one root and the root's extent divides.
      std::vector<int> serial = plan_->serialLoops();
      bool innermostPiece = false;
      if (vector.roots.size() == 1) {
        const ir::Dim &root = fusion_.dims[vector.roots[0]];
        // A runtime root divides when the variant's guard says so (`when H % 8 == 0`).
        int64_t divisor = root.staticExtent
                              ? *root.staticExtent
                              : sched::guaranteedDivisor(schedule_.header.when, vector.roots[0]);
        innermostPiece = vector.extent.isStatic() && divisor % *vector.extent.value == 0 &&
                         isInnermostPiece(vector.name, root.name);
      }
      plan_->vectorAccessesExact = serial.back() == plan_->vectorLoop && innermostPiece;
      if (!plan_->vectorAccessesExact)
        return unsupported(
            "vectorize " + vector.name +
                ": its accesses cannot be whole vectors (the vector loop must be the innermost "
                "serial loop and the innermost piece of a dimension with a static extent that "
                "it divides, or a runtime one that a `when D % N == 0` guard makes divide); "
                "split the dimension by a factor that divides it, or drop the vectorize",
            vector.origin.range);
    }
    return true;
  }

  /// Whether `loop` is reached from `root` through the inner side of splits only (its
  /// index is the root's index modulo its extent: consecutive addresses).
  bool isInnermostPiece(const std::string &loop, const std::string &root) const {
    std::string current = root;
    for (const sched::LoopTransform &t : plan_->transforms) {
      if (t.kind == sched::LoopTransform::Kind::Merge &&
          (t.input == current || t.secondInput == current))
        current = t.secondInput == current ? t.result : "";
      else if (t.kind == sched::LoopTransform::Kind::Split && t.input == current)
        current = t.inner;
    }
    return current == loop;
  }

  int findLoop(const std::string &name) const {
    for (size_t i = 0; i < plan_->loops.size(); ++i)
      if (plan_->loops[i].name == name)
        return static_cast<int>(i);
    return -1;
  }

  void addLoop(const sched::Loop &loop) {
    PlannedLoop result;
    result.name = loop.name;
    result.extent = loop.extent;
    result.parallel = loop.parallel;
    result.vectorized = loop.vectorized;
    result.unrolled = loop.unrolled;
    result.unrollFactor = loop.unrollFactor;
    result.unswitched = loop.unswitched;
    if (loop.prefetchedBy)
      result.prefetchedBy = loop.prefetchedBy->range;
    result.roots = loop.roots;
    result.exact = loop.exact;
    if (loop.parallel != Parallel::Serial) {
      result.origin.text = "parallelize " + loop.name + " -> " +
                           sched::parallelName(loop.parallel).str() + ", extent " +
                           loop.extent.text;
      if (loop.parallelizedBy)
        result.origin.range = loop.parallelizedBy->range;
    } else if (loop.vectorized) {
      result.origin.text = "vectorize " + loop.name;
      if (loop.vectorizedBy)
        result.origin.range = loop.vectorizedBy->range;
    } else if (loop.unrolled) {
      result.origin.text = "unroll " + loop.name +
                           (loop.unrollFactor ? " by " + std::to_string(*loop.unrollFactor) : "");
      if (loop.unrolledBy)
        result.origin.range = loop.unrolledBy->range;
    } else {
      result.origin.text = "serial " + loop.name;
    }
    plan_->loops.push_back(result);
  }

  /// Every tensor's loops must be loops of the reference nest, alike.
  /// `prefetch L` needs L to be the one serial loop over a block's rows (the inner-outer
  /// walk, Plan::rowLoops) and batch loops the next row's vectors fit in registers as
  /// arrays: static, fully unrolled, at most sched::kMaxPrefetchVectors vectors of each input.
  bool checkPrefetch() {
    // The walk is the kernel's: `prefetch dy.Ts` on a tensor whose loop is not the
    // kernel's walk would be dropped, so it is refused.
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      for (const sched::Loop &loop : tensor.loops) {
        int index = findLoop(loop.name);
        if (loop.prefetchedBy && (index < 0 || !plan_->loops[index].prefetchedBy)) {
          diagnostics_.report(DiagId::PrefetchNotRowWalk, loop.prefetchedBy->range,
                              sched::userName(tensor, fusion_) + "." + loop.name,
                              "the row walk is the kernel's loop over its rows, not a tensor's; "
                              "write 'prefetch " +
                                  loop.name + "' (every tensor's)");
          return false;
        }
      }
    for (const PlannedLoop &loop : plan_->loops) {
      if (!loop.prefetchedBy)
        continue;
      int index = static_cast<int>(&loop - plan_->loops.data());
      auto refuse = [&](const std::string &why) {
        diagnostics_.report(DiagId::PrefetchNotRowWalk, *loop.prefetchedBy, loop.name,
                            why + "; remove the directive");
        return false;
      };
      if (!llvm::is_contained(plan_->rowLoops, index))
        return refuse(plan_->rowLoops.empty()
                          ? "this kernel walks no rows serially (only a fusion with a row "
                            "reduction and a column reduction, the inner-outer form, does)"
                          : "it is not the serial loop over the block's rows ('" +
                                plan_->loops[plan_->rowLoops.front()].name + "' is)");
      if (plan_->rowLoops.size() != 1)
        return refuse("the block's rows are walked by " + std::to_string(plan_->rowLoops.size()) +
                      " serial loops; prefetch takes one (merge them)");
      if (loop.unrolled)
        return refuse("it is unrolled; the next row is loaded while a serial loop's row is "
                      "reduced");
      std::optional<std::vector<int>> batch = staticBatchLoops(*plan_, true);
      int64_t vectors = 1;
      for (int b : batch.value_or(std::vector<int>{}))
        vectors *= *plan_->loops[b].extent.value;
      if (!batch || vectors > sched::kMaxPrefetchVectors)
        return refuse(!batch ? "the row's loops inside it are not static and fully unrolled "
                               "around an innermost vector loop, so its vectors cannot be "
                               "registers"
                             : "each thread's row takes " + std::to_string(vectors) +
                                   " vectors of each input, over the " +
                                   std::to_string(sched::kMaxPrefetchVectors) +
                                   " a prefetch keeps in registers");
    }
    return true;
  }

  /// An inout tensor is read and written back once an element. A dimension that it lacks
  /// and whose loop is on a block index (w[S] updated in a fusion over [T, S] with T on
  /// BIDx) would have every block read and write it, each seeing another's update. (A
  /// dimension on threads or serial loops is stored once by one thread, a row store; a
  /// reduced one is a grid reduction's, checked with it.)
  bool checkInoutCoverage() {
    std::set<ir::DimId> reduced;
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op))
        reduced.insert(value->reduced.begin(), value->reduced.end());
    for (const ir::Output &output : fusion_.outputs) {
      if (!output.isInout)
        continue;
      for (const PlannedLoop &loop : plan_->loops) {
        if (!sched::isBlockIndex(loop.parallel))
          continue;
        for (ir::DimId dim : loop.roots) {
          if (llvm::is_contained(output.dims, dim) || reduced.count(dim))
            continue;
          const std::string &name = fusion_.dims[dim].name;
          return unsupported("inout '" + output.name + "' lacks " + name + ", whose loop '" +
                                 loop.name + "' is on " + sched::parallelName(loop.parallel).str() +
                                 ": every block would read it and write it back, each seeing "
                                 "another's update; give it the dimension, or update it in a "
                                 "fusion without " +
                                 name,
                             output.range);
        }
      }
    }
    return true;
  }

  bool checkTensors() {
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      for (const sched::Loop &loop : tensor.loops) {
        int index = findLoop(loop.name);
        if (index < 0)
          continue; // a loop another tensor transformed: the transform indexes it
        const PlannedLoop &reference = plan_->loops[index];
        if (loop.extent.text != reference.extent.text || loop.parallel != reference.parallel ||
            loop.vectorized != reference.vectorized)
          return unsupported("loop '" + loop.name + "' of '" + sched::userName(tensor, fusion_) +
                                 "' is scheduled differently from the output's",
                             loop.parallelizedBy ? loop.parallelizedBy->range
                             : loop.vectorizedBy ? loop.vectorizedBy->range
                                                 : llvm::SMRange());
      }
    return true;
  }

  /// What a thread keeps in registers across its serial loops: each persistent buffer in
  /// registers and each column reduction's partial sums (BuildLoopNests.cpp, makeColumnRows),
  /// an element for every iteration of the serial loops (Plan::bufferElements). Past the
  /// registers a thread may have they spill to local memory, far past them the kernel does
  /// not compile (a static H of 2^40 declared 2^32 partial sums a thread): together they
  /// keep to the budget the checker gives one persistent buffer, 32 registers left for the
  /// rest. (ptxas also spills below it where a large block leaves each thread fewer.)
  bool checkRegisterArrays() {
    struct Array {
      std::string what;
      uint64_t words; // registers an element
    };
    std::vector<Array> arrays;
    // A column sum by the output it makes (dweight), else by its text.
    auto nameOf = [&](const ir::Value &value) {
      for (const ir::Output &output : fusion_.outputs)
        if (output.value == &value || llvm::is_contained(output.value->operands, &value))
          return output.name;
      return ir::userName(fusion_, value);
    };
    for (const auto &value : fusion_.values) {
      uint64_t words = (ir::dtypeBytes(registerType(value->dtype)) + 3) / 4;
      if (plan_->columnReduced.count(value->id))
        arrays.push_back({"the partial sums of " + nameOf(*value), words});
      else if (plan_->persistent.count(value->id) && !plan_->persistentShared.count(value->id))
        arrays.push_back({"persistent " + ir::userName(fusion_, *value), words});
    }
    if (arrays.empty())
      return true;
    uint64_t elements = static_cast<uint64_t>(plan_->bufferElements), words = 0;
    const PlannedLoop *widest = nullptr;
    std::string loops;
    for (int index : plan_->serialLoops()) {
      const PlannedLoop &loop = plan_->loops[index];
      if (!loop.extent.isStatic())
        continue; // (refused earlier where anything is kept over it)
      if (!widest || *loop.extent.value > *widest->extent.value)
        widest = &loop;
      loops +=
          (loops.empty() ? "" : ", ") + loop.name + " (" + std::to_string(*loop.extent.value) + ")";
    }
    std::string what;
    for (const Array &array : arrays) {
      words = llvm::SaturatingAdd(words, array.words);
      what +=
          (what.empty() ? "" : ", ") + array.what +
          (array.words > 1 ? " (" + std::to_string(array.words) + " registers an element)" : "");
    }
    uint64_t registers = llvm::SaturatingMultiply(elements, words);
    int64_t budget = limits_.maxRegistersPerThread - 32;
    if (registers <= static_cast<uint64_t>(std::max<int64_t>(budget, 0)))
      return true;
    auto count = [](uint64_t n) {
      return n >= static_cast<uint64_t>(INT64_MAX) ? std::string("more than 2^63")
                                                   : std::to_string(n);
    };
    // At the directive that gave the largest serial loop its kind (its unroll), else at the
    // first `persistent`, else at the schedule's fusion name.
    llvm::SMRange at = widest ? widest->origin.range : llvm::SMRange();
    if (!at.isValid())
      for (const sched::TensorSchedule &tensor : schedule_.tensors)
        if (tensor.persistentBy && plan_->persistent.count(tensor.value->id)) {
          at = tensor.persistentBy->range;
          break;
        }
    if (!at.isValid())
      at = schedule_.header.fusionRange;
    diagnostics_.report(DiagId::RegisterArraysTooLarge, at, count(registers), what, count(elements),
                        loops.empty() ? std::string("(none)") : loops, limits_.targetName, budget,
                        limits_.maxRegistersPerThread);
    return false;
  }

  /// The inner-outer form (Plan::columnReduced): the column reductions, the serial loops
  /// over their rows around the phases, and what reduces them across threads and blocks.
  bool planColumns() {
    std::vector<const ir::Value *> columns;
    for (const auto &value : fusion_.values) {
      if (!ir::isReduction(value->op))
        continue;
      // A column reduction reduces over no TIDx loop, and over a TIDy loop or keeps a
      // dimension on a serial loop that no serial loop over a reduced dimension follows
      // (a row reduction's kept rows are walked outside its reduced loops).
      bool overX = false, overY = false, keptInside = false, reducedInside = false,
           reducedSerially = false;
      for (const PlannedLoop &loop : plan_->loops) {
        if (loop.extent.isStatic() && *loop.extent.value == 1)
          continue;
        auto any = [&](const std::vector<ir::DimId> &dims) {
          return llvm::any_of(loop.roots,
                              [&](ir::DimId dim) { return llvm::is_contained(dims, dim); });
        };
        overX |= any(value->reduced) && loop.parallel == Parallel::TIDx;
        overY |= any(value->reduced) && loop.parallel == Parallel::TIDy;
        if (loop.parallel != Parallel::Serial)
          continue;
        reducedSerially |= any(value->reduced);
        if (any(value->dims)) {
          keptInside = true;
          reducedInside = false;
        } else if (any(value->reduced) && keptInside) {
          reducedInside = true;
        }
      }
      // Or it reduces serially over the rows that another reduction keeps (a row loop
      // around a row reduction, with the columns on threads alone).
      bool rowsOfAnother = llvm::any_of(fusion_.values, [&](const auto &other) {
        return other.get() != value.get() && ir::isReduction(other->op) &&
               llvm::any_of(value->reduced,
                            [&](ir::DimId dim) { return llvm::is_contained(other->dims, dim); });
      });
      if (!overX && (overY || (keptInside && !reducedInside) || (reducedSerially && rowsOfAnother)))
        columns.push_back(value.get());
    }
    if (columns.empty())
      return true;
    const ir::Value &first = *columns.front();
    std::string why = "column reduction " + describe(first) + ": ";
    for (const ir::Value *column : columns) {
      if (column->reduced != first.reduced || column->dims != first.dims)
        return unsupported(why + describe(*column) +
                           " reduces or keeps other dimensions; the column reductions of a "
                           "kernel reduce the same rows and keep the same columns");
      if (ir::isArgReduction(column->op))
        return unsupported("column reduction " + describe(*column) +
                           ": argmax and argmin over the rows of a block are not lowered");
    }
    if (schedule_.onePass())
      return unsupported(why + "'reduce one_pass' is not lowered next to column reductions");
    auto reducedHere = [&](ir::DimId dim) { return llvm::is_contained(first.reduced, dim); };
    bool innerSeen = false;
    for (size_t i = 0; i < plan_->loops.size(); ++i) {
      const PlannedLoop &loop = plan_->loops[i];
      bool anyReduced = llvm::any_of(loop.roots, reducedHere);
      bool allReduced = llvm::all_of(loop.roots, reducedHere);
      if (anyReduced && !allReduced)
        return unsupported(why + "loop '" + loop.name +
                               "' merges a reduced dimension with a kept one",
                           loop.origin.range);
      if (loop.parallel == Parallel::Serial) {
        if (!allReduced) {
          innerSeen = true;
          continue;
        }
        if (innerSeen)
          return unsupported(why + "the row loop '" + loop.name +
                                 "' is inside a loop over the columns; the rows are walked "
                                 "around every phase, so reorder the row loops outermost",
                             loop.origin.range);
        if (loop.vectorized || loop.unswitched)
          return unsupported(why + "the row loop '" + loop.name + "' is " +
                                 (loop.vectorized ? "vectorized" : "unswitched") +
                                 "; the rows are walked one at a time around every phase",
                             loop.origin.range);
        plan_->rowLoops.push_back(static_cast<int>(i));
        continue;
      }
      if (loop.parallel == Parallel::TIDz)
        return unsupported(why + "a loop on TIDz next to column reductions is not lowered",
                           loop.origin.range);
      if (loop.parallel == Parallel::TIDy && !anyReduced)
        return unsupported(why + "'" + loop.name +
                               "' on TIDy keeps a column; the column reductions add the rows "
                               "of threadIdx.y, so bind a reduced loop to TIDy",
                           loop.origin.range);
      if (!anyReduced)
        continue;
      if (loop.parallel == Parallel::TIDy)
        plan_->columnThreadLoop = static_cast<int>(i);
      else {
        // (A reduction over TIDx is a row reduction, and TIDz was refused above.)
        FSL_INTERNAL_ASSERT(sched::isBlockIndex(loop.parallel),
                            "a column reduction over a thread index other than TIDy");
        // One block (a static extent of 1: a static T that one block walks) holds the
        // whole column sums: the kernel stores the column outputs itself, with no
        // workspace and no second kernel.
        if (loop.extent.isStatic() && *loop.extent.value == 1)
          continue;
        if (plan_->gridLoop >= 0)
          return unsupported(why + "a second reduced loop on a block index ('" + loop.name +
                                 "'): a grid reduction splits one loop across blocks",
                             loop.origin.range);
        plan_->gridLoop = static_cast<int>(i);
      }
    }
    // The rows of TIDy are added through the block reductions' scratch, in the column
    // reductions' accumulator type: every block reduction of the kernel must use that type.
    if (plan_->columnThreadLoop >= 0)
      for (const auto &value : fusion_.values)
        if (ir::isReduction(value->op) && (ir::isArgReduction(value->op) ||
                                           registerType(value->dtype) != registerType(first.dtype)))
          return unsupported(
              why + describe(*value) +
              (ir::isArgReduction(value->op)
                   ? " combines (value, index) pairs"
                   : " accumulates in " + ir::dtypeName(registerType(value->dtype)).str()) +
              ", but the columns are added over threadIdx.y in " +
              ir::dtypeName(registerType(first.dtype)).str() +
              " through the same scratch; use one accumulator type");
    // The partial sums of a thread: one an iteration of the phases' serial loops.
    plan_->columnReduced.insert(first.id); // (serialLoops() now excludes the row loops)
    for (const ir::Value *column : columns)
      plan_->columnReduced.insert(column->id);
    for (int index : plan_->serialLoops())
      if (!plan_->loops[index].extent.isStatic())
        return unsupported(why + "its partial sums stay in registers, one an iteration of loop '" +
                               plan_->loops[index].name +
                               "', whose extent is a runtime size; split it by a constant",
                           plan_->loops[index].origin.range);
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op) && !plan_->columnReduced.count(value->id) &&
          llvm::any_of(value->reduced, reducedHere))
        return unsupported("row reduction " + describe(*value) + " reduces over " +
                           fusion_.dims[value->reduced.front()].name +
                           ", which the column reductions' row loops walk");
    // What the column reductions' results feed is computed after them, from them alone.
    std::set<unsigned> after(plan_->columnReduced);
    for (const auto &value : fusion_.values) {
      if (after.count(value->id) ||
          !llvm::any_of(value->operands, [&](const ir::Value *v) { return after.count(v->id); }))
        continue;
      for (const ir::Value *operand : value->operands)
        if (!after.count(operand->id) && operand->op != ir::Op::Constant &&
            operand->op != ir::Op::Scalar)
          return unsupported(why + "'" + ir::userName(fusion_, *value) +
                             "' combines a column reduction's result with other values; only "
                             "outputs computed from the column reductions are lowered");
      if (ir::isReduction(value->op))
        return unsupported(why + describe(*value) + " reduces a column reduction's result");
      after.insert(value->id);
    }
    for (const ir::Output &output : fusion_.outputs) {
      if (!after.count(output.value->id))
        continue;
      if (output.isInout)
        return unsupported(why + "inout '" + output.name +
                           "' is written from the column reductions' results");
      plan_->columnOutputs.push_back(&output);
    }
    if (plan_->gridLoop >= 0)
      plan_->gridReduced = columns;
    plan_->gridRowDims = first.dims;
    return true;
  }

  bool checkReductions() {
    for (const auto &value : fusion_.values) {
      if (!ir::isReduction(value->op) || plan_->columnReduced.count(value->id))
        continue;
      for (ir::DimId kept : value->dims)
        for (const PlannedLoop &loop : plan_->loops)
          if (llvm::is_contained(loop.roots, kept) && loop.parallel == Parallel::Serial &&
              !(loop.extent.isStatic() && *loop.extent.value == 1) &&
              !llvm::is_contained(plan_->rowLoops, int(&loop - plan_->loops.data())))
            return unsupported("reduction '" + ir::userName(fusion_, *value) +
                                   "' keeps dimension " + fusion_.dims[kept].name +
                                   " on serial loop '" + loop.name +
                                   "'; bind the kept dimensions to blocks or threads",
                               loop.origin.range);
      bool threadReduced = false;
      for (ir::DimId reduced : value->reduced)
        for (const PlannedLoop &loop : plan_->loops) {
          if (!llvm::is_contained(loop.roots, reduced))
            continue;
          if (loop.roots.size() > 1)
            return unsupported("loop '" + loop.name + "' merges a reduced dimension of '" +
                               ir::userName(fusion_, *value) + "' with another one");
          if (loop.parallel == Parallel::Serial)
            continue;
          if (sched::isBlockIndex(loop.parallel)) {
            int index = static_cast<int>(&loop - plan_->loops.data());
            if (plan_->innerOuter())
              return unsupported("row reduction " + describe(*value) + " over " +
                                     sched::parallelName(loop.parallel).str() +
                                     " next to column reductions: a kernel has one grid "
                                     "reduction, the column reductions'",
                                 loop.origin.range);
            if (plan_->gridLoop >= 0 && plan_->gridLoop != index)
              return unsupported("a second reduced loop on a block index ('" + loop.name +
                                     "'): a grid reduction splits one loop across blocks",
                                 loop.origin.range);
            plan_->gridLoop = index;
            continue;
          }
          if (loop.parallel != Parallel::TIDx)
            return unsupported("reduction over " + sched::parallelName(loop.parallel).str() +
                                   " (block reductions over threadIdx.x only, for now)",
                               loop.origin.range);
          threadReduced = true;
        }
      if (threadReduced)
        plan_->blockReduced.insert(value->id);
    }
    return true;
  }

  bool assignPhases() {
    // `reduce one_pass`: the second reduction of each pair is computed with the first,
    // from the values the first reduces (the checker refused it without a pair).
    std::map<unsigned, const ir::OnePassPair *> secondOf;
    if (schedule_.onePass()) {
      plan_->onePassForm = true;
      pairs_ = ir::findOnePassPairs(fusion_);
      for (const ir::OnePassPair &pair : pairs_)
        secondOf[pair.second->id] = &pair;
    }
    // The phase of a value: after every reduction it depends on has finished.
    std::map<unsigned, int> phase;
    int last = 0;
    for (const auto &value : fusion_.values) {
      int p = 0;
      for (const ir::Value *operand : value->operands)
        p = std::max(p, phase[operand->id] + (ir::isReduction(operand->op) ? 1 : 0));
      if (auto pair = secondOf.find(value->id); pair != secondOf.end())
        p = phase[pair->second->operand->id];
      phase[value->id] = p;
      last = std::max(last, p + (ir::isReduction(value->op) ? 1 : 0));
    }
    std::set<unsigned> kept;    // persistent in registers or in shared memory
    llvm::SMRange persistentAt; // the first `persistent` directive, for messages
    for (const sched::TensorSchedule &tensor : schedule_.tensors) {
      if (tensor.persistentBy && !persistentAt.isValid())
        persistentAt = tensor.persistentBy->range;
      bool keptHere = tensor.persistent == sched::MemoryKind::Registers ||
                      tensor.persistent == sched::MemoryKind::Shared;
      FSL_INTERNAL_ASSERT(!keptHere || !ir::isReduction(tensor.value->op),
                          "an unchecked persistent reduction reached the lowering");
      if (keptHere) {
        kept.insert(tensor.value->id);
        if (tensor.persistent == sched::MemoryKind::Shared)
          plan_->persistentShared.insert(tensor.value->id);
        if (tensor.computeWithBy)
          plan_->computedWith.insert(tensor.value->id);
      }
      // `inline t`, or `inline all` for every computed value that is not kept.
      bool computed = !ir::isReduction(tensor.value->op) && tensor.value->op != ir::Op::Input &&
                      tensor.value->op != ir::Op::Scalar && tensor.value->op != ir::Op::Constant;
      if (tensor.inlinedBy || (schedule_.inlineAll && computed && !keptHere))
        plan_->inlined.insert(tensor.value->id);
    }
    plan_->bufferElements = 1;
    for (int index : plan_->serialLoops()) {
      const PlannedLoop &loop = plan_->loops[index];
      if (!loop.extent.isStatic()) {
        if (!kept.empty())
          return unsupported("persistent buffer over loop '" + loop.name +
                                 "' of runtime extent; split it by a constant",
                             persistentAt);
        continue;
      }
      // Saturated: the register check (checkRegisterArrays) refuses anything near it.
      plan_->bufferElements = static_cast<int64_t>(
          std::min<uint64_t>(llvm::SaturatingMultiply(static_cast<uint64_t>(plan_->bufferElements),
                                                      static_cast<uint64_t>(*loop.extent.value)),
                             INT64_MAX));
    }
    // An inout write-back waits for the last phase that reads its parameter, so every
    // read sees the old data; deferring can make a phase read another inout parameter,
    // so repeat until no store moves (stores only move later, so this ends).
    std::map<const ir::Output *, int> storePhase;
    for (const ir::Output &output : fusion_.outputs)
      storePhase[&output] = phase[output.value->id] + (ir::isReduction(output.value->op) ? 1 : 0);
    for (bool deferred = true; deferred;) {
      buildPhases(phase, last, kept, storePhase);
      deferred = false;
      for (const ir::Output &output : fusion_.outputs) {
        if (!output.isInout)
          continue;
        const ir::Value *input = fusion_.params[output.paramIndex].value;
        for (int p = last; p > storePhase[&output]; --p)
          if (llvm::is_contained(plan_->phases[p].values, input)) {
            storePhase[&output] = p;
            deferred = true;
            break;
          }
      }
    }
    plan_->phaseOf = phase;
    // A value the two-pass form keeps across its reduction may have no reduction before
    // its uses in one pass (softmax's exp(x - max), which only the output then reads).
    for (const sched::TensorSchedule &tensor : schedule_.tensors)
      if (plan_->onePass() && kept.count(tensor.value->id) &&
          !plan_->persistent.count(tensor.value->id) && tensor.persistentBy)
        return unsupported("persistent " + tensor.name +
                               ": with 'reduce one_pass', no reduction reads '" + tensor.name +
                               "' before a later use (the pair's reduction reads '" +
                               pairOperandName(tensor.value) +
                               "'); remove the directive, or use 'reduce two_pass'",
                           tensor.persistentBy->range);
    return true;
  }

  /// A grid reduction (a reduced loop on a block index) is two kernels: the blocks'
  /// partial accumulators, then one thread a row combining them and computing the row
  /// outputs. So every reduction reduces over the grid loop's dimension and keeps the
  /// same rows, and after the reductions only row outputs remain (the checker refused
  /// values that use a result per element: reduction-on-block-index).
  /// A reduction for a message: its name, or its operation and dimensions.
  std::string describe(const ir::Value &value) const {
    if (!value.name.empty())
      return "'" + value.name + "'";
    std::string dims;
    for (ir::DimId dim : value.reduced)
      dims += (dims.empty() ? "" : ", ") + fusion_.dims[dim].name;
    return "the " + ir::opName(value.op).str() + " over " + dims;
  }

  bool checkGridReduction() {
    if (plan_->gridLoop < 0 || plan_->innerOuter())
      return true; // the inner-outer form's grid loop was checked by planColumns
    const PlannedLoop &grid = plan_->loops[plan_->gridLoop];
    std::string why = "grid reduction over '" + grid.name + "': ";
    const ir::Value *first = nullptr;
    for (const auto &value : fusion_.values) {
      if (!ir::isReduction(value->op))
        continue;
      if (!llvm::is_contained(value->reduced, grid.roots.front()))
        return unsupported(why + describe(*value) + " does not reduce over " +
                               fusion_.dims[grid.roots.front()].name +
                               ", which the blocks of that loop split",
                           grid.origin.range);
      if (first && first->dims != value->dims)
        return unsupported(why + describe(*first) + " and " + describe(*value) +
                               " keep different dimensions",
                           grid.origin.range);
      // (With `grid_sync` each phase's reductions are combined after a grid barrier of
      // their own, so one may read another's result.)
      if (plan_->phaseOf.at(value->id) != 0 && !schedule_.gridSync)
        return unsupported(why + describe(*value) + " reads another reduction's result",
                           grid.origin.range);
      first = first ? first : value.get();
    }
    FSL_INTERNAL_ASSERT(first, "a grid loop without a reduction");
    plan_->gridRowDims = first->dims;
    // A one-pass pair's blocks store its accumulators together (every pair is in phase 0:
    // its second reduction is computed with the first).
    std::set<unsigned> paired;
    for (const PlannedPhase &phase : plan_->phases)
      for (const ir::OnePassPair &pair : phase.combined) {
        plan_->gridPairs.push_back(pair);
        paired.insert({pair.first->id, pair.second->id});
      }
    for (const auto &value : fusion_.values)
      if (ir::isReduction(value->op) && !paired.count(value->id))
        plan_->gridReduced.push_back(value.get());
    // `grid_sync`: every block goes on after the barrier with the row's results, its piece
    // of the row kept (persistent) or read again, and stores its piece of the outputs.
    if (schedule_.gridSync) {
      for (const PlannedPhase &phase : plan_->phases)
        for (const ir::Output *output : phase.stores)
          if (output->isInout && !llvm::is_contained(output->dims, grid.roots.front()))
            return unsupported(why + "inout '" + output->name +
                                   "' would be written by every block of '" + grid.name + "'",
                               grid.origin.range);
      return true;
    }
    // The blocks keep nothing for the rows kernel but their partial accumulators.
    for (unsigned id : plan_->persistent)
      return unsupported(why + describe(*fusion_.values[id]) +
                             " is kept across the reduction (persistent), but the rows "
                             "kernel has only the blocks' partial results; remove the directive",
                         grid.origin.range);
    if (plan_->phases.size() != 2)
      return unsupported(why + "the fusion has work after its reductions besides row outputs",
                         grid.origin.range);
    for (const ir::Output *output : plan_->phases[1].stores)
      for (ir::DimId dim : output->dims)
        if (!llvm::is_contained(first->dims, dim))
          return unsupported(why + "output '" + output->name + "' is stored per element of " +
                                 fusion_.dims[dim].name + " after the reduction",
                             grid.origin.range);
    // Before the reductions, each block stores its piece; an inout tensor that the blocks
    // would all write (it lacks the grid loop's dimension) would race with their reads.
    for (const ir::Output *output : plan_->phases[0].stores)
      if (output->isInout && !llvm::is_contained(output->dims, grid.roots.front()))
        return unsupported(why + "inout '" + output->name +
                               "' would be written by every block of '" + grid.name + "'",
                           grid.origin.range);
    return true;
  }

  /// The name of the values the one-pass pair that made `value` no buffer reduces.
  std::string pairOperandName(const ir::Value *value) const {
    for (const ir::OnePassPair &pair : pairs_)
      if (llvm::is_contained(pair.second->operands, value) ||
          (!pair.second->operands.empty() &&
           llvm::is_contained(pair.second->operands[0]->operands, value)))
        return ir::userName(fusion_, *pair.operand);
    return pairs_.empty() ? "?" : ir::userName(fusion_, *pairs_.front().operand);
  }

  void buildPhases(std::map<unsigned, int> &phase, int last, const std::set<unsigned> &kept,
                   const std::map<const ir::Output *, int> &storePhase) {
    plan_->persistent.clear();
    plan_->phases.assign(last + 1, {});
    std::set<unsigned> available;
    for (int p = 0; p <= last; ++p) {
      PlannedPhase &current = plan_->phases[p];
      std::set<unsigned> paired;
      for (const ir::OnePassPair &pair : pairs_) {
        paired.insert({pair.first->id, pair.second->id});
        if (phase[pair.first->id] == p)
          current.combined.push_back(pair);
      }
      for (const auto &value : fusion_.values)
        if (phase[value->id] == p && ir::isReduction(value->op) && !paired.count(value->id))
          current.reductions.push_back(value.get());
      for (const ir::Output &output : fusion_.outputs)
        if (storePhase.at(&output) == p &&
            !llvm::is_contained(plan_->columnOutputs, &output)) // stored after the row loops
          current.stores.push_back(&output);
      for (const auto &value : fusion_.values)
        if (phase[value->id] == p && kept.count(value->id) && usedAfter(value.get(), p, phase)) {
          current.saves.push_back(value.get());
          plan_->persistent.insert(value->id);
        }
      std::set<unsigned> needed;
      std::function<void(const ir::Value *)> need = [&](const ir::Value *value) {
        if (needed.count(value->id))
          return;
        bool fromEarlier =
            available.count(value->id) != 0 || (ir::isReduction(value->op) && phase[value->id] < p);
        if (!fromEarlier)
          for (const ir::Value *operand : value->operands)
            need(operand);
        needed.insert(value->id);
      };
      for (const ir::Value *reduction : current.reductions)
        need(reduction->operands[0]);
      for (const ir::OnePassPair &pair : current.combined)
        need(pair.operand);
      for (const ir::Output *output : current.stores)
        need(output->value);
      for (const ir::Value *saved : current.saves)
        need(saved);
      for (const auto &value : fusion_.values)
        if (needed.count(value->id) && !(ir::isReduction(value->op) && phase[value->id] == p))
          current.values.push_back(value.get());
      for (const ir::Value *saved : current.saves)
        available.insert(saved->id);
    }
  }

  /// Inexact roots walked by no serial loop and reduced by no reduction are clamped
  /// rather than checked: reading a repeated row is harmless when nothing sums over
  /// rows, and its stores are skipped.
  void chooseClampedRoots() {
    for (ir::DimId root : std::set<ir::DimId>(plan_->inexactRoots)) {
      bool clampable = true;
      for (const PlannedLoop &loop : plan_->loops)
        clampable &= !(llvm::is_contained(loop.roots, root) &&
                       (loop.parallel == Parallel::Serial || loop.roots.size() > 1));
      for (const auto &value : fusion_.values)
        clampable &= !(ir::isReduction(value->op) && llvm::is_contained(value->reduced, root));
      if (clampable) {
        plan_->inexactRoots.erase(root);
        plan_->clampedRoots.insert(root);
      }
    }
  }

  bool usedAfter(const ir::Value *value, int p, std::map<unsigned, int> &phase) {
    for (const auto &user : fusion_.values)
      if (phase[user->id] > p && llvm::is_contained(user->operands, value))
        return true;
    return false;
  }

  const sched::Schedule &schedule_;
  const ir::Fusion &fusion_;
  DiagnosticEngine &diagnostics_;
  const PlanLimits &limits_;
  std::unique_ptr<Plan> plan_;
  std::vector<ir::OnePassPair> pairs_; // `reduce one_pass`
};

} // namespace

std::unique_ptr<Plan> planKernel(const sched::Schedule &schedule, DiagnosticEngine &diagnostics,
                                 const PlanLimits &limits) {
  return Planner(schedule, diagnostics, limits).run();
}

} // namespace fsl::lower
