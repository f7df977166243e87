// KernelPrinter.h — one Kernel IR kernel as readable CUDA.
//
// The printer is a visitor of kir (one method per statement and expression kind) that
// writes C++ for people tuning schedules: loops carry the directive that made them,
// parallel loops become named hardware indices, index arithmetic has only the
// parentheses C needs, and every device-side helper comes from fsl/device.cuh. It
// decides nothing: what runs is what the IR says (the simulator executes the same IR).
//
// Values: bf16 and f16 values live in f32 registers. A load from a bf16/f16 buffer
// widens, a store rounds once, and an operation of type bf16/f16 is computed in f32 and
// rounded to its type (`__bfloat162float(__float2bfloat16_rn(...))`).
#pragma once

#include "codegen/CudaCodegen.h"
#include "kir/IR.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace fsl::codegen {

class NameScope;

/// The C type of a register value of `type` (bf16 and f16 values live in f32 registers).
llvm::StringRef cType(ir::DType type);
/// The C type of an element of a buffer of `type` (__nv_bfloat16, __half, else cType).
llvm::StringRef memoryType(ir::DType type);

/// `e` as a C expression, with the parentheses C precedence needs and no others; each
/// variable and buffer by its name in `names` (its own name without a scope).
std::string printExpr(const kir::Expr &e, const NameScope *names = nullptr);
/// `e` as a C expression that may follow a cast or another prefix operator: parenthesized
/// unless it is a name, a literal or a call.
std::string printOperand(const kir::Expr &e, const NameScope *names = nullptr);

/// The declarations of `kernel`'s parameters, in KernelParam order ("const
/// __nv_bfloat16* __restrict__ x", "float eps", "int64_t T", "const __grid_constant__
/// CUtensorMap a_map").
/// Each parameter is declared in `names` (a scope of its own when null), which may rename
/// it (Naming.h).
std::vector<std::string> kernelParameters(const kir::Kernel &kernel, NameScope *names = nullptr);

/// What the kernels of `program` need above them: fsl/device.cuh, the CUtensorMap type
/// when a kernel takes one (<cuda.h>, or a 64-byte opaque struct under NVRTC), and the
/// dynamic shared memory `fsl_shared`, aligned for the most demanding shared buffer.
void printKernelPrologue(const kir::Program &program, llvm::raw_ostream &out);

/// `kernel` as one `extern "C" __global__` function named kernelSymbol(kernel, options),
/// followed by a blank line. With options.sourceLocation, the kernel and each statement
/// that comes from the sources (a fusion statement, a schedule directive) name their
/// "file.fsl:LINE" at the end of their comment; comments only, so the compiled code is the
/// same with and without them.
void printKernel(const kir::Kernel &kernel, const CodegenOptions &options, llvm::raw_ostream &out);

} // namespace fsl::codegen
