// IR.h — the Kernel IR: a program of kernels whose bodies are statements and expressions.
//
// Lowering builds it from the Schedule IR and the Fusion IR and rewrites it by passes
// (lower/Passes.h); the CUDA printer (codegen/) and the simulator (sim/) are two visitors
// of the same nodes, so whatever the printer emits the simulator executes.
//
// Shape, after Halide's Stmt/Expr and nvFuser's kernel IR:
//   Program  = kernels + global workspaces + variants (a guard and a launch sequence)
//   Kernel   = parameters + launch shape (expressions) + body
//   body     = a tree of statements (loops, if, let, allocations, loads/stores, reductions,
//              barriers, and the Hopper asynchronous operations) over typed expressions.
// Nodes are immutable and shared (`std::shared_ptr<const ...>`): a pass that changes a
// subtree rebuilds the path to it (see Mutator.h), so two variants can share what they
// have in common. Every node kind is listed in an enum, and every switch over it is
// exhaustive (no `default:`), so a new node cannot be silently skipped by a visitor.
// Statements are defined once, in Stmt.def: each kind with the fields it uses, from which
// StmtNode, the typed constructors, the walks (Mutator.h) and the verifier's field check
// are generated.
//
// Values: an expression of a floating type is a number of that type; bf16 and f16 values
// live in f32 registers (CUDA) or doubles rounded to their type (simulator). An operation
// of type bf16/f16 is computed in f32 and rounded to its type; of type f32 or f64, in
// that type. A load from a bf16 buffer gives a bf16 value; a store to a bf16 buffer
// rounds the value it is given once (an f32 value stored there is rounded by the store).
// Integer expressions (indices, I64) are exact; Div and Mod truncate toward zero.
#pragma once

#include "ir/FusionIR.h"
#include "kir/ForEach.h"

#include <llvm/Support/SMLoc.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsl::kir {

using ir::DType;

// --- Variables and buffers -------------------------------------------------------

/// Hardware indices a variable can stand for.
enum class Builtin {
  None,
  ThreadIdxX,
  ThreadIdxY,
  ThreadIdxZ,
  BlockIdxX,
  BlockIdxY,
  BlockIdxZ,
  BlockDimX,
  BlockDimY,
  BlockDimZ,
  GridDimX, // the launched grid: a persistent kernel's launcher may shrink it
};

/// A scalar variable: a loop index, a let binding, an accumulator, a kernel parameter
/// (runtime dimension or scalar), or a hardware index. Identity is the object: two
/// variables may share a name only in disjoint scopes.
struct Var {
  std::string name;
  DType dtype = DType::I64;
  Builtin builtin = Builtin::None;
};
using VarPtr = std::shared_ptr<const Var>;
VarPtr makeVar(std::string name, DType dtype, Builtin builtin = Builtin::None);
/// `threadIdx.x`, `blockDim.y`, ... (empty for None).
llvm::StringRef builtinName(Builtin builtin);

enum class MemorySpace {
  Global, // a kernel parameter or a workspace of the program
  Shared, // per block
  Local,  // per thread (registers when indexed by constants after unrolling)
};

/// Shared-memory layouts: the 16-byte chunks of each 128/64/32-byte row are permuted by
/// XOR with the row index, as TMA and wgmma expect (CU_TENSOR_MAP_SWIZZLE_*).
enum class Swizzle { None, Bytes32, Bytes64, Bytes128 };

llvm::StringRef memorySpaceName(MemorySpace space); // global, shared, local
/// Bytes of one swizzled row (128, 64, 32; 0 for None): the widest inner extent a TMA box
/// writes with the swizzle, and the width of one block of an M/N-major wgmma operand.
int64_t swizzleSpanBytes(Swizzle swizzle);

struct Buffer {
  std::string name;
  DType dtype = DType::F32;
  MemorySpace space = MemorySpace::Local;
  /// Elements: static for shared and local buffers, empty for global ones (their size
  /// comes from the tensor the launcher checks).
  std::vector<int64_t> shape;
  Swizzle swizzle = Swizzle::None;
  /// Global: the kernel writes it (no `const`, no `__restrict__` when aliased).
  bool written = false;
  /// Global: an inout parameter (read and written through one pointer).
  bool inout = false;
  /// Shared: bytes of alignment the allocation needs (TMA destinations: 128 or 1024).
  int64_t alignment = 16;
  int64_t elements() const;
};
using BufferPtr = std::shared_ptr<const Buffer>;

// --- Expressions -----------------------------------------------------------------

enum class ExprKind { Const, Var, Unary, Binary, Select, Cast, Load };

/// FastExp: e^x of an f32 as exp2 of the f32 product x * log2(e) through the hardware's
/// approximate base-2 exponential (CUDA's __expf; `fast_exp` in a schedule).
/// FastTanh: tanh of an f32 by the hardware's tanh.approx.f32 (`fast_tanh`).
enum class UnaryOp { Neg, Not, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Abs, FastExp, FastTanh };

/// Div and Mod on integers round toward zero (C); on floats Div is IEEE division.
/// Min and Max on floats propagate NaN (the reference's semantics).
/// Xor: bitwise exclusive or of non-negative integers (swizzled shared-memory addresses).
/// FastDiv: f32 division by the hardware's full-range approximation (div.full.f32, within
/// 2 ulp; `fast_div` in a schedule).
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  FastDiv,
  Mod,
  Min,
  Max,
  Pow,
  Xor,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind = ExprKind::Const;
  DType dtype = DType::I64;
  double constant = 0;             // Const (integers are exact up to 2^53)
  VarPtr var;                      // Var
  UnaryOp unary = UnaryOp::Neg;    // Unary
  BinaryOp binary = BinaryOp::Add; // Binary
  std::vector<Expr>
      operands;     // Unary 1, Binary 2, Select 3 (cond, then, else), Cast 1, Load 1 (index)
  BufferPtr buffer; // Load: element `operands[0]` of `buffer`
};

Expr constant(double value, DType dtype);
Expr index(int64_t value); // an I64 constant
Expr var(const VarPtr &variable);
Expr unary(UnaryOp op, Expr a);
Expr binary(BinaryOp op, Expr a, Expr b); // the type of `a` (comparisons: Bool)
Expr select(Expr condition, Expr a, Expr b);
Expr cast(DType to, Expr a);
Expr load(const BufferPtr &buffer, Expr index);
// Index arithmetic, folded as it is built (see Simplify.h for the full simplifier).
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
/// `a op b` on integers (comparisons give 0 or 1); none for a division by zero or Pow.
std::optional<int64_t> foldIntegers(BinaryOp op, int64_t a, int64_t b);
/// `binary(op, a, b)` with constants folded and the identities of 0 and 1 applied.
Expr foldedBinary(BinaryOp op, Expr a, Expr b);
/// The value of a constant expression, if it is one.
std::optional<int64_t> asConstant(const Expr &e);
/// An integer constant's value (constants are doubles): the int64 extremes saturate.
int64_t integerConstant(double value);
bool isComparison(BinaryOp op);
llvm::StringRef unaryName(UnaryOp op);
llvm::StringRef binaryName(BinaryOp op);

// --- Statements ------------------------------------------------------------------

/// Every statement kind, in Stmt.def's order.
enum class StmtKind {
#define STMT_KIND(Kind, PrintedName, Constructor, ...) Kind,
#include "kir/Stmt.def"
};
llvm::StringRef stmtKindName(StmtKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

/// Where a statement comes from in the user's text, for comments and late diagnostics.
struct Origin {
  std::string text;    // "split Ho by 64 -> (Hp, Hx)", "persistent h in registers"
  llvm::SMRange range; // the directive (empty: none)
};

enum class LoopKind {
  Serial,
  Unrolled,   // `#pragma unroll` (fully, or by `unrollFactor`)
  Vectorized, // the lanes of one vector access; extent static
  Parallel,   // bound to `axis`: no loop, the index is a hardware index
};

enum class Axis { BIDx, BIDy, BIDz, TIDx, TIDy, TIDz, Warpgroup };
llvm::StringRef axisName(Axis axis);
bool isBlockAxis(Axis axis);
bool isThreadAxis(Axis axis);

/// Sum, Max, Min: one accumulator. ArgMax, ArgMin: two, the value (`var`) and its index
/// (`carried[0]`, i64), combined as one pair: the better value wins, the lower index on
/// ties, and a NaN beats every number (the first NaN wins), as the evaluator defines them.
/// Welford: three, the count (`var`), the mean and M2 (the sum of squared differences
/// from the mean) of the values so far, combined by Chan et al.'s parallel formula.
/// MaxExpSum: two, the maximum m (`var`) and the sum of exp(x - m) over the values so far,
/// each sum rescaled by exp(m_part - m) when the maximum grows (online softmax).
/// SumPair: two independent sums of one type (`var` and `carried[0]`), combined in one
/// pass: two block reductions of a phase that need one barrier instead of two.
enum class ReduceKind { Sum, Max, Min, ArgMax, ArgMin, Welford, MaxExpSum, SumPair };
/// How many accumulators a reduction of `kind` combines (`var` and `carried`).
size_t reduceArity(ReduceKind kind);
/// Who combines: the lanes of a warp, the threads of a block along threadIdx.x (each
/// (threadIdx.y, threadIdx.z) row separately), or the blocks of a grid (through a
/// global workspace; needs a cooperative or a second kernel).
enum class ReduceScope { Warp, BlockX, Grid };

/// Block: __syncthreads. Named: `barrierId` among `threads` threads. Cluster: every thread
/// of every CTA of the thread-block cluster arrives (release) and waits (acquire), so what
/// each CTA did before it (mbarrier inits, writes) is seen by all after it; a kernel with
/// one needs a cluster in its launch (LaunchShape::cluster). Grid: every thread of every
/// block of the grid, the same way (release, then acquire at GPU scope); a kernel with one
/// needs a cooperative launch (LaunchShape::cooperative), which keeps every block resident.
enum class BarrierKind { Block, Named, Cluster, Grid };
enum class GridDependencyOp { WaitAndLaunchDependents, Wait, LaunchDependents };

/// One wgmma operand or accumulator layout (m64nNk16, bf16/f16 inputs, f32 accumulate).
struct WgmmaShape {
  int m = 64, n = 0, k = 16;
  bool operator==(const WgmmaShape &) const = default;
};

/// A TMA tensor map: what `cp.async.bulk.tensor` reads or writes, and how.
struct TensorMap {
  std::string name;          // the kernel parameter holding the CUtensorMap
  BufferPtr global;          // the tensor in global memory
  std::vector<Expr> extents; // of the global tensor, innermost last
  std::vector<int64_t> box;  // the tile, innermost last
  Swizzle swizzle = Swizzle::None;
};
using TensorMapPtr = std::shared_ptr<const TensorMap>;

/// The fields of StmtNode, one enumerator each, named as the member (Stmt.def).
enum class StmtField {
#define STMT_FIELD(Name, Type, Default, Role) Name,
#include "kir/Stmt.def"
};
/// What the walks do with a field (Stmt.def's header says what each role means).
enum class StmtFieldRole { Common, Stmts, Expr, Exprs, Buffer, Var, Vars, TensorMap, Attr };

constexpr StmtFieldRole stmtFieldRole(StmtField field) {
  switch (field) {
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  case StmtField::Name:                                                                            \
    return StmtFieldRole::Role;
#include "kir/Stmt.def"
  }
  return StmtFieldRole::Attr; // not reached: the switch covers every field
}

/// Whether statements of `kind` use `field` (Stmt.def lists it for the kind, or it is a
/// Common one); a field a kind does not use holds its default (the verifier checks it).
constexpr bool stmtKindUses(StmtKind kind, StmtField field) {
  if (stmtFieldRole(field) == StmtFieldRole::Common)
    return true;
#define FSL_STMT_IS_FIELD(Field) || field == StmtField::Field
  switch (kind) {
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  case StmtKind::Kind:                                                                             \
    return false FSL_FOR_EACH(FSL_STMT_IS_FIELD, __VA_ARGS__);
#include "kir/Stmt.def"
  }
#undef FSL_STMT_IS_FIELD
  return false; // not reached: the switch covers every kind
}
llvm::StringRef stmtFieldName(StmtField field);

/// A statement: one struct for every kind, whose fields are the union of the kinds' (each
/// kind's are listed in Stmt.def, with what each field means there).
struct StmtNode {
#define STMT_FIELD(Name, Type, Default, Role) Type Name = Default;
#include "kir/Stmt.def"
};

/// One constructor a kind, named in Stmt.def and taking exactly the fields the kind uses,
/// in the order listed there: `wgmma(shape, inputType, buffer, index, operandA, offsetA,
/// transposeA, blockBytesA, operandB, offsetB, transposeB, blockBytesB, accumulate)`,
/// `tmaLoad(tensorMap, coordinates, buffer, index, barrier, barrierIndex, multicastMask)`,
/// `mbarrierWait(buffer, index, count)`, `store(buffer, index, value)`, ...
#define FSL_STMT_PARAMETER(Field) decltype(StmtNode::Field) Field
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  Stmt Constructor(FSL_FOR_EACH_LIST(FSL_STMT_PARAMETER, __VA_ARGS__));
#include "kir/Stmt.def"

/// Copies of `node` with one of the Common fields (any kind has them) replaced, the kind
/// and its fields as they are: the comment printed next to it, where it comes from, the
/// label passes find it by.
Stmt withComment(const Stmt &node, std::string comment);
Stmt withOrigin(const Stmt &node, Origin origin);
Stmt withLabel(const Stmt &node, std::string label);

// Constructors for common cases, built on the ones above.

/// A sequence of statements, which is also a scope (C's braces). Unlabelled blocks among
/// `statements` are spliced in: grouping alone makes no scope.
Stmt block(std::vector<Stmt> statements);
std::vector<Stmt> flattenBlocks(std::vector<Stmt> statements);
/// `unrollFactor`: `#pragma unroll N` for an Unrolled loop (none: fully).
Stmt forLoop(VarPtr index, Expr extent, LoopKind kind, Stmt body, Origin origin = {},
             std::optional<int64_t> unrollFactor = std::nullopt);
Stmt parallelLoop(VarPtr index, Expr extent, Axis axis, Stmt body, Origin origin = {});
Stmt ifThen(Expr condition, Stmt then, Stmt otherwise = nullptr, std::string comment = {});
Stmt let(VarPtr variable, Expr value, std::string comment = {});
Stmt declare(VarPtr variable, Expr initial, std::string comment = {}); // mutable
Stmt allocate(BufferPtr buffer, std::string comment = {});
/// The sizes one vector access moves (`fsl_load_vector`/`fsl_store_vector`): a VectorCopy
/// of `lanes` elements of `dtype` must be one of them.
bool isVectorAccessSize(int64_t lanes, ir::DType dtype);
Stmt reduce(VarPtr accumulator, ReduceKind kind, ReduceScope scope, BufferPtr scratch, Expr slot);
/// A reduction of several accumulators combined together (`reduceArity(kind)` of them,
/// the first one `var`).
Stmt reduceTuple(std::vector<VarPtr> accumulators, ReduceKind kind, ReduceScope scope,
                 BufferPtr scratch, Expr slot);
Stmt barrier();
Stmt clusterBarrier(); // BarrierKind::Cluster
Stmt gridBarrier();    // BarrierKind::Grid
/// A copy of `node` with other children (the same kind and fields otherwise).
Stmt withBody(const Stmt &node, std::vector<Stmt> body);

// --- Kernels and programs ----------------------------------------------------------

struct KernelParam {
  /// Stride: the runtime stride, in elements, of an outer axis of a `strided` input (its
  /// innermost axis has stride 1 and takes none).
  enum class Kind { Tensor, Scalar, Dim, TensorMap, Stride };
  Kind kind = Kind::Tensor;
  BufferPtr buffer;         // Tensor
  VarPtr var;               // Scalar, Dim, Stride
  TensorMapPtr tensorMap;   // TensorMap
  unsigned fusionParam = 0; // Tensor/Scalar/Stride: index into the fusion's parameters (or outputs)
  unsigned axis = 0;        // Stride: the tensor's axis, outermost 0
  bool isOutput = false;    // Tensor: an output of the fusion (not an inout parameter)
};

/// How a kernel is launched: every extent an expression over the runtime dimensions.
struct LaunchShape {
  std::array<Expr, 3> grid, block, cluster;
  /// Dynamic shared memory in bytes.
  Expr sharedBytes;
  std::optional<int64_t> maxThreads;     // __launch_bounds__
  std::optional<int64_t> minBlocksPerSm; // __launch_bounds__, second argument
  std::optional<int64_t> maxRegisters;   // __maxnreg__
  std::string registerNote;              // "maxrregcount 64"
  /// A persistent kernel (it reads gridDim.x): grid.x is an upper bound, which the
  /// launcher lowers to the clusters (of cluster.x CTAs) the device holds at once.
  bool gridFromOccupancy = false;
  /// A persistent kernel's CTAs when every SM runs one (fewer with clusters): a grid
  /// below it leaves SMs idle and goes without programmatic dependent launch (two such
  /// launches in a row ran up to 1.35x faster without it; docs/performance.md, run S27F).
  std::optional<int64_t> fullGrid;
  /// A cooperative launch: every block of the grid is resident at once (the driver refuses
  /// a grid the device cannot hold), so the blocks may meet at a grid barrier.
  bool cooperative = false;
};

struct Kernel {
  std::string name;
  std::string comment; // "schedule of rms_norm_add when T < 132"
  std::vector<KernelParam> params;
  LaunchShape launch;
  Stmt body;
  Origin origin; // the schedule block
};

/// One way of running the fusion: launched when `guard` holds (null: always).
struct Variant {
  Expr guard;
  std::string guardText;          // "T < 132"
  std::vector<unsigned> launches; // indices into Program::kernels, in order
};

/// A global temporary the launcher allocates for one call (stream-ordered) and frees after
/// the variant's launches: a split-K product's partial tiles, say.
struct Workspace {
  BufferPtr buffer;
  Expr elements; // over the runtime dimensions
  std::string comment;
};

struct Program {
  const ir::Fusion *fusion = nullptr; // the signature the launcher checks
  /// Per fusion dimension: the variable of a runtime size (a kernel parameter the
  /// launcher takes from the tensors), null for a static one (a constant in the IR).
  std::vector<VarPtr> dims;
  std::vector<Kernel> kernels;
  std::vector<Workspace> workspaces; // global temporaries the launcher allocates
  std::vector<Variant> variants;     // guarded ones first, tried in order
};

/// The static value of an expression over dimension variables, if it has one.
std::optional<int64_t> evaluateStatic(const Expr &e);

} // namespace fsl::kir
