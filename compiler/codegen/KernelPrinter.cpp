// KernelPrinter.cpp — Kernel IR statements and expressions as CUDA text.
#include "codegen/KernelPrinter.h"

#include "codegen/Naming.h"

#include "kir/Layout.h"
#include "kir/Mutator.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>

namespace fsl::codegen {

using ir::DType;
using kir::BinaryOp;
using kir::Expr;
using kir::ExprKind;
using kir::Stmt;
using kir::StmtKind;
using kir::UnaryOp;

llvm::StringRef cType(DType type) {
  switch (type) {
  case DType::Bool:
    return "bool";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::F64:
    return "double";
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    return "float";
  }
  FSL_UNREACHABLE("dtype");
}

llvm::StringRef memoryType(DType type) {
  switch (type) {
  case DType::BF16:
    return "__nv_bfloat16";
  case DType::F16:
    return "__half";
  case DType::Bool:
  case DType::I32:
  case DType::I64:
  case DType::F64:
  case DType::F32:
    return cType(type);
  }
  FSL_UNREACHABLE("dtype");
}

namespace {

bool isNarrowFloat(DType type) { return type == DType::BF16 || type == DType::F16; }

/// C operator precedence: higher binds tighter.
enum Precedence : int {
  Conditional = 3,
  LogicalOr = 4,
  LogicalAnd = 5,
  BitwiseXor = 7,
  Equality = 9,
  Relational = 10,
  Additive = 12,
  Multiplicative = 13,
  /// `-1`, `-x`: the operand of a binary operator as it is, of a prefix operator in
  /// parentheses (`- -1` would read as a decrement).
  Negated = 14,
  Prefix = 15,
  Primary = 16,
};

struct Printed {
  std::string text;
  int precedence = Primary;
};

/// An f32 register value rounded to a narrow type and widened back.
std::string roundedTo(DType type, const std::string &f32Value) {
  if (type == DType::BF16)
    return "__bfloat162float(__float2bfloat16_rn(" + f32Value + "))";
  if (type == DType::F16)
    return "__half2float(__float2half_rn(" + f32Value + "))";
  return f32Value;
}

/// The name of a C math function for `type`: `expf` for f32 (and the narrow types, which
/// are computed in f32), `exp` otherwise.
std::string mathFunction(llvm::StringRef name, DType type) {
  bool single = type == DType::F32 || isNarrowFloat(type);
  return (name + (single ? "f" : "")).str();
}

std::string builtinText(kir::Builtin builtin) {
  switch (builtin) {
  case kir::Builtin::None:
    break;
  case kir::Builtin::ThreadIdxX:
    return "threadIdx.x";
  case kir::Builtin::ThreadIdxY:
    return "threadIdx.y";
  case kir::Builtin::ThreadIdxZ:
    return "threadIdx.z";
  case kir::Builtin::BlockIdxX:
    return "blockIdx.x";
  case kir::Builtin::BlockIdxY:
    return "blockIdx.y";
  case kir::Builtin::BlockIdxZ:
    return "blockIdx.z";
  case kir::Builtin::BlockDimX:
    return "blockDim.x";
  case kir::Builtin::BlockDimY:
    return "blockDim.y";
  case kir::Builtin::BlockDimZ:
    return "blockDim.z";
  case kir::Builtin::GridDimX:
    return "(int64_t)gridDim.x";
  }
  FSL_UNREACHABLE("builtin");
}

/// The name `entity` (a variable, buffer or tensor map named `own`) was declared with in
/// `names`; without a scope, its own name.
std::string declaredName(const NameScope *names, const void *entity, const std::string &own) {
  if (!names)
    return own;
  llvm::StringRef name = names->lookup(entity);
  FSL_INTERNAL_ASSERT(!name.empty(), ("'" + own + "' is used outside its declaration").c_str());
  return name.str();
}

/// Expressions, one method per kind. An operation of a narrow float type is printed in
/// f32 and rounded, unless the caller rounds it itself (`roundNarrow` false: a store to a
/// buffer of that type, where rounding twice would only cost instructions).
class ExprPrinter {
public:
  /// `names` gives each variable and buffer its name in the kernel; without one (the
  /// launcher's launch-shape expressions over dimensions), an entity prints its own name.
  explicit ExprPrinter(const NameScope *names = nullptr) : names_(names) {}

  Printed print(const Expr &e, bool roundNarrow = true) {
    FSL_INTERNAL_ASSERT(e, "null expression in a kernel");
    switch (e->kind) {
    case ExprKind::Const:
      return printConst(*e);
    case ExprKind::Var:
      return printVar(*e);
    case ExprKind::Unary:
      return printUnary(*e, roundNarrow);
    case ExprKind::Binary:
      return printBinary(*e, roundNarrow);
    case ExprKind::Select:
      return printSelect(*e);
    case ExprKind::Cast:
      return printCast(*e, roundNarrow);
    case ExprKind::Load:
      return printLoad(*e);
    }
    FSL_UNREACHABLE("expression kind");
  }

  /// `e`, parenthesized when it binds less tightly than `minimum`.
  std::string atLeast(const Expr &e, int minimum) { return wrap(print(e), minimum); }

  static std::string wrap(const Printed &p, int minimum) {
    return p.precedence >= minimum ? p.text : "(" + p.text + ")";
  }

private:
  Printed printConst(const kir::ExprNode &e) {
    double value = e.constant;
    if (e.dtype == DType::Bool)
      return {value != 0 ? "true" : "false"};
    if (ir::isInteger(e.dtype)) {
      // +-2^63 stand for int64's extremes (an integer max or min reduction's start): C
      // has no literal for -2^63, and 2^63 is one past the largest.
      if (value >= 9223372036854775808.0)
        return {"FSL_INT64_MAX"};
      if (value <= -9223372036854775808.0)
        return {"FSL_INT64_MIN", Negated};
      auto integer = static_cast<int64_t>(value);
      // An I64 constant prints plain while it fits an int (C widens it where it meets
      // an int64_t); larger ones need the suffix.
      bool wide = e.dtype == DType::I64 && (integer > INT_MAX || integer < INT_MIN);
      std::string text = std::to_string(integer) + (wide ? "LL" : "");
      return {text, integer < 0 ? Negated : Primary};
    }
    bool f64 = e.dtype == DType::F64;
    if (std::isnan(value))
      return {f64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fffffff)"};
    if (std::isinf(value)) {
      std::string inf = f64 ? "FSL_INF64" : "FSL_INF32";
      return value > 0 ? Printed{inf} : Printed{"-" + inf, Negated};
    }
    // 10 significant digits name an f32 (and a bf16/f16 value, an f32 register); an f64
    // needs 17 to come back as the same double.
    std::string text =
        f64 ? llvm::formatv("{0:e16}", value).str() : llvm::formatv("{0:e9}", value).str() + "f";
    return {text, std::signbit(value) ? Negated : Primary};
  }

  Printed printVar(const kir::ExprNode &e) {
    if (e.var->builtin != kir::Builtin::None)
      return {builtinText(e.var->builtin)};
    return {nameOf(e.var.get(), e.var->name)};
  }

  /// The operand of a prefix operator.
  std::string prefixOperand(const Expr &e) {
    Printed p = print(e);
    if (p.precedence < Prefix || llvm::StringRef(p.text).starts_with("-"))
      return "(" + p.text + ")";
    return p.text;
  }

  /// An operand whose unsigned hardware index would wrap around: `threadIdx.x - 1` is
  /// computed in unsigned int in C, so a hardware index there is cast to its IR type.
  std::string signedOperand(const Expr &e, int minimum) {
    if (e->kind == ExprKind::Var && e->var->builtin != kir::Builtin::None)
      return "(" + cType(e->dtype).str() + ")" + builtinText(e->var->builtin);
    return atLeast(e, minimum);
  }

  Printed printUnary(const kir::ExprNode &e, bool roundNarrow) {
    const Expr &a = e.operands.at(0);
    DType type = e.dtype;
    auto call = [&](llvm::StringRef name) {
      return Printed{mathFunction(name, type) + "(" + print(a).text + ")"};
    };
    Printed computed;
    switch (e.unary) {
    case UnaryOp::Neg: // exact in every type: no rounding
      if (a->kind == ExprKind::Var && a->var->builtin != kir::Builtin::None)
        return {"-" + signedOperand(a, Prefix), Negated};
      return {"-" + prefixOperand(a), Negated};
    case UnaryOp::Not:
      return {"!" + prefixOperand(a), Prefix};
    case UnaryOp::Abs: // exact in every type
      if (type == DType::I32)
        return {"abs(" + print(a).text + ")"};
      if (type == DType::I64)
        return {"llabs(" + print(a).text + ")"};
      return call("fabs");
    case UnaryOp::Exp:
      computed = call("exp");
      break;
    case UnaryOp::FastExp: // f32 only (the lowering's choice): __expf, ex2.approx of x log2(e)
      computed = {"__expf(" + print(a).text + ")"};
      break;
    case UnaryOp::Log:
      computed = call("log");
      break;
    case UnaryOp::Sqrt:
      computed = call("sqrt");
      break;
    case UnaryOp::Rsqrt:
      computed = call("rsqrt");
      break;
    case UnaryOp::Tanh:
      computed = call("tanh");
      break;
    case UnaryOp::FastTanh: // f32 only (the lowering's choice): tanh.approx.f32
      computed = {"fsl_tanh_approx(" + print(a).text + ")"};
      break;
    case UnaryOp::Erf:
      computed = call("erf");
      break;
    case UnaryOp::Sigmoid: {
      bool f64 = type == DType::F64;
      std::string one = f64 ? "1.0" : "1.0f";
      computed = {one + " / (" + one + " + " + mathFunction("exp", type) + "(-" + prefixOperand(a) +
                      "))",
                  Multiplicative};
      break;
    }
    }
    if (roundNarrow && isNarrowFloat(type))
      return {roundedTo(type, computed.text)};
    return computed;
  }

  Printed infix(const kir::ExprNode &e, llvm::StringRef op, int precedence) {
    bool subtract = e.binary == BinaryOp::Sub;
    std::string left =
        subtract ? signedOperand(e.operands[0], precedence) : atLeast(e.operands[0], precedence);
    std::string right = subtract ? signedOperand(e.operands[1], precedence + 1)
                                 : atLeast(e.operands[1], precedence + 1);
    return {left + " " + op.str() + " " + right, precedence};
  }

  Printed call2(const std::string &function, const kir::ExprNode &e) {
    return {function + "(" + print(e.operands[0]).text + ", " + print(e.operands[1]).text + ")"};
  }

  Printed printBinary(const kir::ExprNode &e, bool roundNarrow) {
    DType type = e.dtype;
    bool integer = ir::isInteger(type);
    Printed computed;
    switch (e.binary) {
    case BinaryOp::Add:
      computed = infix(e, "+", Additive);
      break;
    case BinaryOp::Sub:
      computed = infix(e, "-", Additive);
      break;
    case BinaryOp::Mul:
      computed = infix(e, "*", Multiplicative);
      break;
    case BinaryOp::Div:
      computed = infix(e, "/", Multiplicative);
      break;
    case BinaryOp::FastDiv: // f32 only (the lowering's choice): div.full.f32
      computed = call2("fsl_div_approx", e);
      break;
    case BinaryOp::Mod:
      computed = integer || type == DType::Bool ? infix(e, "%", Multiplicative)
                                                : call2(mathFunction("fmod", type), e);
      break;
    case BinaryOp::Min:
    case BinaryOp::Max: {
      // Exact in every type (one of the operands): no rounding. Integers name their type,
      // so an int64_t index and an int literal agree on the template argument.
      std::string function = e.binary == BinaryOp::Min ? "fsl_min" : "fsl_max";
      if (integer)
        function += "<" + cType(type).str() + ">";
      return call2(function, e);
    }
    case BinaryOp::Pow:
      computed = call2(mathFunction("pow", type), e);
      break;
    case BinaryOp::Xor:
      computed = infix(e, "^", BitwiseXor);
      break;
    case BinaryOp::Lt:
      return infix(e, "<", Relational);
    case BinaryOp::Le:
      return infix(e, "<=", Relational);
    case BinaryOp::Gt:
      return infix(e, ">", Relational);
    case BinaryOp::Ge:
      return infix(e, ">=", Relational);
    case BinaryOp::Eq:
      return infix(e, "==", Equality);
    case BinaryOp::Ne:
      return infix(e, "!=", Equality);
    case BinaryOp::And:
      return infix(e, "&&", LogicalAnd);
    case BinaryOp::Or: // `a && b || c` reads ambiguously: the && gets parentheses
      return {atLeast(e.operands[0], LogicalAnd + 1) + " || " +
                  atLeast(e.operands[1], LogicalAnd + 1),
              LogicalOr};
    }
    if (roundNarrow && isNarrowFloat(type))
      return {roundedTo(type, computed.text)};
    return computed;
  }

  Printed printSelect(const kir::ExprNode &e) {
    return {atLeast(e.operands[0], LogicalOr) + " ? " + atLeast(e.operands[1], LogicalOr) + " : " +
                atLeast(e.operands[2], Conditional),
            Conditional};
  }

  Printed printCast(const kir::ExprNode &e, bool roundNarrow) {
    const Expr &a = e.operands.at(0);
    DType to = e.dtype, from = a->dtype;
    auto cCast = [&] {
      return Printed{"(" + cType(to).str() + ")(" + print(a).text + ")", Prefix};
    };
    switch (to) {
    case DType::Bool:
      if (from == DType::Bool)
        return print(a);
      return {atLeast(a, Relational) + " != 0", Equality};
    case DType::I32:
    case DType::I64:
    case DType::F64:
      return cType(from) == cType(to) ? print(a) : cCast();
    case DType::F32:
      // bf16 and f16 values already are f32 registers: widening is exact.
      return cType(from) == "float" ? print(a) : cCast();
    case DType::BF16:
    case DType::F16: {
      if (from == to)
        return print(a);
      bool bf16 = to == DType::BF16;
      if (from == DType::F32 || isNarrowFloat(from)) {
        std::string value = print(a).text;
        return roundNarrow ? Printed{roundedTo(to, value)} : Printed{value};
      }
      // Rounded once from the source type (through f32 an f64 or a large integer would
      // round twice).
      std::string widen = bf16 ? "__bfloat162float(" : "__half2float(";
      std::string value = print(a).text;
      switch (from) {
      case DType::F64:
        return {widen + (bf16 ? "__double2bfloat16(" : "__double2half(") + value + "))"};
      case DType::I64:
        return {widen + (bf16 ? "__ll2bfloat16_rn(" : "__ll2half_rn(") + value + "))"};
      case DType::I32:
        return {widen + (bf16 ? "__int2bfloat16_rn(" : "__int2half_rn(") + value + "))"};
      case DType::Bool: // 0 or 1: exact
        return {"(float)(" + value + ")", Prefix};
      case DType::F32:
      case DType::BF16:
      case DType::F16:
        break;
      }
      FSL_UNREACHABLE("cast source");
    }
    }
    FSL_UNREACHABLE("cast target");
  }

  Printed printLoad(const kir::ExprNode &e) {
    std::string element =
        nameOf(e.buffer.get(), e.buffer->name) + "[" + print(e.operands.at(0)).text + "]";
    switch (e.buffer->dtype) {
    case DType::BF16:
      return {"__bfloat162float(" + element + ")"};
    case DType::F16:
      return {"__half2float(" + element + ")"};
    case DType::Bool:
    case DType::I32:
    case DType::I64:
    case DType::F32:
    case DType::F64:
      return {element};
    }
    FSL_UNREACHABLE("dtype");
  }

  std::string nameOf(const void *entity, const std::string &own) const {
    return declaredName(names_, entity, own);
  }

  const NameScope *names_;
};

/// `value` converted for a store into an element of `type`: narrow floats rounded once.
std::string storedValue(DType type, const Expr &value, const NameScope &names) {
  ExprPrinter p(&names);
  DType from = value->dtype;
  switch (type) {
  case DType::BF16:
  case DType::F16: {
    bool bf16 = type == DType::BF16;
    if (from == DType::F64)
      return (bf16 ? "__double2bfloat16(" : "__double2half(") + p.print(value).text + ")";
    if (from == DType::I64)
      return (bf16 ? "__ll2bfloat16_rn(" : "__ll2half_rn(") + p.print(value).text + ")";
    if (from == DType::I32)
      return (bf16 ? "__int2bfloat16_rn(" : "__int2half_rn(") + p.print(value).text + ")";
    // An f32 register: a value of the stored type is rounded by the store alone.
    std::string f32 = p.print(value, /*roundNarrow=*/from != type).text;
    return (bf16 ? "__float2bfloat16_rn(" : "__float2half_rn(") + f32 + ")";
  }
  case DType::Bool:
  case DType::I32:
  case DType::I64:
  case DType::F32:
  case DType::F64:
    if (cType(from) == cType(type))
      return p.print(value).text;
    return "(" + cType(type).str() + ")(" + p.print(value).text + ")";
  }
  FSL_UNREACHABLE("dtype");
}

/// `name + index` as a pointer, `name` alone at offset 0.
std::string pointerPlus(const std::string &name, const Expr &index, const NameScope &names) {
  if (!index || kir::asConstant(index) == 0)
    return name;
  return name + " + " + ExprPrinter(&names).atLeast(index, Multiplicative);
}

/// `&name[index]`: the address of one element (an mbarrier).
std::string elementAddress(const kir::BufferPtr &buffer, const Expr &index,
                           const NameScope &names) {
  std::string element = index ? ExprPrinter(&names).print(index).text : std::string("0");
  return "&" + declaredName(&names, buffer.get(), buffer->name) + "[" + element + "]";
}

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// The comment a statement prints with: its own text, then the directive it comes from.
std::string noteOf(const kir::StmtNode &s) {
  std::string text = s.comment;
  if (!s.origin.text.empty() && s.origin.text != text)
    text = text.empty() ? s.origin.text : text + "; " + s.origin.text;
  return oneLine(text);
}

llvm::StringRef combinerOf(kir::ReduceKind kind) {
  switch (kind) {
  case kir::ReduceKind::Sum:
    return "FslSum()";
  case kir::ReduceKind::Max:
    return "FslMax()";
  case kir::ReduceKind::Min:
    return "FslMin()";
  case kir::ReduceKind::ArgMax:
  case kir::ReduceKind::ArgMin:
  case kir::ReduceKind::Welford:
  case kir::ReduceKind::MaxExpSum:
  case kir::ReduceKind::SumPair:
    break; // several accumulators: the fsl_*_argmax/argmin/welford/max_exp_sum/sum_pair helpers
  }
  FSL_UNREACHABLE("reduce kind");
}

std::string hardwareIndex(kir::Axis axis) {
  switch (axis) {
  case kir::Axis::BIDx:
    return "blockIdx.x";
  case kir::Axis::BIDy:
    return "blockIdx.y";
  case kir::Axis::BIDz:
    return "blockIdx.z";
  case kir::Axis::TIDx:
    return "threadIdx.x";
  case kir::Axis::TIDy:
    return "threadIdx.y";
  case kir::Axis::TIDz:
    return "threadIdx.z";
  case kir::Axis::Warpgroup:
    return "threadIdx.x / 128"; // 4 warps of 32 threads
  }
  FSL_UNREACHABLE("axis");
}

/// A wgmma operand's shared-memory descriptor, from the swizzle its tile was written with
/// (by TMA) and its major-ness (PTX ISA, "Shared Memory Matrix Layout"). K-major: rows of
/// 128/64/32 bytes, 8-row groups `8 * row bytes` apart, the leading offset unused.
/// M/N-major: rows of K of one span each, 8-row groups of K `8 * span` apart (the stride),
/// and span-wide blocks along M or N `blockBytes` apart (the leading offset; 0, never
/// followed, when the operand fits one span).
std::string wgmmaDescriptor(const kir::BufferPtr &operand, const Expr &offset, bool mnMajor,
                            int64_t blockBytes, const NameScope &names) {
  std::string matrix =
      pointerPlus(declaredName(&names, operand.get(), operand->name), offset, names);
  // A swizzled operand's 8-row groups lie one repeat of its swizzle apart (the stride byte
  // offset; the 128-byte helpers have it built in).
  std::string stride = std::to_string(kir::swizzleRepeatBytes(operand->swizzle));
  if (mnMajor) {
    std::string blocks = std::to_string(blockBytes);
    switch (operand->swizzle) {
    case kir::Swizzle::Bytes128:
      return "fsl_wgmma_descriptor_mn_sw128(" + matrix + ", " + blocks + ")";
    case kir::Swizzle::Bytes64:
      return "fsl_wgmma_descriptor(" + matrix + ", " + blocks + ", " + stride +
             ", FSL_WGMMA_SWIZZLE_64B)";
    case kir::Swizzle::Bytes32:
      return "fsl_wgmma_descriptor(" + matrix + ", " + blocks + ", " + stride +
             ", FSL_WGMMA_SWIZZLE_32B)";
    case kir::Swizzle::None:
      // The verifier refuses it: the IR does not describe the interleaved M/N-major layout.
      FSL_UNREACHABLE("an M/N-major wgmma operand without a swizzle");
    }
    FSL_UNREACHABLE("swizzle");
  }
  switch (operand->swizzle) {
  case kir::Swizzle::Bytes128:
    return "fsl_wgmma_descriptor_sw128(" + matrix + ")";
  case kir::Swizzle::Bytes64:
    return "fsl_wgmma_descriptor(" + matrix + ", 16, " + stride + ", FSL_WGMMA_SWIZZLE_64B)";
  case kir::Swizzle::Bytes32:
    return "fsl_wgmma_descriptor(" + matrix + ", 16, " + stride + ", FSL_WGMMA_SWIZZLE_32B)";
  case kir::Swizzle::None:
    // Interleaved 8x16-byte core matrices: the two of a k16 step 128 bytes apart, 8-row
    // groups 256 bytes apart.
    return "fsl_wgmma_descriptor(" + matrix + ", 128, 256, FSL_WGMMA_SWIZZLE_NONE)";
  }
  FSL_UNREACHABLE("swizzle");
}

/// The statements of one kernel, one method per kind, each at the current indentation.
class KernelWriter {
public:
  KernelWriter(const kir::Kernel &kernel, const CodegenOptions &options, llvm::raw_ostream &out)
      : kernel_(kernel), options_(options), out_(out) {
    // Local arrays that vector accesses read or write must be aligned to the access;
    // wgmma accumulators are pinned around fences and waits.
    if (kernel.body)
      kir::forEachStmt(kernel.body, [&](const Stmt &s) {
        if (s->kind == StmtKind::Wgmma)
          accumulators_.insert(s->buffer.get());
        // stmatrix reads its registers as 4-byte words, one a matrix.
        if (s->kind == StmtKind::StMatrix)
          vectorBytes_[s->source.get()] = std::max<int64_t>(vectorBytes_[s->source.get()], 4);
        if (s->kind != StmtKind::VectorCopy)
          return;
        int64_t bytes = s->lanes * ir::dtypeBytes(s->buffer->dtype);
        for (const kir::Buffer *b : {s->buffer.get(), s->source.get()})
          vectorBytes_[b] = std::max(vectorBytes_[b], bytes);
      });
  }

  void write() {
    // The comment lowering gives a kernel starts with its name: the name it has here.
    std::string symbol = kernelSymbol(kernel_, options_);
    std::string comment = kernel_.comment;
    if (llvm::StringRef(comment).starts_with(kernel_.name))
      comment = options_.symbolPrefix + comment;
    std::string where = location(kernel_.origin);
    for (llvm::StringRef line : llvm::split(comment, '\n'))
      if (!line.empty()) {
        out_ << "// " << withLocation(line.str(), where) << "\n";
        where.clear(); // once, on the first line
      }
    const kir::LaunchShape &launch = kernel_.launch;
    if (!launch.registerNote.empty())
      out_ << "// " << oneLine(launch.registerNote) << "\n";
    out_ << "extern \"C\" __global__ void";
    // __launch_bounds__ and __maxnreg__ exclude each other; the bound says more.
    if (launch.maxThreads) {
      out_ << " __launch_bounds__(" << *launch.maxThreads;
      if (launch.minBlocksPerSm)
        out_ << ", " << *launch.minBlocksPerSm;
      out_ << ")";
    } else if (launch.maxRegisters) {
      out_ << " __maxnreg__(" << *launch.maxRegisters << ")";
    }
    names_.reserve(symbol);
    std::vector<std::string> params = kernelParameters(kernel_, &names_);
    out_ << " " << symbol << "(";
    if (!params.empty())
      out_ << "\n    " << llvm::join(params, ",\n    ");
    out_ << ") {\n";
    FSL_INTERNAL_ASSERT(kernel_.body, "a kernel without a body");
    indent_ = "  ";
    sequence(kernel_.body);
    out_ << "}\n\n";
  }

private:
  // --- Layout ---------------------------------------------------------------------

  llvm::raw_ostream &line() { return out_ << indent_; }

  /// "file.fsl:LINE" of `origin`, empty without one or without options.sourceLocation.
  std::string location(const kir::Origin &origin) const {
    if (!options_.sourceLocation || !origin.range.Start.isValid())
      return {};
    return options_.sourceLocation(origin.range);
  }

  static std::string withLocation(const std::string &note, const std::string &where) {
    if (where.empty())
      return note;
    return note.empty() ? where : note + " (" + where + ")";
  }

  /// Ends a statement's line with its comment, and the first line of a statement from the
  /// sources with their location.
  void end(const std::string &note) {
    std::string text = withLocation(note, unprintedLocation_);
    unprintedLocation_.clear();
    if (!text.empty())
      out_ << "  // " << text;
    out_ << "\n";
  }

  /// The statements of `s` at the current indentation: the body of a loop, a branch or
  /// the kernel is already a C scope, so its Block needs no braces of its own.
  void sequence(const Stmt &s) {
    if (s->kind == StmtKind::Block)
      for (const Stmt &child : s->body)
        statement(child);
    else
      statement(s);
  }

  /// `s` inside braces, one level deeper; what it allocates goes out of scope after it.
  void nested(const Stmt &s) {
    size_t accumulators = accumulatorsInScope_.size();
    indent_ += "  ";
    names_.open();
    sequence(s);
    names_.close();
    indent_.resize(indent_.size() - 2);
    accumulatorsInScope_.resize(accumulators);
  }

  void statement(const Stmt &s) {
    FSL_INTERNAL_ASSERT(s, "null statement in a kernel");
    // A statement's first line ends before its children print (a loop's header, a
    // branch's condition), so one pending location at a time is enough.
    unprintedLocation_ = location(s->origin);
    dispatch(s);
    unprintedLocation_.clear();
  }

  void dispatch(const Stmt &s) {
    switch (s->kind) {
    case StmtKind::Block: // a scope inside a sequence (a phase's nest)
      line() << "{\n";
      nested(s);
      line() << "}\n";
      return;
    case StmtKind::For:
      return forLoop(*s);
    case StmtKind::If:
      return ifThen(*s);
    case StmtKind::Let:
      return let(*s);
    case StmtKind::Assign:
      return assign(*s);
    case StmtKind::Allocate:
      return allocate(*s);
    case StmtKind::Store:
      return store(*s);
    case StmtKind::VectorCopy:
      return vectorCopy(*s);
    case StmtKind::AtomicAdd:
      return atomicAdd(*s);
    case StmtKind::Reduce:
      return reduce(*s);
    case StmtKind::Barrier:
      return barrier(*s);
    case StmtKind::GridDependency:
      return gridDependency(*s);
    case StmtKind::Comment:
      return comment(*s);
    case StmtKind::MBarrierInit:
      return mbarrierInit(*s);
    case StmtKind::MBarrierArrive:
      return mbarrierArrive(*s);
    case StmtKind::MBarrierArriveExpectTx:
      return mbarrierArriveExpectTx(*s);
    case StmtKind::MBarrierWait:
      return mbarrierWait(*s);
    case StmtKind::FenceProxyAsync:
      return fenceProxyAsync(*s);
    case StmtKind::HoldLoads:
      line() << "fsl_hold_loads_above();";
      end(noteOf(*s).empty() ? "the loads above stay above" : noteOf(*s));
      return;
    case StmtKind::TmaLoad:
      return tmaLoad(*s);
    case StmtKind::TmaStore:
      return tmaStore(*s);
    case StmtKind::TmaStoreWait:
      return tmaStoreWait(*s);
    case StmtKind::StMatrix:
      return stMatrix(*s);
    case StmtKind::WgmmaFence:
      return wgmmaFence(*s);
    case StmtKind::Wgmma:
      return wgmma(*s);
    case StmtKind::WgmmaCommit:
      return wgmmaCommit(*s);
    case StmtKind::WgmmaWait:
      return wgmmaWait(*s);
    case StmtKind::SetMaxNReg:
      return setMaxNReg(*s);
    case StmtKind::WarpRole:
      return warpRole(*s);
    }
    FSL_UNREACHABLE("statement kind");
  }

  // --- Control flow and scalars ------------------------------------------------------

  void forLoop(const kir::StmtNode &s) {
    if (s.loopKind == kir::LoopKind::Parallel) {
      // No loop: the index is a hardware index, bound for the rest of the kernel.
      std::string name = names_.declare(s.var.get(), s.var->name);
      line() << "const " << cType(s.var->dtype) << " " << name << " = " << hardwareIndex(s.axis)
             << ";";
      end(noteOf(s));
      sequence(s.body.at(0));
      return;
    }
    // The extent is read outside the loop's scope, where its index is not yet declared.
    std::string extent = ExprPrinter(&names_).atLeast(s.extent, Relational + 1);
    names_.open();
    std::string name = names_.declare(s.var.get(), s.var->name);
    switch (s.loopKind) {
    case kir::LoopKind::Parallel: // above
      break;
    case kir::LoopKind::Unrolled:
      if (s.unrollFactor)
        line() << "#pragma unroll " << *s.unrollFactor << "\n";
      else
        line() << "#pragma unroll\n";
      break;
    case kir::LoopKind::Vectorized: // the lanes of one vector access: always unrolled
      line() << "#pragma unroll\n";
      break;
    case kir::LoopKind::Serial:
      break;
    }
    line() << "for (" << cType(s.var->dtype) << " " << name << " = 0; " << name << " < " << extent
           << "; ++" << name << ") {";
    end(noteOf(s));
    nested(s.body.at(0));
    names_.close();
    line() << "}\n";
  }

  void ifThen(const kir::StmtNode &s) {
    line() << "if (" << printExpr(s.condition) << ") {";
    end(noteOf(s));
    nested(s.body.at(0));
    if (s.body.size() > 1) {
      line() << "} else {\n";
      nested(s.body[1]);
    }
    line() << "}\n";
  }

  void let(const kir::StmtNode &s) {
    // The value is read before the name is declared (`x = x + 1` in C would read itself).
    std::string value = printExpr(s.value);
    line() << (s.mutableVar ? "" : "const ") << cType(s.var->dtype) << " "
           << names_.declare(s.var.get(), s.var->name) << " = " << value << ";";
    end(noteOf(s));
  }

  void assign(const kir::StmtNode &s) {
    // `acc = acc + x` reads as the accumulation it is: `acc += x` (not for a narrow
    // type, whose sum is rounded).
    const Expr &value = s.value;
    bool compound = value->kind == ExprKind::Binary && !isNarrowFloat(value->dtype) &&
                    (value->binary == BinaryOp::Add || value->binary == BinaryOp::Sub ||
                     value->binary == BinaryOp::Mul) &&
                    value->operands[0]->kind == ExprKind::Var && value->operands[0]->var == s.var;
    if (compound)
      line() << nameOf(s.var) << " " << kir::binaryName(value->binary) << "= "
             << printExpr(value->operands[1]) << ";";
    else
      line() << nameOf(s.var) << " = " << printExpr(value) << ";";
    end(noteOf(s));
  }

  // --- Memory -----------------------------------------------------------------------

  void allocate(const kir::StmtNode &s) {
    const kir::Buffer &b = *s.buffer;
    std::string name = names_.declare(&b, b.name);
    std::string type = memoryType(b.dtype).str();
    std::string note = noteOf(s);
    std::string size = s.count ? printExpr(s.count) : std::to_string(b.elements());
    if (note.empty())
      note = size + " x " + ir::dtypeName(b.dtype).str();
    switch (b.space) {
    case kir::MemorySpace::Local: {
      if (accumulators_.count(&b))
        accumulatorsInScope_.push_back(&b);
      line();
      auto vector = vectorBytes_.find(&b);
      if (vector != vectorBytes_.end() && vector->second > ir::dtypeBytes(b.dtype))
        out_ << "__align__(" << vector->second << ") ";
      out_ << type << " " << name << "[" << b.elements() << "];";
      end(note);
      return;
    }
    case kir::MemorySpace::Shared:
      line() << type << " *" << name << " = reinterpret_cast<" << type << " *>("
             << pointerPlus("fsl_shared", s.index) << ");";
      end(note + " in shared memory");
      return;
    case kir::MemorySpace::Global:
      break;
    }
    fsl::internalError(__FILE__, __LINE__, "global allocation",
                       ("a kernel allocates global buffer '" + b.name + "'").c_str());
  }

  void store(const kir::StmtNode &s) {
    line() << nameOf(s.buffer) << "[" << printExpr(s.index)
           << "] = " << storedValue(s.buffer->dtype, s.value) << ";";
    end(noteOf(s));
  }

  void vectorCopy(const kir::StmtNode &s) {
    int64_t bytes = s.lanes * ir::dtypeBytes(s.buffer->dtype);
    FSL_INTERNAL_ASSERT(kir::isVectorAccessSize(s.lanes, s.buffer->dtype),
                        "a vector copy of other than 2, 4, 8 or 16 bytes");
    // A load reads memory into a thread's registers (from global memory or a shared
    // copy), or global memory into a shared copy; the other copies write memory.
    bool load =
        s.buffer->space == kir::MemorySpace::Local || s.source->space == kir::MemorySpace::Global;
    line() << (load ? "fsl_load_vector<" : "fsl_store_vector<") << bytes << ">("
           << pointerPlus(nameOf(s.buffer), s.index) << ", "
           << pointerPlus(nameOf(s.source), s.sourceIndex) << ");";
    end(noteOf(s));
  }

  void atomicAdd(const kir::StmtNode &s) {
    line() << nameOf(s.buffer) << "[" << printExpr(s.index) << "] = fsl_atomic_add_acq_rel("
           << pointerPlus(nameOf(s.source), s.sourceIndex) << ", " << printExpr(s.value) << ");";
    end(noteOf(s));
  }

  // --- Reductions and synchronization ------------------------------------------------

  void reduce(const kir::StmtNode &s) {
    const std::string acc = nameOf(s.var);
    if (!s.carried.empty()) {
      tupleReduce(s);
      return;
    }
    switch (s.scope) {
    case kir::ReduceScope::Warp:
      line() << acc << " = fsl_warp_reduce(" << acc << ", " << combinerOf(s.reduceKind) << ");";
      end(noteOf(s).empty() ? "over the 32 lanes of a warp" : noteOf(s));
      return;
    case kir::ReduceScope::BlockX:
      FSL_INTERNAL_ASSERT(s.scratch, "a block reduction without scratch");
      line() << acc << " = fsl_block_reduce_x" << staticThreadsX() << "(" << acc << ", "
             << combinerOf(s.reduceKind) << ", reinterpret_cast<" << cType(s.var->dtype) << "*>("
             << nameOf(s.scratch) << "), " << printExpr(s.slot) << ");";
      end(noteOf(s).empty() ? "over threadIdx.x" : noteOf(s));
      return;
    case kir::ReduceScope::Grid:
      break;
    }
    fsl::internalError(__FILE__, __LINE__, "grid reduction",
                       "the CUDA printer has no grid reduction (no lowering produces one)");
  }

  /// `<N>` when blockDim.x is N in every launch of the kernel: device.cuh's block
  /// reductions then fold the number of warps (the same combining order).
  std::string staticThreadsX() const {
    const kir::Expr &x = kernel_.launch.block[0];
    std::optional<int64_t> threads = x ? kir::asConstant(x) : std::nullopt;
    return threads ? "<" + std::to_string(*threads) + ">" : "";
  }

  /// Accumulators combined together by device.cuh's fsl_warp_<kind> / fsl_block_<kind>_x
  /// (argmax, argmin, welford, max_exp_sum, sum_pair), which update them all in place.
  void tupleReduce(const kir::StmtNode &s) {
    FSL_INTERNAL_ASSERT(s.carried.size() + 1 == kir::reduceArity(s.reduceKind),
                        "a reduction without all its accumulators");
    std::string kind = s.reduceKind == kir::ReduceKind::ArgMax    ? "argmax"
                       : s.reduceKind == kir::ReduceKind::ArgMin  ? "argmin"
                       : s.reduceKind == kir::ReduceKind::Welford ? "welford"
                       : s.reduceKind == kir::ReduceKind::SumPair ? "sum_pair"
                                                                  : "max_exp_sum";
    std::string pair = nameOf(s.var);
    for (const kir::VarPtr &carried : s.carried)
      pair += ", " + nameOf(carried);
    switch (s.scope) {
    case kir::ReduceScope::Warp:
      line() << "fsl_warp_" << kind << "(" << pair << ");";
      end(noteOf(s).empty() ? "over the 32 lanes of a warp" : noteOf(s));
      return;
    case kir::ReduceScope::BlockX:
      FSL_INTERNAL_ASSERT(s.scratch, "a block reduction without scratch");
      line() << "fsl_block_" << kind << "_x" << staticThreadsX() << "(" << pair << ", "
             << nameOf(s.scratch) << ", " << printExpr(s.slot) << ");";
      end(noteOf(s).empty() ? "over threadIdx.x" : noteOf(s));
      return;
    case kir::ReduceScope::Grid:
      break;
    }
    fsl::internalError(__FILE__, __LINE__, "grid reduction",
                       "the CUDA printer has no grid reduction (no lowering produces one)");
  }

  void barrier(const kir::StmtNode &s) {
    switch (s.barrierKind) {
    case kir::BarrierKind::Block:
      line() << "__syncthreads();";
      break;
    case kir::BarrierKind::Named:
      line() << "fsl_named_barrier_sync(" << s.barrierId;
      if (s.threads)
        out_ << ", " << printExpr(s.threads);
      out_ << ");";
      break;
    case kir::BarrierKind::Cluster:
      line() << "fsl_cluster_sync();";
      end(noteOf(s).empty() ? "every thread of every CTA of the cluster" : noteOf(s));
      return;
    case kir::BarrierKind::Grid:
      line() << "fsl_grid_sync();";
      end(noteOf(s).empty() ? "every thread of every block of the grid (a cooperative launch)"
                            : noteOf(s));
      return;
    }
    end(noteOf(s));
  }

  void gridDependency(const kir::StmtNode &s) {
    std::string note = noteOf(s);
    switch (s.gridOp) {
    case kir::GridDependencyOp::WaitAndLaunchDependents:
      line() << "fsl_grid_dependency_wait();";
      end(note.empty() ? "programmatic dependent launch: the previous kernel's writes" : note);
      line() << "fsl_grid_launch_dependents();";
      end("and the next kernel may start launching");
      return;
    case kir::GridDependencyOp::Wait:
      line() << "fsl_grid_dependency_wait();";
      end(note.empty() ? "programmatic dependent launch: the previous kernel's writes" : note);
      return;
    case kir::GridDependencyOp::LaunchDependents:
      if (s.condition) {
        line() << "fsl_grid_launch_dependents_if(" << printExpr(s.condition) << ");";
        end(note.empty() ? "the grid's last blocks let the next kernel start launching now, the "
                           "others as they exit"
                         : note);
        return;
      }
      line() << "fsl_grid_launch_dependents();";
      end(note.empty() ? "programmatic dependent launch: the next kernel may start" : note);
      return;
    }
    FSL_UNREACHABLE("grid dependency op");
  }

  void comment(const kir::StmtNode &s) {
    for (llvm::StringRef text : llvm::split(s.comment, '\n'))
      line() << "// " << text << "\n";
  }

  // --- Hopper: mbarriers and TMA ---------------------------------------------------------

  std::string barrierAddress(const kir::StmtNode &s) { return elementAddress(s.buffer, s.index); }

  void mbarrierInit(const kir::StmtNode &s) {
    FSL_INTERNAL_ASSERT(s.count, "mbarrier.init without an arrival count");
    line() << "fsl_mbarrier_init(" << barrierAddress(s) << ", " << printExpr(s.count) << ");";
    end(noteOf(s));
  }

  void mbarrierArrive(const kir::StmtNode &s) {
    if (s.ctaRank) {
      // The barrier at the same shared offset in CTA `ctaRank` of the cluster.
      line() << "fsl_mbarrier_arrive_cluster(" << barrierAddress(s) << ", " << printExpr(s.ctaRank)
             << ");";
      end(noteOf(s));
      return;
    }
    line() << "fsl_mbarrier_arrive(" << barrierAddress(s) << ");";
    end(noteOf(s));
  }

  void mbarrierArriveExpectTx(const kir::StmtNode &s) {
    FSL_INTERNAL_ASSERT(s.count, "mbarrier.arrive.expect_tx without a byte count");
    line() << "fsl_mbarrier_arrive_expect_tx(" << barrierAddress(s) << ", " << printExpr(s.count)
           << ");";
    end(noteOf(s));
  }

  void mbarrierWait(const kir::StmtNode &s) {
    FSL_INTERNAL_ASSERT(s.count, "mbarrier.try_wait.parity without a parity");
    line() << "fsl_mbarrier_wait(" << barrierAddress(s) << ", " << printExpr(s.count) << ");";
    end(noteOf(s));
  }

  void fenceProxyAsync(const kir::StmtNode &s) {
    line() << "fsl_fence_proxy_async_shared();";
    end(noteOf(s));
  }

  /// The coordinates of a TMA copy as arguments: the IR lists them innermost last, PTX
  /// innermost first.
  std::string tmaCoordinates(const kir::StmtNode &s) {
    std::vector<std::string> coordinates;
    for (auto c = s.coordinates.rbegin(); c != s.coordinates.rend(); ++c)
      coordinates.push_back(printExpr(*c));
    return llvm::join(coordinates, ", ");
  }

  std::string tmaRank(const kir::StmtNode &s) {
    size_t rank = s.coordinates.size();
    FSL_INTERNAL_ASSERT(s.tensorMap && rank >= 2 && rank <= 5,
                        "a TMA copy of other than 2 to 5 dimensions");
    return std::to_string(rank) + "d";
  }

  std::string tmaNote(const kir::StmtNode &s) {
    std::string note = noteOf(s);
    if (!note.empty())
      return note;
    std::vector<std::string> box;
    for (int64_t extent : s.tensorMap->box)
      box.push_back(std::to_string(extent));
    return "box " + llvm::join(box, " x ") +
           (s.tensorMap->global ? " of " + s.tensorMap->global->name : "");
  }

  void tmaLoad(const kir::StmtNode &s) {
    std::string rank = tmaRank(s);
    FSL_INTERNAL_ASSERT(s.barrier, "a TMA load without an mbarrier");
    line() << "fsl_tma_load_" << rank << (s.multicastMask ? "_multicast(" : "(")
           << pointerPlus(nameOf(s.buffer), s.index) << ", &" << nameOf(s.tensorMap) << ", "
           << elementAddress(s.barrier, s.barrierIndex) << ", ";
    if (s.multicastMask)
      out_ << printExpr(s.multicastMask) << ", ";
    out_ << tmaCoordinates(s) << ");";
    end(tmaNote(s));
  }

  void tmaStore(const kir::StmtNode &s) {
    std::string rank = tmaRank(s);
    line() << "fsl_tma_store_" << rank << "(&" << nameOf(s.tensorMap) << ", "
           << pointerPlus(nameOf(s.buffer), s.index) << ", " << tmaCoordinates(s) << ");";
    end(tmaNote(s));
    line() << "fsl_bulk_commit_group();\n"; // one bulk group a store: TmaStoreWait counts them
  }

  void tmaStoreWait(const kir::StmtNode &s) {
    line() << "fsl_bulk_wait_group_read<" << s.pending << ">();";
    end(noteOf(s).empty() ? "TMA stores done reading shared memory, " + std::to_string(s.pending) +
                                " left pending"
                          : noteOf(s));
  }

  void stMatrix(const kir::StmtNode &s) {
    line() << "fsl_stmatrix<" << s.lanes << ">(" << pointerPlus(nameOf(s.buffer), s.index) << ", "
           << pointerPlus(nameOf(s.source), s.sourceIndex) << ");";
    end(noteOf(s));
  }

  // --- Hopper: wgmma and registers ------------------------------------------------------

  /// Pins the wgmma accumulators in scope: their registers' accesses stay on their side
  /// of the fence or wait (see fsl_wgmma_pin_accumulator).
  void pinAccumulators() {
    for (const kir::Buffer *acc : accumulatorsInScope_)
      line() << "fsl_wgmma_pin_accumulator<" << acc->elements() << ">("
             << declaredName(&names_, acc, acc->name) << ");\n";
  }

  void wgmmaFence(const kir::StmtNode &s) {
    pinAccumulators();
    line() << "fsl_wgmma_fence();";
    end(noteOf(s));
  }

  void wgmma(const kir::StmtNode &s) {
    const kir::WgmmaShape &shape = s.shape;
    FSL_INTERNAL_ASSERT(shape.m == 64 && shape.k == 16 && shape.n >= 8 && shape.n <= 256 &&
                            shape.n % 8 == 0,
                        "a wgmma shape fsl/device.cuh does not wrap (m64 k16, n a multiple of 8 "
                        "up to 256)");
    FSL_INTERNAL_ASSERT(s.inputType == DType::BF16 || s.inputType == DType::F16,
                        "a wgmma input type other than bf16 or f16");
    FSL_INTERNAL_ASSERT(s.buffer && s.buffer->dtype == DType::F32,
                        "a wgmma accumulator that is not f32");
    line() << "fsl_wgmma_m64n" << shape.n << "k16_f32_" << ir::dtypeName(s.inputType) << "<"
           << (s.transposeA ? 1 : 0) << ", " << (s.transposeB ? 1 : 0) << ">("
           << pointerPlus(nameOf(s.buffer), s.index) << ", "
           << wgmmaDescriptor(s.operandA, s.offsetA, s.transposeA, s.blockBytesA, names_) << ", "
           << wgmmaDescriptor(s.operandB, s.offsetB, s.transposeB, s.blockBytesB, names_) << ", "
           << (s.accumulate ? printExpr(s.accumulate) : std::string("1")) << ");";
    std::string note = noteOf(s);
    end(note.empty() ? nameOf(s.buffer) + " += " + nameOf(s.operandA) + " * " + nameOf(s.operandB)
                     : note);
  }

  void wgmmaCommit(const kir::StmtNode &s) {
    line() << "fsl_wgmma_commit_group();";
    end(noteOf(s));
  }

  void wgmmaWait(const kir::StmtNode &s) {
    line() << "fsl_wgmma_wait_group<" << s.pending << ">();";
    end(noteOf(s));
    pinAccumulators();
  }

  void setMaxNReg(const kir::StmtNode &s) {
    line() << (s.increase ? "fsl_setmaxnreg_inc<" : "fsl_setmaxnreg_dec<") << s.registers << ">();";
    end(noteOf(s));
  }

  void warpRole(const kir::StmtNode &s) {
    line() << "if (" << printExpr(s.condition) << ") {";
    std::string note = noteOf(s);
    end(s.role.empty() ? note : note.empty() ? s.role : s.role + ": " + note);
    nested(s.body.at(0));
    line() << "}\n";
  }

  // --- Names: every identifier from the one scope (Naming.h) --------------------------

  std::string printExpr(const Expr &e) const { return ExprPrinter(&names_).print(e).text; }
  std::string pointerPlus(const std::string &name, const Expr &index) const {
    return codegen::pointerPlus(name, index, names_);
  }
  std::string storedValue(DType type, const Expr &value) const {
    return codegen::storedValue(type, value, names_);
  }
  std::string elementAddress(const kir::BufferPtr &buffer, const Expr &index) const {
    return codegen::elementAddress(buffer, index, names_);
  }
  std::string nameOf(const kir::VarPtr &var) const {
    return declaredName(&names_, var.get(), var->name);
  }
  std::string nameOf(const kir::BufferPtr &buffer) const {
    return declaredName(&names_, buffer.get(), buffer->name);
  }
  std::string nameOf(const kir::TensorMapPtr &map) const {
    return declaredName(&names_, map.get(), map->name);
  }

  const kir::Kernel &kernel_;
  const CodegenOptions &options_;
  NameScope names_;
  llvm::raw_ostream &out_;
  std::string indent_;
  /// The location of the statement being printed, until its first line has ended.
  std::string unprintedLocation_;
  std::map<const kir::Buffer *, int64_t> vectorBytes_;
  std::set<const kir::Buffer *> accumulators_;
  std::vector<const kir::Buffer *> accumulatorsInScope_; // allocated in an open scope
};

} // namespace

std::string printExpr(const Expr &e, const NameScope *names) {
  return ExprPrinter(names).print(e).text;
}

std::string printOperand(const Expr &e, const NameScope *names) {
  return ExprPrinter(names).atLeast(e, Primary);
}

std::vector<std::string> kernelParameters(const kir::Kernel &kernel, NameScope *names) {
  // Without a scope, one of the parameters' own: they are still told apart.
  NameScope own;
  if (!names)
    names = &own;
  std::vector<std::string> result;
  for (const kir::KernelParam &param : kernel.params) {
    switch (param.kind) {
    case kir::KernelParam::Kind::Tensor: {
      const kir::Buffer &b = *param.buffer;
      std::string name = names->declare(&b, b.name);
      // An inout tensor is read and written through one pointer: no __restrict__.
      std::string type = memoryType(b.dtype).str() + "*";
      if (!b.written)
        result.push_back("const " + type + " __restrict__ " + name);
      else if (b.inout)
        result.push_back(type + " " + name);
      else
        result.push_back(type + " __restrict__ " + name);
      break;
    }
    case kir::KernelParam::Kind::Scalar:
      result.push_back(cType(param.var->dtype).str() + " " +
                       names->declare(param.var.get(), param.var->name));
      break;
    case kir::KernelParam::Kind::Dim:
    case kir::KernelParam::Kind::Stride:
      result.push_back("int64_t " + names->declare(param.var.get(), param.var->name));
      break;
    case kir::KernelParam::Kind::TensorMap:
      result.push_back("const __grid_constant__ CUtensorMap " +
                       names->declare(param.tensorMap.get(), param.tensorMap->name));
      break;
    }
  }
  return result;
}

void printKernelPrologue(const kir::Program &program, llvm::raw_ostream &out) {
  bool tensorMaps = false;
  int64_t alignment = 16;
  for (const kir::Kernel &kernel : program.kernels) {
    for (const kir::KernelParam &param : kernel.params)
      tensorMaps |= param.kind == kir::KernelParam::Kind::TensorMap;
    if (kernel.body)
      kir::forEachStmt(kernel.body, [&](const Stmt &s) {
        if (s->kind == StmtKind::Allocate && s->buffer->space == kir::MemorySpace::Shared)
          alignment = std::max(alignment, s->buffer->alignment);
      });
  }
  out << "#include \"fsl/device.cuh\"\n";
  if (tensorMaps)
    out << "#ifdef __CUDACC_RTC__\n"
        << "// NVRTC cannot include <cuda.h>; a tensor map is 128 opaque bytes passed by value.\n"
        << "typedef struct alignas(64) CUtensorMap_st {\n"
        << "  unsigned long long opaque[16];\n"
        << "} CUtensorMap;\n"
        << "#else\n#include <cuda.h>\n#endif\n";
  out << "\n// The block's dynamic shared memory; each shared buffer is a typed pointer into it.\n"
      << "extern __shared__ __align__(" << alignment << ") unsigned char fsl_shared[];\n\n";
}

void printKernel(const kir::Kernel &kernel, const CodegenOptions &options, llvm::raw_ostream &out) {
  KernelWriter(kernel, options, out).write();
}

} // namespace fsl::codegen
