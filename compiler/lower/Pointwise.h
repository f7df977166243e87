// Pointwise.h — a Fusion IR value's pointwise operation as a Kernel IR expression.
//
// Shared by the two builders of element bodies: the loop nests of the normalizations
// (BuildLoopNests.cpp) and the epilogue of a matrix product (MatmulBuild.cpp), so an
// operation is lowered one way whichever kernel computes it.
#pragma once

#include "kir/IR.h"

#include <vector>

namespace fsl::lower {

/// The type a value of `type` has in a register (and in a persistent buffer): bf16 and
/// f16 values live in f32 registers.
ir::DType registerType(ir::DType type);

/// `value`'s operation on `operands` (its operands' expressions, in order), typed as the
/// value. Only pointwise operations (casts, unary, binary, where); anything else is an
/// internal error.
/// The schedule's approximate functions: `fast_exp` makes an f32 exp kir::UnaryOp::FastExp,
/// `fast_tanh` an f32 tanh kir::UnaryOp::FastTanh, `fast_div` an f32 division
/// kir::BinaryOp::FastDiv.
struct Approximations {
  bool exp = false;
  bool tanh = false;
  bool div = false;
};
kir::Expr pointwiseOperation(const ir::Value &value, const std::vector<kir::Expr> &operands,
                             Approximations approximate = {});

/// The kernel variable of a fusion value: its name and id ("acc_5"), or "v<id>".
std::string valueName(const ir::Value &value);

/// `s` as coming from `range` of the fusion, which the CUDA printer names as "file:LINE"
/// (the origin's text stays empty: the statement's comment already says what it is).
kir::Stmt fromFusion(const kir::Stmt &s, llvm::SMRange range);

} // namespace fsl::lower
