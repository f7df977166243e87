// Simulator.cpp — the Kernel IR interpreted: every block of a launch (the blocks of a
// cluster together), its warps run one at a time until they wait for each other, the
// threads of a warp in lockstep over a mask, with the memory and synchronisation checks of
// Simulator.h.
#include "sim/Simulator.h"

#include "kir/Mutator.h"
#include "support/Internal.h"

#include <llvm/ADT/Twine.h>
#include <llvm/Support/FormatVariadic.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace fsl::sim {

using kir::Buffer;
using kir::DType;
using kir::ExprKind;
using kir::ExprNode;
using kir::MemorySpace;
using kir::StmtKind;
using kir::StmtNode;
using kir::Swizzle;
using kir::Var;

// --- Layouts shared with the tests -----------------------------------------------------

std::array<int64_t, 2> wgmmaAccumulatorPosition(int64_t t, int64_t i) {
  // The f32 accumulator of wgmma.mma_async.m64nNk16: PTX ISA 9.7.15.5.1.1.1 ("Matrix
  // Fragments for wgmma.mma_async.m64nNk16", figure "WGMMA .m64nNk16 register fragment
  // layout for accumulator matrix D"), the same map as CUTLASS's CLayout_64xN in
  // include/cute/atom/mma_traits_sm90_gmma.hpp: thread shape (4, 8, 4) with strides
  // (128, 1, 16) and value shape (2, 2, N/8) with strides (64, 8, 512) over the
  // column-major 64 x N index m + 64 n. Warp t/32 owns rows 16 (t/32) .. +15; lane group
  // (t%32)/4 picks the row in each 8-row half; each thread holds column pairs
  // 2 (t%4) + {0, 1} of every 8-column slice.
  int64_t row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
  int64_t column = 8 * (i / 4) + 2 * (t % 4) + i % 2;
  return {row, column};
}

namespace {

/// log2 of the 16-byte chunks a swizzle permutes (CUTLASS's Swizzle<B, 4, 3>: B).
int swizzleBits(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return 0;
  case Swizzle::Bytes32:
    return 1;
  case Swizzle::Bytes64:
    return 2;
  case Swizzle::Bytes128:
    return 3;
  }
  FSL_UNREACHABLE("swizzle");
}

/// Bytes of one swizzled row (the inner extent a TMA box or wgmma operand row spans).
int64_t swizzleSpan(Swizzle swizzle) {
  return swizzle == Swizzle::None ? 0 : 16 << swizzleBits(swizzle);
}

/// Bytes after which the XOR pattern repeats: eight 128-byte rows for 128B, four for 64B,
/// two for 32B.
int64_t swizzleRepeat(Swizzle swizzle) { return int64_t(128) << swizzleBits(swizzle); }

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

} // namespace

int64_t swizzleAddress(int64_t address, Swizzle swizzle) {
  // The hardware permutes by address bits (CU_TENSOR_MAP_SWIZZLE_*, and the wgmma
  // descriptor's layout type): the 16-byte chunk c of 128-byte row r moves to chunk
  // c ^ (r % 8) for 128B (within each 1024 bytes), c ^ (r % 4) for 64B (512 bytes),
  // c ^ (r % 2) for 32B (256 bytes). TMA and wgmma apply the same map, so a tile that
  // TMA wrote is read back by wgmma in its logical order.
  int bits = swizzleBits(swizzle);
  if (bits == 0)
    return address;
  int64_t mask = (int64_t(1) << bits) - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

namespace {

/// A kernel fault: becomes the llvm::Error of runKernel, never escapes it. `located`: the
/// message already says which block and thread.
struct Fault : std::runtime_error {
  Fault(const std::string &message, bool located) : std::runtime_error(message), located(located) {}
  bool located;
};

[[noreturn]] void fail(const llvm::Twine &message) { throw Fault(message.str(), false); }

bool isNarrow(DType type) { return type == DType::BF16 || type == DType::F16; }

/// The result of an operation of `type` as the CUDA printer computes it: bf16/f16
/// operations in f32, then rounded to their type (`__float2bfloat16_rn`); f32 in f32; f64
/// exactly; integers truncate.
double asComputed(double value, DType type) {
  if (isNarrow(type))
    return eval::roundTo(eval::roundTo(value, DType::F32), type);
  return eval::roundTo(value, type);
}

/// A value held in a variable of `type`: the C type the printer declares it with
/// (codegen's cType), where bf16 and f16 are `float`. Assigning to it converts to that
/// type and rounds no further: a bf16 variable given an f32 value keeps the f32 value, a
/// bf16 constant is the f32 literal the printer writes, a bf16 accumulator adds in f32.
double inRegister(double value, DType type) {
  return eval::roundTo(value, isNarrow(type) ? DType::F32 : type);
}

bool isIntegral(DType type) { return ir::isInteger(type) || type == DType::Bool; }

int64_t bytesOf(DType type) { return static_cast<int64_t>(ir::dtypeBytes(type)); }

int64_t positiveMod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

ir::Op pointwiseOp(kir::UnaryOp op) {
  switch (op) {
  case kir::UnaryOp::Neg:
    return ir::Op::Neg;
  case kir::UnaryOp::Not:
    return ir::Op::Not;
  case kir::UnaryOp::Exp:
  case kir::UnaryOp::FastExp:
    return ir::Op::Exp;
  case kir::UnaryOp::Log:
    return ir::Op::Log;
  case kir::UnaryOp::Sqrt:
    return ir::Op::Sqrt;
  case kir::UnaryOp::Rsqrt:
    return ir::Op::Rsqrt;
  case kir::UnaryOp::Tanh:
    return ir::Op::Tanh;
  case kir::UnaryOp::Sigmoid:
    return ir::Op::Sigmoid;
  case kir::UnaryOp::Erf:
    return ir::Op::Erf;
  case kir::UnaryOp::Abs:
    return ir::Op::Abs;
  }
  FSL_UNREACHABLE("unary op");
}

/// The reference's operation for a binary op; Mod has none (fmod on floats).
std::optional<ir::Op> pointwiseOp(kir::BinaryOp op) {
  switch (op) {
  case kir::BinaryOp::Add:
    return ir::Op::Add;
  case kir::BinaryOp::Sub:
    return ir::Op::Sub;
  case kir::BinaryOp::Mul:
    return ir::Op::Mul;
  case kir::BinaryOp::Div:
    return ir::Op::Div;
  case kir::BinaryOp::Mod:
  case kir::BinaryOp::Xor:
    return std::nullopt;
  case kir::BinaryOp::Min:
    return ir::Op::Min;
  case kir::BinaryOp::Max:
    return ir::Op::Max;
  case kir::BinaryOp::Pow:
    return ir::Op::Pow;
  case kir::BinaryOp::Lt:
    return ir::Op::Lt;
  case kir::BinaryOp::Le:
    return ir::Op::Le;
  case kir::BinaryOp::Gt:
    return ir::Op::Gt;
  case kir::BinaryOp::Ge:
    return ir::Op::Ge;
  case kir::BinaryOp::Eq:
    return ir::Op::Eq;
  case kir::BinaryOp::Ne:
    return ir::Op::Ne;
  case kir::BinaryOp::And:
    return ir::Op::And;
  case kir::BinaryOp::Or:
    return ir::Op::Or;
  }
  FSL_UNREACHABLE("binary op");
}

/// Where an expression reads its variables and buffers: one thread of a block, or the
/// launch (runtime dimensions and scalars only).
class Scope {
public:
  virtual ~Scope() = default;
  virtual double variable(const Var &v) = 0;
  virtual double load(const Buffer &buffer, int64_t index) = 0;
};

int64_t exactInteger(double value, const char *what) {
  if (!std::isfinite(value) || value != std::trunc(value) || std::fabs(value) > 9007199254740992.0)
    fail(llvm::formatv("{0} is not an integer ({1})", what, value));
  return static_cast<int64_t>(value);
}

double integerBinary(kir::BinaryOp op, DType type, double x, double y) {
  // An i64 max or min starts at int64's extremes, +-2^63 here (FSL_INT64_MAX/MIN in CUDA):
  // they compare with every exact integer, and come out only if nothing else came in.
  bool extreme = std::fabs(x) == 9223372036854775808.0 || std::fabs(y) == 9223372036854775808.0;
  if (extreme && (op == kir::BinaryOp::Max || op == kir::BinaryOp::Min)) {
    double other = std::fabs(x) == 9223372036854775808.0 ? y : x;
    if (std::fabs(other) != 9223372036854775808.0)
      exactInteger(other, "an integer operand");
    return op == kir::BinaryOp::Max ? std::max(x, y) : std::min(x, y);
  }
  int64_t a = exactInteger(x, "an integer operand"), b = exactInteger(y, "an integer operand");
  int64_t r = 0;
  switch (op) {
  case kir::BinaryOp::Add:
    if (__builtin_add_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} + {1}", a, b));
    break;
  case kir::BinaryOp::Sub:
    if (__builtin_sub_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} - {1}", a, b));
    break;
  case kir::BinaryOp::Mul:
    if (__builtin_mul_overflow(a, b, &r))
      fail(llvm::formatv("integer overflow in {0} * {1}", a, b));
    break;
  case kir::BinaryOp::Div:
  case kir::BinaryOp::Mod:
    if (b == 0)
      fail(llvm::formatv("integer division by zero ({0} {1} 0)", a, kir::binaryName(op)));
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      fail("integer overflow in a division");
    r = op == kir::BinaryOp::Div ? a / b : a % b; // C: truncate toward zero
    break;
  case kir::BinaryOp::Min:
    r = std::min(a, b);
    break;
  case kir::BinaryOp::Max:
    r = std::max(a, b);
    break;
  case kir::BinaryOp::Xor:
    if (a < 0 || b < 0)
      fail(llvm::formatv("exclusive or of a negative integer ({0} ^ {1})", a, b));
    r = a ^ b;
    break;
  case kir::BinaryOp::Pow:
    return eval::roundTo(std::pow(x, y), type);
  case kir::BinaryOp::Lt:
    return a < b;
  case kir::BinaryOp::Le:
    return a <= b;
  case kir::BinaryOp::Gt:
    return a > b;
  case kir::BinaryOp::Ge:
    return a >= b;
  case kir::BinaryOp::Eq:
    return a == b;
  case kir::BinaryOp::Ne:
    return a != b;
  case kir::BinaryOp::And:
    return a != 0 && b != 0;
  case kir::BinaryOp::Or:
    return a != 0 || b != 0;
  }
  // i32 index arithmetic that wraps on the GPU is a bug, not a value.
  if (type == DType::I32 &&
      (r < std::numeric_limits<int32_t>::min() || r > std::numeric_limits<int32_t>::max()))
    fail(llvm::formatv("i32 overflow: {0} {1} {2} = {3}", a, kir::binaryName(op), b, r));
  if (type == DType::Bool)
    return r != 0;
  return static_cast<double>(r);
}

double evaluate(const ExprNode &e, Scope &scope) {
  switch (e.kind) {
  case ExprKind::Const:
    // The printer writes a floating constant as an f32 (or f64) literal of its value.
    return inRegister(e.constant, e.dtype);
  case ExprKind::Var:
    return scope.variable(*e.var);
  case ExprKind::Unary: {
    double a = evaluate(*e.operands[0], scope);
    if (isIntegral(e.dtype) && e.unary == kir::UnaryOp::Neg)
      return eval::roundTo(-a, e.dtype);
    ir::Op op = pointwiseOp(e.unary);
    // Negation and fabs are exact and printed without a rounding.
    if (e.unary == kir::UnaryOp::Neg || e.unary == kir::UnaryOp::Abs)
      return eval::applyOp(op, &a);
    // __expf: the f32 product x * log2(e), then 2^product rounded to f32 (the hardware's
    // ex2.approx is within 2 ulp of that rounding).
    if (e.unary == kir::UnaryOp::FastExp) {
      double product = eval::roundTo(a * eval::roundTo(M_LOG2E, DType::F32), DType::F32);
      return asComputed(std::exp2(product), e.dtype);
    }
    // The printer spells a sigmoid `1.0f / (1.0f + expf(-x))`: three f32 roundings.
    if (e.unary == kir::UnaryOp::Sigmoid && e.dtype != DType::F64) {
      double denominator = eval::roundTo(1 + eval::roundTo(std::exp(-a), DType::F32), DType::F32);
      return asComputed(1 / denominator, e.dtype);
    }
    return asComputed(eval::applyOp(op, &a), e.dtype);
  }
  case ExprKind::Binary: {
    // && and || short-circuit as in C: `i < n && x[i] > 0` must not load x[n].
    double a = evaluate(*e.operands[0], scope);
    if (e.binary == kir::BinaryOp::And && a == 0)
      return 0;
    if (e.binary == kir::BinaryOp::Or && a != 0)
      return 1;
    double b = evaluate(*e.operands[1], scope);
    DType operandType = e.operands[0]->dtype;
    if (isIntegral(operandType) && isIntegral(e.operands[1]->dtype))
      return integerBinary(e.binary, kir::isComparison(e.binary) ? DType::Bool : e.dtype, a, b);
    double args[2] = {a, b};
    std::optional<ir::Op> op = pointwiseOp(e.binary);
    FSL_INTERNAL_ASSERT(e.binary != kir::BinaryOp::Xor, "an exclusive or of non-integers");
    double r = op ? eval::applyOp(*op, args) : std::fmod(a, b);
    // fsl_min/fsl_max return an operand (printed without a rounding); comparisons are bool.
    if (e.binary == kir::BinaryOp::Min || e.binary == kir::BinaryOp::Max ||
        kir::isComparison(e.binary))
      return r;
    return asComputed(r, e.dtype);
  }
  case ExprKind::Select:
    // Only the chosen operand is evaluated, as C's ?: does.
    return evaluate(*e.operands[0], scope) != 0 ? evaluate(*e.operands[1], scope)
                                                : evaluate(*e.operands[2], scope);
  case ExprKind::Cast: {
    // As KernelPrinter's printCast. Integer targets truncate toward zero (and saturate,
    // as cvt.rzi does).
    double a = evaluate(*e.operands[0], scope);
    DType to = e.dtype, from = e.operands[0]->dtype;
    if (isNarrow(to)) {
      if (from == to || from == DType::Bool)
        return a; // the value as it is (0 or 1 for a bool)
      if (from == DType::F32 || isNarrow(from))
        return asComputed(a, to);  // an f32 register rounded to the narrow type
      return eval::roundTo(a, to); // __double2bfloat16, __ll2bfloat16_rn...: rounded once
    }
    if (to == DType::F32 && isNarrow(from))
      return a; // already an f32 register: widening is exact
    return eval::roundTo(a, to);
  }
  case ExprKind::Load: {
    int64_t at = exactInteger(evaluate(*e.operands[0], scope), "a load index");
    return scope.load(*e.buffer, at);
  }
  }
  FSL_UNREACHABLE("expression kind");
}

/// The launch's scope: runtime dimensions and scalar parameters.
class LaunchScope : public Scope {
public:
  explicit LaunchScope(const std::map<const Var *, double> &scalars) : scalars_(scalars) {}
  double variable(const Var &v) override {
    if (v.builtin != kir::Builtin::None)
      fail("a launch expression reads the hardware index " + v.name);
    auto it = scalars_.find(&v);
    if (it == scalars_.end())
      fail("a launch expression reads " + v.name + ", which has no value at launch");
    return it->second;
  }
  double load(const Buffer &buffer, int64_t) override {
    fail("a launch expression loads from " + buffer.name);
  }

private:
  const std::map<const Var *, double> &scalars_;
};

/// Variable -> slot by address. Every variable read and write of every thread looks a slot
/// up, the simulator's hottest operation: open addressing with a multiplicative hash
/// costs a fraction of std::unordered_map's division and node walk.
class SlotTable {
public:
  void build(const std::unordered_map<const Var *, int> &slots) {
    bits_ = 4;
    while ((size_t(1) << bits_) < 2 * slots.size())
      ++bits_;
    keys_.assign(size_t(1) << bits_, nullptr);
    values_.assign(keys_.size(), -1);
    for (const auto &[v, slot] : slots) {
      size_t i = home(v);
      while (keys_[i])
        i = (i + 1) & (keys_.size() - 1);
      keys_[i] = v;
      values_[i] = slot;
    }
  }
  /// The slot of `v`, or -1.
  int find(const Var *v) const {
    for (size_t i = home(v);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == v)
        return values_[i];
      if (!keys_[i])
        return -1;
    }
  }

private:
  size_t home(const Var *v) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(v) * 0x9E3779B97F4A7C15ull) >>
                               (64 - bits_));
  }
  int bits_ = 4;
  std::vector<const Var *> keys_ = std::vector<const Var *>(16, nullptr);
  std::vector<int> values_ = std::vector<int>(16, -1);
};

using Mask = std::vector<int>; // active threads (of a warp, or a warpgroup's), ascending ids

/// One kernel launch.
class Interpreter {
public:
  Interpreter(const kir::Kernel &kernel, Memory &memory, int64_t misalign,
              const SimulatorLimits &limits)
      : kernel_(kernel), memory_(memory), misalign_(misalign), limits_(limits) {}

  void run() {
    if (!kernel_.body)
      fail("the kernel has no body");
    checkParameters();
    configureLaunch();
    configureCluster();
    assignSlots();
    // Cluster by cluster (block by block without one), in the grid's x-fastest order.
    for (int64_t z = 0; z < grid_[2]; z += cluster_[2])
      for (int64_t y = 0; y < grid_[1]; y += cluster_[1])
        for (int64_t x = 0; x < grid_[0]; x += cluster_[0])
          runCluster({x, y, z});
  }

private:
  // --- The state of a block ---------------------------------------------------------------

  struct Cta;

  /// One 64-bit mbarrier: arrivals and transaction bytes still expected in the current
  /// phase, and the phase number (its parity is what waits test).
  struct MBarrier {
    int64_t expected = 0;
    int64_t pending = 0;
    int64_t tx = 0;
    int64_t phase = 0;
    const Buffer *buffer = nullptr;
    int64_t index = 0;
    int cta = 0;           // the rank of its CTA in the cluster
    int id = 0;            // its component of a warp's `clock` (numbered across the cluster)
    int64_t initEpoch = 0; // the cluster barriers completed before its init (`epoch_`)
    /// What the warps that arrived in the current phase knew, and what those of the last
    /// completed phase knew: a wait that sees that phase complete learns it.
    std::vector<int64_t> gathered, released;
  };

  /// The lanes of one warp: bit l is thread 32 w + l (linear ids).
  using LaneMask = uint32_t;

  /// A statement a warp is inside of, and where in it the warp is.
  enum class FrameKind { Block, Loop, Branch };
  struct Frame {
    FrameKind kind;
    const StmtNode *stmt;
    LaneMask mask;                     // the lanes that run it
    LaneMask otherwise = 0;            // Branch: the lanes of the else branch
    int64_t next = 0;                  // Block: child; Loop: iteration; Branch: 0 then, 1 else
    std::array<int64_t, 32> extents{}; // Loop: each lane's trip count
  };

  /// What a warp waits for.
  enum class Wait {
    None,
    Barrier,    // every warp at this __syncthreads
    Reduce,     // every warp at this block reduction
    Named,      // `expected` threads at named barrier `at->barrierId`
    MBarrier,   // `conditions`
    Wgmma,      // the four warps of its warpgroup at this wgmma
    SetMaxNReg, // the four warps of its warpgroup at this setmaxnreg
    Registers,  // `want` registers per thread from the block's pool (setmaxnreg.inc)
    Cluster,    // every warp of every CTA of the cluster at a cluster barrier
  };

  /// One mbarrier phase a wait needs complete: the current phase's parity must differ.
  struct Condition {
    MBarrier *barrier;
    int64_t parity;
    bool passed = false;
  };

  /// A warp of the block being run: where it is in the body, and what it waits for.
  struct Warp {
    int id = 0;
    int cta = 0;        // the rank of its CTA in the cluster
    int first = 0;      // the linear id of lane 0
    LaneMask lanes = 0; // the lanes that exist (the last warp may have fewer than 32)
    std::vector<Frame> stack;
    bool started = false, done = false;
    Wait wait = Wait::None;
    const StmtNode *at = nullptr; // the statement it waits at
    LaneMask waiting = 0;         // its lanes there
    int64_t expected = 0;         // Named: the threads the barrier expects
    std::vector<Condition> conditions;
    int64_t registers = 0, want = 0; // per thread: held, and wanted by a pending inc
    bool registersKnown = false;     // `registers` is a count, not the launch's estimate
    /// Per mbarrier id: how many of its phases this warp knows to be complete, by its own
    /// waits or from the warps it met at a barrier or through an mbarrier. Data a TMA load
    /// brought in is readable only once the warp knows the load's phase complete.
    std::vector<int64_t> clock;
  };

  static void merge(std::vector<int64_t> &into, const std::vector<int64_t> &from) {
    if (into.size() < from.size())
      into.resize(from.size(), 0);
    for (size_t i = 0; i < from.size(); ++i)
      into[i] = std::max(into[i], from[i]);
  }

  // --- The launch ----------------------------------------------------------------------

  void checkParameters() {
    for (const kir::KernelParam &param : kernel_.params) {
      switch (param.kind) {
      case kir::KernelParam::Kind::Tensor:
        if (!param.buffer)
          fail("a tensor parameter without a buffer");
        globalData(*param.buffer);
        break;
      case kir::KernelParam::Kind::Scalar:
      case kir::KernelParam::Kind::Dim:
        if (!param.var)
          fail("a scalar parameter without a variable");
        if (!memory_.scalars.count(param.var.get()))
          fail("no value for the kernel parameter " + param.var->name);
        break;
      case kir::KernelParam::Kind::TensorMap:
        if (!param.tensorMap || !param.tensorMap->global)
          fail("a tensor-map parameter without a tensor");
        globalData(*param.tensorMap->global);
        break;
      }
    }
  }

  int64_t launchValue(const kir::Expr &e, const char *what) {
    if (!e)
      return 1;
    LaunchScope scope(memory_.scalars);
    return exactInteger(evaluate(*e, scope), what);
  }

  void configureLaunch() {
    static const char *axes = "xyz";
    const kir::LaunchShape &launch = kernel_.launch;
    int64_t threads = 1, clusterBlocks = 1;
    for (int d = 0; d < 3; ++d) {
      grid_[d] = launchValue(launch.grid[d], "a grid extent");
      block_[d] = launchValue(launch.block[d], "a block extent");
      int64_t cluster = launchValue(launch.cluster[d], "a cluster extent");
      if (grid_[d] < 1 || grid_[d] > limits_.maxGridDim[d])
        fail(llvm::formatv("grid extent {0} along {1} is outside 1..{2}", grid_[d], axes[d],
                           limits_.maxGridDim[d]));
      if (block_[d] < 1 || block_[d] > limits_.maxBlockDim[d])
        fail(llvm::formatv("block extent {0} along {1} is outside 1..{2}", block_[d], axes[d],
                           limits_.maxBlockDim[d]));
      if (cluster < 1 || grid_[d] % cluster != 0)
        fail(llvm::formatv("grid extent {0} along {1} is not a multiple of the cluster extent {2}",
                           grid_[d], axes[d], cluster));
      threads *= block_[d];
      clusterBlocks *= cluster;
    }
    if (clusterBlocks > limits_.maxClusterSize)
      fail(llvm::formatv("clusters of {0} blocks; the target allows {1}", clusterBlocks,
                         limits_.maxClusterSize));
    if (threads > limits_.maxThreadsPerBlock)
      fail(llvm::formatv("{0} threads per block; the target allows {1}", threads,
                         limits_.maxThreadsPerBlock));
    if (launch.maxThreads && threads > *launch.maxThreads)
      fail(llvm::formatv("{0} threads per block exceed the kernel's __launch_bounds__ of {1}",
                         threads, *launch.maxThreads));
    threads_ = static_cast<int>(threads);
    // Registers per thread at launch, which setmaxnreg.dec gives up and .inc takes: the
    // kernel's __maxnreg__, else the most that lets the block fit the register file (the
    // compiler's count is not known here).
    int64_t warps = (threads + 31) / 32;
    initialRegisters_ = launch.maxRegisters
                            ? (*launch.maxRegisters + 7) / 8 * 8
                            : std::min<int64_t>(256, limits_.registersPerSm / (32 * warps) / 8 * 8);
    dynamicShared_ = launch.sharedBytes ? launchValue(launch.sharedBytes, "the shared bytes") : 0;
    if (dynamicShared_ < 0 || dynamicShared_ > limits_.maxSharedBytesPerBlock)
      fail(llvm::formatv("{0} bytes of dynamic shared memory; the target allows {1} per block",
                         dynamicShared_, limits_.maxSharedBytesPerBlock));
  }

  /// Numbers every variable the body reads or writes: each thread keeps its values in
  /// one row of `cta_->values`. Launch scalars get a slot too, filled in every thread.
  void assignSlots() {
    auto add = [&](const Var *v) {
      if (v && v->builtin == kir::Builtin::None)
        slotOf_.emplace(v, static_cast<int>(slotOf_.size()));
    };
    for (const auto &[v, value] : memory_.scalars)
      add(v);
    kir::forEachStmt(kernel_.body, [&](const kir::Stmt &s) {
      add(s->var.get());
      if (s->kind == StmtKind::Let && s->mutableVar)
        mutable_.insert(s->var.get());
    });
    kir::forEachExpr(kernel_.body, [&](const kir::Expr &e) {
      if (e->kind == ExprKind::Var)
        add(e->var.get());
    });
    slots_ = static_cast<int>(slotOf_.size());
    slotTable_.build(slotOf_);
  }

  /// The cluster the launch groups its blocks in, (1, 1, 1) without one (configureLaunch
  /// has checked that it divides the grid and its size). Its CTAs run together
  /// (runCluster).
  void configureCluster() {
    int64_t size = 1;
    for (int d = 0; d < 3; ++d) {
      cluster_[d] = launchValue(kernel_.launch.cluster[d], "a cluster extent");
      size *= cluster_[d];
    }
    ctas_.resize(static_cast<size_t>(size));
  }

  /// Runs the CTAs of the cluster whose first block is `origin` together: each has its own
  /// variables, local and shared memory, mbarriers and warps, and the warps of all of them
  /// are scheduled round robin (CTA by CTA in rank order, each CTA's by warp id).
  void runCluster(std::array<int64_t, 3> origin) {
    barrierById_.clear();
    epoch_ = 0;
    for (size_t r = 0; r < ctas_.size(); ++r) {
      int64_t rank = static_cast<int64_t>(r);
      enterCta(ctas_[r]);
      startCta(static_cast<int>(r),
               {origin[0] + rank % cluster_[0], origin[1] + rank / cluster_[0] % cluster_[1],
                origin[2] + rank / (cluster_[0] * cluster_[1])});
    }
    schedule();
  }

  /// Makes `cta` the CTA whose warp runs.
  void enterCta(Cta &cta) {
    cta_ = &cta;
    values_ = cta.values.data();
    bound_ = cta.bound.data();
  }

  /// Sets up `cta_` as block `blockIdx`, rank `rank` of its cluster, before any warp runs.
  void startCta(int rank, std::array<int64_t, 3> blockIdx) {
    Cta &cta = *cta_;
    cta.rank = rank;
    cta.blockIdx = blockIdx;
    cta.values.assign(static_cast<size_t>(threads_) * slots_, 0.0);
    cta.bound.assign(cta.values.size(), 0);
    enterCta(cta); // the new storage
    for (const auto &[v, value] : memory_.scalars)
      for (int t = 0; t < threads_; ++t)
        setVariable(t, *v, value);
    cta.locals.clear();
    cta.shared.clear();
    cta.mbarriers.clear();
    cta.staticSharedEnd = 0;
    int count = (threads_ + 31) / 32;
    cta.warps.resize(count);
    for (int w = 0; w < count; ++w) {
      Warp &warp = cta.warps[w];
      int lanes = std::min(32, threads_ - 32 * w);
      warp.id = w;
      warp.cta = rank;
      warp.first = 32 * w;
      warp.lanes = lanes == 32 ? ~LaneMask(0) : (LaneMask(1) << lanes) - 1;
      warp.stack.clear();
      warp.started = warp.done = false;
      warp.wait = Wait::None;
      warp.at = nullptr;
      warp.waiting = 0;
      warp.conditions.clear();
      warp.registers = initialRegisters_;
      warp.registersKnown = kernel_.launch.maxRegisters.has_value();
      warp.clock.clear();
    }
    cta.registerPool = 0;
    cta.finished = false;
    cta.unseen.clear();
  }

  // --- Warps and their scheduling --------------------------------------------------------
  //
  // Every warp of the cluster (of the block, without a cluster) is a task: an explicit
  // stack of statement cursors (Frame) that runWarp advances until the warp finishes or
  // has to wait for other warps. A single thread runs all of them, one at a time, so the
  // simulation stays deterministic. `cta_` is the CTA of the warp that runs.

  /// Runs the warps of the cluster round robin (CTA by CTA, each CTA's by warp id), each
  /// until it finishes or waits, until all have finished; a pass in which no warp can move
  /// is a deadlock.
  void schedule() {
    for (;;) {
      bool moved = false, finished = true;
      for (Cta &cta : ctas_) {
        if (cta.finished)
          continue;
        enterCta(cta);
        bool done = true;
        for (Warp &warp : cta.warps) {
          if (runnable(warp)) {
            runWarp(warp);
            moved = true;
          }
          done = done && warp.done;
        }
        if (done)
          finishCta(cta);
        finished = finished && done;
      }
      if (finished)
        return;
      if (!moved)
        deadlock();
    }
  }

  /// The warps of `cta` (`cta_`) have all finished, so it exits: no peer may reach its
  /// shared memory any more, and nothing a peer did to it may still be in flight (see
  /// Cta::unseen). Nor may a barrier hold bytes that no arrival expected.
  void finishCta(Cta &cta) {
    cta.finished = true;
    for (const auto &[key, barrier] : cta.mbarriers)
      if (barrier.tx < 0)
        fault(-1, llvm::formatv("the block exits with {0} transaction bytes completed on "
                                "mbarrier {1} that no arrival expected",
                                -barrier.tx, barrierName(barrier)));
    if (cta.unseen.empty())
      return;
    const Cta::Unseen &u = cta.unseen.front();
    fault(-1,
          llvm::formatv("CTA {0} exits while {1} of CTA {2} on its mbarrier {3} may still be "
                        "in flight: no warp of CTA {0} has waited for the phase it completes{4}",
                        cta.rank, u.async ? "a multicast TMA load" : "an arrival", u.from,
                        barrierName(*u.barrier),
                        u.async ? " (a multicast into a CTA that does not wait for it)"
                                : ", and no cluster barrier has followed (a missing cluster "
                                  "barrier at the end of the kernel)"));
  }

  /// Whether `warp` can continue now. A warp waiting at a meeting (a barrier, a block
  /// reduction, a warpgroup's wgmma or setmaxnreg) is released by the warp that completes
  /// it; one waiting on an mbarrier or for registers checks its condition here.
  bool runnable(Warp &warp) {
    if (warp.done)
      return false;
    switch (warp.wait) {
    case Wait::None:
      return true;
    case Wait::MBarrier:
      if (!passConditions(warp))
        return false;
      warp.wait = Wait::None;
      return true;
    case Wait::Registers:
      if (!takeRegisters(warp, warp.want))
        return false;
      warp.wait = Wait::None;
      return true;
    case Wait::Barrier:
    case Wait::Reduce:
    case Wait::Named:
    case Wait::Wgmma:
    case Wait::SetMaxNReg:
    case Wait::Cluster:
      return false;
    }
    FSL_UNREACHABLE("wait kind");
  }

  void runWarp(Warp &warp) {
    if (!warp.started) {
      warp.started = true;
      if (!enter(warp, *kernel_.body, warp.lanes))
        return;
    }
    while (!warp.stack.empty()) {
      // `frame` dies with a push, so take what enter needs before calling it.
      Frame &frame = warp.stack.back();
      const StmtNode &s = *frame.stmt;
      const StmtNode *next = nullptr;
      LaneMask mask = 0;
      switch (frame.kind) {
      case FrameKind::Block:
        while (!next && frame.next < static_cast<int64_t>(s.body.size()))
          next = s.body[frame.next++].get();
        mask = frame.mask;
        break;
      case FrameKind::Loop: {
        // Each lane runs its own trip count; a lane whose count is done leaves the mask
        // of the remaining iterations.
        int64_t i = frame.next++;
        for (LaneMask m = frame.mask; m; m &= m - 1)
          if (int lane = std::countr_zero(m); i < frame.extents[lane])
            mask |= LaneMask(1) << lane;
        for (LaneMask m = mask; m; m &= m - 1)
          setVariable(warp.first + std::countr_zero(m), *s.var, static_cast<double>(i));
        if (mask)
          next = s.body[0].get();
        break;
      }
      case FrameKind::Branch:
        if (frame.next == 0) {
          next = s.body[0].get();
          mask = frame.mask;
        } else if (frame.next == 1 && s.kind == StmtKind::If && s.body.size() > 1) {
          next = s.body[1].get();
          mask = frame.otherwise;
        }
        ++frame.next;
        break;
      }
      if (!next) {
        warp.stack.pop_back();
        continue;
      }
      if (!enter(warp, *next, mask))
        return;
    }
    warp.done = true;
  }

  /// Starts statement `s` for the `mask` lanes of `warp`: a compound statement becomes a
  /// frame the warp continues from, a leaf runs at once. False when the warp now waits (it
  /// continues after `s` once released).
  bool enter(Warp &warp, const StmtNode &s, LaneMask mask) {
    if (!mask)
      return true;
    steps_ += std::popcount(mask);
    if (steps_ > limits_.maxThreadSteps)
      fault(-1, llvm::formatv("the launch ran {0} thread statements, over the limit of {1} "
                              "(a runaway loop?)",
                              steps_, limits_.maxThreadSteps));
    switch (s.kind) {
    case StmtKind::Block:
      warp.stack.push_back({FrameKind::Block, &s, mask});
      return true;
    case StmtKind::For:
      return enterFor(warp, s, mask);
    case StmtKind::If:
    case StmtKind::WarpRole: {
      child(s, 0);
      LaneMask then = 0;
      for (LaneMask m = mask; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (value(s.condition, warp.first + lane) != 0)
          then |= LaneMask(1) << lane;
      }
      warp.stack.push_back({FrameKind::Branch, &s, then, mask & ~then});
      return true;
    }
    case StmtKind::Let:
    case StmtKind::Assign:
      execLet(s, lanesOf(warp, mask));
      return true;
    case StmtKind::Allocate:
      execAllocate(s, lanesOf(warp, mask));
      return true;
    case StmtKind::Store:
      execStore(s, lanesOf(warp, mask));
      return true;
    case StmtKind::VectorCopy:
      execVectorCopy(s, lanesOf(warp, mask));
      return true;
    case StmtKind::Reduce:
      return execReduce(warp, s, mask);
    case StmtKind::Barrier:
      return execBarrier(warp, s, mask);
    case StmtKind::GridDependency:
    case StmtKind::Comment:
    case StmtKind::FenceProxyAsync:
    case StmtKind::WgmmaFence:
    case StmtKind::WgmmaCommit:
    case StmtKind::WgmmaWait:
    case StmtKind::TmaStoreWait:
      // Ordering only: every operation here completes before the next statement runs.
      return true;
    case StmtKind::MBarrierInit:
    case StmtKind::MBarrierArrive:
    case StmtKind::MBarrierArriveExpectTx:
    case StmtKind::MBarrierWait:
      return execMBarrier(warp, s, lanesOf(warp, mask));
    case StmtKind::TmaLoad:
    case StmtKind::TmaStore:
      for (int t : lanesOf(warp, mask))
        tma(s, t, s.kind == StmtKind::TmaLoad);
      return true;
    case StmtKind::Wgmma:
      return arriveWgmma(warp, s, mask);
    case StmtKind::SetMaxNReg:
      return execSetMaxNReg(warp, s, mask);
    }
    FSL_UNREACHABLE("statement kind");
  }

  /// The threads of `mask` in `warp`, ascending. The vector is reused by the next call:
  /// a leaf uses it and is done before another leaf runs.
  const Mask &lanesOf(const Warp &warp, LaneMask mask) {
    lanes_.clear();
    for (LaneMask m = mask; m; m &= m - 1)
      lanes_.push_back(warp.first + std::countr_zero(m));
    return lanes_;
  }

  /// The threads of the warps that wait for `kind` at `s`: in the block (group < 0) or in
  /// warpgroup `group`.
  int threadsWaiting(Wait kind, const StmtNode *s, int group = -1) const {
    int threads = 0;
    for (const Warp &w : cta_->warps)
      if (w.wait == kind && w.at == s && (group < 0 || w.id / 4 == group))
        threads += std::popcount(w.waiting);
    return threads;
  }

  /// The warps that wait for `kind` at `s` (in warpgroup `group`, if not negative).
  std::vector<Warp *> warpsWaiting(Wait kind, const StmtNode *s, int group = -1) {
    std::vector<Warp *> found;
    for (Warp &w : cta_->warps)
      if (w.wait == kind && w.at == s && (group < 0 || w.id / 4 == group))
        found.push_back(&w);
    return found;
  }

  void await(Warp &warp, Wait kind, const StmtNode &s, LaneMask mask) {
    warp.wait = kind;
    warp.at = &s;
    warp.waiting = mask;
  }

  /// The warps of a completed barrier know what each of them knew (see `clock`), and go on.
  void release(const std::vector<Warp *> &met) {
    std::vector<int64_t> known;
    for (const Warp *w : met)
      merge(known, w->clock);
    for (Warp *w : met) {
      w->wait = Wait::None;
      if (!known.empty())
        w->clock = known;
    }
  }

  /// The first thread of `warp` at the statement it waits at.
  int firstWaiting(const Warp &warp) const {
    return warp.first + std::countr_zero(warp.waiting ? warp.waiting : warp.lanes);
  }

  /// The warps of the cluster at a cluster barrier (any statement: the hardware has one).
  std::vector<Warp *> warpsAtClusterBarrier() {
    std::vector<Warp *> found;
    for (Cta &cta : ctas_)
      for (Warp &w : cta.warps)
        if (w.wait == Wait::Cluster)
          found.push_back(&w);
    return found;
  }

  /// Why `warp` (of `cta_`) cannot go on, once no warp can.
  std::string waitReason(const Warp &warp) {
    // Whether every warp not waiting at this statement has finished: then the meeting is a
    // barrier in divergent code rather than a cycle of waits.
    auto othersFinished = [&] {
      for (const Warp &w : cta_->warps)
        if (!w.done && !(w.wait == warp.wait && w.at == warp.at))
          return false;
      return true;
    };
    const char *divergent = othersFinished() ? " (a barrier in divergent code)" : "";
    const StmtNode &s = *warp.at;
    switch (warp.wait) {
    case Wait::None:
      break;
    case Wait::Cluster: {
      int arrived = 0;
      for (const Warp *w : warpsAtClusterBarrier())
        arrived += std::popcount(w->waiting);
      bool othersDone = true; // then the barrier is in divergent code
      for (const Cta &cta : ctas_)
        for (const Warp &w : cta.warps)
          othersDone = othersDone && (w.done || w.wait == Wait::Cluster);
      return llvm::formatv("cluster barrier reached by {0} of the {1} threads of the cluster{2}",
                           arrived, threads_ * static_cast<int64_t>(ctas_.size()),
                           othersDone ? " (a barrier in divergent code)" : "");
    }
    case Wait::Barrier:
      return llvm::formatv("__syncthreads reached by {0} of {1} threads{2}",
                           threadsWaiting(Wait::Barrier, &s), threads_, divergent);
    case Wait::Reduce:
      return llvm::formatv("block reduction of {0} reached by {1} of {2} threads{3}", s.var->name,
                           threadsWaiting(Wait::Reduce, &s), threads_, divergent);
    case Wait::Named: {
      int arrived = 0;
      for (const Warp &w : cta_->warps)
        if (w.wait == Wait::Named && w.at->barrierId == s.barrierId)
          arrived += std::popcount(w.waiting);
      return llvm::formatv("named barrier {0} expects {1} threads but {2} arrive together",
                           s.barrierId, warp.expected, arrived);
    }
    case Wait::MBarrier:
      for (const Condition &c : warp.conditions)
        if (!c.passed)
          return llvm::formatv("wait on {0} parity {1} can never complete (pending arrivals {2}, "
                               "tx bytes {3})",
                               barrierName(*c.barrier), c.parity, c.barrier->pending,
                               c.barrier->tx);
      break;
    case Wait::Wgmma:
      return llvm::formatv("wgmma reached by {0} of the 128 threads of warpgroup {1}",
                           threadsWaiting(Wait::Wgmma, &s, warp.id / 4), warp.id / 4);
    case Wait::SetMaxNReg:
      return llvm::formatv("setmaxnreg reached by {0} of the 128 threads of warpgroup {1}",
                           threadsWaiting(Wait::SetMaxNReg, &s, warp.id / 4), warp.id / 4);
    case Wait::Registers: {
      int64_t wanted = 0;
      for (const Warp &w : cta_->warps)
        wanted += 32 * (w.wait == Wait::Registers ? w.want : w.registers);
      return llvm::formatv(
          "setmaxnreg.inc {0} waits for {1} registers but the block's pool holds {2}: its warps "
          "would hold {3} registers, the block has {4} ({5} per thread at launch, {6} per SM)",
          warp.want, 32 * (warp.want - warp.registers), cta_->registerPool, wanted,
          32 * initialRegisters_ * static_cast<int64_t>(cta_->warps.size()), initialRegisters_,
          limits_.registersPerSm);
    }
    }
    FSL_UNREACHABLE("a deadlock reason for a warp that does not wait");
  }

  /// "warp 3", "warps 4-7, 9"; in a cluster of several CTAs, "CTA 0 warps 0-3, CTA 1 warp 4".
  /// `ids`: (CTA rank, warp id) pairs in order.
  std::string warpList(const std::vector<std::pair<int, int>> &ids) const {
    std::string text;
    for (size_t k = 0; k < ids.size();) {
      size_t end = k;
      while (end < ids.size() && ids[end].first == ids[k].first)
        ++end;
      text += k ? ", " : "";
      if (ctas_.size() > 1)
        text += "CTA " + std::to_string(ids[k].first) + " ";
      text += end - k == 1 ? "warp " : "warps ";
      for (size_t i = k; i < end;) {
        size_t j = i;
        while (j + 1 < end && ids[j + 1].second == ids[j].second + 1)
          ++j;
        text += (i > k ? ", " : "") + std::to_string(ids[i].second) +
                (j > i ? "-" + std::to_string(ids[j].second) : std::string());
        i = j + 1;
      }
      k = end;
    }
    return text;
  }

  /// No warp can move: each waiting warp's reason, warps with the same reason together
  /// (across the CTAs of the cluster); the fault is located at the first one.
  [[noreturn]] void deadlock() {
    std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>> reasons;
    std::vector<std::pair<int, int>> finished;
    for (Cta &cta : ctas_) {
      enterCta(cta); // waitReason's
      for (const Warp &warp : cta.warps) {
        if (warp.done) {
          finished.push_back({cta.rank, warp.id});
          continue;
        }
        std::string reason = waitReason(warp);
        auto it = std::find_if(reasons.begin(), reasons.end(),
                               [&](const auto &r) { return r.first == reason; });
        if (it == reasons.end())
          reasons.push_back({std::move(reason), {{cta.rank, warp.id}}});
        else
          it->second.push_back({cta.rank, warp.id});
      }
    }
    FSL_INTERNAL_ASSERT(!reasons.empty(), "a deadlock without a waiting warp");
    std::string message = "deadlock: ";
    for (size_t i = 0; i < reasons.size(); ++i)
      message += (i ? "; " : "") + reasons[i].first + " in " + warpList(reasons[i].second);
    if (!finished.empty())
      message +=
          "; " + warpList(finished) + (finished.size() == 1 ? " has" : " have") + " finished";
    auto [rank, id] = reasons.front().second.front();
    enterCta(ctas_[rank]);
    fault(firstWaiting(cta_->warps[id]), message);
  }

  // --- Threads and their variables ------------------------------------------------------

  std::array<int64_t, 3> threadIdx(int t) const {
    return {t % block_[0], (t / block_[0]) % block_[1], t / (block_[0] * block_[1])};
  }

  [[noreturn]] void fault(int thread, const llvm::Twine &message) const {
    std::string where = llvm::formatv("block ({0}, {1}, {2})", cta_->blockIdx[0], cta_->blockIdx[1],
                                      cta_->blockIdx[2]);
    if (ctas_.size() > 1)
      where += llvm::formatv(" (CTA {0} of its cluster)", cta_->rank).str();
    if (thread >= 0) {
      std::array<int64_t, 3> tid = threadIdx(thread);
      where += llvm::formatv(", thread ({0}, {1}, {2})", tid[0], tid[1], tid[2]).str();
    }
    throw Fault(where + ": " + message.str(), true);
  }

  /// Runs `f`, adding the block and thread to a fault from the expression evaluator.
  template <typename F> auto located(int thread, F &&f) {
    try {
      return f();
    } catch (const Fault &inner) {
      if (inner.located)
        throw;
      fault(thread, inner.what());
    }
  }

  void setVariable(int t, const Var &v, double value) {
    int slot = slotTable_.find(&v);
    FSL_INTERNAL_ASSERT(slot >= 0, "a variable without a slot");
    size_t at = static_cast<size_t>(t) * slots_ + slot;
    values_[at] = value;
    bound_[at] = 1;
  }

  double builtin(int t, kir::Builtin which) {
    std::array<int64_t, 3> tid = threadIdx(t);
    switch (which) {
    case kir::Builtin::None:
      break;
    case kir::Builtin::ThreadIdxX:
      return static_cast<double>(tid[0]);
    case kir::Builtin::ThreadIdxY:
      return static_cast<double>(tid[1]);
    case kir::Builtin::ThreadIdxZ:
      return static_cast<double>(tid[2]);
    case kir::Builtin::BlockIdxX:
      return static_cast<double>(cta_->blockIdx[0]);
    case kir::Builtin::BlockIdxY:
      return static_cast<double>(cta_->blockIdx[1]);
    case kir::Builtin::BlockIdxZ:
      return static_cast<double>(cta_->blockIdx[2]);
    case kir::Builtin::BlockDimX:
      return static_cast<double>(block_[0]);
    case kir::Builtin::BlockDimY:
      return static_cast<double>(block_[1]);
    case kir::Builtin::BlockDimZ:
      return static_cast<double>(block_[2]);
    case kir::Builtin::GridDimX:
      return static_cast<double>(grid_[0]);
    }
    FSL_UNREACHABLE("a hardware index");
  }

  double variable(int t, const Var &v) {
    if (v.builtin != kir::Builtin::None)
      return builtin(t, v.builtin);
    int slot = slotTable_.find(&v);
    size_t at = slot < 0 ? 0 : static_cast<size_t>(t) * slots_ + slot;
    if (slot < 0 || !bound_[at])
      fail("variable " + v.name + " is read before it is set");
    return values_[at];
  }

  class ThreadScope : public Scope {
  public:
    ThreadScope(Interpreter &machine, int thread) : machine_(machine), thread_(thread) {}
    double variable(const Var &v) override { return machine_.variable(thread_, v); }
    double load(const Buffer &buffer, int64_t index) override {
      return machine_.element(buffer, index, thread_, /*store=*/false);
    }

  private:
    Interpreter &machine_;
    int thread_;
  };

  double value(const kir::Expr &e, int t) {
    if (!e)
      fault(t, "a statement lacks an expression it needs");
    return located(t, [&] {
      ThreadScope scope(*this, t);
      return evaluate(*e, scope);
    });
  }

  int64_t integer(const kir::Expr &e, int t, const char *what) {
    double v = value(e, t);
    return located(t, [&] { return exactInteger(v, what); });
  }

  /// An expression every thread of `mask` must agree on (a barrier's thread count, a
  /// shared allocation's offset, a wgmma operand address).
  int64_t uniform(const kir::Expr &e, const Mask &mask, const char *what) {
    int64_t first = integer(e, mask.front(), what);
    for (int t : mask)
      if (int64_t other = integer(e, t, what); other != first)
        fault(t, llvm::formatv("{0} is {1} here but {2} in thread {3} of the same block", what,
                               other, first, mask.front()));
    return first;
  }

  // --- Memory ----------------------------------------------------------------------------

  struct LocalStorage {
    int64_t elements = 0;
    std::vector<double> data;       // threads x elements
    std::vector<uint8_t> allocated; // per thread
  };
  /// The TMA load that last wrote a shared element: readable by a warp whose clock holds
  /// `phase` for mbarrier `barrier` (the load's phase completed and seen).
  struct Tag {
    int barrier = -1; // none: written by a thread, or never
    int64_t phase = 0;
  };
  struct SharedStorage {
    int64_t offset = 0; // bytes into the block's dynamic (or static) shared memory
    int64_t elements = 0;
    int64_t bytes = 0;
    bool dynamic = true;
    std::vector<double> data;
    std::vector<Tag> tags; // per element, once a TMA load wrote the buffer
  };

  /// One CTA (block) of the cluster being run: its threads' variables, its local and
  /// shared memory, its mbarriers and its warps.
  struct Cta {
    int rank = 0; // in the cluster, x fastest
    std::array<int64_t, 3> blockIdx{0, 0, 0};
    std::vector<double> values; // threads x slots
    std::vector<uint8_t> bound;
    std::unordered_map<const Buffer *, LocalStorage> locals;
    std::unordered_map<const Buffer *, SharedStorage> shared;
    int64_t staticSharedEnd = 0;
    std::map<std::pair<const Buffer *, int64_t>, MBarrier> mbarriers; // nodes stay put
    std::vector<Warp> warps;
    int64_t registerPool = 0; // registers given up by setmaxnreg.dec, not yet taken
    bool finished = false;    // every warp has finished: the CTA has exited
    /// What other CTAs did to this one's mbarriers (an arrival; a multicast load's data and
    /// bytes) that may still be in flight on the GPU: no wait of this CTA has seen the phase
    /// it counts in complete and, for an arrival, no cluster barrier has followed it. The
    /// CTA must not exit before (finishCta).
    struct Unseen {
      const MBarrier *barrier;
      int64_t phase; // the phase it counts in
      int from;      // the CTA that did it
      bool async;    // a multicast load's bytes (else an arrival)
    };
    std::vector<Unseen> unseen;
  };

  /// A read of TMA-loaded data by a warp that has not seen the load complete is a missing
  /// (or wrong-parity) mbarrier wait. The simulator's TMA completes at once, so without
  /// this the read would see the right data under this schedule only.
  void checkVisible(const Buffer &buffer, const SharedStorage &shared, int64_t at, int warp,
                    int t) {
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

  std::vector<double> &globalData(const Buffer &buffer) {
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

  std::vector<double> &globalAt(const Buffer &buffer, int t) {
    return *located(t, [&] { return &globalData(buffer); });
  }

  SharedStorage &sharedOf(const Buffer &buffer, int t) {
    auto it = cta_->shared.find(&buffer);
    if (it == cta_->shared.end())
      fault(t, "shared buffer " + buffer.name + " is used before its allocation");
    return it->second;
  }

  /// The element `index` of `buffer` as thread `t` sees it, bounds-checked.
  double &element(const Buffer &buffer, int64_t index, int t, bool store) {
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
      break;
    }
    }
    if (index < 0 || index >= size)
      fault(t, llvm::formatv("out-of-bounds {0} {1} {2}: element {3} of {4}",
                             store ? "store to" : "load from", kir::memorySpaceName(buffer.space),
                             buffer.name, index, size));
    if (sharedStorage && !sharedStorage->tags.empty()) {
      if (store)
        sharedStorage->tags[index] = Tag{}; // the thread's own value from now on
      else
        checkVisible(buffer, *sharedStorage, index, t / 32, t);
    }
    return (*data)[offset + index];
  }

  /// A vector access of `lanes` elements at `index` starts on a multiple of its size.
  void checkVectorAlignment(const Buffer &buffer, int64_t index, int64_t lanes, int t) {
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

  /// Writes of one statement by all its threads: two threads writing different values to
  /// one element is a race the GPU resolves arbitrarily.
  struct Write {
    double *target;
    double value;
    int thread;
    const Buffer *buffer;
    int64_t index;
  };
  void commit(std::vector<Write> &writes) {
    std::stable_sort(writes.begin(), writes.end(),
                     [](const Write &a, const Write &b) { return a.target < b.target; });
    for (size_t i = 1; i < writes.size(); ++i) {
      const Write &a = writes[i - 1], &b = writes[i];
      bool same = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
      if (a.target == b.target && !same)
        fault(b.thread,
              llvm::formatv("threads {0} and {1} store different values ({2}, {3}) to "
                            "{4}[{5}] in one statement: a race",
                            a.thread, b.thread, a.value, b.value, b.buffer->name, b.index));
    }
    for (const Write &w : writes)
      *w.target = w.value;
  }

  // --- Statements ------------------------------------------------------------------------

  const StmtNode &child(const StmtNode &s, size_t i) {
    if (s.body.size() <= i || !s.body[i])
      fail(kir::stmtKindName(s.kind) + " without its body");
    return *s.body[i];
  }

  int64_t hardwareExtent(kir::Axis axis) {
    switch (axis) {
    case kir::Axis::BIDx:
      return grid_[0];
    case kir::Axis::BIDy:
      return grid_[1];
    case kir::Axis::BIDz:
      return grid_[2];
    case kir::Axis::TIDx:
      return block_[0];
    case kir::Axis::TIDy:
      return block_[1];
    case kir::Axis::TIDz:
      return block_[2];
    case kir::Axis::Warpgroup:
      if (block_[0] % 128 != 0)
        fault(-1, llvm::formatv("a loop over warpgroups needs blockDim.x a multiple of 128, "
                                "not {0}",
                                block_[0]));
      return block_[0] / 128;
    }
    FSL_UNREACHABLE("axis");
  }

  int64_t hardwareIndex(kir::Axis axis, int t) {
    std::array<int64_t, 3> tid = threadIdx(t);
    switch (axis) {
    case kir::Axis::BIDx:
      return cta_->blockIdx[0];
    case kir::Axis::BIDy:
      return cta_->blockIdx[1];
    case kir::Axis::BIDz:
      return cta_->blockIdx[2];
    case kir::Axis::TIDx:
      return tid[0];
    case kir::Axis::TIDy:
      return tid[1];
    case kir::Axis::TIDz:
      return tid[2];
    case kir::Axis::Warpgroup:
      return tid[0] / 128;
    }
    FSL_UNREACHABLE("axis");
  }

  bool enterFor(Warp &warp, const StmtNode &s, LaneMask mask) {
    if (!s.var)
      fail("a loop without an index variable");
    const StmtNode &body = child(s, 0);
    if (s.loopKind == kir::LoopKind::Parallel) {
      // No loop: the index is the hardware's, and the launch must cover the extent
      // exactly (fewer would skip iterations, more would run past them unguarded).
      int64_t hardware = hardwareExtent(s.axis);
      for (int t : lanesOf(warp, mask)) {
        int64_t extent = integer(s.extent, t, "a loop extent");
        if (extent != hardware)
          fault(t, llvm::formatv("loop {0} over {1} has extent {2}, but the launch gives {3}",
                                 s.var->name, kir::axisName(s.axis), extent, hardware));
        setVariable(t, *s.var, static_cast<double>(hardwareIndex(s.axis, t)));
      }
      return enter(warp, body, mask);
    }
    // Serial, unrolled and vector loops: each lane runs its own trip count (runWarp).
    Frame frame{FrameKind::Loop, &s, mask};
    for (LaneMask m = mask; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      frame.extents[lane] = integer(s.extent, warp.first + lane, "a loop extent");
    }
    warp.stack.push_back(frame);
    return true;
  }

  void execLet(const StmtNode &s, const Mask &mask) {
    if (!s.var)
      fail(kir::stmtKindName(s.kind) + " without a variable");
    if (s.kind == StmtKind::Assign && !mutable_.count(s.var.get()))
      fault(mask.front(), "assignment to " + s.var->name + ", which is not declared mutable");
    std::vector<double> results;
    results.reserve(mask.size());
    for (int t : mask)
      results.push_back(inRegister(value(s.value, t), s.var->dtype));
    for (size_t k = 0; k < mask.size(); ++k)
      setVariable(mask[k], *s.var, results[k]);
  }

  void execAllocate(const StmtNode &s, const Mask &mask) {
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

  void allocateShared(const StmtNode &s, const Mask &mask) {
    const Buffer &buffer = *s.buffer;
    int64_t elements =
        s.count ? uniform(s.count, mask, "a shared buffer's element count") : buffer.elements();
    int64_t bytes = elements * bytesOf(buffer.dtype);
    int64_t alignment = std::max<int64_t>(buffer.alignment, 1);
    if (elements < 1)
      fault(mask.front(),
            llvm::formatv("shared buffer {0} of {1} elements", buffer.name, elements));
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
    if (offset % alignment != 0)
      fault(mask.front(), llvm::formatv("shared buffer {0} at byte offset {1} is not aligned to "
                                        "the {2} bytes it needs",
                                        buffer.name, offset, alignment));
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
  }

  void execStore(const StmtNode &s, const Mask &mask) {
    if (!s.buffer)
      fail("a store without a buffer");
    const Buffer &buffer = *s.buffer;
    std::vector<Write> writes;
    writes.reserve(mask.size());
    for (int t : mask) {
      int64_t at = integer(s.index, t, "a store index");
      double stored = eval::roundTo(value(s.value, t), buffer.dtype);
      writes.push_back({&element(buffer, at, t, true), stored, t, &buffer, at});
    }
    commit(writes);
  }

  void execVectorCopy(const StmtNode &s, const Mask &mask) {
    if (!s.buffer || !s.source)
      fail("a vector copy without its buffers");
    const Buffer &to = *s.buffer, &from = *s.source;
    int64_t lanes = s.lanes;
    for (const Buffer *b : {&to, &from}) {
      int64_t bytes = lanes * bytesOf(b->dtype);
      if (lanes < 1 || bytes > 16 || (bytes & (bytes - 1)) != 0)
        fault(mask.front(), llvm::formatv("a vector access of {0} x {1} ({2} bytes); the GPU "
                                          "has 1, 2, 4, 8 and 16",
                                          lanes, ir::dtypeName(b->dtype), bytes));
    }
    std::vector<Write> writes;
    for (int t : mask) {
      int64_t src = integer(s.sourceIndex, t, "a vector source index");
      int64_t dst = integer(s.index, t, "a vector destination index");
      checkVectorAlignment(from, src, lanes, t);
      checkVectorAlignment(to, dst, lanes, t);
      for (int64_t l = 0; l < lanes; ++l) {
        double v = eval::roundTo(element(from, src + l, t, false), to.dtype);
        writes.push_back({&element(to, dst + l, t, true), v, t, &to, dst + l});
      }
    }
    commit(writes);
  }

  /// One thread's accumulators of a reduction: `var`, then `carried`.
  using Accumulators = std::vector<double>;

  /// fsl_arg_better (device.cuh): whether (x, i) beats (b, a) in argmax (`isMax`) or
  /// argmin; index -1 is "no element yet".
  static bool argBetter(bool isMax, double x, double i, double b, double a) {
    if (a < 0)
      return true;
    if (i < 0)
      return false;
    if (std::isnan(x))
      return !(std::isnan(b) && a < i);
    return (isMax ? x > b : x < b) || (x == b && i < a);
  }

  Accumulators combine(kir::ReduceKind kind, const Accumulators &a, const Accumulators &b,
                       DType type) {
    switch (kind) {
    case kir::ReduceKind::Sum:
      return {inRegister(a[0] + b[0], type)}; // each step in the accumulator's C type
    case kir::ReduceKind::Max:
      return {std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::max(a[0], b[0])};
    case kir::ReduceKind::Min:
      return {std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::min(a[0], b[0])};
    case kir::ReduceKind::ArgMax:
    case kir::ReduceKind::ArgMin:
      return argBetter(kind == kir::ReduceKind::ArgMax, b[0], b[1], a[0], a[1]) ? b : a;
    case kir::ReduceKind::Welford: {
      // FslWelfordCombine, each operation rounded to the accumulators' type.
      if (b[0] == 0)
        return a;
      if (a[0] == 0)
        return b;
      auto r = [&](double v) { return inRegister(v, type); };
      double count = r(a[0] + b[0]);
      double share = r(b[0] / count);
      double delta = r(b[1] - a[1]);
      // An infinite mean combines as the sums would (fsl_is_inf in FslWelfordCombine).
      double mean =
          std::isinf(a[1]) || std::isinf(b[1]) ? r(a[1] + b[1]) : r(a[1] + r(delta * share));
      double m2 = r(r(a[2] + b[2]) + r(r(r(delta * delta) * a[0]) * share));
      return {count, mean, m2};
    }
    case kir::ReduceKind::MaxExpSum: {
      // FslMaxExpSumCombine: both sums rescaled to the larger maximum.
      double m = std::isnan(a[0]) || std::isnan(b[0]) ? NAN : std::max(a[0], b[0]);
      auto r = [&](double v) { return inRegister(v, type); };
      if (m == -INFINITY)
        return {m, r(a[1] + b[1])};
      double ea = r(std::exp(r(a[0] - m))), eb = r(std::exp(r(b[0] - m)));
      return {m, r(r(a[1] * ea) + r(b[1] * eb))};
    }
    }
    FSL_UNREACHABLE("reduce kind");
  }

  /// fsl_warp_reduce on the 32 values of a warp (device.cuh): a butterfly of
  /// __shfl_xor_sync at offsets 16, 8, 4, 2, 1, each lane combining its value with its
  /// partner's. The sum is commutative, so every lane ends with the same total.
  Accumulators butterfly(kir::ReduceKind kind, std::vector<Accumulators> lanes, DType type) {
    FSL_INTERNAL_ASSERT(lanes.size() == 32, "a butterfly over a partial warp");
    for (size_t offset = 16; offset > 0; offset >>= 1) {
      std::vector<Accumulators> next(32);
      for (size_t l = 0; l < 32; ++l)
        next[l] = combine(kind, lanes[l], lanes[l ^ offset], type);
      lanes = std::move(next);
    }
    return lanes[0];
  }

  /// The values of `group` combined in the order of the GPU's reduction, so that an f32
  /// sum rounds as it does there: a butterfly for a whole warp (`warp`), and for a row of
  /// a block fsl_block_reduce_x's order (warp butterflies, then a shfl_down tree over the
  /// warps' partials; without whole warps, a pairwise tree in shared memory). Other groups
  /// (a partial last warp, which the GPU does not define) in thread order.
  Accumulators total(const StmtNode &s, const std::vector<int> &group, bool warp) {
    kir::ReduceKind kind = s.reduceKind;
    DType type = s.var->dtype;
    std::vector<Accumulators> values;
    for (int t : group) {
      Accumulators own = {variable(t, *s.var)};
      for (const kir::VarPtr &carried : s.carried)
        own.push_back(variable(t, *carried));
      values.push_back(std::move(own));
    }
    size_t n = values.size();
    if (n == 32)
      return butterfly(kind, values, type);
    if (!warp && n % 32 == 0) {
      size_t warps = n / 32;
      std::vector<Accumulators> partials;
      for (size_t w = 0; w < warps; ++w)
        partials.push_back(butterfly(
            kind, std::vector<Accumulators>(values.begin() + w * 32, values.begin() + (w + 1) * 32),
            type));
      std::vector<Accumulators> lane(32);
      for (size_t l = 0; l < 32; ++l)
        lane[l] = partials[l % warps];
      for (size_t offset = 16; offset > 0; offset >>= 1) {
        std::vector<Accumulators> next = lane;
        for (size_t l = 0; l + offset < warps; ++l)
          next[l] = combine(kind, lane[l], lane[l + offset], type);
        lane = std::move(next);
      }
      return lane[0];
    }
    if (!warp) {
      for (size_t step = 1; step < n; step <<= 1)
        for (size_t x = 0; x + step < n; x += 2 * step)
          values[x] = combine(kind, values[x], values[x + step], type);
      return values[0];
    }
    Accumulators result = values.front();
    for (size_t k = 1; k < n; ++k)
      result = combine(kind, result, values[k], type);
    return result;
  }

  /// Combines the accumulators of `group` and gives every one the total.
  void reduceGroup(const StmtNode &s, const std::vector<int> &group, bool warp) {
    Accumulators result = total(s, group, warp);
    for (int t : group) {
      setVariable(t, *s.var, result[0]);
      for (size_t c = 0; c < s.carried.size(); ++c)
        setVariable(t, *s.carried[c], result[c + 1]);
    }
  }

  /// A reduction: over the lanes of the warp at once, or over the block once every warp
  /// has reached it (a barrier-like meeting; the warp that completes it combines).
  bool execReduce(Warp &warp, const StmtNode &s, LaneMask lanes) {
    const Mask &mask = lanesOf(warp, lanes);
    if (!s.var)
      fail("a reduction without an accumulator");
    if (s.scope == kir::ReduceScope::Grid)
      fault(-1, "grid reductions are not simulated yet");
    if (s.carried.size() + 1 != kir::reduceArity(s.reduceKind))
      fail("a reduction without all its accumulators");
    std::vector<const kir::Var *> accumulators = {s.var.get()};
    for (const kir::VarPtr &carried : s.carried)
      accumulators.push_back(carried.get());
    for (const kir::Var *acc : accumulators) {
      if (!mutable_.count(acc))
        fault(mask.front(), "reduction of " + acc->name + ", which is not declared mutable");
      for (int t : mask)
        located(t, [&] { return variable(t, *acc); }); // set before it is combined
    }
    if (s.scratch) {
      // The block reduction goes through this shared scratch on the GPU.
      if (s.scratch->space != MemorySpace::Shared)
        fault(mask.front(), "reduction scratch " + s.scratch->name + " is not in shared memory");
      sharedOf(*s.scratch, mask.front());
    }
    if (s.scope == kir::ReduceScope::Warp) {
      // Shuffles over all lanes of the warp (linear thread ids 32w .. 32w+31).
      if (lanes != warp.lanes)
        fault(mask.front(),
              llvm::formatv("warp reduction of {0} reached by {1} of the {2} "
                            "lanes of warp {3}",
                            s.var->name, std::popcount(lanes), std::popcount(warp.lanes), warp.id));
      reduceGroup(s, mask, /*warp=*/true);
      return true;
    }
    // BlockX: a barrier inside, so every thread of the block must come.
    if (lanes != warp.lanes)
      fault(mask.front(),
            llvm::formatv("block reduction of {0} reached by {1} of {2} threads "
                          "(a barrier in divergent code)",
                          s.var->name, std::popcount(lanes) + threadsWaiting(Wait::Reduce, &s),
                          threads_));
    await(warp, Wait::Reduce, s, lanes);
    std::vector<Warp *> met = warpsWaiting(Wait::Reduce, &s);
    if (met.size() < cta_->warps.size())
      return false;
    // Each (threadIdx.y, threadIdx.z) row combines over threadIdx.x, in the GPU's order.
    for (int64_t row = 0; row < block_[1] * block_[2]; ++row) {
      std::vector<int> group;
      for (int64_t x = 0; x < block_[0]; ++x)
        group.push_back(static_cast<int>(row * block_[0] + x));
      reduceGroup(s, group, /*warp=*/false);
    }
    release(met);
    return true;
  }

  bool execBarrier(Warp &warp, const StmtNode &s, LaneMask lanes) {
    const Mask &mask = lanesOf(warp, lanes);
    switch (s.barrierKind) {
    case kir::BarrierKind::Block: {
      // A warp whose lanes are partly elsewhere is divergent at once; the other warps
      // meet it here.
      if (lanes != warp.lanes)
        fault(mask.front(),
              llvm::formatv("__syncthreads reached by {0} of {1} threads (a "
                            "barrier in divergent code)",
                            std::popcount(lanes) + threadsWaiting(Wait::Barrier, &s), threads_));
      await(warp, Wait::Barrier, s, lanes);
      std::vector<Warp *> met = warpsWaiting(Wait::Barrier, &s);
      if (met.size() < cta_->warps.size())
        return false;
      release(met);
      return true;
    }
    case kir::BarrierKind::Named: {
      int64_t expected = uniform(s.threads, mask, "a named barrier's thread count");
      if (s.barrierId < 0 || s.barrierId > 15)
        fault(mask.front(), llvm::formatv("named barrier {0}; the GPU has 0..15", s.barrierId));
      if (expected % 32 != 0 || expected < 32)
        fault(mask.front(), llvm::formatv("named barrier {0} for {1} threads; a multiple of the "
                                          "warp size is needed",
                                          s.barrierId, expected));
      // The hardware barrier is the id: warps meet there from any statement naming it.
      std::vector<Warp *> met;
      int64_t arrived = 0;
      for (Warp &w : cta_->warps)
        if (w.wait == Wait::Named && w.at->barrierId == s.barrierId) {
          if (w.expected != expected)
            fault(mask.front(),
                  llvm::formatv("named barrier {0} for {1} threads here but {2} in warp {3}",
                                s.barrierId, expected, w.expected, w.id));
          met.push_back(&w);
          arrived += std::popcount(w.waiting);
        }
      arrived += std::popcount(lanes);
      if (arrived > expected)
        fault(mask.front(), llvm::formatv("named barrier {0} expects {1} threads but {2} arrive",
                                          s.barrierId, expected, arrived));
      await(warp, Wait::Named, s, lanes);
      warp.expected = expected;
      if (arrived < expected)
        return false;
      met.push_back(&warp);
      release(met);
      return true;
    }
    case kir::BarrierKind::Cluster: {
      // barrier.cluster.arrive.release + wait.acquire (.aligned: the warp's threads
      // together): every thread of every CTA of the cluster, at whichever cluster barrier
      // (the hardware has one). What each warp knew before is known to all after.
      if (lanes != warp.lanes) {
        int arrived = std::popcount(lanes);
        for (const Warp *w : warpsAtClusterBarrier())
          arrived += std::popcount(w->waiting);
        fault(mask.front(),
              llvm::formatv("cluster barrier reached by {0} of the {1} threads of the cluster (a "
                            "barrier in divergent code)",
                            arrived, threads_ * static_cast<int64_t>(ctas_.size())));
      }
      await(warp, Wait::Cluster, s, lanes);
      std::vector<Warp *> met = warpsAtClusterBarrier();
      if (met.size() < ctas_.size() * cta_->warps.size())
        return false;
      release(met);
      ++epoch_;
      // The arrivals on peers' barriers before it have landed (a multicast load's bytes
      // are asynchronous: only a wait on them tells).
      for (Cta &cta : ctas_)
        std::erase_if(cta.unseen, [](const Cta::Unseen &u) { return !u.async; });
      return true;
    }
    }
    FSL_UNREACHABLE("barrier kind");
  }

  // --- mbarriers ---------------------------------------------------------------------------

  std::string barrierName(const Buffer &buffer, int64_t index) {
    return llvm::formatv("{0}[{1}]", buffer.name, index).str();
  }
  /// "full[0]", and " of CTA 1" for a barrier of another CTA of the cluster.
  std::string barrierName(const MBarrier &barrier) {
    return barrierName(*barrier.buffer, barrier.index) +
           (barrier.cta != cta_->rank ? " of CTA " + std::to_string(barrier.cta) : "");
  }

  /// CTA `rank` of the cluster, whose shared memory thread `t` of this CTA reaches for
  /// `what` (a multicast TMA load, a remote arrival): a peer must not have exited.
  Cta &reach(int64_t rank, int t, const char *what) {
    if (rank < 0 || rank >= static_cast<int64_t>(ctas_.size()))
      fault(t, llvm::formatv("{0} to CTA {1} of a cluster of {2}", what, rank, ctas_.size()));
    Cta &peer = ctas_[static_cast<size_t>(rank)];
    if (&peer == cta_)
      return peer;
    if (peer.finished)
      fault(t, llvm::formatv("{0} to CTA {1}, which has exited (a missing cluster barrier at the "
                             "end of the kernel)",
                             what, rank));
    return peer;
  }

  /// Shared buffer `buffer` of CTA `peer`, which an operation of thread `t` reaches at the
  /// offset the buffer has in this CTA: the peer must have allocated it there.
  SharedStorage &peerShared(Cta &peer, const Buffer &buffer, int t) {
    SharedStorage &own = sharedOf(buffer, t);
    if (&peer == cta_)
      return own;
    auto it = peer.shared.find(&buffer);
    if (it == peer.shared.end())
      fault(t, llvm::formatv("shared buffer {0} of CTA {1} is reached before CTA {1} has "
                             "allocated it (a missing cluster barrier after the allocations "
                             "and mbarrier inits?)",
                             buffer.name, peer.rank));
    if (it->second.offset != own.offset || it->second.bytes != own.bytes)
      fault(t, llvm::formatv("shared buffer {0} is bytes [{1}, {2}) here but [{3}, {4}) in CTA "
                             "{5}; a cluster operation reaches the same offset in every CTA",
                             buffer.name, own.offset, own.offset + own.bytes, it->second.offset,
                             it->second.offset + it->second.bytes, peer.rank));
    return it->second;
  }

  /// The mbarrier at element `index` of `buffer` in CTA `in` (this one when null), as
  /// thread `t` of this CTA addresses it.
  MBarrier *findBarrier(const Buffer &buffer, int64_t index, int t, Cta *in = nullptr) {
    if (buffer.space != MemorySpace::Shared || buffer.dtype != DType::I64)
      fault(t, "mbarrier " + buffer.name + " must be an i64 (u64) slot in shared memory");
    element(buffer, index, t, false); // allocated and in bounds
    Cta &cta = in ? *in : *cta_;
    if (&cta != cta_) {
      if (!cta.shared.count(&buffer))
        return nullptr; // the peer has not come that far: no init either
      peerShared(cta, buffer, t);
    }
    auto it = cta.mbarriers.find({&buffer, index});
    return it == cta.mbarriers.end() ? nullptr : &it->second;
  }

  MBarrier &liveBarrier(const Buffer &buffer, int64_t index, int t, Cta *in = nullptr) {
    MBarrier *barrier = findBarrier(buffer, index, t, in);
    if (!in || in == cta_) {
      if (!barrier)
        fault(t, "mbarrier " + barrierName(buffer, index) + " is used before mbarrier.init");
      return *barrier;
    }
    // Another CTA's barrier: its init must be ordered before this use by a cluster barrier.
    if (!barrier || barrier->initEpoch == epoch_)
      fault(t, llvm::formatv("mbarrier {0} of CTA {1} is used by CTA {2} {3} (a missing cluster "
                             "barrier after mbarrier.init)",
                             barrierName(buffer, index), in->rank, cta_->rank,
                             barrier ? "with no cluster barrier since its init"
                                     : "before its mbarrier.init"));
    return *barrier;
  }

  /// The phase completes when its arrivals and its transaction bytes are all in.
  void settle(MBarrier &barrier) {
    if (barrier.pending == 0 && barrier.tx == 0) {
      ++barrier.phase;
      barrier.pending = barrier.expected;
      barrier.released = std::move(barrier.gathered);
      barrier.gathered.clear();
    }
  }

  void arrive(MBarrier &barrier, int t) {
    if (barrier.pending == 0)
      fault(t, llvm::formatv("mbarrier {0}: an arrival beyond the {1} its phase expects",
                             barrierName(barrier), barrier.expected));
    // What the arriving warp knows is known to whoever sees this phase complete.
    merge(barrier.gathered, cta_->warps[t / 32].clock);
    --barrier.pending;
    // Bytes may complete before the arrival that expects them (a peer's multicast), but
    // once every arrival is in the count cannot be negative.
    if (barrier.pending == 0 && barrier.tx < 0)
      fault(t, llvm::formatv("mbarrier {0}: the last arrival of its phase finds {1} transaction "
                             "bytes more completed than expected",
                             barrierName(barrier), -barrier.tx));
    settle(barrier);
  }

  bool execMBarrier(Warp &warp, const StmtNode &s, const Mask &mask) {
    if (!s.buffer)
      fail(kir::stmtKindName(s.kind) + " without its barrier");
    if (s.ctaRank && s.kind != StmtKind::MBarrierArrive)
      fault(mask.front(), kir::stmtKindName(s.kind) + " with a CTA rank (only mbarrier.arrive)");
    const Buffer &buffer = *s.buffer;
    if (s.kind == StmtKind::MBarrierWait)
      warp.conditions.clear();
    for (int t : mask) {
      int64_t index = s.index ? integer(s.index, t, "an mbarrier index") : 0;
      if (s.kind == StmtKind::MBarrierInit)
        initBarrier(s, buffer, index, t);
      else if (s.kind == StmtKind::MBarrierWait)
        waitBarrier(warp, s, buffer, index, t);
      else
        arriveBarrier(s, buffer, index, t);
    }
    if (s.kind != StmtKind::MBarrierWait || passConditions(warp))
      return true;
    LaneMask waiting = 0;
    for (int t : mask)
      waiting |= LaneMask(1) << (t - warp.first);
    await(warp, Wait::MBarrier, s, waiting);
    return false;
  }

  void initBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t) {
    int64_t count = integer(s.count, t, "an mbarrier arrival count");
    if (findBarrier(buffer, index, t))
      fault(t, "second mbarrier.init of the live barrier " + barrierName(buffer, index) +
                   " (is the init executed by more than one thread?)");
    if (count < 1 || count >= (int64_t(1) << 20))
      fault(t, llvm::formatv("mbarrier.init of {0} with {1} arrivals (1 .. 2^20-1)",
                             barrierName(buffer, index), count));
    MBarrier &barrier = cta_->mbarriers[{&buffer, index}];
    barrier.expected = barrier.pending = count;
    barrier.buffer = &buffer;
    barrier.index = index;
    barrier.cta = cta_->rank;
    barrier.initEpoch = epoch_;
    barrier.id = static_cast<int>(barrierById_.size());
    barrierById_.push_back(&barrier);
  }

  /// mbarrier.arrive (on the barrier at the same offset in CTA `ctaRank` of the cluster,
  /// if it has one), or mbarrier.arrive.expect_tx with the byte count in `count`.
  void arriveBarrier(const StmtNode &s, const Buffer &buffer, int64_t index, int t) {
    Cta *in = s.ctaRank ? &reach(integer(s.ctaRank, t, "an mbarrier.arrive CTA rank"), t,
                                 "an mbarrier arrival")
                        : nullptr;
    MBarrier &barrier = liveBarrier(buffer, index, t, in);
    if (in && in != cta_)
      in->unseen.push_back({&barrier, barrier.phase, cta_->rank, /*async=*/false});
    if (s.kind == StmtKind::MBarrierArriveExpectTx) {
      int64_t bytes = integer(s.count, t, "an expected transaction byte count");
      if (bytes < 0)
        fault(t,
              llvm::formatv("mbarrier {0} expects {1} bytes", barrierName(buffer, index), bytes));
      barrier.tx += bytes; // expect first, then arrive: the phase waits for the bytes
    }
    arrive(barrier, t);
  }

  /// Adds thread `t`'s wait to the conditions its warp waits for.
  void waitBarrier(Warp &warp, const StmtNode &s, const Buffer &buffer, int64_t index, int t) {
    MBarrier &barrier = liveBarrier(buffer, index, t);
    int64_t parity = integer(s.count, t, "an mbarrier wait parity");
    if (parity != 0 && parity != 1)
      fault(t, llvm::formatv("mbarrier wait parity {0}", parity));
    for (const Condition &c : warp.conditions)
      if (c.barrier == &barrier && c.parity == parity)
        return;
    warp.conditions.push_back({&barrier, parity});
  }

  /// Whether every condition `warp` waits for holds (each, once it held, stays passed, as a
  /// thread leaves its try_wait loop when it sees its phase complete).
  bool passConditions(Warp &warp) {
    bool all = true;
    for (Condition &c : warp.conditions) {
      if (c.passed)
        continue;
      // try_wait.parity(p) succeeds once the phase of parity p has completed, that is
      // while the current (incomplete) phase has the other parity; a fresh barrier is in
      // phase 0, so a wait on parity 1 passes at once (PTX ISA, mbarrier.test_wait/try_wait,
      // "phaseParity"). The phase seen complete is the one before the current.
      MBarrier &barrier = *c.barrier;
      if ((barrier.phase & 1) == c.parity) {
        all = false;
        continue;
      }
      c.passed = true;
      if (barrier.phase > 0) {
        // What peers did to this CTA in the phases seen complete has landed.
        std::erase_if(ctas_[warp.cta].unseen, [&](const Cta::Unseen &u) {
          return u.barrier == &barrier && u.phase < barrier.phase;
        });
        merge(warp.clock, barrier.released);
        if (warp.clock.size() <= static_cast<size_t>(barrier.id))
          warp.clock.resize(barrier.id + 1, 0);
        warp.clock[barrier.id] = std::max(warp.clock[barrier.id], barrier.phase);
      }
    }
    return all;
  }

  // --- TMA ---------------------------------------------------------------------------------

  /// The element of shared buffer `shared` that byte `relative` of a swizzled tile starting
  /// at its element 0 lands in.
  int64_t swizzledElement(const Buffer &buffer, const SharedStorage &shared, int64_t relative,
                          Swizzle swizzle) {
    int64_t address = swizzleAddress(shared.offset + relative, swizzle);
    return (address - shared.offset) / bytesOf(buffer.dtype);
  }

  void checkSwizzleBase(const Buffer &buffer, const SharedStorage &shared, Swizzle swizzle, int t) {
    if (swizzle != Swizzle::None && shared.offset % swizzleRepeat(swizzle) != 0)
      fault(t, llvm::formatv("shared buffer {0} at byte offset {1} is used with the {2}, whose "
                             "pattern repeats every {3} bytes: align it to {3}",
                             buffer.name, shared.offset, swizzleName(swizzle),
                             swizzleRepeat(swizzle)));
  }

  void tma(const StmtNode &s, int t, bool load) {
    const char *op = load ? "TMA load" : "TMA store";
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
      fault(t, llvm::formatv("tensor map {0} writes {1} with the {2}, but {1} is declared with "
                             "the {3}",
                             map.name, tile.name, swizzleName(map.swizzle),
                             swizzleName(tile.swizzle)));
    std::vector<double> &memory = globalAt(global, t);
    SharedStorage &shared = sharedOf(tile, t);
    int64_t bytes = bytesOf(global.dtype);

    std::vector<int64_t> extents(rank), coordinates(rank);
    int64_t globalElements = 1, boxElements = 1;
    for (size_t d = 0; d < rank; ++d) {
      extents[d] = integer(map.extents[d], t, "a tensor-map extent");
      coordinates[d] = integer(s.coordinates[d], t, "a TMA coordinate");
      if (extents[d] < 1)
        fault(t, llvm::formatv("tensor map {0} has extent {1} in dimension {2}", map.name,
                               extents[d], d));
      if (map.box[d] < 1 || map.box[d] > 256)
        fault(t, llvm::formatv("tensor map {0} has a box extent of {1} (1 to 256)", map.name,
                               map.box[d]));
      globalElements *= extents[d];
      boxElements *= map.box[d];
    }
    // cuTensorMapEncodeTiled's rules: a 16-byte aligned tensor with 16-byte strides, and
    // an inner box of whole 16-byte chunks.
    if ((misalign_ * bytes) % 16 != 0)
      fault(t, llvm::formatv("{0} of {1}: the tensor starts {2} bytes past a 16-byte boundary", op,
                             global.name, misalign_ * bytes));
    int64_t stride = bytes;
    for (size_t d = rank; d-- > 1;) {
      stride *= extents[d];
      if (stride % 16 != 0)
        fault(t, llvm::formatv("tensor map {0}: a stride of {1} bytes is not a multiple of 16",
                               map.name, stride));
    }
    int64_t innerBytes = map.box[rank - 1] * bytes;
    if (innerBytes % 16 != 0)
      fault(t, llvm::formatv("tensor map {0}: an inner box of {1} bytes is not a multiple of 16",
                             map.name, innerBytes));
    if (map.swizzle != Swizzle::None && innerBytes != swizzleSpan(map.swizzle))
      fault(t, llvm::formatv("tensor map {0}: an inner box of {1} bytes with the {2} is not "
                             "simulated (only boxes whose rows are the swizzle's {3} bytes)",
                             map.name, innerBytes, swizzleName(map.swizzle),
                             swizzleSpan(map.swizzle)));
    if (globalElements > static_cast<int64_t>(memory.size()))
      fault(t, llvm::formatv("tensor map {0} covers {1} elements but {2} holds {3}", map.name,
                             globalElements, global.name, memory.size()));
    int64_t start = s.index ? integer(s.index, t, "a TMA shared-memory offset") : 0;
    if ((shared.offset + start * bytes) % 128 != 0)
      fault(t, llvm::formatv("{0} at byte {1} of shared memory; TMA needs 128-byte alignment", op,
                             shared.offset + start * bytes));
    checkSwizzleBase(tile, shared, map.swizzle, t);
    // A load's data is readable once the phase its bytes count in completes: each element
    // it writes is tagged with that phase (see `clock`). A multicast load writes the same
    // elements of every CTA of its mask, and completes on the barrier of each.
    struct Destination {
      SharedStorage *shared;
      MBarrier *barrier;
    };
    std::vector<Destination> destinations;
    if (load) {
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
        SharedStorage &into = peerShared(cta, tile, t);
        if (&cta != cta_)
          cta.unseen.push_back({&barrier, barrier.phase, cta_->rank, /*async=*/true});
        if (into.tags.empty())
          into.tags.assign(static_cast<size_t>(into.elements), Tag{});
        destinations.push_back({&into, &barrier});
      }
    }

    // Walk the box in row-major order (innermost last), the order of its dense layout.
    std::vector<int64_t> position(rank, 0);
    for (int64_t linear = 0; linear < boxElements; ++linear) {
      int64_t at = swizzledElement(tile, shared, (start + linear) * bytes, map.swizzle);
      if (at < 0 || at >= shared.elements)
        fault(t, llvm::formatv("{0}: a box of {1} elements at element {2} does not fit {3} ({4} "
                               "elements)",
                               op, boxElements, start, tile.name, shared.elements));
      bool inside = true;
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t c = coordinates[d] + position[d];
        inside = inside && c >= 0 && c < extents[d];
        offset = offset * extents[d] + c;
      }
      if (load) {
        double value = inside ? memory[offset] : 0.0; // out of the tensor: zero fill
        for (const Destination &d : destinations) {
          d.shared->data[at] = value;
          d.shared->tags[at] = {d.barrier->id, d.barrier->phase + 1};
        }
      } else {
        if (!shared.tags.empty())
          checkVisible(tile, shared, at, t / 32, t);
        if (inside)
          memory[offset] = eval::roundTo(shared.data[at], global.dtype);
      }
      for (size_t d = rank; d-- > 0;) {
        if (++position[d] < map.box[d])
          break;
        position[d] = 0;
      }
    }
    for (const Destination &d : destinations) {
      MBarrier &barrier = *d.barrier;
      barrier.tx -= boxElements * bytes; // the whole box counts, zero-filled parts too
      // Before the phase's last arrival the count may go below zero (the arrival that
      // expects the bytes can come after them); after it, the bytes are too many.
      if (barrier.tx < 0 && barrier.pending == 0)
        fault(t, llvm::formatv("TMA load of {0} bytes completes on {1}, which expected {2} bytes "
                               "fewer (tx count {3})",
                               boxElements * bytes, barrierName(barrier), -barrier.tx, barrier.tx));
      settle(barrier);
    }
  }

  // --- wgmma -----------------------------------------------------------------------------

  /// Element (mn, k) of a wgmma operand tile in shared memory, `start` elements into the
  /// buffer. K-major: rows of the M (or N) dimension, each one swizzle span wide, K
  /// contiguous within the row (the canonical layout with the 8-row groups 8 spans apart).
  /// MN-major (transposed): rows of K one span apart, M (or N) contiguous within the row;
  /// wider than one span, the operand is span-wide blocks `blockBytes` apart, each with
  /// the same rows of K (PTX ISA's canonical MN-major layout: LBO between the blocks, SBO
  /// of 8 spans between 8-row groups of K). The swizzle applies to the address reached.
  double operand(const Buffer &buffer, int64_t start, bool mnMajor, int64_t blockBytes, int64_t mn,
                 int64_t k, int t, const char *which) {
    const SharedStorage &shared = sharedOf(buffer, t);
    int64_t bytes = bytesOf(buffer.dtype), span = swizzleSpan(buffer.swizzle);
    int64_t perSpan = span / bytes;
    int64_t relative =
        start * bytes + (mnMajor ? mn / perSpan * blockBytes + k * span + mn % perSpan * bytes
                                 : mn * span + k * bytes);
    int64_t at = swizzledElement(buffer, shared, relative, buffer.swizzle);
    if (at < 0 || at >= shared.elements)
      fault(t, llvm::formatv("wgmma operand {0} reads element {1} of {2} ({3} elements)", which, at,
                             buffer.name, shared.elements));
    if (!shared.tags.empty())
      for (int w = t / 32; w < t / 32 + 4; ++w) // the warpgroup of `t`, its first thread
        checkVisible(buffer, shared, at, w, w * 32);
    return shared.data[at];
  }

  /// The span-wide blocks of an operand `extent` elements along M (or N), read from
  /// element `start`: an M/N-major operand wider than a span needs their distance, which
  /// keeps each block where the swizzle's pattern starts (the descriptor's base offset is
  /// 0) and its 16 rows of K clear of the next block; the operand starts at a row's start,
  /// where the blocks are cut.
  void checkBlocks(const Buffer &buffer, bool mnMajor, int64_t blockBytes, int64_t extent,
                   int64_t start, int t, const char *which) {
    int64_t bytes = bytesOf(buffer.dtype), span = swizzleSpan(buffer.swizzle);
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
    int64_t repeat = swizzleRepeat(buffer.swizzle), rows = 16;
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

  void execWgmma(const StmtNode &s, const Mask &mask) {
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
      for (int t : members) {
        int64_t base = s.index ? integer(s.index, t, "a wgmma accumulator offset") : 0;
        for (int64_t i = 0; i < shape.n / 2; ++i) {
          auto [row, col] = wgmmaAccumulatorPosition(t % 128, i);
          double &d = element(acc, base + i, t, true);
          d = eval::roundTo((accumulate ? d : 0.0) + product[row * shape.n + col], DType::F32);
        }
      }
    }
  }

  /// The four warps of a warpgroup issue a wgmma together: the last of them to reach it
  /// runs it for all four, whose operands each warp must have seen arrive (`clock`).
  bool arriveWgmma(Warp &warp, const StmtNode &s, LaneMask lanes) {
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

  /// setmaxnreg: the same instruction by the four warps of a warpgroup (PTX ISA,
  /// setmaxnreg). Each warp then gives registers to the block's pool (dec) or takes them
  /// from it (inc), waiting until the pool holds enough: only what other warps gave up
  /// can be taken, so counts whose total exceeds the block's registers never run.
  bool execSetMaxNReg(Warp &warp, const StmtNode &s, LaneMask lanes) {
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
      if (w->registersKnown &&
          (s.increase ? s.registers < w->registers : s.registers > w->registers))
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
  bool takeRegisters(Warp &warp, int64_t want) {
    int64_t need = 32 * std::max<int64_t>(want - warp.registers, 0);
    if (need > cta_->registerPool)
      return false;
    cta_->registerPool -= need;
    warp.registers = want;
    warp.registersKnown = true;
    return true;
  }

  const kir::Kernel &kernel_;
  Memory &memory_;
  int64_t misalign_;
  const SimulatorLimits &limits_;

  std::array<int64_t, 3> grid_{1, 1, 1}, block_{1, 1, 1};
  int threads_ = 1;
  int64_t dynamicShared_ = 0;
  std::unordered_map<const Var *, int> slotOf_;
  SlotTable slotTable_; // slotOf_, for the lookups
  std::unordered_set<const Var *> mutable_;
  int slots_ = 0;
  int64_t steps_ = 0;

  // The cluster being run (one CTA without a cluster): its CTAs in rank order, the one
  // whose warp runs, the mbarriers of all of them by id, and the cluster barriers completed.
  std::array<int64_t, 3> cluster_{1, 1, 1};
  std::vector<Cta> ctas_;
  Cta *cta_ = nullptr;
  double *values_ = nullptr; // cta_->values, cta_->bound: the hottest reads
  uint8_t *bound_ = nullptr;
  std::vector<MBarrier *> barrierById_;
  int64_t epoch_ = 0;
  Mask lanes_;                   // lanesOf's
  int64_t initialRegisters_ = 0; // per thread, at launch
};

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

} // namespace

llvm::Error runKernel(const kir::Kernel &kernel, Memory &memory, int64_t misalign,
                      const SimulatorLimits &limits) {
  try {
    Interpreter(kernel, memory, misalign, limits).run();
    return llvm::Error::success();
  } catch (const Fault &fault) {
    return error("kernel " + kernel.name + ": " + fault.what());
  } catch (const std::bad_alloc &) {
    return error("kernel " + kernel.name + ": out of memory while simulating");
  } catch (const std::length_error &) {
    return error("kernel " + kernel.name + ": a buffer too large to simulate");
  }
}

llvm::Expected<eval::EvalResult> simulate(const kir::Program &program,
                                          const eval::EvalRequest &request, int64_t misalign,
                                          const SimulatorLimits &limits) {
  if (!program.fusion)
    return error("the program has no fusion");
  const ir::Fusion &fusion = *program.fusion;
  // Sizes and inputs are checked, and the extents computed, as the reference does.
  llvm::Expected<eval::EvalResult> probe = eval::evaluate(fusion, request);
  if (!probe)
    return probe.takeError();
  const std::vector<int64_t> &extents = probe->extents;

  std::map<const Var *, double> dims;
  for (size_t d = 0; d < program.dims.size() && d < extents.size(); ++d)
    if (program.dims[d])
      dims[program.dims[d].get()] = static_cast<double>(extents[d]);

  const kir::Variant *variant = nullptr;
  for (const kir::Variant &candidate : program.variants) {
    if (candidate.guard) {
      try {
        LaunchScope scope(dims);
        if (evaluate(*candidate.guard, scope) == 0)
          continue;
      } catch (const Fault &fault) {
        return error("the guard " + candidate.guardText + ": " + fault.what());
      }
    }
    variant = &candidate;
    break;
  }
  if (!variant)
    return error("no variant of " + fusion.name + " applies to these sizes");

  // Storage: the parameters (rounded to their types), the outputs (NaN until written;
  // an inout output is its parameter's storage), the workspaces (zeros).
  std::vector<std::vector<double>> storage;
  for (size_t i = 0; i < fusion.params.size(); ++i) {
    const ir::Param &param = fusion.params[i];
    std::vector<double> data = request.params[i];
    if (param.dims.empty() && data.empty() && param.defaultValue)
      data = {*param.defaultValue};
    for (double &element : data)
      element = eval::roundTo(element, param.dtype);
    storage.push_back(std::move(data));
  }
  std::vector<size_t> outputSlot;
  for (const ir::Output &output : fusion.outputs) {
    if (output.isInout) {
      outputSlot.push_back(output.paramIndex);
      continue;
    }
    outputSlot.push_back(storage.size());
    storage.emplace_back(static_cast<size_t>(eval::elementCount(output.dims, extents)), NAN);
  }
  std::map<const Buffer *, size_t> workspaceSlot;
  for (const kir::Workspace &workspace : program.workspaces) {
    int64_t elements = 0;
    try {
      LaunchScope scope(dims);
      elements = exactInteger(evaluate(*workspace.elements, scope), "a workspace size");
    } catch (const Fault &fault) {
      return error("workspace " + workspace.buffer->name + ": " + fault.what());
    }
    if (elements < 0 || elements > (int64_t(1) << 28))
      return error(llvm::formatv("workspace {0} of {1} elements: the simulator holds at most 2^28",
                                 workspace.buffer->name, elements));
    workspaceSlot[workspace.buffer.get()] = storage.size();
    // NaN, as the GPU's fresh allocation holds garbage: a read before a write shows.
    storage.emplace_back(static_cast<size_t>(elements), NAN);
  }

  for (unsigned launch : variant->launches) {
    if (launch >= program.kernels.size())
      return error(
          llvm::formatv("variant launches kernel {0} of {1}", launch, program.kernels.size()));
    const kir::Kernel &kernel = program.kernels[launch];
    std::map<const Buffer *, size_t> slotOf = workspaceSlot;
    Memory memory;
    memory.scalars = dims;
    auto tensorSlot = [&](const kir::KernelParam &param) -> llvm::Expected<size_t> {
      if (param.isOutput) {
        if (param.fusionParam >= fusion.outputs.size())
          return error(llvm::formatv("{0}: output {1} of {2}", kernel.name, param.fusionParam,
                                     fusion.outputs.size()));
        return outputSlot[param.fusionParam];
      }
      if (param.fusionParam >= fusion.params.size())
        return error(llvm::formatv("{0}: parameter {1} of {2}", kernel.name, param.fusionParam,
                                   fusion.params.size()));
      return static_cast<size_t>(param.fusionParam);
    };
    // Tensors first: a tensor map's tensor is often one of them.
    for (bool maps : {false, true}) {
      for (const kir::KernelParam &param : kernel.params) {
        const Buffer *buffer = nullptr;
        if (!maps && param.kind == kir::KernelParam::Kind::Tensor)
          buffer = param.buffer.get();
        else if (maps && param.kind == kir::KernelParam::Kind::TensorMap && param.tensorMap)
          buffer = param.tensorMap->global.get();
        if (!buffer || slotOf.count(buffer))
          continue;
        llvm::Expected<size_t> slot = tensorSlot(param);
        if (!slot)
          return slot.takeError();
        slotOf[buffer] = *slot;
      }
    }
    for (const kir::KernelParam &param : kernel.params) {
      if (param.kind == kir::KernelParam::Kind::Scalar && param.var) {
        if (param.fusionParam >= fusion.params.size() || storage[param.fusionParam].empty())
          return error(kernel.name + ": no value for scalar " + param.var->name);
        memory.scalars[param.var.get()] = storage[param.fusionParam][0];
      } else if (param.kind == kir::KernelParam::Kind::Dim && param.var &&
                 !memory.scalars.count(param.var.get())) {
        // A dimension variable of the program is bound above; another one is found by
        // the dimension's name.
        std::optional<ir::DimId> dim = fusion.findDim(param.var->name);
        if (!dim)
          return error(kernel.name + ": no dimension for parameter " + param.var->name);
        memory.scalars[param.var.get()] = static_cast<double>(extents[*dim]);
      }
    }
    // Each storage slot moves into the memory once; other buffers of the slot alias it.
    std::map<size_t, const Buffer *> owner;
    for (const auto &[buffer, slot] : slotOf) {
      auto [it, first] = owner.emplace(slot, buffer);
      if (first)
        memory.global[buffer] = std::move(storage[slot]);
      else
        memory.aliases[buffer] = it->second;
    }
    llvm::Error status = runKernel(kernel, memory, misalign, limits);
    for (const auto &[slot, buffer] : owner)
      storage[slot] = std::move(memory.global[buffer]);
    if (status)
      return status;
  }

  eval::EvalResult result;
  result.extents = extents;
  for (size_t slot : outputSlot)
    result.outputs.push_back(storage[slot]);
  return result;
}

} // namespace fsl::sim
