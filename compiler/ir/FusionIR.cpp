// FusionIR.cpp — names of types and operations, small queries.
#include "ir/FusionIR.h"

namespace fsl::ir {

llvm::StringRef dtypeName(DType type) {
  switch (type) {
  case DType::Bool:
    return "bool";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "f32";
}

bool isFloat(DType type) {
  return type == DType::F16 || type == DType::BF16 || type == DType::F32 || type == DType::F64;
}

bool isInteger(DType type) { return type == DType::I32 || type == DType::I64; }

unsigned dtypeBytes(DType type) {
  switch (type) {
  case DType::Bool:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 4;
}

llvm::StringRef opName(Op op) {
  switch (op) {
  case Op::Input:
    return "input";
  case Op::Scalar:
    return "scalar";
  case Op::Constant:
    return "constant";
  case Op::Cast:
    return "cast";
  case Op::Neg:
    return "neg";
  case Op::Not:
    return "not";
  case Op::Exp:
    return "exp";
  case Op::Log:
    return "log";
  case Op::Sqrt:
    return "sqrt";
  case Op::Rsqrt:
    return "rsqrt";
  case Op::Tanh:
    return "tanh";
  case Op::Sigmoid:
    return "sigmoid";
  case Op::Erf:
    return "erf";
  case Op::Abs:
    return "abs";
  case Op::Add:
    return "add";
  case Op::Sub:
    return "sub";
  case Op::Mul:
    return "mul";
  case Op::Div:
    return "div";
  case Op::Max:
    return "max";
  case Op::Min:
    return "min";
  case Op::Pow:
    return "pow";
  case Op::Lt:
    return "lt";
  case Op::Le:
    return "le";
  case Op::Gt:
    return "gt";
  case Op::Ge:
    return "ge";
  case Op::Eq:
    return "eq";
  case Op::Ne:
    return "ne";
  case Op::And:
    return "and";
  case Op::Or:
    return "or";
  case Op::Where:
    return "where";
  case Op::ReduceSum:
    return "sum";
  case Op::ReduceMax:
    return "max";
  case Op::ReduceMin:
    return "min";
  case Op::ReduceMean:
    return "mean";
  case Op::ReduceArgMax:
    return "argmax";
  case Op::ReduceArgMin:
    return "argmin";
  case Op::MatMul:
    return "matmul";
  case Op::Gather:
    return "gather";
  case Op::Window:
    return "window";
  case Op::DimSize:
    return "dim_size";
  case Op::DimIndex:
    return "dim_index";
  }
  return "?";
}

bool isReduction(Op op) {
  return op == Op::ReduceSum || op == Op::ReduceMax || op == Op::ReduceMin ||
         op == Op::ReduceMean || op == Op::ReduceArgMax || op == Op::ReduceArgMin ||
         op == Op::MatMul;
}

bool isArgReduction(Op op) { return op == Op::ReduceArgMax || op == Op::ReduceArgMin; }

bool isIndexing(Op op) { return op == Op::Gather || op == Op::Window; }

int64_t reductionScratchBytesPerThread(const Fusion &fusion) {
  for (const auto &value : fusion.values)
    if (isArgReduction(value->op))
      return 16;
  return 8;
}

std::optional<DimId> Fusion::findDim(llvm::StringRef name) const {
  for (DimId id = 0; id < dims.size(); ++id)
    if (dims[id].name == name)
      return id;
  return std::nullopt;
}

Value *Fusion::addValue(std::unique_ptr<Value> value) {
  value->id = static_cast<unsigned>(values.size());
  values.push_back(std::move(value));
  return values.back().get();
}

void Fusion::removeDeadValues() {
  std::vector<bool> live(values.size(), false);
  for (const auto &value : values)
    if (value->op == Op::Input || value->op == Op::Scalar)
      live[value->id] = true;
  for (const Output &output : outputs)
    if (output.value)
      live[output.value->id] = true;
  // Operands precede their users, so one backward pass finds everything needed.
  for (size_t i = values.size(); i-- > 0;)
    if (live[i])
      for (const Value *operand : values[i]->operands)
        live[operand->id] = true;
  std::vector<std::unique_ptr<Value>> kept;
  for (auto &value : values)
    if (live[value->id])
      kept.push_back(std::move(value));
  values = std::move(kept);
  for (unsigned id = 0; id < values.size(); ++id)
    values[id]->id = id;
}

} // namespace fsl::ir
