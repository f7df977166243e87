// LaunchContract.h — what a fusion's launcher takes, checks and launches, as plain data.
//
// The contract of a launch is computed once, from the lowered program and the target's
// limits, and read by everything that checks or makes a call of the fusion:
//   - the launcher printer (LauncherPrinter.cpp) prints it as C++;
//   - libfslc (jit/src/compiler_api.cpp) serializes it as the JIT's launch metadata
//     (the text format of jit/src/launch_plan.h, which the JIT parses without the
//     compiler), and its signature part alone as fsl_program_signature;
//   - the Python package (python/fsl) reads that signature through the C API.
// It says, in the launcher's order: the tensors (user and C names, dtype, role, dims, the
// alignment the kernels' vector accesses need), the scalars, each dimension (static or
// runtime, the tensor axes that define and must match it, whether a reduction reduces it,
// when an empty call is refused), the pairs that may not overlap, the workspaces, the
// kernels with their arguments and launch shapes, the variants and the target's limits.
// Expressions stay Kernel IR: each reader prints them its own way.
#pragma once

#include "codegen/CudaCodegen.h"
#include "codegen/Naming.h"
#include "ir/FusionIR.h"
#include "kir/IR.h"
#include "support/Target.h"

#include <llvm/ADT/StringRef.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace fsl::codegen {

/// How the launcher's tensor is used: read, updated in place, or written.
enum class TensorRole { In, InOut, Out };
/// "in", "inout", "out": the launch metadata's words.
llvm::StringRef roleName(TensorRole role);

/// A tensor of the launcher's signature: a fusion parameter with dimensions, or an
/// output that is not an inout parameter.
struct ContractTensor {
  const void *entity = nullptr; // the ir::Param or ir::Output (the launcher scope's key)
  std::string name;             // the user's name: messages, metadata
  std::string cName;            // the launcher's parameter (NameScope)
  ir::DType dtype = ir::DType::F32;
  int64_t elementBytes = 4;
  TensorRole role = TensorRole::In;
  std::vector<ir::DimId> dims;
  /// The widest vector access any kernel makes to it, in bytes (0: none): the data
  /// pointer must be aligned to it where it is wider than an element.
  int64_t vectorBytes = 0;
  /// Declared `strided`: an input whose outer axes take runtime strides (positive, in
  /// elements, each a multiple of vectorBytes / elementBytes) and whose innermost has
  /// stride 1; the kernels take the strides as arguments (ContractArg::Kind::Stride).
  bool strided = false;

  bool written() const { return role != TensorRole::In; }
};

/// A scalar parameter of the launcher's signature.
struct ContractScalar {
  const ir::Param *param = nullptr; // the launcher scope's key
  std::string name, cName;
  ir::DType dtype = ir::DType::F32;
  std::optional<double> defaultValue;
  bool strided = false; // declared strided (which means nothing for a scalar)
};

/// One parameter of the launcher in signature order (the stream comes last).
struct ContractParam {
  enum class Kind { Tensor, Scalar } kind = Kind::Tensor;
  size_t index = 0; // into LaunchContract::tensors or ::scalars
};

/// One axis of one of the launcher's tensors.
struct TensorAxis {
  size_t tensor = 0; // into LaunchContract::tensors
  size_t axis = 0;
};

/// A call whose runtime dimension is 0 has nothing to do, unless an output without that
/// dimension still has elements: those would be reductions over nothing, so the call is
/// refused. The output is the fusion's first without the dimension.
struct EmptyRefusal {
  std::string output; // its user name
  std::vector<ir::DimId> outputDims;
};

struct ContractDim {
  std::string name; // the user's
  /// The launcher's local holding a runtime size (the program's variable's C name;
  /// without one, or in a signature alone, the user's name).
  std::string cName;
  std::optional<int64_t> staticExtent;
  const kir::Var *var = nullptr; // the program's variable of a runtime size
  /// Every tensor axis of this dimension, in launcher order: the first defines a
  /// runtime one, every other must equal it (or the static extent).
  std::vector<TensorAxis> axes;
  bool reduced = false;                     // some reduction (or matrix product) reduces it
  std::optional<EmptyRefusal> emptyRefusal; // runtime dimensions only

  bool isRuntime() const { return !staticExtent; }
};

/// An output (or inout parameter) and another tensor that may not share a byte.
struct OverlapPair {
  size_t output = 0, other = 0; // into LaunchContract::tensors
};

/// A global temporary the launcher allocates for a call, after every check.
struct ContractWorkspace {
  const kir::Buffer *buffer = nullptr; // the launcher scope's key
  std::string name, cName;
  std::string comment;
  ir::DType dtype = ir::DType::F32;
  kir::Expr elements; // over the runtime dimensions
  kir::Expr bytes;    // elements times the element's bytes
};

/// A TMA descriptor the launcher encodes before a kernel's launch (declared in the
/// launch's block, so its C name is the printer's).
struct ContractTensorMap {
  const kir::TensorMap *map = nullptr;
  std::string tensor;  // the user's name of the tensor it describes
  std::string cTensor; // the C expression of that tensor's descriptor
  ir::DType dtype = ir::DType::F32;
  std::vector<kir::Expr> extents; // innermost last, as the IR lists them
  std::vector<int64_t> box;       // innermost last
  kir::Swizzle swizzle = kir::Swizzle::None;
};

/// One argument of a kernel, as the launcher passes it.
struct ContractArg {
  /// Stride: the runtime stride (in elements) of an outer axis of a `strided` input.
  enum class Kind { Tensor, Scalar, Dim, TensorMap, Stride } kind = Kind::Tensor;
  /// The user's name: the tensor's or workspace's, the scalar's, the dimension's
  /// (Dim: empty when the kernel's variable is no runtime dimension of the program; see
  /// varName), the tensor map's; Stride: the tensor's.
  std::string name;
  /// The launcher's C name of the value passed (the tensor's descriptor, the workspace,
  /// the scalar, the dimension's local; Stride: the tensor's descriptor); TensorMap: empty
  /// (the printer declares it).
  std::string cName;
  size_t axis = 0;                  // Stride: the tensor's axis, outermost 0
  ir::DType dtype = ir::DType::F32; // Tensor: the element type
  bool written = false;             // Tensor: the kernel writes it
  bool workspace = false;           // Tensor: a workspace (its data is `.data`)
  std::optional<ir::DimId> dim;     // Dim: the fusion dimension whose variable it is
  std::string varName;              // Dim: the kernel's variable's name
  size_t tensorMap = 0;             // TensorMap: into ContractKernel::tensorMaps
};

struct ContractKernel {
  std::string name;   // the kernel's (the launch metadata's)
  std::string symbol; // its C symbol (CodegenOptions::symbolPrefix)
  std::vector<ContractArg> args;
  std::vector<ContractTensorMap> tensorMaps; // in argument order
  /// The launch shape over the runtime dimensions (a null extent is 1, a null shared
  /// size none); maxThreads is the kernel's __launch_bounds__.
  std::array<kir::Expr, 3> grid, block, cluster;
  kir::Expr sharedBytes;
  std::optional<int64_t> maxThreads;
  bool gridFromOccupancy = false;  // persistent: grid.x is an upper bound (kir::LaunchShape)
  std::optional<int64_t> fullGrid; // persistent: a smaller grid goes without PDL (kir::LaunchShape)
  bool clustered = false;          // launched in thread block clusters (a cluster extent != 1)
  bool cooperative = false;        // every block resident: a grid barrier (kir::LaunchShape)
};

struct ContractVariant {
  kir::Expr guard;                // null: always
  std::vector<unsigned> launches; // into LaunchContract::kernels, in order
};

/// A window `x[D -> W from k]` of the fusion: the launcher checks that it fits,
/// 0 <= k and k + W <= D, before anything else than the sizes.
struct ContractWindow {
  std::string tensor; // the user's name of the parameter it reads
  ir::DimId along = 0, size = 0;
  /// The offset: an i64 scalar of integer literals, sizes, integer scalar parameters,
  /// + - * / and max, min (sema refuses anything else).
  const ir::Value *offset = nullptr;
};

struct LaunchContract {
  std::string fusion;
  std::string launcher; // the launcher's C symbol
  std::vector<ContractParam> signature;
  std::vector<ContractTensor> tensors; // in the launcher's order
  std::vector<ContractScalar> scalars; // in the launcher's order
  std::vector<ContractDim> dims;       // the fusion's, by ir::DimId
  std::vector<OverlapPair> overlaps;   // each pair once, in the order they are checked
  std::vector<ContractWindow> windows; // the fusion's windows, in value order
  std::vector<ContractWorkspace> workspaces;
  std::vector<ContractKernel> kernels;
  /// Guarded ones first, tried in order (those after an unguarded one never run).
  std::vector<ContractVariant> variants;
  LaunchLimits limits;
  /// The launcher's names after its declarations (parameters, dimensions' locals,
  /// workspaces; its own locals and symbols reserved): the C names above come from it,
  /// and the printer declares its block-local names (tensor maps) in a copy.
  NameScope names;
};

/// The contract of `fusion`'s signature alone, before any lowering: tensors (no vector
/// accesses yet), scalars, dimensions and overlaps; no workspaces, kernels or variants.
LaunchContract describeSignature(const ir::Fusion &fusion, const CodegenOptions &options);

/// The whole contract of a lowered program under `options` (its symbol prefix names the
/// launcher and kernels, its limits are the target's).
LaunchContract describeLaunch(const kir::Program &program, const CodegenOptions &options);

} // namespace fsl::codegen
