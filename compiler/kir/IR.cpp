// IR.cpp — node constructors, with the folding of index arithmetic as it is built.
#include "kir/IR.h"

#include <llvm/Support/CheckedArithmetic.h>

#include <limits>

#include "support/Internal.h"

#include <cmath>

namespace fsl::kir {

VarPtr makeVar(std::string name, DType dtype, Builtin builtin) {
  auto v = std::make_shared<Var>();
  v->name = std::move(name);
  v->dtype = dtype;
  v->builtin = builtin;
  return v;
}

int64_t Buffer::elements() const {
  int64_t n = 1;
  for (int64_t extent : shape)
    n *= extent;
  return n;
}

namespace {

std::shared_ptr<ExprNode> node(ExprKind kind, DType dtype) {
  auto e = std::make_shared<ExprNode>();
  e->kind = kind;
  e->dtype = dtype;
  return e;
}

bool isIntegerType(DType type) { return ir::isInteger(type); }

} // namespace

Expr constant(double value, DType dtype) {
  auto e = node(ExprKind::Const, dtype);
  e->constant = value;
  return e;
}

Expr index(int64_t value) { return constant(static_cast<double>(value), DType::I64); }

Expr var(const VarPtr &variable) {
  FSL_INTERNAL_ASSERT(variable, "var() of a null variable");
  auto e = node(ExprKind::Var, variable->dtype);
  e->var = variable;
  return e;
}

Expr unary(UnaryOp op, Expr a) {
  auto e = node(ExprKind::Unary, op == UnaryOp::Not ? DType::Bool : a->dtype);
  e->unary = op;
  e->operands = {std::move(a)};
  return e;
}

bool isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::And:
  case BinaryOp::Or:
    return true;
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::FastDiv:
  case BinaryOp::Mod:
  case BinaryOp::Min:
  case BinaryOp::Max:
  case BinaryOp::Pow:
  case BinaryOp::Xor:
    return false;
  }
  FSL_UNREACHABLE("binary op");
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  FSL_INTERNAL_ASSERT(a != nullptr && b != nullptr, "binary() of a null operand");
  auto e = node(ExprKind::Binary, isComparison(op) ? DType::Bool : a->dtype);
  e->binary = op;
  e->operands = {std::move(a), std::move(b)};
  return e;
}

Expr select(Expr condition, Expr a, Expr b) {
  auto e = node(ExprKind::Select, a->dtype);
  e->operands = {std::move(condition), std::move(a), std::move(b)};
  return e;
}

Expr cast(DType to, Expr a) {
  auto e = node(ExprKind::Cast, to);
  e->operands = {std::move(a)};
  return e;
}

Expr load(const BufferPtr &buffer, Expr at) {
  FSL_INTERNAL_ASSERT(buffer, "load() of a null buffer");
  auto e = node(ExprKind::Load, buffer->dtype);
  e->buffer = buffer;
  e->operands = {std::move(at)};
  return e;
}

int64_t integerConstant(double value) {
  // Constants are doubles: INT64_MAX rounds to 2^63, which no int64_t holds (converting it
  // is undefined); the extremes saturate, as they were meant.
  if (value >= 9223372036854775808.0)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

std::optional<int64_t> asConstant(const Expr &e) {
  if (e && e->kind == ExprKind::Const && isIntegerType(e->dtype))
    return integerConstant(e->constant);
  return std::nullopt;
}

std::optional<int64_t> foldIntegers(BinaryOp op, int64_t a, int64_t b) {
  // A result past 64 bits is not folded: the expression stays as written (static sizes
  // near 2^63 once wrapped here into negative grid sizes).
  switch (op) {
  case BinaryOp::Add:
    return llvm::checkedAdd(a, b);
  case BinaryOp::Sub:
    return llvm::checkedSub(a, b);
  case BinaryOp::Mul:
    return llvm::checkedMul(a, b);
  case BinaryOp::Div:
    return b == 0 ? std::nullopt : std::optional<int64_t>(a / b);
  case BinaryOp::Mod:
    return b == 0 ? std::nullopt : std::optional<int64_t>(a % b);
  case BinaryOp::Min:
    return std::min(a, b);
  case BinaryOp::Max:
    return std::max(a, b);
  case BinaryOp::Xor:
    return a ^ b;
  case BinaryOp::Lt:
    return a < b;
  case BinaryOp::Le:
    return a <= b;
  case BinaryOp::Gt:
    return a > b;
  case BinaryOp::Ge:
    return a >= b;
  case BinaryOp::Eq:
    return a == b;
  case BinaryOp::Ne:
    return a != b;
  case BinaryOp::And:
    return a && b;
  case BinaryOp::Or:
    return a || b;
  case BinaryOp::Pow:     // no integer power in index arithmetic
  case BinaryOp::FastDiv: // f32 only
    return std::nullopt;
  }
  FSL_UNREACHABLE("binary op");
}

namespace {

/// Folds integer arithmetic on constants and the identities of 0 and 1.
Expr foldIndex(BinaryOp op, Expr a, Expr b) {
  std::optional<int64_t> x = asConstant(a), y = asConstant(b);
  if (x && y && !isComparison(op))
    if (std::optional<int64_t> folded = foldIntegers(op, *x, *y))
      return index(*folded);
  if (op == BinaryOp::Add) {
    if (x == 0)
      return b;
    if (y == 0)
      return a;
  } else if (op == BinaryOp::Sub) {
    if (y == 0)
      return a;
  } else if (op == BinaryOp::Mul) {
    if (x == 0 || y == 0)
      return index(0);
    if (x == 1)
      return b;
    if (y == 1)
      return a;
  } else if (op == BinaryOp::Div) {
    if (y == 1)
      return a;
  } else if (op == BinaryOp::Mod) {
    if (y == 1)
      return index(0);
  }
  return binary(op, std::move(a), std::move(b));
}

} // namespace

Expr foldedBinary(BinaryOp op, Expr a, Expr b) { return foldIndex(op, std::move(a), std::move(b)); }

Expr operator+(Expr a, Expr b) { return foldIndex(BinaryOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return foldIndex(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return foldIndex(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return foldIndex(BinaryOp::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return foldIndex(BinaryOp::Mod, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return binary(BinaryOp::Lt, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return binary(BinaryOp::And, std::move(a), std::move(b));
}
Expr min(Expr a, Expr b) { return foldIndex(BinaryOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return foldIndex(BinaryOp::Max, std::move(a), std::move(b)); }

llvm::StringRef unaryName(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg:
    return "neg";
  case UnaryOp::Not:
    return "not";
  case UnaryOp::Exp:
    return "exp";
  case UnaryOp::FastExp:
    return "fast_exp";
  case UnaryOp::FastTanh:
    return "fast_tanh";
  case UnaryOp::Log:
    return "log";
  case UnaryOp::Sqrt:
    return "sqrt";
  case UnaryOp::Rsqrt:
    return "rsqrt";
  case UnaryOp::Tanh:
    return "tanh";
  case UnaryOp::Sigmoid:
    return "sigmoid";
  case UnaryOp::Erf:
    return "erf";
  case UnaryOp::Abs:
    return "abs";
  }
  FSL_UNREACHABLE("unary op");
}

llvm::StringRef binaryName(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FastDiv:
    return "fast_div";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Min:
    return "min";
  case BinaryOp::Max:
    return "max";
  case BinaryOp::Pow:
    return "pow";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Or:
    return "||";
  case BinaryOp::Xor:
    return "^";
  }
  FSL_UNREACHABLE("binary op");
}

llvm::StringRef stmtKindName(StmtKind kind) {
  switch (kind) {
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  case StmtKind::Kind:                                                                             \
    return PrintedName;
#include "kir/Stmt.def"
  }
  FSL_UNREACHABLE("statement kind");
}

llvm::StringRef stmtFieldName(StmtField field) {
  switch (field) {
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  case StmtField::Name:                                                                            \
    return #Name;
#include "kir/Stmt.def"
  }
  FSL_UNREACHABLE("statement field");
}

llvm::StringRef memorySpaceName(MemorySpace space) {
  switch (space) {
  case MemorySpace::Global:
    return "global";
  case MemorySpace::Shared:
    return "shared";
  case MemorySpace::Local:
    return "local";
  }
  FSL_UNREACHABLE("memory space");
}

int64_t swizzleSpanBytes(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return 0;
  case Swizzle::Bytes32:
    return 32;
  case Swizzle::Bytes64:
    return 64;
  case Swizzle::Bytes128:
    return 128;
  }
  FSL_UNREACHABLE("swizzle");
}

llvm::StringRef builtinName(Builtin builtin) {
  switch (builtin) {
  case Builtin::None:
    return "";
  case Builtin::ThreadIdxX:
    return "threadIdx.x";
  case Builtin::ThreadIdxY:
    return "threadIdx.y";
  case Builtin::ThreadIdxZ:
    return "threadIdx.z";
  case Builtin::BlockIdxX:
    return "blockIdx.x";
  case Builtin::BlockIdxY:
    return "blockIdx.y";
  case Builtin::BlockIdxZ:
    return "blockIdx.z";
  case Builtin::BlockDimX:
    return "blockDim.x";
  case Builtin::BlockDimY:
    return "blockDim.y";
  case Builtin::BlockDimZ:
    return "blockDim.z";
  case Builtin::GridDimX:
    return "gridDim.x";
  }
  FSL_UNREACHABLE("builtin");
}

llvm::StringRef axisName(Axis axis) {
  switch (axis) {
  case Axis::BIDx:
    return "BIDx";
  case Axis::BIDy:
    return "BIDy";
  case Axis::BIDz:
    return "BIDz";
  case Axis::TIDx:
    return "TIDx";
  case Axis::TIDy:
    return "TIDy";
  case Axis::TIDz:
    return "TIDz";
  case Axis::Warpgroup:
    return "warpgroup";
  }
  FSL_UNREACHABLE("axis");
}

bool isBlockAxis(Axis axis) {
  return axis == Axis::BIDx || axis == Axis::BIDy || axis == Axis::BIDz;
}
bool isThreadAxis(Axis axis) {
  return axis == Axis::TIDx || axis == Axis::TIDy || axis == Axis::TIDz;
}

namespace {

// The nodes of each kind, not yet shared (the convenience constructors below set more
// fields before they give them out): newFor(var, extent, ...), ...
#define FSL_STMT_SET(Field) s->Field = std::move(Field);
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  std::shared_ptr<StmtNode> new##Kind(FSL_FOR_EACH_LIST(FSL_STMT_PARAMETER, __VA_ARGS__)) {        \
    auto s = std::make_shared<StmtNode>();                                                         \
    s->kind = StmtKind::Kind;                                                                      \
    FSL_FOR_EACH(FSL_STMT_SET, __VA_ARGS__)                                                        \
    return s;                                                                                      \
  }
#include "kir/Stmt.def"
#undef FSL_STMT_SET

} // namespace

#define FSL_STMT_MOVE(Field) std::move(Field)
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  Stmt Constructor(FSL_FOR_EACH_LIST(FSL_STMT_PARAMETER, __VA_ARGS__)) {                           \
    return new##Kind(FSL_FOR_EACH_LIST(FSL_STMT_MOVE, __VA_ARGS__));                               \
  }
#include "kir/Stmt.def"
#undef FSL_STMT_MOVE

namespace {

/// A copy of `node` with `field` replaced by `value`.
template <typename T> Stmt copyWith(const Stmt &node, T StmtNode::*field, T value) {
  auto s = std::make_shared<StmtNode>(*node);
  (*s).*field = std::move(value);
  return s;
}

} // namespace

Stmt withComment(const Stmt &node, std::string comment) {
  return copyWith(node, &StmtNode::comment, std::move(comment));
}

Stmt withOrigin(const Stmt &node, Origin origin) {
  return copyWith(node, &StmtNode::origin, std::move(origin));
}

Stmt withLabel(const Stmt &node, std::string label) {
  return copyWith(node, &StmtNode::label, std::move(label));
}

Stmt block(std::vector<Stmt> statements) { return newBlock(flattenBlocks(std::move(statements))); }

std::vector<Stmt> flattenBlocks(std::vector<Stmt> statements) {
  std::vector<Stmt> result;
  for (Stmt &statement : statements) {
    if (!statement)
      continue;
    if (statement->kind == StmtKind::Block && statement->label.empty() &&
        statement->comment.empty())
      result.insert(result.end(), statement->body.begin(), statement->body.end());
    else
      result.push_back(std::move(statement));
  }
  return result;
}

Stmt forLoop(VarPtr index, Expr extent, LoopKind kind, Stmt body, Origin origin,
             std::optional<int64_t> unrollFactor) {
  auto s = newFor(std::move(index), std::move(extent), kind, Axis::BIDx, unrollFactor,
                  {std::move(body)});
  s->origin = std::move(origin);
  return s;
}

Stmt parallelLoop(VarPtr index, Expr extent, Axis axis, Stmt body, Origin origin) {
  auto s = newFor(std::move(index), std::move(extent), LoopKind::Parallel, axis, std::nullopt,
                  {std::move(body)});
  s->origin = std::move(origin);
  return s;
}

Stmt ifThen(Expr condition, Stmt then, Stmt otherwise, std::string comment) {
  std::vector<Stmt> branches = {std::move(then)};
  if (otherwise)
    branches.push_back(std::move(otherwise));
  auto s = newIf(std::move(condition), std::move(branches));
  s->comment = std::move(comment);
  return s;
}

Stmt let(VarPtr variable, Expr value, std::string comment) {
  auto s = newLet(std::move(variable), std::move(value), false);
  s->comment = std::move(comment);
  return s;
}

Stmt declare(VarPtr variable, Expr initial, std::string comment) {
  auto s = newLet(std::move(variable), std::move(initial), true);
  s->comment = std::move(comment);
  return s;
}

bool isVectorAccessSize(int64_t lanes, ir::DType dtype) {
  int64_t bytes = lanes * ir::dtypeBytes(dtype);
  return bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

Stmt allocate(BufferPtr buffer, std::string comment) {
  auto s = newAllocate(std::move(buffer), nullptr, nullptr);
  s->comment = std::move(comment);
  return s;
}

Stmt reduce(VarPtr accumulator, ReduceKind kind, ReduceScope scope, BufferPtr scratch, Expr slot) {
  return newReduce(std::move(accumulator), {}, kind, scope, std::move(scratch), slot);
}

Stmt reduceTuple(std::vector<VarPtr> accumulators, ReduceKind kind, ReduceScope scope,
                 BufferPtr scratch, Expr slot) {
  return newReduce(accumulators.front(), {accumulators.begin() + 1, accumulators.end()}, kind,
                   scope, std::move(scratch), slot);
}

size_t reduceArity(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Max:
  case ReduceKind::Min:
    return 1;
  case ReduceKind::ArgMax:
  case ReduceKind::ArgMin:
  case ReduceKind::MaxExpSum:
  case ReduceKind::SumPair:
    return 2;
  case ReduceKind::Welford:
    return 3;
  }
  FSL_UNREACHABLE("reduce kind");
}

Stmt barrier() { return newBarrier(BarrierKind::Block, 0, nullptr); }

Stmt clusterBarrier() { return newBarrier(BarrierKind::Cluster, 0, nullptr); }

Stmt gridBarrier() { return newBarrier(BarrierKind::Grid, 0, nullptr); }

Stmt withBody(const Stmt &node, std::vector<Stmt> body) {
  return copyWith(node, &StmtNode::body, std::move(body));
}

std::optional<int64_t> evaluateStatic(const Expr &e) {
  if (!e)
    return std::nullopt;
  switch (e->kind) {
  case ExprKind::Const:
    if (e->dtype == DType::Bool)
      return e->constant != 0;
    return asConstant(e);
  case ExprKind::Binary: {
    std::optional<int64_t> a = evaluateStatic(e->operands[0]), b = evaluateStatic(e->operands[1]);
    if (!a || !b || !(isIntegerType(e->dtype) || e->dtype == DType::Bool))
      return std::nullopt;
    return foldIntegers(e->binary, *a, *b);
  }
  case ExprKind::Var:
  case ExprKind::Unary:
  case ExprKind::Select:
  case ExprKind::Cast:
  case ExprKind::Load:
    return std::nullopt;
  }
  FSL_UNREACHABLE("expression kind");
}

} // namespace fsl::kir
