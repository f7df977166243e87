// Printer.h — `fslc --emit=fusion-ir`: a stable, readable listing of a fusion.
#pragma once

#include "ir/FusionIR.h"

namespace llvm {
class raw_ostream;
}

namespace fsl::ir {

void printFusion(const Fusion &fusion, llvm::raw_ostream &out);
/// `bf16[T, H]`, dimensions named.
std::string typeString(const Fusion &fusion, DType dtype, const std::vector<DimId> &dims);

} // namespace fsl::ir
