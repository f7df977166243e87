// FusionIR.h — the checked algorithm of one fusion, as a graph of typed tensor values.
//
// Sema builds it from the AST (names resolved, fns inlined, types and named-dimension
// shapes checked); the reference evaluator runs it; later the schedule, lowering and
// heuristics phases read it. Values are in topological order and never refer to later
// ones. A value's dimensions are always listed in the fusion's dimension order (the
// order of first appearance in the signature), whatever order an expression named them
// in: dimensions are identified by name, not position.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsl::ir {

enum class DType { Bool, I32, I64, F16, BF16, F32, F64 };
llvm::StringRef dtypeName(DType type);
bool isFloat(DType type);
bool isInteger(DType type);
/// Bytes of one element in memory.
unsigned dtypeBytes(DType type);

/// A named dimension of the fusion: static (`<H = 4096>`) or a runtime size.
struct Dim {
  std::string name;
  std::optional<int64_t> staticExtent;
  llvm::SMRange declaredAt; // first appearance in the signature
};

using DimId = unsigned;

enum class Op {
  Input,    // a tensor parameter
  Scalar,   // a runtime scalar parameter
  Constant, // a literal
  Cast,
  // Unary pointwise
  Neg,
  Not,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Erf,
  Abs,
  // Binary pointwise
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Pow,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  // Ternary
  Where,
  // Reductions over `reduced` dimensions
  ReduceSum,
  ReduceMax,
  ReduceMin,
  ReduceMean,
  // The index (i64) of the largest / smallest element along the one reduced dimension:
  // the lowest index on ties; a NaN is larger and smaller than any number (the first NaN
  // wins), as torch.argmax/argmin do.
  ReduceArgMax,
  ReduceArgMin,
  // sum(a * b, over K) with a, b each lacking one of the other's dims
  MatMul,
  // Indexing a tensor parameter (operands[0], always an Input) along one dimension:
  // Gather `x[D = i]`: the element at index operands[1] (an integer value) along
  // indexed[0]; D leaves the result, which gains the index's dims. An index outside
  // [0, extent) reads as 0 (no memory is read).
  Gather,
  // Window `x[D -> W from off]`: element w of dimension W is element off + w of D
  // (indexed = {D, W}); operands[1] is the offset (an i64 scalar value).
  Window,
  // The extent of dimension indexed[0], as an i64 scalar (a dimension's name).
  DimSize,
  // Each element's index along dimension indexed[0] (`index(D)`): i64 with dims {D}.
  DimIndex,
};
llvm::StringRef opName(Op op);
bool isReduction(Op op);
/// argmax, argmin: a reduction that carries a value and its index.
bool isArgReduction(Op op);
/// Gather and Window: their first operand is a parameter read at another index.
bool isIndexing(Op op);

/// Bytes a thread of shared scratch that block reductions of `fusion` use: 8 (one
/// accumulator of up to 8 bytes), 16 when a reduction carries a value and its index
/// (argmax: the pair is one 16-byte element of the combining tree). A lowering of Welford
/// or online softmax (kir::ReduceKind::Welford, MaxExpSum) must add its element's size
/// here (FslWelford<double> is 24 bytes) before it produces them.
int64_t reductionScratchBytesPerThread(const struct Fusion &fusion);

/// Layout of one matrix-product operand.
struct MatMulOperand {
  DimId rowDim;           // M for the left operand, N for the right one
  bool contractedIsInner; // K is the operand's last (contiguous) dimension
  std::string inputName;  // the parameter it is read from, when directly an input
};

struct Value {
  unsigned id = 0;
  Op op = Op::Constant;
  DType dtype = DType::F32;
  std::vector<DimId> dims; // in fusion dimension order
  std::vector<const Value *> operands;
  std::string name; // let binding or parameter name, for printing
  /// Other lets bound to this same value: sema shares identical computations, so two
  /// lets may name one value; schedules accept either name.
  std::vector<std::string> aliases;
  llvm::SMRange range; // the expression that produced it
  // Op-specific:
  unsigned paramIndex = 0;      // Input, Scalar
  double constant = 0;          // Constant
  std::string constantSpelling; // Constant
  std::vector<DimId> reduced;   // reductions, MatMul (the contracted dim)
  std::vector<DimId> indexed;   // Gather, Window, DimSize, DimIndex: the dimensions they name
  std::optional<MatMulOperand> lhsLayout, rhsLayout; // MatMul
};

struct Param {
  std::string name;
  DType dtype;
  std::vector<DimId> dims; // declared order (the memory layout); empty for scalars
  bool isInout = false;
  bool isStrided = false;
  std::optional<double> defaultValue; // scalars
  const Value *value = nullptr;
  llvm::SMRange range;
};

struct Output {
  std::string name;
  DType dtype;
  std::vector<DimId> dims; // declared order (the memory layout)
  const Value *value = nullptr;
  bool isInout = false;    // writes back an inout parameter
  unsigned paramIndex = 0; // when isInout
  llvm::SMRange range;
};

struct Fusion {
  std::string name;
  std::vector<Dim> dims;
  std::vector<Param> params;
  std::vector<Output> outputs;
  std::vector<std::unique_ptr<Value>> values;
  llvm::SMRange range;

  std::optional<DimId> findDim(llvm::StringRef name) const;
  Value *addValue(std::unique_ptr<Value> value);
  /// Drops values no output needs (parameters stay) and renumbers the rest in order.
  void removeDeadValues();
};

} // namespace fsl::ir
