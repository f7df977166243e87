// Printer.cpp — Fusion IR as text, one value per line.
#include "ir/Printer.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::ir {

std::string typeString(const Fusion &fusion, DType dtype, const std::vector<DimId> &dims) {
  std::string text = dtypeName(dtype).str();
  if (dims.empty())
    return text;
  text += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != 0)
      text += ", ";
    text += fusion.dims[dims[i]].name;
  }
  return text + ']';
}

namespace {

std::string dimList(const Fusion &fusion, const std::vector<DimId> &dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + fusion.dims[dims[i]].name;
  return dims.size() == 1 ? text : "(" + text + ")";
}

std::string ref(const Value *value) { return "%" + std::to_string(value->id); }

} // namespace

void printFusion(const Fusion &fusion, llvm::raw_ostream &out) {
  out << "fusion " << fusion.name << '\n';
  for (const Dim &dim : fusion.dims) {
    out << "  dim " << dim.name;
    if (dim.staticExtent)
      out << " = " << *dim.staticExtent << '\n';
    else
      out << ": runtime\n";
  }
  for (const Param &param : fusion.params) {
    out << "  param " << ref(param.value) << ' ' << param.name << ": "
        << (param.isInout ? "inout " : "") << (param.isStrided ? "strided " : "")
        << typeString(fusion, param.dtype, param.dims);
    if (param.defaultValue)
      out << " = " << llvm::format("%.9g", *param.defaultValue);
    out << '\n';
  }
  for (const auto &value : fusion.values) {
    if (value->op == Op::Input || value->op == Op::Scalar)
      continue;
    out << "  " << ref(value.get());
    if (!value->name.empty())
      out << ' ' << value->name;
    out << " = " << opName(value->op);
    if (value->op == Op::Constant)
      out << ' ' << value->constantSpelling;
    for (size_t i = 0; i < value->operands.size(); ++i)
      out << (i ? ", " : " ") << ref(value->operands[i]);
    if (value->op == Op::Window)
      out << " along " << fusion.dims[value->indexed[0]].name << " as "
          << fusion.dims[value->indexed[1]].name;
    else if (value->op == Op::Gather || value->op == Op::DimSize || value->op == Op::DimIndex)
      out << " of " << fusion.dims[value->indexed[0]].name;
    else if (!value->reduced.empty())
      out << " over " << dimList(fusion, value->reduced);
    out << " : " << typeString(fusion, value->dtype, value->dims);
    if (value->op == Op::MatMul) {
      auto layout = [&](const char *role, const MatMulOperand &operand) {
        out << role << ' '
            << (operand.inputName.empty() ? std::string("(computed)") : operand.inputName)
            << " rows " << fusion.dims[operand.rowDim].name << ", "
            << fusion.dims[value->reduced[0]].name
            << (operand.contractedIsInner ? " contiguous" : " strided");
      };
      out << "  // ";
      layout("lhs", *value->lhsLayout);
      out << "; ";
      layout("rhs", *value->rhsLayout);
    }
    out << '\n';
  }
  for (const Output &output : fusion.outputs) {
    out << "  output " << output.name << " = " << ref(output.value) << " : "
        << typeString(fusion, output.dtype, output.dims);
    if (output.isInout)
      out << " (writes inout " << ref(fusion.params[output.paramIndex].value) << ")";
    out << '\n';
  }
}

} // namespace fsl::ir
