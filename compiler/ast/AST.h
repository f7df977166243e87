// AST.h — the syntax tree of one .fsl file.
//
// The AST mirrors the text: it keeps every declaration, parentheses the user wrote,
// literal spellings and comments, so that the canonical printer (Printer.h) can write
// the file back. Every node carries the source range it was parsed from; later phases
// point their diagnostics at these ranges. Nodes are owned by their parents through
// unique_ptr; kinds use LLVM-style RTTI (llvm::isa / llvm::dyn_cast).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Casting.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsl::ast {

/// Comments the user wrote around a node: whole-line comments before it, and one comment
/// after it on its last line.
struct Comments {
  std::vector<std::string> leading;
  std::string trailing;
  /// The source had an empty line before this node (kept, at most one, by the printer).
  bool blankLineBefore = false;
};

enum class ElementType { Bool, I32, I64, F16, BF16, F32, F64 };
llvm::StringRef elementTypeName(ElementType type);
std::optional<ElementType> parseElementType(llvm::StringRef text);

struct Name {
  std::string text;
  llvm::SMRange range;
};

struct IntLiteral {
  int64_t value = 0;
  llvm::SMRange range;
};

/// `bf16[T, H]` or, with no dimensions, a scalar `f32`.
struct Type {
  ElementType element = ElementType::F32;
  std::vector<Name> dims;
  llvm::SMRange range;
  bool isScalar() const { return dims.empty(); }
};

// ---------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------

class Expr {
public:
  enum class Kind { Literal, NameRef, Call, Cast, Unary, Binary, Paren, Index };
  virtual ~Expr() = default;
  Kind kind() const { return kind_; }
  llvm::SMRange range;

protected:
  explicit Expr(Kind kind, llvm::SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using ExprPtr = std::unique_ptr<Expr>;

class LiteralExpr : public Expr {
public:
  enum class LiteralKind { Int, Float, Bool };
  LiteralExpr(LiteralKind literalKind, std::string spelling, llvm::SMRange range)
      : Expr(Kind::Literal, range), literalKind(literalKind), spelling(std::move(spelling)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Literal; }
  LiteralKind literalKind;
  std::string spelling; // as written: 1e-6, 0.5, 4096, true
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
};

class NameExpr : public Expr {
public:
  NameExpr(Name name) : Expr(Kind::NameRef, name.range), name(std::move(name)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::NameRef; }
  Name name;
};

/// `f(a, b)` or a reduction `sum(x * x, over H)` / `max(x, over (T, H))`.
class CallExpr : public Expr {
public:
  CallExpr(Name callee, llvm::SMRange range) : Expr(Kind::Call, range), callee(std::move(callee)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Call; }
  Name callee;
  std::vector<ExprPtr> args;
  std::vector<Name> overDims; // empty when the call has no `over` clause
  llvm::SMRange overRange;
};

/// `f32(x)`: a cast is a call named by an element type.
class CastExpr : public Expr {
public:
  CastExpr(ElementType to, ExprPtr operand, llvm::SMRange range)
      : Expr(Kind::Cast, range), to(to), operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Cast; }
  ElementType to;
  ExprPtr operand;
};

enum class UnaryOp { Negate, Not };
enum class BinaryOp { Mul, Div, Add, Sub, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
llvm::StringRef unaryOpSpelling(UnaryOp op);
llvm::StringRef binaryOpSpelling(BinaryOp op);
/// Higher binds tighter; unary operators bind tighter than every binary one.
int binaryOpPrecedence(BinaryOp op);

class UnaryExpr : public Expr {
public:
  UnaryExpr(UnaryOp op, ExprPtr operand, llvm::SMRange range)
      : Expr(Kind::Unary, range), op(op), operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Unary; }
  UnaryOp op;
  ExprPtr operand;
};

class BinaryExpr : public Expr {
public:
  BinaryExpr(BinaryOp op, ExprPtr lhs, ExprPtr rhs, llvm::SMRange range, llvm::SMRange opRange)
      : Expr(Kind::Binary, range), op(op), opRange(opRange), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Binary; }
  BinaryOp op;
  llvm::SMRange opRange;
  ExprPtr lhs, rhs;
};

/// Parentheses the user wrote; kept so the printer does not remove them.
class ParenExpr : public Expr {
public:
  ParenExpr(ExprPtr inner, llvm::SMRange range)
      : Expr(Kind::Paren, range), inner(std::move(inner)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Paren; }
  ExprPtr inner;
};

/// A tensor parameter indexed along one named dimension:
///  - `x[V = label]` selects (gathers) the element at `index` along `dim`; the result
///    loses `dim` (isWindow false);
///  - `x[H2 -> H from off]` takes the window of `window`'s extent starting at `index`
///    (null: 0) along `dim`, as dimension `window` (isWindow true).
class IndexExpr : public Expr {
public:
  IndexExpr(Name base, llvm::SMRange range) : Expr(Kind::Index, range), base(std::move(base)) {}
  static bool classof(const Expr *e) { return e->kind() == Kind::Index; }
  Name base;
  Name dim;
  bool isWindow = false;
  Name window;
  ExprPtr index; // the selected index, or the window's offset (null: from 0)
};

// ---------------------------------------------------------------------------
// Fusions
// ---------------------------------------------------------------------------

/// `H = 4096` in `fusion f<H = 4096>`; the value may be left to -D or fsl.toml.
struct StaticDim {
  Name name;
  std::optional<IntLiteral> value;
  llvm::SMRange range;
};

struct Param {
  Name name;
  bool isInout = false;
  bool isStrided = false;
  Type type;
  ExprPtr defaultValue; // null when none
  llvm::SMRange range;
  Comments comments;
};

struct Output {
  Name name;
  Type type;
  llvm::SMRange range;
  Comments comments;
};

/// `let h = ...;` (isLet, optional declared type) or `y = ...;`.
struct Statement {
  bool isLet = false;
  Name target;
  std::optional<Type> declaredType;
  ExprPtr value;
  llvm::SMRange range;
  Comments comments;
};

// ---------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------

/// `H` (every tensor having H) or `y.H` (only tensor y).
struct DimRef {
  std::optional<Name> tensor;
  Name dim;
  llvm::SMRange range;
};

enum class ParallelType { BIDx, BIDy, BIDz, TIDx, TIDy, TIDz };
llvm::StringRef parallelTypeName(ParallelType type);
std::optional<ParallelType> parseParallelType(llvm::StringRef text);

enum class MemoryKind { Registers, Shared, Recompute };
llvm::StringRef memoryKindName(MemoryKind kind);

class Directive {
public:
  enum class Kind {
    Split,
    Merge,
    Reorder,
    Parallelize,
    Vectorize,
    Unroll,
    Unswitch,
    Prefetch,
    Rfactor,
    Inline,
    ComputeAt,
    ComputeWith,
    Persistent,
    Cache,
    LaunchBounds,
    MaxRRegCount,
    Pdl,
    GridSync,
    Reduce,
    FastExp,
    FastTanh,
    FastDiv,
    Mma,
    Pipeline,
    WarpSpecialize,
    Tiles,
    Cluster,
    Epilogue
  };
  virtual ~Directive() = default;
  Kind kind() const { return kind_; }
  llvm::SMRange range;
  Comments comments;

protected:
  Directive(Kind kind, llvm::SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using DirectivePtr = std::unique_ptr<Directive>;

template <Directive::Kind K> class DirectiveOf : public Directive {
public:
  static bool classof(const Directive *d) { return d->kind() == K; }

protected:
  explicit DirectiveOf(llvm::SMRange range) : Directive(K, range) {}
};

/// `split H by 8 -> (Ho, Hi)`: inner extent 8. `split H into 4 -> (Ho, Hi)`: outer extent 4.
struct SplitDirective : DirectiveOf<Directive::Kind::Split> {
  explicit SplitDirective(llvm::SMRange r) : DirectiveOf(r) {}
  DimRef dim;
  bool factorIsOuter = false; // `into`
  IntLiteral factor;
  Name outer, inner;
};

struct MergeDirective : DirectiveOf<Directive::Kind::Merge> {
  explicit MergeDirective(llvm::SMRange r) : DirectiveOf(r) {}
  DimRef first, second;
  Name result;
};

struct ReorderDirective : DirectiveOf<Directive::Kind::Reorder> {
  explicit ReorderDirective(llvm::SMRange r) : DirectiveOf(r) {}
  std::vector<DimRef> order;
};

struct ParallelBinding {
  DimRef dim;
  ParallelType type;
  llvm::SMRange typeRange;
};

struct ParallelizeDirective : DirectiveOf<Directive::Kind::Parallelize> {
  explicit ParallelizeDirective(llvm::SMRange r) : DirectiveOf(r) {}
  std::vector<ParallelBinding> bindings;
};

/// vectorize / unswitch / prefetch / rfactor: a directive naming one loop.
template <Directive::Kind K> struct LoopDirective : DirectiveOf<K> {
  explicit LoopDirective(llvm::SMRange r) : DirectiveOf<K>(r) {}
  DimRef dim;
};
using VectorizeDirective = LoopDirective<Directive::Kind::Vectorize>;
using UnswitchDirective = LoopDirective<Directive::Kind::Unswitch>;
using PrefetchDirective = LoopDirective<Directive::Kind::Prefetch>;
using RfactorDirective = LoopDirective<Directive::Kind::Rfactor>;

struct UnrollDirective : DirectiveOf<Directive::Kind::Unroll> {
  explicit UnrollDirective(llvm::SMRange r) : DirectiveOf(r) {}
  DimRef dim;
  std::optional<IntLiteral> factor; // none: unroll fully
};

/// `inline all;` or `inline t;`
struct InlineDirective : DirectiveOf<Directive::Kind::Inline> {
  explicit InlineDirective(llvm::SMRange r) : DirectiveOf(r) {}
  std::optional<Name> tensor; // none: all
};

struct ComputeAtDirective : DirectiveOf<Directive::Kind::ComputeAt> {
  explicit ComputeAtDirective(llvm::SMRange r) : DirectiveOf(r) {}
  Name tensor;
  DimRef at;
};

struct ComputeWithDirective : DirectiveOf<Directive::Kind::ComputeWith> {
  explicit ComputeWithDirective(llvm::SMRange r) : DirectiveOf(r) {}
  Name tensor;
};

/// `persistent t in registers|shared|recompute` and `cache t in shared|registers`.
template <Directive::Kind K> struct MemoryDirective : DirectiveOf<K> {
  explicit MemoryDirective(llvm::SMRange r) : DirectiveOf<K>(r) {}
  Name tensor;
  MemoryKind memory = MemoryKind::Registers;
  llvm::SMRange memoryRange;
};
using PersistentDirective = MemoryDirective<Directive::Kind::Persistent>;
using CacheDirective = MemoryDirective<Directive::Kind::Cache>;

/// launch_bounds N / maxrregcount N.
template <Directive::Kind K> struct CountDirective : DirectiveOf<K> {
  explicit CountDirective(llvm::SMRange r) : DirectiveOf<K>(r) {}
  IntLiteral value;
};
using LaunchBoundsDirective = CountDirective<Directive::Kind::LaunchBounds>;
using MaxRRegCountDirective = CountDirective<Directive::Kind::MaxRRegCount>;

struct PdlDirective : DirectiveOf<Directive::Kind::Pdl> {
  explicit PdlDirective(llvm::SMRange r) : DirectiveOf(r) {}
};

/// `reduce one_pass;` or `reduce two_pass;`: softmax's and LayerNorm's reduction pairs in
/// one pass over the row (online softmax, Welford), or one pass a reduction.
struct ReduceDirective : DirectiveOf<Directive::Kind::Reduce> {
  explicit ReduceDirective(llvm::SMRange r) : DirectiveOf(r) {}
  bool onePass = false;
};

/// `grid_sync;`: a grid reduction's blocks meet at a grid barrier and finish it in the
/// same kernel (a cooperative launch) instead of a second kernel.
struct GridSyncDirective : DirectiveOf<Directive::Kind::GridSync> {
  explicit GridSyncDirective(llvm::SMRange r) : DirectiveOf(r) {}
};

/// `fast_exp;`: f32 exp through the hardware's approximate base-2 exponential.
struct FastExpDirective : DirectiveOf<Directive::Kind::FastExp> {
  explicit FastExpDirective(llvm::SMRange r) : DirectiveOf(r) {}
};

/// `fast_tanh;`: f32 tanh through the hardware's approximate tanh.
struct FastTanhDirective : DirectiveOf<Directive::Kind::FastTanh> {
  explicit FastTanhDirective(llvm::SMRange r) : DirectiveOf(r) {}
};

/// `fast_div;`: f32 division as the hardware's full-range approximate division.
struct FastDivDirective : DirectiveOf<Directive::Kind::FastDiv> {
  explicit FastDivDirective(llvm::SMRange r) : DirectiveOf(r) {}
};

struct IntTuple {
  std::vector<IntLiteral> values;
  llvm::SMRange range;
};

/// `mma over K: tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16);`, with
/// `, swap_ab` after the instruction when its 64 rows run along N (the operands swapped).
struct MmaDirective : DirectiveOf<Directive::Kind::Mma> {
  explicit MmaDirective(llvm::SMRange r) : DirectiveOf(r) {}
  Name reductionDim;
  IntTuple ctaTile, warpTile;
  Name instruction;
  IntTuple instructionShape;
  bool swapAB = false;
  llvm::SMRange swapABRange; // the `swap_ab` word, when written
};

/// `pipeline 4 stages via tma;`
struct PipelineDirective : DirectiveOf<Directive::Kind::Pipeline> {
  explicit PipelineDirective(llvm::SMRange r) : DirectiveOf(r) {}
  IntLiteral stages;
  bool viaTma = false;
};

/// `warp_specialize producer(regs 40), consumers(2, regs 232);`
struct WarpSpecializeDirective : DirectiveOf<Directive::Kind::WarpSpecialize> {
  explicit WarpSpecializeDirective(llvm::SMRange r) : DirectiveOf(r) {}
  IntLiteral producerRegs, consumerCount, consumerRegs;
};

enum class TileOrderKind { OnePerCta, Persistent, StreamK, SplitK };

/// `tiles one_per_cta | persistent [swizzle N | hilbert B] | stream_k [swizzle N | hilbert B]
/// | split_k N;`
struct TilesDirective : DirectiveOf<Directive::Kind::Tiles> {
  explicit TilesDirective(llvm::SMRange r) : DirectiveOf(r) {}
  TileOrderKind order = TileOrderKind::OnePerCta;
  std::optional<IntLiteral> parameter; // swizzle N, hilbert B or split_k N
  bool hilbert = false;                // the parameter is a Hilbert block's side
};

/// `cluster (2, 1) multicast;`
struct ClusterDirective : DirectiveOf<Directive::Kind::Cluster> {
  explicit ClusterDirective(llvm::SMRange r) : DirectiveOf(r) {}
  IntTuple shape;
  bool multicast = false;
};

enum class EpilogueKind { Registers, Shared, SharedTmaStore };

/// `epilogue via registers | shared [tma_store] [, tile (BM, C)];`
struct EpilogueDirective : DirectiveOf<Directive::Kind::Epilogue> {
  explicit EpilogueDirective(llvm::SMRange r) : DirectiveOf(r) {}
  EpilogueKind via = EpilogueKind::Registers;
  /// `, tile (BM, C)`: the output tile goes out C columns at a time (empty: whole).
  std::optional<IntTuple> tile;
};

/// `T < 132` (or `H % 8 == 0`: a divisibility condition) in a `when` guard.
struct SizeCondition {
  Name dim;
  std::optional<IntLiteral> modulus; // `% N`: the comparison is of the remainder
  BinaryOp op = BinaryOp::Lt;
  IntLiteral bound;
  llvm::SMRange range;
};

/// `static_bdimx = true;` inside `= auto(kind) { ... }`.
struct Knob {
  Name name;
  ExprPtr value; // always a LiteralExpr
  llvm::SMRange range;
  Comments comments;
};

// ---------------------------------------------------------------------------
// Declarations
// ---------------------------------------------------------------------------

class Decl {
public:
  enum class Kind { Import, Fn, Fusion, Schedule };
  virtual ~Decl() = default;
  Kind kind() const { return kind_; }
  llvm::SMRange range;
  Comments comments;
  /// Comments after the last item of a braced body, before its `}`.
  std::vector<std::string> endComments;

protected:
  Decl(Kind kind, llvm::SMRange range) : range(range), kind_(kind) {}

private:
  Kind kind_;
};
using DeclPtr = std::unique_ptr<Decl>;

class ImportDecl : public Decl {
public:
  explicit ImportDecl(llvm::SMRange r) : Decl(Kind::Import, r) {}
  static bool classof(const Decl *d) { return d->kind() == Kind::Import; }
  std::string spelling; // with quotes and escapes, as written
  std::string path;     // unescaped
  llvm::SMRange pathRange;
};

class FnDecl : public Decl {
public:
  explicit FnDecl(llvm::SMRange r) : Decl(Kind::Fn, r) {}
  static bool classof(const Decl *d) { return d->kind() == Kind::Fn; }
  Name name;
  std::vector<Name> params;
  ExprPtr body;
};

class FusionDecl : public Decl {
public:
  explicit FusionDecl(llvm::SMRange r) : Decl(Kind::Fusion, r) {}
  static bool classof(const Decl *d) { return d->kind() == Kind::Fusion; }
  Name name;
  std::vector<StaticDim> staticDims;
  std::vector<Param> params;
  std::vector<Output> outputs;
  /// `backward g, h`: the fusions of this file that compute the gradients of the
  /// inputs (sema checks the pairing, docs/language.md "Gradients"); empty: none.
  std::vector<Name> backward;
  /// `grad_residual = grad_x` in the same clause: input residual's gradient is input x's
  /// (add's two operands), which a backward fusion then computes and writes once.
  struct SameGradient {
    Name target, source;
    llvm::SMRange range;
  };
  std::vector<SameGradient> sameGradients;
  std::vector<Statement> body;
};

class ScheduleDecl : public Decl {
public:
  explicit ScheduleDecl(llvm::SMRange r) : Decl(Kind::Schedule, r) {}
  static bool classof(const Decl *d) { return d->kind() == Kind::Schedule; }
  Name fusion;
  std::vector<SizeCondition> when; // conjunction; empty: always
  bool isAuto = false;
  // Explicit schedules:
  std::vector<DirectivePtr> directives;
  // `= auto(kind) { knobs }`:
  std::optional<Name> autoKind;
  std::vector<Knob> knobs;
};

struct File {
  std::string path;
  std::vector<DeclPtr> decls;
  std::vector<std::string> endComments; // after the last declaration
};

} // namespace fsl::ast
