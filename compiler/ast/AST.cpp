// AST.cpp — spellings of the AST's enumerations.
#include "ast/AST.h"

namespace fsl::ast {

llvm::StringRef elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::Bool:
    return "bool";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  }
  return "f32";
}

std::optional<ElementType> parseElementType(llvm::StringRef text) {
  for (ElementType type : {ElementType::Bool, ElementType::I32, ElementType::I64, ElementType::F16,
                           ElementType::BF16, ElementType::F32, ElementType::F64})
    if (elementTypeName(type) == text)
      return type;
  return std::nullopt;
}

llvm::StringRef unaryOpSpelling(UnaryOp op) { return op == UnaryOp::Negate ? "-" : "!"; }

llvm::StringRef binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
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
  }
  return "?";
}

int binaryOpPrecedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Mul:
  case BinaryOp::Div:
    return 6;
  case BinaryOp::Add:
  case BinaryOp::Sub:
    return 5;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
    return 4;
  case BinaryOp::Eq:
  case BinaryOp::Ne:
    return 3;
  case BinaryOp::And:
    return 2;
  case BinaryOp::Or:
    return 1;
  }
  return 0;
}

llvm::StringRef parallelTypeName(ParallelType type) {
  switch (type) {
  case ParallelType::BIDx:
    return "BIDx";
  case ParallelType::BIDy:
    return "BIDy";
  case ParallelType::BIDz:
    return "BIDz";
  case ParallelType::TIDx:
    return "TIDx";
  case ParallelType::TIDy:
    return "TIDy";
  case ParallelType::TIDz:
    return "TIDz";
  }
  return "TIDx";
}

std::optional<ParallelType> parseParallelType(llvm::StringRef text) {
  for (ParallelType type : {ParallelType::BIDx, ParallelType::BIDy, ParallelType::BIDz,
                            ParallelType::TIDx, ParallelType::TIDy, ParallelType::TIDz})
    if (parallelTypeName(type) == text)
      return type;
  return std::nullopt;
}

llvm::StringRef memoryKindName(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Registers:
    return "registers";
  case MemoryKind::Shared:
    return "shared";
  case MemoryKind::Recompute:
    return "recompute";
  }
  return "registers";
}

} // namespace fsl::ast
