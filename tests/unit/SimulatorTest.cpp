// SimulatorTest.cpp — the Kernel IR interpreter on hand-built kernels: results, the
// faults it reports (divergent reductions, bounds, alignment, shared memory, mbarrier
// deadlocks, TMA data read before its wait), the Hopper layouts (TMA boxes and swizzles,
// wgmma fragments) against values computed here independently, and warp-specialized
// pipelines, which need the warps scheduled one by one rather than the block in lockstep.
#include "TestSupport.h"

#include "eval/Evaluator.h"
#include "kir/IR.h"
#include "kir/Layout.h"
#include "sema/Sema.h"
#include "sim/Simulator.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <optional>

using namespace fsl;
using namespace fsl::kir;

namespace {

// --- Building kernels --------------------------------------------------------------------

BufferPtr makeBuffer(std::string name, DType dtype, MemorySpace space,
                     std::vector<int64_t> shape = {}, Swizzle swizzle = Swizzle::None,
                     int64_t alignment = 16) {
  auto b = std::make_shared<Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = space;
  b->shape = std::move(shape);
  b->swizzle = swizzle;
  b->alignment = alignment;
  return b;
}

/// A shared buffer at byte `offset` of the dynamic shared memory.
Stmt allocateAt(const BufferPtr &buffer, int64_t offset) {
  return allocateStmt(buffer, index(offset), nullptr);
}

// The mbarrier operations on element 0 of `barrier`.

Stmt barrierInit(const BufferPtr &barrier, int64_t arrivals) {
  return mbarrierInit(barrier, index(0), index(arrivals));
}

Stmt arriveExpectTx(const BufferPtr &barrier, int64_t bytes) {
  return mbarrierArriveExpectTx(barrier, index(0), index(bytes));
}

Stmt arrive(const BufferPtr &barrier) { return mbarrierArrive(barrier, index(0), nullptr); }

Stmt waitParity(const BufferPtr &barrier, int64_t parity) {
  return mbarrierWait(barrier, index(0), index(parity));
}

TensorMapPtr tensorMap(std::string name, const BufferPtr &global, std::vector<int64_t> extents,
                       std::vector<int64_t> box, Swizzle swizzle) {
  auto m = std::make_shared<TensorMap>();
  m->name = std::move(name);
  m->global = global;
  for (int64_t e : extents)
    m->extents.push_back(index(e));
  m->box = std::move(box);
  m->swizzle = swizzle;
  return m;
}

/// A TMA load of the box at `coordinates` of `map` into `tile` from element `at`, its bytes
/// counted on element 0 of `barrier`.
Stmt loadBox(const BufferPtr &tile, const TensorMapPtr &map, std::vector<int64_t> coordinates,
             const BufferPtr &barrier, int64_t at = 0) {
  std::vector<Expr> box;
  for (int64_t c : coordinates)
    box.push_back(index(c));
  return tmaLoad(map, std::move(box), tile, index(at), barrier, index(0), nullptr);
}

/// wgmma m64nNk16 of bf16 operands (A K-major) into `accumulator` from element `at` (null:
/// unset), B's blocks `blockBytesB` apart.
Stmt bf16Product(const BufferPtr &accumulator, const BufferPtr &a, Expr offsetA, const BufferPtr &b,
                 Expr offsetB, int n, bool transposeB, Expr at = nullptr, int64_t blockBytesB = 0) {
  return wgmma(WgmmaShape{64, n, 16}, DType::BF16, accumulator, std::move(at), a,
               std::move(offsetA), /*transposeA=*/false, /*blockBytesA=*/0, b, std::move(offsetB),
               transposeB, blockBytesB, /*accumulate=*/nullptr);
}

Expr eq(Expr a, Expr b) { return binary(BinaryOp::Eq, std::move(a), std::move(b)); }
Expr f32(double v) { return constant(v, DType::F32); }

KernelParam tensorParam(const BufferPtr &buffer) {
  KernelParam p;
  p.kind = KernelParam::Kind::Tensor;
  p.buffer = buffer;
  return p;
}

void launch(Kernel &kernel, int64_t grid, std::array<int64_t, 2> block, int64_t sharedBytes = 0) {
  kernel.launch.grid = {index(grid), nullptr, nullptr};
  kernel.launch.block = {index(block[0]), index(block[1]), nullptr};
  kernel.launch.sharedBytes = index(sharedBytes);
}

/// The message of a failed run, or "" on success.
std::string faultOf(llvm::Error error) {
  if (!error)
    return "";
  return llvm::toString(std::move(error));
}

// --- Kernels used by several tests -----------------------------------------------------------

struct Pointwise {
  BufferPtr x = makeBuffer("x", DType::F32, MemorySpace::Global);
  BufferPtr y = makeBuffer("y", DType::F32, MemorySpace::Global);
  VarPtr n = makeVar("n", DType::I64);
  Kernel kernel;

  /// y[i] = x[i] * 2 for i = blockIdx.x * 4 + threadIdx.x, guarded by i < n or not.
  explicit Pointwise(bool guarded) {
    VarPtr b = makeVar("b", DType::I64), t = makeVar("t", DType::I64), i = makeVar("i", DType::I64);
    Stmt write = store(y, var(i), binary(BinaryOp::Mul, load(x, var(i)), f32(2)));
    Stmt body = block(
        {let(i, var(b) * index(4) + var(t)), guarded ? ifThen(var(i) < var(n), write) : write});
    kernel.name = "scale";
    kernel.params = {tensorParam(x), tensorParam(y)};
    kernel.body =
        parallelLoop(b, index(3), Axis::BIDx, parallelLoop(t, index(4), Axis::TIDx, body));
    launch(kernel, 3, {4, 1});
  }

  sim::Memory memory(int64_t count) const {
    sim::Memory m;
    for (int64_t i = 0; i < count; ++i)
      m.global[x.get()].push_back(eval::roundTo(0.1 * static_cast<double>(i) - 0.3, DType::F32));
    m.global[y.get()].assign(count, NAN);
    m.scalars[n.get()] = static_cast<double>(count);
    return m;
  }
};

/// Three blocks of 8 x 2 threads; block b, row threadIdx.y reduces row 2b + y of x[6][8].
struct RowSums {
  BufferPtr x = makeBuffer("x", DType::F32, MemorySpace::Global);
  BufferPtr sums = makeBuffer("sums", DType::F32, MemorySpace::Global);
  BufferPtr maxima = makeBuffer("maxima", DType::F32, MemorySpace::Global);
  Kernel kernel;

  explicit RowSums(bool divergent) {
    VarPtr b = makeVar("b", DType::I64), ty = makeVar("ty", DType::I64),
           tx = makeVar("tx", DType::I64), row = makeVar("row", DType::I64);
    VarPtr acc = makeVar("acc", DType::F32), top = makeVar("top", DType::F32);
    Stmt sum = reduce(acc, ReduceKind::Sum, ReduceScope::BlockX, nullptr, index(0));
    Stmt body = block({
        let(row, var(b) * index(2) + var(ty)),
        declare(acc, load(x, var(row) * index(8) + var(tx))),
        declare(top, load(x, var(row) * index(8) + var(tx))),
        divergent ? ifThen(var(tx) < index(4), sum) : sum,
        reduce(top, ReduceKind::Max, ReduceScope::BlockX, nullptr, index(1)),
        ifThen(eq(var(tx), index(0)),
               block({store(sums, var(row), var(acc)), store(maxima, var(row), var(top))})),
    });
    kernel.name = "row_sums";
    kernel.params = {tensorParam(x), tensorParam(sums), tensorParam(maxima)};
    kernel.body = parallelLoop(
        b, index(3), Axis::BIDx,
        parallelLoop(ty, index(2), Axis::TIDy, parallelLoop(tx, index(8), Axis::TIDx, body)));
    launch(kernel, 3, {8, 2});
  }

  double element(int r, int c) const { return 0.5 * (r * 8 + c) - 7.0 + (c == 5 ? 20.0 : 0.0); }

  sim::Memory memory() const {
    sim::Memory m;
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 8; ++c)
        m.global[x.get()].push_back(element(r, c));
    m.global[sums.get()].assign(6, NAN);
    m.global[maxima.get()].assign(6, NAN);
    return m;
  }
};

/// One block of 32 threads: thread 0 starts a TMA load of a 4 x 8 box at (row 3, column 8)
/// of g[5][12] (f32) into `tile`, every thread waits and copies the tile out.
struct TmaBox {
  BufferPtr g = makeBuffer("g", DType::F32, MemorySpace::Global);
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr tile = makeBuffer("tile", DType::F32, MemorySpace::Shared, {32}, Swizzle::None, 128);
  TensorMapPtr map = tensorMap("g_map", g, {5, 12}, {4, 8}, Swizzle::None);
  Kernel kernel;

  /// `secondParity`: a second wait after the first, on that parity.
  explicit TmaBox(int64_t expectedBytes, std::optional<int64_t> secondParity = {}) {
    VarPtr t = makeVar("t", DType::I64);
    std::vector<Stmt> body = {
        allocateAt(bar, 0),
        allocateAt(tile, 128),
        ifThen(eq(var(t), index(0)), barrierInit(bar, 1)),
        barrier(),
        ifThen(eq(var(t), index(0)),
               block({arriveExpectTx(bar, expectedBytes), loadBox(tile, map, {3, 8}, bar)})),
        waitParity(bar, 0),
    };
    if (secondParity)
      body.push_back(waitParity(bar, *secondParity));
    body.push_back(store(out, var(t), load(tile, var(t))));
    kernel.name = "tma_box";
    kernel.params = {tensorParam(out)};
    KernelParam mapParam;
    mapParam.kind = KernelParam::Kind::TensorMap;
    mapParam.tensorMap = map;
    kernel.params.push_back(mapParam);
    kernel.body = parallelLoop(t, index(32), Axis::TIDx, block(std::move(body)));
    launch(kernel, 1, {32, 1}, 256);
  }

  sim::Memory memory() const {
    sim::Memory m;
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 12; ++c)
        m.global[g.get()].push_back(100.0 * r + c);
    m.global[out.get()].assign(32, NAN);
    return m;
  }
};

} // namespace

TEST_CASE("simulator: a pointwise kernel over a grid of blocks and threads") {
  Pointwise k(/*guarded=*/true);
  sim::Memory memory = k.memory(10);
  REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
  const std::vector<double> &x = memory.global[k.x.get()], &y = memory.global[k.y.get()];
  REQUIRE(y.size() == 10);
  for (size_t i = 0; i < y.size(); ++i)
    CHECK(y[i] == eval::roundTo(x[i] * 2, DType::F32));
}

TEST_CASE("simulator: launches beyond the target's limits fault, as on the GPU") {
  // The driver passes the target's limits (LaunchLimits); these are the H200's and an
  // A100's, which has no clusters.
  Pointwise k(/*guarded=*/true);
  sim::Memory memory = k.memory(10);
  k.kernel.launch.cluster = {index(3), index(1), index(1)};
  CHECK(faultOf(sim::runKernel(k.kernel, memory)) == "");
  sim::SimulatorLimits a100;
  a100.maxClusterSize = 1;
  CHECK(faultOf(sim::runKernel(k.kernel, memory, 0, a100))
            .find("clusters of 3 blocks; the "
                  "target allows 1") != std::string::npos);
  k.kernel.launch.cluster = {nullptr, nullptr, nullptr};
  k.kernel.launch.grid[1] = index(70000);
  CHECK(faultOf(sim::runKernel(k.kernel, memory))
            .find("grid extent 70000 along y is outside "
                  "1..65535") != std::string::npos);
  k.kernel.launch.grid[1] = nullptr;
  k.kernel.launch.block[2] = index(128);
  CHECK(faultOf(sim::runKernel(k.kernel, memory))
            .find("block extent 128 along z is outside "
                  "1..64") != std::string::npos);
}

TEST_CASE("simulator: arithmetic is rounded as the GPU rounds it") {
  // bf16 operations are computed in f32 and rounded to bf16; integers divide as C does.
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64);
  Expr a = constant(1.0078125, DType::BF16); // 1 + 2^-7, exact in bf16
  Stmt body = block({
      store(out, index(0), binary(BinaryOp::Mul, a, a)), // 1.0156860... -> 1.015625
      store(out, index(1), cast(DType::F32, index(-7) / index(2))),
      store(out, index(2), cast(DType::F32, index(-7) % index(2))),
      store(out, index(3), binary(BinaryOp::Max, f32(1), f32(NAN))),
      store(out, index(4), cast(DType::I32, f32(-2.75))),
      store(out, index(5), binary(BinaryOp::Div, f32(1), f32(3))),
  });
  Kernel kernel;
  kernel.name = "arith";
  kernel.params = {tensorParam(out)};
  kernel.body = parallelLoop(t, index(1), Axis::TIDx, body);
  launch(kernel, 1, {1, 1});
  sim::Memory memory;
  memory.global[out.get()].assign(6, 0);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  const std::vector<double> &o = memory.global[out.get()];
  CHECK(o[0] == 1.015625);
  CHECK(o[1] == -3);
  CHECK(o[2] == -1);
  CHECK(std::isnan(o[3]));
  CHECK(o[4] == -2);
  CHECK(o[5] == static_cast<double>(1.0f / 3.0f));
}

TEST_CASE("simulator: variables hold the C type the CUDA printer declares them with") {
  // The printer declares bf16 and f16 variables as `float` and rounds only where it
  // prints a rounding: a bf16-typed accumulator given f32 sums adds in f32 (1024, where
  // rounding to bf16 after every step stalls at 256), a bf16 constant is the f32 literal
  // of its value, a cast from f64 to bf16 rounds once (__double2bfloat16), a sigmoid is
  // computed as the printer spells it.
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64), i = makeVar("i", DType::I64);
  VarPtr acc = makeVar("acc", DType::BF16), tenth = makeVar("tenth", DType::BF16);
  Expr sum = binary(BinaryOp::Add, cast(DType::F32, var(acc)), f32(0.25)); // f32
  REQUIRE(sum->dtype == DType::F32);
  double above = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30); // just over a bf16 tie
  // `1.0f / (1.0f + expf(-x))` rounds three times; here that differs from the f32 nearest
  // to the exact sigmoid (0.500092804).
  double sigmoidOf = static_cast<double>(0.000371099974f);
  float e = static_cast<float>(std::exp(-sigmoidOf)), denominator = 1.0f + e;
  double printed = static_cast<float>(1.0 / static_cast<double>(denominator));
  Stmt body = block({
      declare(acc, constant(0, DType::BF16)),
      forLoop(i, index(4096), LoopKind::Serial, assign(acc, sum)),
      store(out, index(0), var(acc)),
      let(tenth, constant(0.1, DType::BF16)),
      store(out, index(1), var(tenth)),
      store(out, index(2), cast(DType::F32, cast(DType::BF16, constant(above, DType::F64)))),
      store(out, index(3), unary(UnaryOp::Sigmoid, f32(sigmoidOf))),
  });
  Kernel kernel;
  kernel.name = "registers";
  kernel.params = {tensorParam(out)};
  kernel.body = parallelLoop(t, index(1), Axis::TIDx, body);
  launch(kernel, 1, {1, 1});
  sim::Memory memory;
  memory.global[out.get()].assign(4, 0);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  const std::vector<double> &o = memory.global[out.get()];
  CHECK(o[0] == 1024);
  CHECK(o[1] == static_cast<double>(0.1f));
  CHECK(o[1] != eval::roundTo(0.1, DType::BF16));
  CHECK(o[2] == 1.0078125); // through f32 first it would tie to 1
  CHECK(o[3] == printed);
  CHECK(o[3] != eval::roundTo(1 / (1 + std::exp(-sigmoidOf)), DType::F32));
}

TEST_CASE("simulator: a warp reduction adds in the butterfly order of fsl_warp_reduce") {
  // Lane 0 holds 2^24, the others 1, in f32. In lane order every 1 is lost (2^24 + 1
  // ties to 2^24); the butterfly (offsets 16, 8, 4, 2, 1) loses only the first:
  // 2^24, then + 2, + 4, + 8, + 16 = 2^24 + 30, as on the GPU. A bf16-typed accumulator
  // reduces in f32 as well (fsl_warp_reduce on a float).
  for (DType type : {DType::F32, DType::BF16}) {
    CAPTURE(ir::dtypeName(type).str());
    BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
    VarPtr t = makeVar("t", DType::I64), acc = makeVar("acc", type);
    Stmt body = block({
        declare(acc, select(eq(var(t), index(0)), f32(16777216), f32(1))),
        reduce(acc, ReduceKind::Sum, ReduceScope::Warp, nullptr, 0),
        store(out, var(t), var(acc)),
    });
    Kernel kernel;
    kernel.name = "butterfly";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(t, index(32), Axis::TIDx, body);
    launch(kernel, 1, {32, 1});
    sim::Memory memory;
    memory.global[out.get()].assign(32, 0);
    REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
    for (double lane : memory.global[out.get()])
      CHECK(lane == 16777216 + 30);
  }
}

TEST_CASE("simulator: a warp argmax combines (value, index) pairs by fsl_arg_better") {
  // Lane l holds (value, index l): 5 at lanes 3 and 9 (a tie: 3 wins), NaN at lanes 20 and
  // 12 when `withNan` (the lower one, 12, wins), and lane 7 holds nothing yet (index -1,
  // value +inf: it must lose). argmin of the same lanes: -2 at lanes 30 and 25 (25).
  for (bool withNan : {false, true}) {
    CAPTURE(withNan);
    BufferPtr out = makeBuffer("out", DType::I64, MemorySpace::Global);
    VarPtr t = makeVar("t", DType::I64), value = makeVar("value", DType::F32),
           at = makeVar("at", DType::I64), low = makeVar("low", DType::F32),
           lowAt = makeVar("low_at", DType::I64);
    auto lane = [&](int64_t l) { return eq(var(t), index(l)); };
    Expr v = select(lane(3), f32(5), select(lane(9), f32(5), f32(1)));
    if (withNan)
      v = select(lane(20), f32(NAN), select(lane(12), f32(NAN), v));
    v = select(lane(7), f32(INFINITY), v);
    Expr lowValue = select(lane(30), f32(-2), select(lane(25), f32(-2), f32(0)));
    Stmt body = block({
        declare(value, v),
        declare(at, select(lane(7), index(-1), var(t))),
        declare(low, lowValue),
        declare(lowAt, var(t)),
        reduceTuple({value, at}, ReduceKind::ArgMax, ReduceScope::Warp, nullptr, nullptr),
        reduceTuple({low, lowAt}, ReduceKind::ArgMin, ReduceScope::Warp, nullptr, nullptr),
        store(out, var(t), var(at) * index(100) + var(lowAt)),
    });
    Kernel kernel;
    kernel.name = "warp_argmax";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(t, index(32), Axis::TIDx, body);
    launch(kernel, 1, {32, 1});
    sim::Memory memory;
    memory.global[out.get()].assign(32, 0);
    REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
    for (double result : memory.global[out.get()])
      CHECK(result == (withNan ? 12 : 3) * 100 + 25);
  }
}

TEST_CASE("simulator: Welford and online-softmax partials combine over a block") {
  // 64 threads (two warps), thread t with the one value x_t = t / 4 - 5 (threads 10 and
  // 11 hold nothing: count 0, and for the softmax max -inf with sum 0). The block's
  // (count, mean, M2) are the other 62 values' count, mean and sum of squared
  // differences; its (max, sum) the largest value and the sum of exp(x - max), in f32.
  // With a NaN at thread 40 the softmax pair is NaN.
  for (bool withNan : {false, true}) {
    CAPTURE(withNan);
    BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
    BufferPtr scratch = makeBuffer("scratch", DType::I64, MemorySpace::Shared, {256});
    VarPtr t = makeVar("t", DType::I64), count = makeVar("count", DType::F32),
           mean = makeVar("mean", DType::F32), m2 = makeVar("m2", DType::F32),
           top = makeVar("top", DType::F32), sum = makeVar("sum", DType::F32);
    Expr empty = binary(BinaryOp::Or, eq(var(t), index(10)), eq(var(t), index(11)));
    Expr x = binary(BinaryOp::Sub, binary(BinaryOp::Div, cast(DType::F32, var(t)), f32(4)), f32(5));
    Expr value = withNan ? select(eq(var(t), index(40)), f32(NAN), x) : x;
    Stmt body = block({
        allocate(scratch),
        declare(count, select(empty, f32(0), f32(1))),
        declare(mean, select(empty, f32(0), x)),
        declare(m2, f32(0)),
        declare(top, select(empty, f32(-INFINITY), value)),
        declare(sum, select(empty, f32(0), f32(1))),
        reduceTuple({count, mean, m2}, ReduceKind::Welford, ReduceScope::BlockX, scratch, index(0)),
        reduceTuple({top, sum}, ReduceKind::MaxExpSum, ReduceScope::BlockX, scratch, index(1)),
        store(out, var(t) * index(5), var(count)),
        store(out, var(t) * index(5) + index(1), var(mean)),
        store(out, var(t) * index(5) + index(2), var(m2)),
        store(out, var(t) * index(5) + index(3), var(top)),
        store(out, var(t) * index(5) + index(4), var(sum)),
    });
    Kernel kernel;
    kernel.name = "two_pass_in_one";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(t, index(64), Axis::TIDx, body);
    launch(kernel, 1, {64, 1});
    sim::Memory memory;
    memory.global[out.get()].assign(64 * 5, 0);
    REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
    double n = 0, exactMean = 0, exactM2 = 0, exactTop = -INFINITY, exactSum = 0;
    for (int i = 0; i < 64; ++i)
      if (i != 10 && i != 11) {
        n += 1;
        exactMean += i / 4.0 - 5;
        exactTop = std::max(exactTop, i / 4.0 - 5);
      }
    exactMean /= n;
    for (int i = 0; i < 64; ++i)
      if (i != 10 && i != 11) {
        exactM2 += (i / 4.0 - 5 - exactMean) * (i / 4.0 - 5 - exactMean);
        exactSum += std::exp(i / 4.0 - 5 - exactTop);
      }
    const std::vector<double> &o = memory.global[out.get()];
    for (int lane : {0, 10, 63}) {
      CAPTURE(lane);
      CHECK(o[lane * 5] == n);
      CHECK(o[lane * 5 + 1] == doctest::Approx(exactMean).epsilon(1e-6));
      CHECK(o[lane * 5 + 2] == doctest::Approx(exactM2).epsilon(1e-5));
      if (withNan) {
        CHECK(std::isnan(o[lane * 5 + 3]));
        CHECK(std::isnan(o[lane * 5 + 4]));
      } else {
        CHECK(o[lane * 5 + 3] == exactTop);
        CHECK(o[lane * 5 + 4] == doctest::Approx(exactSum).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("simulator: a block reduction adds in the order of fsl_block_reduce_x") {
  // 64 threads (two warps): each warp's butterfly, then the warps' partials. Thread 0
  // holds 2^24, thread 32 holds 2, the others 1: warp 0 gives 2^24 + 30 (above), warp 1
  // 2 + 31 = 33, and 2^24 + 30 + 33 = 2^24 + 63 rounds to 2^24 + 64. In thread order
  // the 1s would be lost one by one (ties to even) and the sum would stop at 2^24 + 4.
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  BufferPtr scratch = makeBuffer("scratch", DType::F32, MemorySpace::Shared, {8});
  VarPtr t = makeVar("t", DType::I64), acc = makeVar("acc", DType::F32);
  Stmt body = block({
      allocate(scratch),
      declare(acc, select(eq(var(t), index(0)), f32(16777216),
                          select(eq(var(t), index(32)), f32(2), f32(1)))),
      reduce(acc, ReduceKind::Sum, ReduceScope::BlockX, scratch, index(0)),
      store(out, var(t), var(acc)),
  });
  Kernel kernel;
  kernel.name = "block_tree";
  kernel.params = {tensorParam(out)};
  kernel.body = parallelLoop(t, index(64), Axis::TIDx, body);
  launch(kernel, 1, {64, 1});
  sim::Memory memory;
  memory.global[out.get()].assign(64, 0);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  for (double thread : memory.global[out.get()])
    CHECK(thread == 16777216 + 64);
}

TEST_CASE("simulator: a block reduction gives each threadIdx.y row its own total") {
  RowSums k(/*divergent=*/false);
  sim::Memory memory = k.memory();
  REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
  for (int r = 0; r < 6; ++r) {
    double sum = 0, top = -INFINITY;
    for (int c = 0; c < 8; ++c) {
      sum += k.element(r, c);
      top = std::max(top, k.element(r, c));
    }
    CHECK(memory.global[k.sums.get()][r] == sum);
    CHECK(memory.global[k.maxima.get()][r] == top);
  }
}

TEST_CASE("simulator: a block reduction inside an if is a divergent barrier") {
  RowSums k(/*divergent=*/true);
  sim::Memory memory = k.memory();
  std::string message = faultOf(sim::runKernel(k.kernel, memory));
  CHECK(message.find("block reduction of acc reached by 8 of 16 threads") != std::string::npos);
  CHECK(message.find("kernel row_sums: block (0, 0, 0)") == 0);
}

/// One block of 64 threads walking 3 rows of x[3][64] serially (the inner-outer form's
/// walk), one block reduction a row into sums[row]; `slot` is its scratch half.
struct SerialRowSums {
  BufferPtr x = makeBuffer("x", DType::F32, MemorySpace::Global);
  BufferPtr sums = makeBuffer("sums", DType::F32, MemorySpace::Global);
  BufferPtr scratch = makeBuffer("scratch", DType::F32, MemorySpace::Shared, {128});
  Kernel kernel;

  explicit SerialRowSums(bool alternate) {
    VarPtr tx = makeVar("tx", DType::I64), r = makeVar("r", DType::I64);
    VarPtr acc = makeVar("acc", DType::F32);
    Expr slot = alternate ? var(r) % index(2) : index(0);
    Stmt row = block({
        declare(acc, load(x, var(r) * index(64) + var(tx))),
        reduce(acc, ReduceKind::Sum, ReduceScope::BlockX, scratch, slot),
        ifThen(eq(var(tx), index(0)), store(sums, var(r), var(acc))),
    });
    kernel.name = "serial_row_sums";
    kernel.params = {tensorParam(x), tensorParam(sums)};
    kernel.body =
        parallelLoop(tx, index(64), Axis::TIDx,
                     block({allocate(scratch), forLoop(r, index(3), LoopKind::Serial, row)}));
    launch(kernel, 1, {64, 1});
  }

  sim::Memory memory() const {
    sim::Memory m;
    for (int i = 0; i < 3 * 64; ++i)
      m.global[x.get()].push_back(static_cast<double>(i % 7));
    m.global[sums.get()].assign(3, NAN);
    return m;
  }
};

TEST_CASE("simulator: block reductions in a serial loop take the scratch halves in turn") {
  SerialRowSums same(/*alternate=*/false);
  sim::Memory memory = same.memory();
  std::string message = faultOf(sim::runKernel(same.kernel, memory));
  CHECK(message.find("block reduction of acc takes half 0 of the reduction scratch, which the "
                     "block reduction of acc before it read with no barrier since") !=
        std::string::npos);
  SerialRowSums alternating(/*alternate=*/true);
  sim::Memory good = alternating.memory();
  CHECK(faultOf(sim::runKernel(alternating.kernel, good)) == "");
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int c = 0; c < 64; ++c)
      sum += (r * 64 + c) % 7;
    CHECK(good.global[alternating.sums.get()][r] == sum);
  }
}

TEST_CASE("simulator: an out-of-bounds store names the buffer, the element and the size") {
  Pointwise k(/*guarded=*/false); // 12 threads for 10 elements
  sim::Memory memory = k.memory(10);
  std::string message = faultOf(sim::runKernel(k.kernel, memory));
  CHECK(message.find("block (2, 0, 0), thread (2, 0, 0)") != std::string::npos);
  // The load comes first: x[10] is read before y[10] is written.
  CHECK(message.find("out-of-bounds load from global x: element 10 of 10") != std::string::npos);

  // With x large enough, the store is the fault.
  sim::Memory larger = k.memory(10);
  larger.global[k.x.get()].resize(12, 1.0);
  message = faultOf(sim::runKernel(k.kernel, larger));
  CHECK(message.find("out-of-bounds store to global y: element 10 of 10") != std::string::npos);
}

TEST_CASE("simulator: misaligned vector copies fault") {
  BufferPtr x = makeBuffer("x", DType::F32, MemorySpace::Global);
  BufferPtr y = makeBuffer("y", DType::F32, MemorySpace::Global);
  BufferPtr v = makeBuffer("v", DType::F32, MemorySpace::Local, {4});
  auto kernelWith = [&](int64_t shift) {
    VarPtr t = makeVar("t", DType::I64);
    Kernel kernel;
    kernel.name = "copy";
    kernel.params = {tensorParam(x), tensorParam(y)};
    kernel.body = parallelLoop(
        t, index(3), Axis::TIDx,
        block({allocate(v), vectorCopy(v, index(0), x, var(t) * index(4) + index(shift), 4),
               vectorCopy(y, var(t) * index(4), v, index(0), 4)}));
    launch(kernel, 1, {3, 1});
    return kernel;
  };
  auto memory = [&] {
    sim::Memory m;
    for (int i = 0; i < 16; ++i)
      m.global[x.get()].push_back(i);
    m.global[y.get()].assign(12, NAN);
    return m;
  };

  sim::Memory aligned = memory();
  REQUIRE(faultOf(sim::runKernel(kernelWith(0), aligned)) == "");
  for (int i = 0; i < 12; ++i)
    CHECK(aligned.global[y.get()][i] == i);

  sim::Memory shifted = memory();
  std::string message = faultOf(sim::runKernel(kernelWith(2), shifted));
  CHECK(message.find("misaligned vector access of x: 4 lanes (16 bytes) at element 2") !=
        std::string::npos);

  // Aligned indices into a tensor that starts one element past an aligned address.
  sim::Memory misaligned = memory();
  message = faultOf(sim::runKernel(kernelWith(0), misaligned, /*misalign=*/1));
  CHECK(message.find("misaligned vector access of x") != std::string::npos);
  CHECK(message.find("tensor misaligned by 1") != std::string::npos);
}

TEST_CASE("simulator: stmatrix.x4 writes a warp's four 8 x 8 matrices from its fragments") {
  // Each lane holds value 8 lane + k in register element k (register j: elements 2 j and
  // 2 j + 1) and addresses row lane % 8 of matrix lane / 8 of a 16 x 16 tile: matrices 0-3
  // at (rows 0-7, columns 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15).
  BufferPtr tile = makeBuffer("tile", DType::BF16, MemorySpace::Shared, {256});
  BufferPtr regs = makeBuffer("regs", DType::BF16, MemorySpace::Local, {8});
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64), k = makeVar("k", DType::I64);
  auto kernelWith = [&](Expr reaching) {
    Expr matrix = var(t) / index(8), row = var(t) % index(8);
    Expr address =
        (row + index(8) * (matrix % index(2))) * index(16) + index(8) * (matrix / index(2));
    Kernel kernel;
    kernel.name = "stmatrix";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(
        t, index(32), Axis::TIDx,
        block({allocateAt(tile, 0), allocate(regs),
               forStmt(k, index(8), LoopKind::Unrolled, Axis::BIDx, std::nullopt,
                       {store(regs, var(k), cast(DType::BF16, var(t) * index(8) + var(k)))}),
               ifStmt(reaching, {stMatrix(tile, address, regs, index(0), 4)}), barrier(),
               forStmt(k, index(8), LoopKind::Unrolled, Axis::BIDx, std::nullopt,
                       {store(out, var(t) * index(8) + var(k),
                              cast(DType::F32, load(tile, var(t) * index(8) + var(k))))})}));
    launch(kernel, 1, {32, 1}, 512);
    return kernel;
  };
  sim::Memory memory;
  memory.global[out.get()].assign(256, NAN);
  REQUIRE(faultOf(sim::runKernel(kernelWith(var(t) < index(32)), memory)) == "");
  // Element (r, c): matrix r / 8 + 2 (c / 8), its row r % 8 held by lanes 4 (r % 8) ..
  // + 3, lane 4 (r % 8) + (c % 8) / 2 in register element 2 j + c % 2.
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      int j = r / 8 + 2 * (c / 8), holder = 4 * (r % 8) + (c % 8) / 2;
      INFO("element (" << r << ", " << c << ")");
      CHECK(memory.global[out.get()][r * 16 + c] == holder * 8 + 2 * j + c % 2);
    }

  // .sync.aligned: half a warp at a stmatrix is a fault, not a partial store.
  sim::Memory half;
  half.global[out.get()].assign(256, NAN);
  CHECK(faultOf(sim::runKernel(kernelWith(var(t) < index(16)), half))
            .find("stmatrix reached by 16 of the 32 lanes of warp 0; all 32 execute it together") !=
        std::string::npos);
}

TEST_CASE("simulator: shared memory beyond the launch's dynamic shared memory faults") {
  BufferPtr s = makeBuffer("s", DType::F32, MemorySpace::Shared, {64});
  VarPtr t = makeVar("t", DType::I64);
  Kernel kernel;
  kernel.name = "shared";
  kernel.body =
      parallelLoop(t, index(32), Axis::TIDx, block({allocateAt(s, 0), store(s, var(t), f32(1))}));
  launch(kernel, 1, {32, 1}, 128);
  sim::Memory memory;
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("shared buffer s needs bytes [0, 256) but the launch provides 128 bytes") !=
        std::string::npos);

  launch(kernel, 1, {32, 1}, 256);
  CHECK(faultOf(sim::runKernel(kernel, memory)) == "");

  // Two live buffers on the same bytes.
  BufferPtr other = makeBuffer("other", DType::F32, MemorySpace::Shared, {16});
  Kernel overlapping = kernel;
  overlapping.body =
      parallelLoop(t, index(32), Axis::TIDx, block({allocateAt(s, 0), allocateAt(other, 240)}));
  launch(overlapping, 1, {32, 1}, 512);
  CHECK(faultOf(sim::runKernel(overlapping, memory))
            .find("shared buffers other (bytes [240, 304)) and s (bytes [0, 256)) overlap") !=
        std::string::npos);

  launch(kernel, 1, {32, 1}, 240 * 1024);
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("245760 bytes of dynamic shared memory; the target allows 232448") !=
        std::string::npos);
}

TEST_CASE("simulator: a TMA box partly outside the tensor, completed on an mbarrier") {
  TmaBox k(/*expectedBytes=*/4 * 8 * 4);
  sim::Memory memory = k.memory();
  REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
  const std::vector<double> &out = memory.global[k.out.get()];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      int row = 3 + r, col = 8 + c;
      double expected = row < 5 && col < 12 ? 100.0 * row + col : 0.0; // zero fill outside
      CHECK_MESSAGE(out[r * 8 + c] == expected, "box element ", r, ", ", c);
    }
}

TEST_CASE("simulator: mbarrier transaction counts that do not match the box") {
  // Fewer bytes expected than the box delivers: the count goes negative.
  TmaBox fewer(/*expectedBytes=*/64);
  sim::Memory memory = fewer.memory();
  CHECK(faultOf(sim::runKernel(fewer.kernel, memory))
            .find("TMA load of 128 bytes completes on bar[0], which expected 64 bytes fewer") !=
        std::string::npos);

  // More bytes expected: the phase never completes, and the wait is a deadlock.
  TmaBox more(/*expectedBytes=*/256);
  memory = more.memory();
  CHECK(faultOf(sim::runKernel(more.kernel, memory))
            .find("deadlock: wait on bar[0] parity 0 can never complete (pending arrivals 0, tx "
                  "bytes 128)") != std::string::npos);
}

TEST_CASE("simulator: mbarrier phases and parity") {
  // After phase 0 completes, a wait on parity 1 waits for phase 1, which nothing completes:
  // an error, not a hang.
  TmaBox k(/*expectedBytes=*/128, /*secondParity=*/1);
  sim::Memory memory = k.memory();
  CHECK(faultOf(sim::runKernel(k.kernel, memory))
            .find("deadlock: wait on bar[0] parity 1 can never complete (pending arrivals 1, tx "
                  "bytes 0)") != std::string::npos);
  // A second wait on parity 0 passes: that phase has completed.
  TmaBox again(/*expectedBytes=*/128, /*secondParity=*/0);
  memory = again.memory();
  CHECK(faultOf(sim::runKernel(again.kernel, memory)) == "");

  // A fresh barrier is in phase 0, so the wait on parity 1 (the phase "before" it) passes,
  // which producers rely on for their first wait on an empty slot.
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  VarPtr t = makeVar("t", DType::I64);
  Kernel fresh;
  fresh.name = "fresh";
  fresh.body =
      parallelLoop(t, index(32), Axis::TIDx,
                   block({allocateAt(bar, 0), ifThen(eq(var(t), index(0)), barrierInit(bar, 32)),
                          barrier(), waitParity(bar, 1), arrive(bar), waitParity(bar, 0)}));
  launch(fresh, 1, {32, 1}, 16);
  sim::Memory none;
  CHECK(faultOf(sim::runKernel(fresh, none)) == "");

  // An init by every thread initialises a live barrier again.
  Kernel twice = fresh;
  twice.body =
      parallelLoop(t, index(32), Axis::TIDx, block({allocateAt(bar, 0), barrierInit(bar, 32)}));
  CHECK(faultOf(sim::runKernel(twice, none))
            .find("second mbarrier.init of the live barrier "
                  "bar[0]") != std::string::npos);
}

TEST_CASE("simulator: a TMA store writes only the part of the box inside the tensor") {
  BufferPtr g = makeBuffer("g", DType::F32, MemorySpace::Global);
  BufferPtr tile = makeBuffer("tile", DType::F32, MemorySpace::Shared, {32}, Swizzle::None, 128);
  TensorMapPtr map = tensorMap("g_map", g, {5, 12}, {4, 8}, Swizzle::None);
  VarPtr t = makeVar("t", DType::I64);
  Stmt storeBox = tmaStore(map, {index(3), index(8)}, tile, index(0));
  Kernel kernel;
  kernel.name = "tma_store";
  KernelParam mapParam;
  mapParam.kind = KernelParam::Kind::TensorMap;
  mapParam.tensorMap = map;
  kernel.params = {mapParam};
  kernel.body = parallelLoop(
      t, index(32), Axis::TIDx,
      block({allocateAt(tile, 0), store(tile, var(t), cast(DType::F32, var(t))), fenceProxyAsync(),
             barrier(), ifThen(eq(var(t), index(0)), block({storeBox, tmaStoreWait(0)}))}));
  launch(kernel, 1, {32, 1}, 128);
  sim::Memory memory;
  memory.global[g.get()].assign(60, -1);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  const std::vector<double> &out = memory.global[g.get()];
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 12; ++c) {
      bool inBox = r >= 3 && c >= 8;
      CHECK(out[r * 12 + c] == (inBox ? (r - 3) * 8 + (c - 8) : -1));
    }
}

TEST_CASE("simulator: barriers reached by part of the block fault") {
  VarPtr t = makeVar("t", DType::I64);
  Kernel kernel;
  kernel.name = "barriers";
  kernel.body = parallelLoop(t, index(64), Axis::TIDx, ifThen(var(t) < index(32), barrier()));
  launch(kernel, 1, {64, 1});
  sim::Memory memory;
  CHECK(faultOf(sim::runKernel(kernel, memory)).find("__syncthreads reached by 32 of 64 threads") !=
        std::string::npos);

  Stmt named = barrierStmt(BarrierKind::Named, 1, index(64));
  kernel.body = parallelLoop(t, index(64), Axis::TIDx, ifThen(var(t) < index(32), named));
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("named barrier 1 expects 64 threads but 32 arrive together") !=
        std::string::npos);
  kernel.body = parallelLoop(t, index(64), Axis::TIDx, named);
  CHECK(faultOf(sim::runKernel(kernel, memory)) == "");
}

TEST_CASE("simulator: the 128-byte swizzle of a TMA load") {
  BufferPtr g = makeBuffer("g", DType::F32, MemorySpace::Global);
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr tile =
      makeBuffer("tile", DType::F32, MemorySpace::Shared, {256}, Swizzle::Bytes128, 1024);
  TensorMapPtr map = tensorMap("g_map", g, {8, 32}, {8, 32}, Swizzle::Bytes128);
  VarPtr t = makeVar("t", DType::I64), j = makeVar("j", DType::I64);
  Kernel kernel;
  kernel.name = "swizzle";
  kernel.params = {tensorParam(out)};
  KernelParam mapParam;
  mapParam.kind = KernelParam::Kind::TensorMap;
  mapParam.tensorMap = map;
  kernel.params.push_back(mapParam);
  Expr at = var(j) * index(32) + var(t);
  kernel.body = parallelLoop(
      t, index(32), Axis::TIDx,
      block({allocateAt(bar, 0), allocateAt(tile, 1024),
             ifThen(eq(var(t), index(0)), block({barrierInit(bar, 1), arriveExpectTx(bar, 1024),
                                                 loadBox(tile, map, {0, 0}, bar)})),
             waitParity(bar, 0),
             forLoop(j, index(8), LoopKind::Serial, store(out, at, load(tile, at)))}));
  launch(kernel, 1, {32, 1}, 2048);
  sim::Memory memory;
  for (int i = 0; i < 256; ++i)
    memory.global[g.get()].push_back(i);
  memory.global[out.get()].assign(256, NAN);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  const std::vector<double> &physical = memory.global[out.get()];
  // Row r (128 bytes = 32 floats) keeps its 16-byte chunks at c ^ r: row 0 unchanged,
  // row 1 swaps chunk pairs, so element 4 of row 1 (value 36) is stored first.
  CHECK(physical[0] == 0);
  CHECK(physical[32] == 36);
  CHECK(physical[36] == 32);
  CHECK(physical[7 * 32] == 7 * 32 + 28); // row 7: chunk 0 holds logical chunk 7
  for (int p = 0; p < 256; ++p) {
    int r = p / 32, chunk = (p % 32) / 4, e = p % 4;
    CHECK(physical[p] == r * 32 + (chunk ^ r) * 4 + e);
  }
}

TEST_CASE("simulator: swizzle addresses and the wgmma accumulator layout") {
  CHECK(sim::swizzleAddress(0, Swizzle::Bytes128) == 0);
  CHECK(sim::swizzleAddress(128, Swizzle::Bytes128) == 128 + 16);
  CHECK(sim::swizzleAddress(7 * 128 + 16, Swizzle::Bytes128) == 7 * 128 + 6 * 16);
  CHECK(sim::swizzleAddress(1024 + 128, Swizzle::Bytes128) == 1024 + 128 + 16);
  CHECK(sim::swizzleAddress(4 * 128, Swizzle::Bytes64) == 4 * 128); // repeats every 512
  CHECK(sim::swizzleAddress(3 * 128, Swizzle::Bytes64) == 3 * 128 + 3 * 16);
  CHECK(sim::swizzleAddress(128, Swizzle::Bytes32) == 128 + 16);
  CHECK(sim::swizzleAddress(128 + 16, Swizzle::None) == 128 + 16);
  // PTX ISA, wgmma m64nNk16 D fragments: thread 0 holds (0,0) (0,1) (8,0) (8,1) (0,8) ...
  using Pos = std::array<int64_t, 2>;
  CHECK(sim::wgmmaAccumulatorPosition(0, 0) == Pos{0, 0});
  CHECK(sim::wgmmaAccumulatorPosition(0, 1) == Pos{0, 1});
  CHECK(sim::wgmmaAccumulatorPosition(0, 2) == Pos{8, 0});
  CHECK(sim::wgmmaAccumulatorPosition(0, 4) == Pos{0, 8});
  CHECK(sim::wgmmaAccumulatorPosition(5, 3) == Pos{9, 3});
  CHECK(sim::wgmmaAccumulatorPosition(37, 4) == Pos{17, 10});
  CHECK(sim::wgmmaAccumulatorPosition(127, 31) == Pos{63, 63});
}

TEST_CASE("kir layout: swizzle repeats and wgmma operand offsets") {
  CHECK(kir::swizzleBits(Swizzle::None) == 0);
  CHECK(kir::swizzleBits(Swizzle::Bytes128) == 3);
  CHECK(kir::swizzleRepeatBytes(Swizzle::Bytes128) == 1024);
  CHECK(kir::swizzleRepeatBytes(Swizzle::Bytes64) == 512);
  CHECK(kir::swizzleRepeatBytes(Swizzle::Bytes32) == 256);
  // The pattern repeats: an address one repeat further moves by the same amount.
  for (Swizzle swizzle : {Swizzle::Bytes32, Swizzle::Bytes64, Swizzle::Bytes128})
    for (int64_t address = 0; address < 1024; address += 16)
      CHECK(kir::swizzleAddress(address + kir::swizzleRepeatBytes(swizzle), swizzle) ==
            kir::swizzleAddress(address, swizzle) + kir::swizzleRepeatBytes(swizzle));
  // bf16 with the 128B swizzle: K-major rows of 128 bytes, K contiguous.
  CHECK(kir::wgmmaOperandByteOffset(Swizzle::Bytes128, 2, false, 0, 0, 0) == 0);
  CHECK(kir::wgmmaOperandByteOffset(Swizzle::Bytes128, 2, false, 0, 3, 5) == 3 * 128 + 5 * 2);
  // M/N-major: rows of K one span apart, 64 elements of M per span, blocks 8192 bytes apart.
  CHECK(kir::wgmmaOperandByteOffset(Swizzle::Bytes128, 2, true, 8192, 5, 3) == 3 * 128 + 5 * 2);
  CHECK(kir::wgmmaOperandByteOffset(Swizzle::Bytes128, 2, true, 8192, 64 + 5, 3) ==
        8192 + 3 * 128 + 5 * 2);
  // The simulator's public layout functions are these.
  for (int64_t t = 0; t < 128; t += 7)
    for (int64_t i = 0; i < 128; i += 3)
      CHECK(sim::wgmmaAccumulatorPosition(t, i) == kir::wgmmaAccumulatorPosition(t, i));
  for (int64_t address = 0; address < 2048; address += 48)
    CHECK(sim::swizzleAddress(address, Swizzle::Bytes64) ==
          kir::swizzleAddress(address, Swizzle::Bytes64));
}

namespace {

/// One warpgroup: TMA loads A[64][64] and B (K-major [N=64][K=64], or N-major [K][N]) with
/// the 128-byte swizzle, four wgmma m64n64k16 steps over K, and the accumulator fragments
/// stored to D[64][64] by the PTX ISA's layout, written out here in IR.
struct WgmmaTile {
  BufferPtr a = makeBuffer("a", DType::BF16, MemorySpace::Global);
  BufferPtr b = makeBuffer("b", DType::BF16, MemorySpace::Global);
  BufferPtr d = makeBuffer("d", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr sa =
      makeBuffer("sa", DType::BF16, MemorySpace::Shared, {64 * 64}, Swizzle::Bytes128, 1024);
  BufferPtr sb =
      makeBuffer("sb", DType::BF16, MemorySpace::Shared, {64 * 64}, Swizzle::Bytes128, 1024);
  BufferPtr acc = makeBuffer("acc", DType::F32, MemorySpace::Local, {32});
  Kernel kernel;

  WgmmaTile(bool nMajorB, bool divergent) {
    TensorMapPtr mapA = tensorMap("a_map", a, {64, 64}, {64, 64}, Swizzle::Bytes128);
    TensorMapPtr mapB = tensorMap("b_map", b, {64, 64}, {64, 64}, Swizzle::Bytes128);
    VarPtr t = makeVar("t", DType::I64), i = makeVar("i", DType::I64),
           ks = makeVar("ks", DType::I64), row = makeVar("row", DType::I64),
           col = makeVar("col", DType::I64);
    // K-major: step k moves 16 elements along the row; N-major: 16 rows of 64.
    Stmt mma = bf16Product(acc, sa, var(ks) * index(16), sb,
                           var(ks) * index(nMajorB ? 16 * 64 : 16), 64, nMajorB);
    Stmt body = block({
        allocateAt(bar, 0),
        allocateAt(sa, 1024),
        allocateAt(sb, 1024 + 8192),
        allocate(acc),
        forLoop(i, index(32), LoopKind::Unrolled, store(acc, var(i), f32(0))),
        ifThen(eq(var(t), index(0)), barrierInit(bar, 1)),
        barrier(),
        ifThen(eq(var(t), index(0)),
               block({arriveExpectTx(bar, 2 * 64 * 64 * 2), loadBox(sa, mapA, {0, 0}, bar),
                      loadBox(sb, mapB, {0, 0}, bar)})),
        waitParity(bar, 0),
        wgmmaFence(),
        forLoop(ks, index(4), LoopKind::Unrolled,
                divergent ? ifThen(var(t) < index(64), mma) : mma),
        wgmmaCommit(),
        wgmmaWait(0),
        forLoop(i, index(32), LoopKind::Unrolled,
                block({let(row, index(16) * (var(t) / index(32)) + (var(t) % index(32)) / index(4) +
                                    index(8) * ((var(i) / index(2)) % index(2))),
                       let(col, index(8) * (var(i) / index(4)) + index(2) * (var(t) % index(4)) +
                                    var(i) % index(2)),
                       store(d, var(row) * index(64) + var(col), load(acc, var(i)))})),
    });
    kernel.name = "wgmma_tile";
    kernel.params = {tensorParam(d)};
    for (const TensorMapPtr &map : {mapA, mapB}) {
      KernelParam p;
      p.kind = KernelParam::Kind::TensorMap;
      p.tensorMap = map;
      kernel.params.push_back(p);
    }
    kernel.body = parallelLoop(t, index(128), Axis::TIDx, body);
    launch(kernel, 1, {128, 1}, 1024 + 2 * 8192);
  }

  static double aAt(int m, int k) { return ((m * 3 + k * 5) % 7 - 3) * 0.5; }
  static double bAt(int k, int n) { return ((n * 2 + k * 3) % 5 - 2) * 0.25; }

  sim::Memory memory(bool nMajorB) const {
    sim::Memory m;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        m.global[a.get()].push_back(aAt(r, c));                       // [M][K]
        m.global[b.get()].push_back(nMajorB ? bAt(r, c) : bAt(c, r)); // [K][N] or [N][K]
      }
    m.global[d.get()].assign(64 * 64, NAN);
    return m;
  }
};

} // namespace

TEST_CASE("simulator: wgmma m64n64k16 against a CPU product") {
  for (bool nMajorB : {false, true}) {
    CAPTURE(nMajorB);
    WgmmaTile k(nMajorB, /*divergent=*/false);
    sim::Memory memory = k.memory(nMajorB);
    REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
    const std::vector<double> &d = memory.global[k.d.get()];
    int wrong = 0;
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < 64; ++n) {
        double expected = 0;
        for (int kk = 0; kk < 64; ++kk)
          expected += WgmmaTile::aAt(m, kk) * WgmmaTile::bAt(kk, n);
        wrong += d[m * 64 + n] != expected;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("simulator: a wgmma reached by part of a warpgroup faults") {
  WgmmaTile k(/*nMajorB=*/false, /*divergent=*/true);
  sim::Memory memory = k.memory(false);
  CHECK(faultOf(sim::runKernel(k.kernel, memory))
            .find("wgmma reached by 64 of the 128 threads of warpgroup 0") != std::string::npos);
}

namespace {

/// One warpgroup: A[64][64] K-major as in WgmmaTile, and an N-major B [K=64][N] wider than
/// one 128-byte span: N / 64 TMA boxes of 64 rows of K by 64 columns, each into its own
/// block, `layoutBytes` apart (8192: the blocks packed). wgmma m64n`instrN`k16, told its
/// blocks are `blockBytes` apart, reads instruction column `ni` from block `ni * instrN /
/// 64`, k step `ks` 16 rows of K down; `shift` elements more moves B's start.
struct WideNMajor {
  BufferPtr a = makeBuffer("a", DType::BF16, MemorySpace::Global);
  BufferPtr b = makeBuffer("b", DType::BF16, MemorySpace::Global);
  BufferPtr d = makeBuffer("d", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr sa =
      makeBuffer("sa", DType::BF16, MemorySpace::Shared, {64 * 64}, Swizzle::Bytes128, 1024);
  BufferPtr sb;
  BufferPtr acc;
  int n;
  Kernel kernel;

  WideNMajor(int n, int instrN, int64_t blockBytes, int64_t layoutBytes = 8192, int64_t shift = 0)
      : n(n) {
    const int64_t blocks = n / 64, blockElements = layoutBytes / 2;
    sb = makeBuffer("sb", DType::BF16, MemorySpace::Shared, {blocks * blockElements},
                    Swizzle::Bytes128, 1024);
    acc = makeBuffer("acc", DType::F32, MemorySpace::Local, {n / 2});
    TensorMapPtr mapA = tensorMap("a_map", a, {64, 64}, {64, 64}, Swizzle::Bytes128);
    TensorMapPtr mapB = tensorMap("b_map", b, {64, n}, {64, 64}, Swizzle::Bytes128);
    VarPtr t = makeVar("t", DType::I64), i = makeVar("i", DType::I64),
           ks = makeVar("ks", DType::I64), ni = makeVar("ni", DType::I64),
           row = makeVar("row", DType::I64), col = makeVar("col", DType::I64);
    std::vector<Stmt> loads = {arriveExpectTx(bar, 64 * 64 * 2 + 64 * n * 2),
                               loadBox(sa, mapA, {0, 0}, bar)};
    for (int64_t j = 0; j < blocks; ++j)
      loads.push_back(loadBox(sb, mapB, {0, 64 * j}, bar, /*at=*/j * blockElements)); // block j
    Stmt mma = bf16Product(
        acc, sa, var(ks) * index(16), sb,
        var(ni) * index(instrN / 64 * blockElements) + var(ks) * index(16 * 64) + index(shift),
        instrN, /*transposeB=*/true, /*at=*/var(ni) * index(instrN / 2), blockBytes);
    Stmt body = block({
        allocateAt(bar, 0),
        allocateAt(sa, 1024),
        allocateAt(sb, 1024 + 8192),
        allocate(acc),
        forLoop(i, index(n / 2), LoopKind::Unrolled, store(acc, var(i), f32(0))),
        ifThen(eq(var(t), index(0)), barrierInit(bar, 1)),
        barrier(),
        ifThen(eq(var(t), index(0)), block(loads)),
        waitParity(bar, 0),
        wgmmaFence(),
        forLoop(ks, index(4), LoopKind::Unrolled,
                forLoop(ni, index(n / instrN), LoopKind::Unrolled, mma)),
        wgmmaCommit(),
        wgmmaWait(0),
        // Fragment i of instruction ni: column ni * instrN + the m64nNk16 column.
        forLoop(ni, index(n / instrN), LoopKind::Unrolled,
                forLoop(i, index(instrN / 2), LoopKind::Unrolled,
                        block({let(row, index(16) * (var(t) / index(32)) +
                                            (var(t) % index(32)) / index(4) +
                                            index(8) * ((var(i) / index(2)) % index(2))),
                               let(col, var(ni) * index(instrN) + index(8) * (var(i) / index(4)) +
                                            index(2) * (var(t) % index(4)) + var(i) % index(2)),
                               store(d, var(row) * index(n) + var(col),
                                     load(acc, var(ni) * index(instrN / 2) + var(i)))}))),
    });
    kernel.name = "wide_n_major";
    kernel.params = {tensorParam(d)};
    for (const TensorMapPtr &map : {mapA, mapB}) {
      KernelParam p;
      p.kind = KernelParam::Kind::TensorMap;
      p.tensorMap = map;
      kernel.params.push_back(p);
    }
    kernel.body = parallelLoop(t, index(128), Axis::TIDx, body);
    launch(kernel, 1, {128, 1}, 1024 + 8192 + blocks * blockElements * 2);
  }

  static double aAt(int m, int k) { return ((m * 3 + k * 5) % 7 - 3) * 0.5; }
  static double bAt(int k, int n) { return ((n * 7 + k * 3) % 11 - 5) * 0.25; }

  sim::Memory memory() const {
    sim::Memory m;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c)
        m.global[a.get()].push_back(aAt(r, c)); // [M][K]
    for (int k = 0; k < 64; ++k)
      for (int c = 0; c < n; ++c)
        m.global[b.get()].push_back(bAt(k, c)); // [K][N], N contiguous
    m.global[d.get()].assign(64 * n, NAN);
    return m;
  }
};

} // namespace

TEST_CASE("simulator: N-major wgmma operands wider than one swizzle span") {
  struct Case {
    int n, instrN;
    int64_t blockBytes;
  };
  // Packed blocks (8192 bytes: 64 rows of K of 128 bytes), and blocks with a gap.
  for (Case c : {Case{128, 128, 8192}, Case{256, 256, 8192}, Case{256, 128, 8192},
                 Case{256, 64, 8192}, Case{256, 256, 16384}}) {
    CAPTURE(c.n);
    CAPTURE(c.instrN);
    CAPTURE(c.blockBytes);
    WideNMajor k(c.n, c.instrN, c.blockBytes, /*layoutBytes=*/c.blockBytes);
    sim::Memory memory = k.memory();
    REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
    const std::vector<double> &d = memory.global[k.d.get()];
    int wrong = 0;
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < c.n; ++n) {
        double expected = 0;
        for (int kk = 0; kk < 64; ++kk)
          expected += WideNMajor::aAt(m, kk) * WideNMajor::bAt(kk, n);
        wrong += d[m * c.n + n] != expected;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("simulator: malformed N-major wgmma operands fault") {
  auto fault = [](int64_t blockBytes, int64_t shift) {
    WideNMajor k(256, 256, blockBytes, /*layoutBytes=*/8192, shift);
    sim::Memory memory = k.memory();
    return faultOf(sim::runKernel(k.kernel, memory));
  };
  CHECK(fault(0, 0).find("wgmma operand B (sb) of 256 columns, wider than one 128-byte swizzle "
                         "span, without the distance of its span-wide blocks") !=
        std::string::npos);
  CHECK(fault(8192 + 512, 0)
            .find("has blocks 8704 bytes apart: the 128B swizzle starts its "
                  "pattern every 1024 bytes") != std::string::npos);
  CHECK(fault(1024, 0).find("has blocks 1024 bytes apart, fewer than its 16 rows of K take "
                            "(2048 bytes)") != std::string::npos);
  CHECK(fault(8192, 8).find("starts at element 8, 16 bytes into a 128-byte row") !=
        std::string::npos);
  // Blocks farther apart than the buffer holds: the read past its end faults.
  CHECK(fault(16384, 0).find("wgmma operand B reads element") != std::string::npos);
}

TEST_CASE("simulator: a runaway loop stops at the step limit") {
  VarPtr t = makeVar("t", DType::I64), i = makeVar("i", DType::I64);
  Kernel kernel;
  kernel.name = "forever";
  kernel.body = parallelLoop(t, index(32), Axis::TIDx,
                             forLoop(i, index(int64_t(1) << 50), LoopKind::Serial, comment("x")));
  launch(kernel, 1, {32, 1});
  sim::Memory memory;
  sim::SimulatorLimits limits;
  limits.maxThreadSteps = 1'000'000;
  CHECK(faultOf(sim::runKernel(kernel, memory, 0, limits)).find("over the limit of 1000000") !=
        std::string::npos);
}

TEST_CASE("simulator: a parallel loop must match the launch") {
  Pointwise k(/*guarded=*/true);
  launch(k.kernel, 3, {8, 1});
  sim::Memory memory = k.memory(10);
  CHECK(faultOf(sim::runKernel(k.kernel, memory))
            .find("loop t over TIDx has extent 4, but the launch gives 8") != std::string::npos);
}

TEST_CASE("simulator: a program's variants, parameters and outputs") {
  test::Parsed parsed("fusion scale(x: f32[N], s: f32 = 3.0) -> (y: f32[N]) {\n"
                      "    y = x * s;\n"
                      "}\n");
  REQUIRE_MESSAGE(parsed.file, parsed.firstMessage());
  auto analyzed =
      analyze(std::move(parsed.file), parsed.sources, parsed.diagnostics, SemaOptions{});
  REQUIRE_MESSAGE(analyzed, parsed.firstMessage());
  const ir::Fusion &fusion = *analyzed->fusions[0];

  kir::Program program;
  program.fusion = &fusion;
  VarPtr n = makeVar("N", DType::I64);
  program.dims = {n};
  // Kernel 0 (for N < 4) copies x; kernel 1 scales it. Each has its own buffers.
  for (bool scaled : {false, true}) {
    BufferPtr x = makeBuffer("x", DType::F32, MemorySpace::Global);
    BufferPtr y = makeBuffer("y", DType::F32, MemorySpace::Global);
    VarPtr s = makeVar("s", DType::F32), t = makeVar("t", DType::I64);
    Kernel kernel;
    kernel.name = scaled ? "scale_large" : "scale_small";
    KernelParam px = tensorParam(x), py = tensorParam(y), ps, pn;
    py.isOutput = true;
    ps.kind = KernelParam::Kind::Scalar;
    ps.var = s;
    ps.fusionParam = 1;
    pn.kind = KernelParam::Kind::Dim;
    pn.var = n;
    kernel.params = {px, ps, pn, py};
    Expr value = scaled ? binary(BinaryOp::Mul, load(x, var(t)), var(s)) : load(x, var(t));
    kernel.body = parallelLoop(t, var(n), Axis::TIDx, store(y, var(t), value));
    kernel.launch.grid = {index(1), nullptr, nullptr};
    kernel.launch.block = {var(n), nullptr, nullptr};
    program.kernels.push_back(std::move(kernel));
  }
  program.variants.push_back({var(n) < index(4), "N < 4", {0}});
  program.variants.push_back({nullptr, "", {1}});

  eval::EvalRequest request{{{"N", 10}}, {{}, {}}};
  for (int i = 0; i < 10; ++i)
    request.params[0].push_back(0.7 * i);
  llvm::Expected<eval::EvalResult> reference = eval::evaluate(fusion, request);
  REQUIRE(static_cast<bool>(reference));
  llvm::Expected<eval::EvalResult> simulated = sim::simulate(program, request);
  REQUIRE_MESSAGE(static_cast<bool>(simulated), llvm::toString(simulated.takeError()));
  CHECK(simulated->extents == reference->extents);
  CHECK(simulated->outputs == reference->outputs);

  // N = 3 takes the first variant, which copies.
  eval::EvalRequest small{{{"N", 3}}, {{1.5, 2.5, 3.5}, {}}};
  simulated = sim::simulate(program, small);
  REQUIRE_MESSAGE(static_cast<bool>(simulated), llvm::toString(simulated.takeError()));
  CHECK(simulated->outputs[0] == std::vector<double>{1.5, 2.5, 3.5});

  // A launch past the limits is an error of the kernel it names.
  eval::EvalRequest huge{{{"N", 2000}}, {std::vector<double>(2000, 1.0), {}}};
  simulated = sim::simulate(program, huge);
  REQUIRE(!simulated);
  CHECK(llvm::toString(simulated.takeError()) ==
        "kernel scale_large: block extent 2000 along x is outside 1..1024");
}

// --- Warp-specialized pipelines: warps scheduled one at a time ----------------------------

namespace {

/// D[128][64] = A[128][128] B[128][64] by a warp-specialized pipeline of 384 threads.
/// Warpgroup 0 produces: one thread loads, for each 16-wide K slice k, A[:, k] (128 x 16)
/// and B[:, k] (K-major, 64 x 16) by TMA into stage k % 2 of a two-stage ring, after
/// waiting until the consumers freed the stage (`empty`), completing on `full`.
/// Warpgroups 1 and 2 consume: wait for the stage, one wgmma m64n64k16 on their 64 rows,
/// free the stage (one arrival per warpgroup), and finally store their accumulators.
/// Eight K slices through two stages: every stage is refilled while the other is in use.
struct Pipeline {
  enum class Bug { None, NoEmptyArrive, WrongFullParity };
  static constexpr int64_t M = 128, N = 64, K = 128, Stages = 2;
  static constexpr int64_t StageBytes = (M + N) * 16 * 2;

  BufferPtr a = makeBuffer("a", DType::BF16, MemorySpace::Global);
  BufferPtr b = makeBuffer("b", DType::BF16, MemorySpace::Global);
  BufferPtr d = makeBuffer("d", DType::F32, MemorySpace::Global);
  BufferPtr full = makeBuffer("full", DType::I64, MemorySpace::Shared, {Stages}, Swizzle::None, 8);
  BufferPtr empty =
      makeBuffer("empty", DType::I64, MemorySpace::Shared, {Stages}, Swizzle::None, 8);
  BufferPtr sa =
      makeBuffer("sa", DType::BF16, MemorySpace::Shared, {Stages * M * 16}, Swizzle::Bytes32, 256);
  BufferPtr sb =
      makeBuffer("sb", DType::BF16, MemorySpace::Shared, {Stages * N * 16}, Swizzle::Bytes32, 256);
  BufferPtr acc = makeBuffer("acc", DType::F32, MemorySpace::Local, {N / 2});
  Kernel kernel;

  explicit Pipeline(Bug bug, int64_t producerRegisters = 40, int64_t consumerRegisters = 232) {
    TensorMapPtr mapA = tensorMap("a_map", a, {M, K}, {M, 16}, Swizzle::Bytes32);
    TensorMapPtr mapB = tensorMap("b_map", b, {N, K}, {N, 16}, Swizzle::Bytes32);
    VarPtr t = makeVar("t", DType::I64), i = makeVar("i", DType::I64);
    VarPtr pk = makeVar("pk", DType::I64), ps = makeVar("ps", DType::I64),
           pphase = makeVar("pphase", DType::I64);
    VarPtr ck = makeVar("ck", DType::I64), cs = makeVar("cs", DType::I64),
           cphase = makeVar("cphase", DType::I64), c = makeVar("c", DType::I64);
    VarPtr row = makeVar("row", DType::I64), col = makeVar("col", DType::I64);
    Expr warpgroup = var(t) / index(128);

    // Stage k % 2 is in its (k / 2)-th use: `full` completes phase k / 2 for it, and the
    // producer waits for the consumers' phase k / 2 - 1 of `empty` (a fresh barrier passes
    // the wait on parity 1, so the first use of each stage does not wait).
    Stmt producer = block({
        setMaxNReg(producerRegisters, /*increase=*/false),
        ifThen(eq(var(t), index(0)),
               forLoop(pk, index(K / 16), LoopKind::Serial,
                       block({
                           let(ps, var(pk) % index(Stages)),
                           let(pphase, (var(pk) / index(Stages)) % index(2)),
                           mbarrierWait(empty, var(ps), (var(pphase) + index(1)) % index(2)),
                           mbarrierArriveExpectTx(full, var(ps), index(StageBytes)),
                           tmaLoad(mapA, {index(0), var(pk) * index(16)}, sa,
                                   var(ps) * index(M * 16), full, var(ps), nullptr),
                           tmaLoad(mapB, {index(0), var(pk) * index(16)}, sb,
                                   var(ps) * index(N * 16), full, var(ps), nullptr),
                       }))),
    });
    Expr fullParity =
        bug == Bug::WrongFullParity ? (var(cphase) + index(1)) % index(2) : var(cphase);
    std::vector<Stmt> step = {
        let(cs, var(ck) % index(Stages)),
        let(cphase, (var(ck) / index(Stages)) % index(2)),
        mbarrierWait(full, var(cs), fullParity),
        wgmmaFence(),
        bf16Product(acc, sa, var(cs) * index(M * 16) + var(c) * index(64 * 16), sb,
                    var(cs) * index(N * 16), N, /*transposeB=*/false),
        wgmmaCommit(),
        wgmmaWait(0),
    };
    if (bug != Bug::NoEmptyArrive)
      step.push_back(
          ifThen(eq(var(t) % index(128), index(0)), mbarrierArrive(empty, var(cs), nullptr)));
    Stmt consumer = block({
        setMaxNReg(consumerRegisters, /*increase=*/true),
        let(c, warpgroup - index(1)),
        allocate(acc),
        forLoop(i, index(N / 2), LoopKind::Unrolled, store(acc, var(i), f32(0))),
        forLoop(ck, index(K / 16), LoopKind::Serial, block(std::move(step))),
        forLoop(
            i, index(N / 2), LoopKind::Unrolled,
            block({let(row, index(64) * var(c) + index(16) * ((var(t) % index(128)) / index(32)) +
                                (var(t) % index(32)) / index(4) +
                                index(8) * ((var(i) / index(2)) % index(2))),
                   let(col, index(8) * (var(i) / index(4)) + index(2) * (var(t) % index(4)) +
                                var(i) % index(2)),
                   store(d, var(row) * index(N) + var(col), load(acc, var(i)))})),
    });
    std::vector<Stmt> init;
    for (int64_t s = 0; s < Stages; ++s) {
      init.push_back(mbarrierInit(full, index(s), index(1)));
      init.push_back(mbarrierInit(empty, index(s), index(2)));
    }
    Stmt body = block({
        allocateAt(full, 0),
        allocateAt(empty, 16),
        allocateAt(sa, 1024),
        allocateAt(sb, 1024 + Stages * M * 16 * 2),
        ifThen(eq(var(t), index(0)), block(std::move(init))),
        barrier(),
        warpRole("producer", eq(warpgroup, index(0)), {producer}),
        warpRole("consumer", binary(BinaryOp::Ne, warpgroup, index(0)), {consumer}),
    });
    kernel.name = "pipeline";
    kernel.params = {tensorParam(d)};
    for (const TensorMapPtr &map : {mapA, mapB}) {
      KernelParam p;
      p.kind = KernelParam::Kind::TensorMap;
      p.tensorMap = map;
      kernel.params.push_back(p);
    }
    kernel.body = parallelLoop(t, index(384), Axis::TIDx, body);
    launch(kernel, 1, {384, 1}, 1024 + Stages * (M + N) * 16 * 2);
  }

  static double aAt(int64_t m, int64_t k) { return ((m * 3 + k * 5) % 7 - 3) * 0.5; }
  static double bAt(int64_t k, int64_t n) { return ((n * 2 + k * 3) % 5 - 2) * 0.25; }

  sim::Memory memory() const {
    sim::Memory mem;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        mem.global[a.get()].push_back(aAt(m, k)); // [M][K]
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        mem.global[b.get()].push_back(bAt(k, n)); // K-major: [N][K]
    mem.global[d.get()].assign(M * N, NAN);
    return mem;
  }
};

} // namespace

TEST_CASE("simulator: a warp-specialized TMA/wgmma pipeline with more K steps than stages") {
  Pipeline k(Pipeline::Bug::None);
  sim::Memory memory = k.memory();
  REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
  const std::vector<double> &d = memory.global[k.d.get()];
  int wrong = 0;
  for (int64_t m = 0; m < Pipeline::M; ++m)
    for (int64_t n = 0; n < Pipeline::N; ++n) {
      double expected = 0;
      for (int64_t kk = 0; kk < Pipeline::K; ++kk)
        expected += Pipeline::aAt(m, kk) * Pipeline::bAt(kk, n);
      wrong += d[m * Pipeline::N + n] != expected;
    }
  CHECK(wrong == 0);
}

TEST_CASE("simulator: a consumer that never frees a stage deadlocks the producer") {
  Pipeline k(Pipeline::Bug::NoEmptyArrive);
  sim::Memory memory = k.memory();
  std::string message = faultOf(sim::runKernel(k.kernel, memory));
  INFO(message);
  // The third K step needs stage 0 again; its `empty` phase never completes.
  CHECK(message.find("deadlock: wait on empty[0] parity 0 can never complete (pending arrivals "
                     "2, tx bytes 0) in warp 0") != std::string::npos);
  CHECK(message.find("wait on full[0] parity 1 can never complete (pending arrivals 1, tx "
                     "bytes 0) in warps 4-11") != std::string::npos);
  CHECK(message.find("warps 1-3 have finished") != std::string::npos);
}

TEST_CASE("simulator: a consumer waiting on the wrong parity") {
  // The first wait on parity 1 of a fresh `full` passes before any data is there; by the
  // time the other consumer warps arrive the producer has completed phase 0, so they wait
  // for phase 1, which needs a stage the consumers never free: a deadlock under this
  // schedule (another order reads the stage before its TMA load is seen complete).
  Pipeline k(Pipeline::Bug::WrongFullParity);
  sim::Memory memory = k.memory();
  std::string message = faultOf(sim::runKernel(k.kernel, memory));
  INFO(message);
  CHECK(message.find("deadlock: ") != std::string::npos);
  CHECK(message.find("wait on full[0] parity 1 can never complete") != std::string::npos);
}

TEST_CASE("simulator: setmaxnreg moves registers between warpgroups within the register file") {
  // 384 threads at launch hold 168 registers each (64512 of 65536). The producer's 40 frees
  // 128 x 128; the consumers' 232 take 256 x 64 of them. Consumers at 240 would need 18432.
  Pipeline fits(Pipeline::Bug::None, 40, 232);
  sim::Memory memory = fits.memory();
  CHECK(faultOf(sim::runKernel(fits.kernel, memory)) == "");

  Pipeline over(Pipeline::Bug::None, 40, 240);
  memory = over.memory();
  std::string message = faultOf(sim::runKernel(over.kernel, memory));
  INFO(message);
  CHECK(message.find("setmaxnreg.inc 240 waits for 2304 registers but the block's pool holds "
                     "256: its warps would hold 66560 registers, the block has 64512 (168 per "
                     "thread at launch, 65536 per SM) in warp 11") != std::string::npos);

  // Two blocks an SM (__launch_bounds__(384, 2)) launch each thread with 80 registers:
  // the same counts then need more than the block's half of the register file.
  Pipeline twoBlocks(Pipeline::Bug::None, 40, 232);
  twoBlocks.kernel.launch.minBlocksPerSm = 2;
  memory = twoBlocks.memory();
  message = faultOf(sim::runKernel(twoBlocks.kernel, memory));
  INFO(message);
  CHECK(message.find("the block has 30720 (80 per thread at launch, 65536 per SM shared by the "
                     "2 blocks __launch_bounds__ asks for)") != std::string::npos);

  // A decrease that raises the count of a warp whose count is known.
  Pipeline raise(Pipeline::Bug::None, 40, 232);
  raise.kernel.launch.maxRegisters = 32;
  memory = raise.memory();
  CHECK(faultOf(sim::runKernel(raise.kernel, memory))
            .find("setmaxnreg.dec 40 in a warp that holds 32 registers per thread") !=
        std::string::npos);
}

TEST_CASE("simulator: TMA data read before its mbarrier wait") {
  // Thread 0 loads a tile; without a wait the other threads (and thread 0) read data the
  // hardware may not have written yet. The simulator's TMA lands at once, so the read is
  // caught by the mbarrier phase the data belongs to, not by its value.
  BufferPtr g = makeBuffer("g", DType::F32, MemorySpace::Global);
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr tile = makeBuffer("tile", DType::F32, MemorySpace::Shared, {64}, Swizzle::None, 128);
  TensorMapPtr map = tensorMap("g_map", g, {8, 8}, {8, 8}, Swizzle::None);
  VarPtr t = makeVar("t", DType::I64);
  auto kernelWith = [&](std::vector<Stmt> sync) {
    std::vector<Stmt> body = {
        allocateAt(bar, 0), allocateAt(tile, 128),
        ifThen(eq(var(t), index(0)), block({barrierInit(bar, 1), arriveExpectTx(bar, 256),
                                            loadBox(tile, map, {0, 0}, bar)}))};
    body.insert(body.end(), sync.begin(), sync.end());
    body.push_back(store(out, var(t), load(tile, var(t))));
    Kernel kernel;
    kernel.name = "early_read";
    KernelParam mapParam;
    mapParam.kind = KernelParam::Kind::TensorMap;
    mapParam.tensorMap = map;
    kernel.params = {tensorParam(out), mapParam};
    kernel.body = parallelLoop(t, index(64), Axis::TIDx, block(std::move(body)));
    launch(kernel, 1, {64, 1}, 512);
    return kernel;
  };
  auto memory = [&] {
    sim::Memory m;
    for (int i = 0; i < 64; ++i)
      m.global[g.get()].push_back(i);
    m.global[out.get()].assign(64, NAN);
    return m;
  };

  // Every thread waits: fine.
  sim::Memory mem = memory();
  CHECK(faultOf(sim::runKernel(kernelWith({barrier(), waitParity(bar, 0)}), mem)) == "");
  CHECK(mem.global[out.get()][63] == 63);

  // No wait at all. Warp 1 completes the barrier, so it runs on (and reads) first.
  mem = memory();
  CHECK(faultOf(sim::runKernel(kernelWith({barrier()}), mem))
            .find("thread (32, 0, 0): tile[32] is read before warp 1 has seen the TMA load that "
                  "wrote it complete: that load completes phase 0 (parity 0) of mbarrier bar[0]") !=
        std::string::npos);

  // Thread 0 waits, then a __syncthreads passes what it saw on to every warp.
  mem = memory();
  Stmt firstWaits = ifThen(eq(var(t), index(0)), waitParity(bar, 0));
  CHECK(faultOf(sim::runKernel(kernelWith({barrier(), firstWaits, barrier()}), mem)) == "");

  // Thread 0 waits, and the second warp reads without a barrier after the wait.
  mem = memory();
  CHECK(faultOf(sim::runKernel(kernelWith({barrier(), firstWaits}), mem))
            .find("thread (32, 0, 0): tile[32] is read before warp 1 has seen") !=
        std::string::npos);
}

TEST_CASE("simulator: warps wait for each other at barriers and named barriers") {
  // Warp 1 writes shared memory that warp 0 reads after a barrier: the warps run one at a
  // time, so this only works because the barrier makes warp 0 wait for warp 1.
  BufferPtr s = makeBuffer("s", DType::F32, MemorySpace::Shared, {64});
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64);
  Stmt named = barrierStmt(BarrierKind::Named, 2, index(64));
  for (Stmt sync : {barrier(), named}) {
    Kernel kernel;
    kernel.name = "exchange";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(
        t, index(64), Axis::TIDx,
        block({allocateAt(s, 0), store(s, index(63) - var(t), cast(DType::F32, var(t))), sync,
               store(out, var(t), load(s, var(t)))}));
    launch(kernel, 1, {64, 1}, 256);
    sim::Memory memory;
    memory.global[out.get()].assign(64, NAN);
    REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
    for (int i = 0; i < 64; ++i)
      CHECK(memory.global[out.get()][i] == 63 - i);
  }

  // A warp that waits on an mbarrier only the other warp arrives at.
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  Kernel handoff;
  handoff.name = "handoff";
  handoff.params = {tensorParam(out)};
  Expr warp = var(t) / index(32);
  handoff.body = parallelLoop(
      t, index(64), Axis::TIDx,
      block({allocateAt(bar, 0), allocateAt(s, 16),
             ifThen(eq(var(t), index(0)), barrierInit(bar, 32)), barrier(),
             ifThen(eq(warp, index(0)), waitParity(bar, 0),
                    block({store(s, var(t) - index(32), cast(DType::F32, var(t))), arrive(bar)})),
             ifThen(eq(warp, index(0)), store(out, var(t), load(s, var(t))))}));
  launch(handoff, 1, {64, 1}, 512);
  sim::Memory memory;
  memory.global[out.get()].assign(64, NAN);
  REQUIRE(faultOf(sim::runKernel(handoff, memory)) == "");
  for (int i = 0; i < 32; ++i)
    CHECK(memory.global[out.get()][i] == 32 + i);
}

// --- Thread-block clusters: CTAs run together, multicast loads, remote arrivals -----------

namespace {

/// An arrival on the mbarrier at the same offset in CTA `rank` of the cluster.
Stmt remoteArrive(const BufferPtr &barrier, Expr rank) {
  return mbarrierArrive(barrier, index(0), std::move(rank));
}

/// Two clusters of two CTAs (grid 4, cluster (2, 1, 1)) of 64 threads. The CTA of rank
/// r = blockIdx.x % 2 in cluster c = blockIdx.x / 2 loads rows 8c + 4r .. 8c + 4r + 3 of
/// g[16][16] (f32), half of its cluster's 8 x 16 tile, and multicasts it into `tile` of
/// both CTAs at element 64 r; thread 0 of each CTA expects the whole tile (512 bytes) on
/// its own `bar`; every thread waits and copies the tile out, so out[128 b + i] should be
/// g[128 c + i] in both CTAs of cluster c.
struct ClusterTile {
  static constexpr int64_t TileBytes = 8 * 16 * 4;
  BufferPtr g = makeBuffer("g", DType::F32, MemorySpace::Global);
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  BufferPtr tile = makeBuffer("tile", DType::F32, MemorySpace::Shared, {128}, Swizzle::None, 128);
  TensorMapPtr map = tensorMap("g_map", g, {16, 16}, {4, 16}, Swizzle::None);
  Kernel kernel;

  ClusterTile(bool initBarrier, bool endBarrier, int64_t expectedBytes = TileBytes,
              int64_t mask = 3) {
    VarPtr b = makeVar("b", DType::I64), t = makeVar("t", DType::I64),
           rank = makeVar("rank", DType::I64);
    Stmt multicast =
        tmaLoad(map, {var(b) / index(2) * index(8) + var(rank) * index(4), index(0)}, tile,
                var(rank) * index(64), bar, index(0), /*multicastMask=*/index(mask));
    std::vector<Stmt> body = {
        allocateAt(bar, 0),
        allocateAt(tile, 128),
        let(rank, var(b) % index(2)),
        ifThen(eq(var(t), index(0)), barrierInit(bar, 1)),
    };
    if (initBarrier)
      body.push_back(clusterBarrier());
    body.push_back(
        ifThen(eq(var(t), index(0)), block({arriveExpectTx(bar, expectedBytes), multicast})));
    body.push_back(waitParity(bar, 0));
    body.push_back(store(out, var(b) * index(128) + var(t), load(tile, var(t))));
    body.push_back(
        store(out, var(b) * index(128) + var(t) + index(64), load(tile, var(t) + index(64))));
    if (endBarrier)
      body.push_back(clusterBarrier());
    kernel.name = "cluster_tile";
    KernelParam mapParam;
    mapParam.kind = KernelParam::Kind::TensorMap;
    mapParam.tensorMap = map;
    kernel.params = {tensorParam(out), mapParam};
    kernel.body = parallelLoop(b, index(4), Axis::BIDx,
                               parallelLoop(t, index(64), Axis::TIDx, block(std::move(body))));
    launch(kernel, 4, {64, 1}, 1024);
    kernel.launch.cluster = {index(2), index(1), index(1)};
  }

  sim::Memory memory() const {
    sim::Memory m;
    for (int i = 0; i < 16 * 16; ++i)
      m.global[g.get()].push_back(i);
    m.global[out.get()].assign(4 * 128, NAN);
    return m;
  }
};

/// One cluster of two CTAs of one warp: CTA 1's thread 0 arrives on CTA 0's `bar` (count
/// 1), which CTA 0 waits for (if `peerWaits`) before writing out[0]; cluster barriers after
/// the init and at the end, if asked for. `target`: the rank CTA 1 arrives at.
Kernel remoteArrival(const BufferPtr &out, bool initBarrier, bool endBarrier, bool peerWaits,
                     std::function<Expr(Expr rank)> target) {
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  VarPtr b = makeVar("b", DType::I64), t = makeVar("t", DType::I64),
         rank = makeVar("rank", DType::I64);
  Stmt first = block({peerWaits ? waitParity(bar, 0) : comment("no wait"),
                      ifThen(eq(var(t), index(0)), store(out, index(0), f32(1)))});
  Stmt second = ifThen(eq(var(t), index(0)),
                       block({store(out, index(1), f32(2)), remoteArrive(bar, target(var(rank)))}));
  std::vector<Stmt> body = {allocateAt(bar, 0), let(rank, var(b) % index(2)),
                            ifThen(eq(var(t), index(0)), barrierInit(bar, 1))};
  if (initBarrier)
    body.push_back(clusterBarrier());
  body.push_back(ifThen(eq(var(rank), index(0)), first, second));
  if (endBarrier)
    body.push_back(clusterBarrier());
  Kernel kernel;
  kernel.name = "remote_arrival";
  kernel.params = {tensorParam(out)};
  kernel.body = parallelLoop(b, index(2), Axis::BIDx,
                             parallelLoop(t, index(32), Axis::TIDx, block(std::move(body))));
  launch(kernel, 2, {32, 1}, 16);
  kernel.launch.cluster = {index(2), index(1), index(1)};
  return kernel;
}

} // namespace

TEST_CASE("simulator: a cluster of two CTAs, each multicasting half of a tile into both") {
  ClusterTile k(/*initBarrier=*/true, /*endBarrier=*/true);
  sim::Memory memory = k.memory();
  REQUIRE(faultOf(sim::runKernel(k.kernel, memory)) == "");
  const std::vector<double> &out = memory.global[k.out.get()];
  int wrong = 0;
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < 128; ++i)
      wrong += out[b * 128 + i] != (b / 2) * 128 + i;
  CHECK(wrong == 0);

  // Each CTA waits for every byte multicast into it, so nothing of its peer is in flight
  // when it exits: the end barrier is not needed here.
  ClusterTile noEnd(/*initBarrier=*/true, /*endBarrier=*/false);
  memory = noEnd.memory();
  CHECK(faultOf(sim::runKernel(noEnd.kernel, memory)) == "");

  // Without the barrier after the init, CTA 0 multicasts into CTA 1 before CTA 1 has even
  // started (under this schedule; on the GPU, perhaps before its init).
  ClusterTile noInit(/*initBarrier=*/false, /*endBarrier=*/true);
  memory = noInit.memory();
  CHECK(faultOf(sim::runKernel(noInit.kernel, memory)) ==
        "kernel cluster_tile: block (0, 0, 0) (CTA 0 of its cluster), thread (0, 0, 0): mbarrier "
        "bar[0] of CTA 1 is used by CTA 0 before its mbarrier.init (a missing cluster barrier "
        "after mbarrier.init)");

  // A multicast mask naming a CTA the cluster does not have.
  ClusterTile wide(/*initBarrier=*/true, /*endBarrier=*/true, ClusterTile::TileBytes, 5);
  memory = wide.memory();
  CHECK(faultOf(sim::runKernel(wide.kernel, memory))
            .find("TMA load with multicast mask 5: a cluster of 2 CTAs has masks 1 to 3") !=
        std::string::npos);
}

TEST_CASE("simulator: a wrong expected byte count in a cluster deadlocks both CTAs") {
  // 768 bytes expected, 512 multicast into each CTA: neither phase completes.
  ClusterTile k(/*initBarrier=*/true, /*endBarrier=*/true, /*expectedBytes=*/768);
  sim::Memory memory = k.memory();
  CHECK(faultOf(sim::runKernel(k.kernel, memory)) ==
        "kernel cluster_tile: block (0, 0, 0) (CTA 0 of its cluster), thread (0, 0, 0): deadlock: "
        "wait on bar[0] parity 0 can never complete (pending arrivals 0, tx bytes 256) in CTA 0 "
        "warps 0-1, CTA 1 warps 0-1");

  // Fewer: CTA 1's phase completes with CTA 0's half alone, and its own half counts in the
  // next phase, which CTA 1 has not seen complete when it reads that half.
  ClusterTile fewer(/*initBarrier=*/true, /*endBarrier=*/true, /*expectedBytes=*/256);
  memory = fewer.memory();
  CHECK(faultOf(sim::runKernel(fewer.kernel, memory)) ==
        "kernel cluster_tile: block (1, 0, 0) (CTA 1 of its cluster), thread (0, 0, 0): tile[64] "
        "is read before warp 0 has seen the TMA load that wrote it complete: that load completes "
        "phase 1 (parity 1) of mbarrier bar[0] (a missing mbarrier wait, or one on the wrong "
        "parity)");

  // Bytes may complete before the arrival that expects them, but a block must not end with
  // bytes no arrival expected (here: a load into a barrier of two arrivals, none made).
  TmaBox unexpected(/*expectedBytes=*/128);
  Stmt init = barrierInit(unexpected.bar, 2);
  VarPtr t = makeVar("t", DType::I64);
  unexpected.kernel.body =
      parallelLoop(t, index(32), Axis::TIDx,
                   block({allocateAt(unexpected.bar, 0), allocateAt(unexpected.tile, 128),
                          ifThen(eq(var(t), index(0)), init), barrier(),
                          ifThen(eq(var(t), index(0)), loadBox(unexpected.tile, unexpected.map,
                                                               {0, 0}, unexpected.bar))}));
  memory = unexpected.memory();
  CHECK(faultOf(sim::runKernel(unexpected.kernel, memory)) ==
        "kernel tma_box: block (0, 0, 0): the block exits with 128 transaction bytes completed on "
        "mbarrier bar[0] that no arrival expected");
}

TEST_CASE("simulator: a remote mbarrier arrival releases a peer's wait") {
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  auto peer = [](Expr) { return index(0); };
  sim::Memory memory;
  memory.global[out.get()].assign(2, NAN);
  Kernel kernel = remoteArrival(out, true, true, true, peer);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  CHECK(memory.global[out.get()][0] == 1);
  CHECK(memory.global[out.get()][1] == 2);

  // CTA 1 arrives on its own barrier instead (its rank): CTA 0 waits forever, CTA 1 at the
  // end barrier.
  kernel = remoteArrival(out, true, true, true, [](Expr rank) { return rank; });
  CHECK(faultOf(sim::runKernel(kernel, memory)) ==
        "kernel remote_arrival: block (0, 0, 0) (CTA 0 of its cluster), thread (0, 0, 0): "
        "deadlock: wait on bar[0] parity 0 can never complete (pending arrivals 1, tx bytes 0) in "
        "CTA 0 warp 0; cluster barrier reached by 32 of the 64 threads of the cluster in CTA 1 "
        "warp 0");

  // Without the barrier after the init, CTA 0's init is not ordered before CTA 1's arrival,
  // whatever order the simulator ran them in.
  kernel = remoteArrival(out, false, true, true, peer);
  CHECK(faultOf(sim::runKernel(kernel, memory)) ==
        "kernel remote_arrival: block (1, 0, 0) (CTA 1 of its cluster), thread (0, 0, 0): "
        "mbarrier bar[0] of CTA 0 is used by CTA 1 with no cluster barrier since its init (a "
        "missing cluster barrier after mbarrier.init)");

  // CTA 0 does not wait for the arrival: without the end barrier it may exit before it.
  kernel = remoteArrival(out, true, false, false, peer);
  CHECK(faultOf(sim::runKernel(kernel, memory)) ==
        "kernel remote_arrival: block (0, 0, 0) (CTA 0 of its cluster): CTA 0 exits while an "
        "arrival of CTA 1 on its mbarrier bar[0] may still be in flight: no warp of CTA 0 has "
        "waited for the phase it completes, and no cluster barrier has followed (a missing "
        "cluster barrier at the end of the kernel)");
  // With it, or with the wait, the arrival has landed.
  CHECK(faultOf(sim::runKernel(remoteArrival(out, true, true, false, peer), memory)) == "");
  CHECK(faultOf(sim::runKernel(remoteArrival(out, true, false, true, peer), memory)) == "");

  // Neither barrier: CTA 0 has exited when CTA 1 arrives.
  kernel = remoteArrival(out, false, false, false, peer);
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("an mbarrier arrival to CTA 0, which has exited (a missing cluster barrier at "
                  "the end of the kernel)") != std::string::npos);

  // A rank outside the cluster.
  kernel = remoteArrival(out, true, true, true, [](Expr) { return index(2); });
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("an mbarrier arrival to CTA 2 of a cluster of 2") != std::string::npos);
}

TEST_CASE("simulator: a cluster barrier every thread of the cluster must reach") {
  // Only CTA 0 reaches it: a barrier in divergent code.
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr b = makeVar("b", DType::I64), t = makeVar("t", DType::I64);
  Kernel kernel;
  kernel.name = "half_cluster";
  kernel.params = {tensorParam(out)};
  kernel.body =
      parallelLoop(b, index(2), Axis::BIDx,
                   parallelLoop(t, index(64), Axis::TIDx,
                                block({ifThen(eq(var(b) % index(2), index(0)), clusterBarrier()),
                                       store(out, var(b) * index(64) + var(t), f32(1))})));
  launch(kernel, 2, {64, 1});
  kernel.launch.cluster = {index(2), index(1), index(1)};
  sim::Memory memory;
  memory.global[out.get()].assign(128, NAN);
  CHECK(faultOf(sim::runKernel(kernel, memory)) ==
        "kernel half_cluster: block (0, 0, 0) (CTA 0 of its cluster), thread (0, 0, 0): deadlock: "
        "cluster barrier reached by 64 of the 128 threads of the cluster (a barrier in divergent "
        "code) in CTA 0 warps 0-1; CTA 1 warps 0-1 have finished");

  // A grid that is not a whole number of clusters, and a cluster beyond the portable 8.
  launch(kernel, 3, {64, 1});
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("grid extent 3 along x is not a multiple of the cluster extent 2") !=
        std::string::npos);
  launch(kernel, 16, {64, 1});
  kernel.launch.cluster = {index(16), index(1), index(1)};
  CHECK(faultOf(sim::runKernel(kernel, memory)) ==
        "kernel half_cluster: clusters of 16 blocks; the target allows 8");
}

TEST_CASE("simulator: a grid barrier over the blocks of a cooperative launch") {
  // Each of 5 blocks writes its own word, meets the others at the grid barrier, then reads
  // its neighbour's: the barrier makes every block's write visible to every block.
  BufferPtr mine = makeBuffer("mine", DType::F32, MemorySpace::Global);
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr b = makeVar("b", DType::I64), t = makeVar("t", DType::I64);
  auto body = [&](Stmt barrier) {
    return parallelLoop(
        b, index(5), Axis::BIDx,
        parallelLoop(
            t, index(32), Axis::TIDx,
            block({ifThen(eq(var(t), index(0)), store(mine, var(b), f32(1) + var(b))), barrier,
                   ifThen(eq(var(t), index(0)),
                          store(out, var(b), load(mine, (var(b) + index(1)) % index(5))))})));
  };
  Kernel kernel;
  kernel.name = "neighbours";
  kernel.params = {tensorParam(mine), tensorParam(out)};
  kernel.body = body(gridBarrier());
  launch(kernel, 5, {32, 1});
  kernel.launch.cooperative = true;
  sim::Memory memory;
  memory.global[mine.get()].assign(5, NAN);
  memory.global[out.get()].assign(5, NAN);
  REQUIRE(faultOf(sim::runKernel(kernel, memory)) == "");
  for (int i = 0; i < 5; ++i)
    CHECK(memory.global[out.get()][i] == 1 + (i + 1) % 5);

  // Without the cooperative attribute the GPU's barrier word is null (fsl_grid_sync traps).
  kernel.launch.cooperative = false;
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("grid barrier in a kernel launched without the cooperative attribute") !=
        std::string::npos);

  // Reached by some blocks only: a barrier in divergent code.
  kernel.launch.cooperative = true;
  kernel.body = body(ifThen(var(b) < index(3), gridBarrier()));
  CHECK(faultOf(sim::runKernel(kernel, memory))
            .find("grid barrier reached by 96 of the 160 "
                  "threads of the grid") != std::string::npos);
}

TEST_CASE("simulator: a shared buffer needs its elements' alignment, vector accesses theirs") {
  // Three threads' 8-byte scratch before it: an f32 buffer at byte 24 is as the CUDA has
  // it, a typed pointer whose scalar accesses need 4 bytes (the buffer's 16 is what the
  // lowering provides vector accesses, which check their own).
  BufferPtr s = makeBuffer("s", DType::F32, MemorySpace::Shared, {8});
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64);
  auto kernelAt = [&](int64_t offset, Stmt access) {
    Kernel kernel;
    kernel.name = "placed";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(t, index(3), Axis::TIDx,
                               block({allocateAt(s, offset), store(s, var(t), f32(2)), access}));
    launch(kernel, 1, {3, 1}, 64);
    return kernel;
  };
  sim::Memory memory;
  memory.global[out.get()].assign(8, NAN);
  Stmt scalar = store(out, var(t), load(s, var(t)));
  CHECK(faultOf(sim::runKernel(kernelAt(24, scalar), memory)) == "");
  CHECK(memory.global[out.get()][2] == 2);
  CHECK(faultOf(sim::runKernel(kernelAt(22, scalar), memory))
            .find("shared buffer s at byte offset 22 is not aligned to its 4-byte elements") !=
        std::string::npos);
  // A 16-byte vector read of the buffer at byte 24 is misaligned, at byte 32 it is not.
  Stmt vector = ifThen(eq(var(t), index(0)), vectorCopy(out, index(0), s, index(0), 4));
  CHECK(faultOf(sim::runKernel(kernelAt(24, vector), memory))
            .find("misaligned vector access of s: 4 lanes (16 bytes) at element 0, 8 bytes past") !=
        std::string::npos);
  CHECK(faultOf(sim::runKernel(kernelAt(32, vector), memory)) == "");
}

TEST_CASE("simulator: shared memory exchanged between warps without a barrier is a race") {
  // The exchange of "warps wait for each other at barriers": warp 0 reads what warp 1
  // writes. Without the barrier warp 0 runs first and reads NaN here, or the values on a
  // GPU that happens to run warp 1 first: a race, named by both statements.
  BufferPtr s = makeBuffer("s", DType::F32, MemorySpace::Shared, {64});
  BufferPtr out = makeBuffer("out", DType::F32, MemorySpace::Global);
  VarPtr t = makeVar("t", DType::I64);
  Stmt write = withComment(store(s, index(63) - var(t), cast(DType::F32, var(t))), "exchange");
  auto kernelWith = [&](std::vector<Stmt> between) {
    std::vector<Stmt> body = {allocateAt(s, 0), write};
    body.insert(body.end(), between.begin(), between.end());
    body.push_back(store(out, var(t), load(s, var(t))));
    Kernel kernel;
    kernel.name = "exchange";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(t, index(64), Axis::TIDx, block(std::move(body)));
    launch(kernel, 1, {64, 1}, 256);
    return kernel;
  };
  sim::Memory memory;
  memory.global[out.get()].assign(64, NAN);
  CHECK(faultOf(sim::runKernel(kernelWith({barrier()}), memory)) == "");
  std::string message = faultOf(sim::runKernel(kernelWith({}), memory));
  CHECK(message == "kernel exchange: block (0, 0, 0), thread (32, 0, 0): race on shared s[31]: "
                   "warp 1 writes it in `store s (exchange)` and warp 0 read it in `store out`, "
                   "with no barrier or mbarrier wait between them (a missing barrier?)");

  // Each thread reads back its own element: one warp, no race.
  Kernel own = kernelWith({});
  own.body = parallelLoop(
      t, index(64), Axis::TIDx,
      block({allocateAt(s, 0), store(s, var(t), f32(1)), store(out, var(t), load(s, var(t)))}));
  CHECK(faultOf(sim::runKernel(own, memory)) == "");

  // An mbarrier orders the write before the read only for a warp that waits on it.
  BufferPtr bar = makeBuffer("bar", DType::I64, MemorySpace::Shared, {1}, Swizzle::None, 8);
  Expr warp = var(t) / index(32);
  auto handoff = [&](bool wait) {
    Kernel kernel;
    kernel.name = "handoff";
    kernel.params = {tensorParam(out)};
    kernel.body = parallelLoop(
        t, index(64), Axis::TIDx,
        block({allocateAt(bar, 0), allocateAt(s, 16),
               ifThen(eq(var(t), index(0)), barrierInit(bar, 32)), barrier(),
               ifThen(eq(warp, index(1)),
                      block({store(s, var(t) - index(32), cast(DType::F32, var(t))), arrive(bar)})),
               ifThen(eq(warp, index(0)), block({wait ? waitParity(bar, 0) : block({}),
                                                 store(out, var(t), load(s, var(t)))}))}));
    launch(kernel, 1, {64, 1}, 512);
    return kernel;
  };
  CHECK(faultOf(sim::runKernel(handoff(true), memory)) == "");
  // Without the wait, warp 0 reads what warp 1 wrote after the barrier (here; on a GPU
  // perhaps before).
  CHECK(faultOf(sim::runKernel(handoff(false), memory))
            .find("race on shared s[0]: warp 0 reads it in `store out` and "
                  "warp 1 wrote it in `store s`") != std::string::npos);
  // A write after the arrival is not ordered by it.
  Kernel late = handoff(true);
  late.body = parallelLoop(
      t, index(64), Axis::TIDx,
      block(
          {allocateAt(bar, 0), allocateAt(s, 16),
           ifThen(eq(var(t), index(0)), barrierInit(bar, 32)), barrier(),
           ifThen(eq(warp, index(0)),
                  block({waitParity(bar, 0), store(out, var(t), load(s, var(t)))}),
                  block({arrive(bar), store(s, var(t) - index(32), cast(DType::F32, var(t)))}))}));
  CHECK(faultOf(sim::runKernel(late, memory))
            .find("race on shared s[0]: warp 0 reads it in `store out` and "
                  "warp 1 wrote it in `store s`") != std::string::npos);
}
