// LauncherPrinter.cpp — a launch contract's checks, variant choice and launches as host C++.
#include "codegen/LauncherPrinter.h"

#include "codegen/KernelPrinter.h"
#include "codegen/Naming.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/CheckedArithmetic.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <set>

namespace fsl::codegen {
namespace {

const char *runtimeDType(ir::DType type) {
  switch (type) {
  case ir::DType::Bool:
    return "FSL_BOOL";
  case ir::DType::I32:
    return "FSL_I32";
  case ir::DType::I64:
    return "FSL_I64";
  case ir::DType::F16:
    return "FSL_F16";
  case ir::DType::BF16:
    return "FSL_BF16";
  case ir::DType::F32:
    return "FSL_F32";
  case ir::DType::F64:
    return "FSL_F64";
  }
  FSL_UNREACHABLE("dtype");
}

const char *tensorMapDType(ir::DType type) {
  switch (type) {
  case ir::DType::Bool:
    return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
  case ir::DType::I32:
    return "CU_TENSOR_MAP_DATA_TYPE_INT32";
  case ir::DType::I64:
    return "CU_TENSOR_MAP_DATA_TYPE_INT64";
  case ir::DType::F16:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
  case ir::DType::BF16:
    return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
  case ir::DType::F32:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
  case ir::DType::F64:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
  }
  FSL_UNREACHABLE("dtype");
}

const char *tensorMapSwizzle(kir::Swizzle swizzle) {
  switch (swizzle) {
  case kir::Swizzle::None:
    return "CU_TENSOR_MAP_SWIZZLE_NONE";
  case kir::Swizzle::Bytes32:
    return "CU_TENSOR_MAP_SWIZZLE_32B";
  case kir::Swizzle::Bytes64:
    return "CU_TENSOR_MAP_SWIZZLE_64B";
  case kir::Swizzle::Bytes128:
    return "CU_TENSOR_MAP_SWIZZLE_128B";
  }
  FSL_UNREACHABLE("swizzle");
}

std::string launcherSignature(const LaunchContract &contract) {
  std::vector<std::string> params;
  for (const ContractParam &param : contract.signature) {
    if (param.kind == ContractParam::Kind::Scalar) {
      const ContractScalar &scalar = contract.scalars[param.index];
      params.push_back(cType(scalar.dtype).str() + " " + scalar.cName);
    } else {
      params.push_back("const fsl_tensor *" + contract.tensors[param.index].cName);
    }
  }
  params.push_back("cudaStream_t stream");
  return "fsl_status " + contract.launcher + "(" + llvm::join(params, ", ") + ")";
}

/// Prints a launch contract (LaunchContract.h) as the launcher's C++: every fact comes
/// from the contract; what is decided here is only how to print it (a constant extent
/// within its limit needs no check, a helper only if called).
class LauncherWriter {
public:
  LauncherWriter(const LaunchContract &contract, const CodegenOptions &options,
                 llvm::raw_ostream &out)
      : contract_(contract), options_(options), final_(out), out_(body_), names_(contract.names) {}

  /// The launcher's body is written first, so that the helpers above it are only those
  /// it calls (nvcc warns about unused ones, #177, and the code builds with -Werror).
  void write() {
    out_ << "extern \"C\" const char *" << contract_.launcher
         << "_error(void) { return fsl_error_message; }\n\n";
    out_ << "extern \"C\" " << launcherSignature(contract_) << " {\n"
         << "  fsl_error_message[0] = '\\0';  // a call that succeeds leaves no message\n"
         << "  fsl_status status;\n";
    writeTensorChecks();
    writeSizes();
    writeWindows();
    // Nothing to do: no data pointer is looked at (PyTorch's empty tensors have null data).
    writeEmpty();
    writeDataChecks();
    writeAlignment();
    writeOverlaps();
    for (const ContractVariant &variant : contract_.variants) {
      writeVariant(variant);
      if (!variant.guard)
        break; // the variants after an unguarded one never run
    }
    out_ << "  return fsl_fail(FSL_ERROR_SIZE, \"no schedule of " << contract_.fusion
         << " applies to these sizes\");\n}\n";
    writeHelpers();
    final_ << body_.str();
  }

private:
  /// The launcher's local of a runtime dimension (a kernel argument, a name in guards
  /// and launch shapes).
  const std::string &dimName(ir::DimId dim) const { return contract_.dims[dim].cName; }

  std::string nameOf(const void *entity) const {
    llvm::StringRef name = names_.lookup(entity);
    FSL_INTERNAL_ASSERT(!name.empty(), "a launcher name used outside its declaration");
    return name.str();
  }

  std::string printExpr(const kir::Expr &e) const { return codegen::printExpr(e, &names_); }
  std::string printOperand(const kir::Expr &e) const { return codegen::printOperand(e, &names_); }

  bool usesTensorMaps() const {
    for (const ContractKernel &kernel : contract_.kernels)
      if (!kernel.tensorMaps.empty())
        return true;
    return false;
  }

  void writeHelpers() {
    final_
        << "namespace {\nthread_local char fsl_error_message[512];\n\n"
        << "fsl_status fsl_fail(fsl_status status, const char *format, ...) {\n"
        << "  va_list args;\n  va_start(args, format);\n"
        << "  vsnprintf(fsl_error_message, sizeof fsl_error_message, format, args);\n"
        << "  va_end(args);\n  return status;\n}\n\n"
        << "const char *fsl_dtype_name(fsl_dtype dtype) {\n"
        << "  static const char *names[] = {\"bool\", \"i32\", \"i64\", \"f16\", \"bf16\", "
           "\"f32\", \"f64\"};\n"
        << "  return dtype >= 0 && dtype <= 6 ? names[dtype] : \"unknown\";\n}\n\n"
        << "// Checks one tensor's descriptor: type, rank, sizes and contiguity. A tensor with\n"
        << "// elements must have fewer than 2^63 bytes; one without has nothing to check (its\n"
        << "// strides are never used). Data pointers are checked once the call has work to do.\n"
        << "fsl_status fsl_check_tensor(const fsl_tensor *t, const char *name, fsl_dtype dtype, "
           "int rank, int element_bytes) {\n"
        << "  if (!t)\n    return fsl_fail(FSL_ERROR_NULL_POINTER, \"%s: null tensor "
           "descriptor\", name);\n"
        << "  if (t->dtype != dtype)\n    return fsl_fail(FSL_ERROR_DTYPE, \"%s: dtype %s, "
           "expected %s\", name, fsl_dtype_name(t->dtype), fsl_dtype_name(dtype));\n"
        << "  if (t->rank != rank)\n    return fsl_fail(FSL_ERROR_RANK, \"%s: rank %d, expected "
           "%d\", name, (int)t->rank, rank);\n"
        << "  bool empty = false;\n"
        << "  for (int i = 0; i < rank; ++i) {\n"
        << "    if (t->sizes[i] < 0)\n      return fsl_fail(FSL_ERROR_SIZE, \"%s: negative "
           "size %lld in dimension %d\", name, (long long)t->sizes[i], i);\n"
        << "    empty = empty || t->sizes[i] == 0;\n  }\n"
        << "  if (empty)\n    return FSL_OK;\n"
        << "  int64_t expected = 1;  // elements inside dimension i\n"
        << "  for (int i = rank - 1; i >= 0; --i) {\n"
        << "    if (t->sizes[i] > 1 && t->strides[i] != expected)\n"
        << "      return fsl_fail(FSL_ERROR_LAYOUT, \"%s: stride %lld in dimension %d, "
           "expected %lld (contiguous row-major)\", name, (long long)t->strides[i], i, (long "
           "long)expected);\n"
        << "    if (expected > INT64_MAX / element_bytes / t->sizes[i])\n"
        << "      return fsl_fail(FSL_ERROR_SIZE, \"%s: size %lld in dimension %d makes more "
           "than 2^63 - 1 bytes\", name, (long long)t->sizes[i], i);\n"
        << "    expected *= t->sizes[i];\n  }\n  return FSL_OK;\n}\n\n";
    if (hasStridedTensor())
      writeStridedHelpers();
    else
      final_ << "// Bytes of a tensor that fsl_check_tensor accepted: fewer than 2^63.\n"
             << "int64_t fsl_bytes(const fsl_tensor *t, int element_bytes) {\n"
             << "  int64_t n = element_bytes;\n  for (int i = 0; i < t->rank; ++i) n *= "
                "t->sizes[i];\n  return n;\n}\n\n";
    final_
        << "// The data of a tensor with elements: not null, aligned to its element, and its\n"
        << "// bytes within the address space.\n"
        << "fsl_status fsl_check_data(const fsl_tensor *t, const char *name, int element_bytes) "
           "{\n"
        << "  if (!t->data)\n    return fsl_fail(FSL_ERROR_NULL_POINTER, \"%s: null data "
           "pointer\", name);\n"
        << "  if ((uintptr_t)t->data % element_bytes != 0)\n"
        << "    return fsl_fail(FSL_ERROR_ALIGNMENT, \"%s: data pointer %p is not aligned to its "
           "%d-byte elements\", name, t->data, element_bytes);\n"
        << "  if ((uintptr_t)t->data - 1 > UINTPTR_MAX - (uintptr_t)fsl_bytes(t, element_bytes))\n"
        << "    return fsl_fail(FSL_ERROR_SIZE, \"%s: %lld bytes at %p run past the end of the "
           "address space\", name, (long long)fsl_bytes(t, element_bytes), t->data);\n"
        << "  return FSL_OK;\n}\n";
    // Only the helpers the launcher calls: nvcc warns about unused ones (#177), and the
    // generated code builds with -Werror.
    if (!contract_.overlaps.empty())
      final_ << "\n// Whether two tensors with elements share a byte: the distance from the lower "
                "start\n"
             << "// to the higher is within the lower's bytes (no address is formed past either).\n"
             << "bool fsl_overlap(const fsl_tensor *a, int ab, const fsl_tensor *b, int bb) {\n"
             << "  const uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;\n"
             << "  return a0 <= b0 ? b0 - a0 < (uint64_t)fsl_bytes(a, ab) : a0 - b0 < "
                "(uint64_t)fsl_bytes(b, bb);\n}\n";
    writeArithmeticHelpers();
    if (usesDivision_)
      final_ << "\n// A window's offset divides as the kernels do (truncating), and by 0 gives 0.\n"
             << "int64_t fsl_div_or_0(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }\n";
    if (!contract_.workspaces.empty())
      final_
          << "\n// The workspaces' memory pool, one a device, created at the first call: it keeps "
             "its\n"
          << "// memory between calls (release threshold: all). The device's default pool gives\n"
          << "// its memory back at every synchronize, and mapping it again took 130 us a call\n"
          << "// on the H200 (docs/performance.md).\n"
          << "cudaError_t fsl_workspace_pool(cudaMemPool_t *pool) {\n"
          << "  static std::mutex mutex;\n"
          << "  static cudaMemPool_t pools[64] = {};\n"
          << "  int device = 0;\n"
          << "  cudaError_t error = cudaGetDevice(&device);\n"
          << "  if (error != cudaSuccess)\n    return error;\n"
          << "  if (device < 0 || device >= 64)\n    return cudaErrorInvalidDevice;\n"
          << "  std::lock_guard<std::mutex> lock(mutex);\n"
          << "  if (!pools[device]) {\n"
          << "    cudaMemPoolProps props = {};\n"
          << "    props.allocType = cudaMemAllocationTypePinned;\n"
          << "    props.location.type = cudaMemLocationTypeDevice;\n"
          << "    props.location.id = device;\n"
          << "    cudaMemPool_t created = nullptr;\n"
          << "    if ((error = cudaMemPoolCreate(&created, &props)) != cudaSuccess)\n"
          << "      return error;\n"
          << "    uint64_t keep = UINT64_MAX;\n"
          << "    if ((error = cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, "
             "&keep)) != cudaSuccess) {\n"
          << "      cudaMemPoolDestroy(created);\n      return error;\n    }\n"
          << "    pools[device] = created;\n  }\n"
          << "  *pool = pools[device];\n  return cudaSuccess;\n}\n"
          << "\n// A temporary in device memory for one call, allocated and freed in stream order\n"
          << "// (so CUDA graphs capture both); freed when the launcher's block ends.\n"
          << "struct fsl_workspace {\n"
          << "  cudaStream_t stream;\n  void *data = nullptr;\n"
          << "  explicit fsl_workspace(cudaStream_t s) : stream(s) {}\n"
          << "  fsl_workspace(const fsl_workspace &) = delete;\n"
          << "  fsl_workspace &operator=(const fsl_workspace &) = delete;\n"
          << "  ~fsl_workspace() {\n    if (data)\n      cudaFreeAsync(data, stream);\n  }\n"
          << "  fsl_status allocate(const char *name, int64_t bytes) {\n"
          << "    cudaMemPool_t pool = nullptr;\n"
          << "    cudaError_t error = fsl_workspace_pool(&pool);\n"
          << "    if (error == cudaSuccess)\n"
          << "      error = cudaMallocFromPoolAsync(&data, (size_t)bytes, pool, stream);\n"
          << "    if (error != cudaSuccess) {\n      data = nullptr;\n"
          << "      return fsl_fail(FSL_ERROR_LAUNCH, \"workspace %s of %lld bytes: %s\", name, "
             "(long long)bytes, cudaGetErrorString(error));\n    }\n"
          << "    return FSL_OK;\n  }\n};\n";
    if (usesTensorMaps())
      final_
          << "\n// A TMA descriptor of a contiguous tensor (sizes and box innermost first).\n"
          << "// cuTensorMapEncodeTiled comes from the driver through the runtime, so the\n"
          << "// program needs no -lcuda.\n"
          << "fsl_status fsl_encode_tensor_map(CUtensorMap *map, const char *name, "
             "CUtensorMapDataType type, cuuint32_t rank, void *data, const cuuint64_t *sizes, "
             "const cuuint64_t *strides, const cuuint32_t *box, CUtensorMapSwizzle swizzle) {\n"
          << "  typedef CUresult (*Encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, "
             "void *, const cuuint64_t *, const cuuint64_t *, const cuuint32_t *, const "
             "cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, "
             "CUtensorMapFloatOOBfill);\n"
          << "  // What TMA cannot take is refused here, before any CUDA call, with the tensor's\n"
          << "  // name: the base address and every row stride must be multiples of 16 bytes.\n"
          << "  if ((uintptr_t)data % 16 != 0)\n"
          << "    return fsl_fail(FSL_ERROR_ALIGNMENT, \"%s: data pointer %p is not aligned to 16 "
             "bytes (TMA copies need 16-byte aligned tensors)\", name, data);\n"
          << "  for (cuuint32_t i = 0; i + 1 < rank; ++i)\n"
          << "    if (strides[i] % 16 != 0)\n"
          << "      return fsl_fail(FSL_ERROR_SIZE, \"%s: rows of %llu bytes are not a multiple "
             "of 16 bytes (TMA copies need 16-byte row strides: pad the contiguous dimension)\", "
             "name, (unsigned long long)strides[i]);\n"
          << "  static Encode encode = nullptr;\n"
          << "  if (!encode) {\n"
          << "    void *entry = nullptr;\n"
          << "    cudaDriverEntryPointQueryResult found;\n"
          << "    if (cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", &entry, "
             "12000, cudaEnableDefault, &found) != cudaSuccess || found != "
             "cudaDriverEntryPointSuccess)\n"
          << "      return fsl_fail(FSL_ERROR_LAUNCH, \"%s: the CUDA driver has no "
             "cuTensorMapEncodeTiled\", name);\n"
          << "    encode = (Encode)entry;\n  }\n"
          << "  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};\n"
          << "  const CUresult encoded = encode(map, type, rank, data, sizes, strides, box, "
             "element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, "
             "CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
          << "  if (encoded != CUDA_SUCCESS)\n"
          << "    return fsl_fail(FSL_ERROR_LAUNCH, \"%s: cuTensorMapEncodeTiled failed "
             "(CUresult %d)\", name, (int)encoded);\n"
          << "  return FSL_OK;\n}\n";
    final_ << "} // namespace\n\n";
  }

  bool hasStridedTensor() const {
    for (const ContractTensor &t : contract_.tensors)
      if (t.strided)
        return true;
    return false;
  }

  /// A launcher with a `strided` input checks it with a helper of its own, and counts a
  /// tensor's bytes from its data pointer to its last element (for a contiguous tensor,
  /// all of its bytes), which data checks and overlaps use.
  void writeStridedHelpers() {
    final_
        << "// Checks a strided input's descriptor: type, rank, sizes, then its strides: the\n"
        << "// innermost 1, every other positive and a multiple of the elements of the vectors\n"
        << "// the kernel reads (so that every row starts aligned). Strides of dimensions of size\n"
        << "// 1 are never used. The elements it reaches must lie within 2^63 - 1 bytes.\n"
        << "fsl_status fsl_check_strided_tensor(const fsl_tensor *t, const char *name, "
           "fsl_dtype dtype, int rank, int element_bytes, int vector_elements) {\n"
        << "  if (!t)\n    return fsl_fail(FSL_ERROR_NULL_POINTER, \"%s: null tensor "
           "descriptor\", name);\n"
        << "  if (t->dtype != dtype)\n    return fsl_fail(FSL_ERROR_DTYPE, \"%s: dtype %s, "
           "expected %s\", name, fsl_dtype_name(t->dtype), fsl_dtype_name(dtype));\n"
        << "  if (t->rank != rank)\n    return fsl_fail(FSL_ERROR_RANK, \"%s: rank %d, expected "
           "%d\", name, (int)t->rank, rank);\n"
        << "  bool empty = false;\n"
        << "  for (int i = 0; i < rank; ++i) {\n"
        << "    if (t->sizes[i] < 0)\n      return fsl_fail(FSL_ERROR_SIZE, \"%s: negative "
           "size %lld in dimension %d\", name, (long long)t->sizes[i], i);\n"
        << "    empty = empty || t->sizes[i] == 0;\n  }\n"
        << "  if (empty)\n    return FSL_OK;\n"
        << "  if (t->sizes[rank - 1] > 1 && t->strides[rank - 1] != 1)\n"
        << "    return fsl_fail(FSL_ERROR_LAYOUT, \"%s: stride %lld in dimension %d, expected 1 "
           "(a strided tensor's innermost dimension is contiguous)\", name, (long "
           "long)t->strides[rank - 1], rank - 1);\n"
        << "  int64_t last = 0;  // the offset of the last element\n"
        << "  for (int i = rank - 2; i >= 0; --i) {\n"
        << "    if (t->sizes[i] == 1)\n      continue;\n"
        << "    if (t->strides[i] < 1)\n"
        << "      return fsl_fail(FSL_ERROR_LAYOUT, \"%s: stride %lld in dimension %d, expected a "
           "positive stride\", name, (long long)t->strides[i], i);\n"
        << "    if (t->strides[i] % vector_elements != 0)\n"
        << "      return fsl_fail(FSL_ERROR_ALIGNMENT, \"%s: stride %lld in dimension %d is not a "
           "multiple of %d elements (the kernel reads %d-byte vectors of each row)\", name, "
           "(long long)t->strides[i], i, vector_elements, vector_elements * element_bytes);\n"
        << "    if (t->strides[i] > (INT64_MAX / element_bytes - 1 - last) / (t->sizes[i] - 1))\n"
        << "      return fsl_fail(FSL_ERROR_SIZE, \"%s: stride %lld in dimension %d makes more "
           "than 2^63 - 1 bytes\", name, (long long)t->strides[i], i);\n"
        << "    last += (t->sizes[i] - 1) * t->strides[i];\n  }\n"
        << "  if (t->sizes[rank - 1] - 1 > INT64_MAX / element_bytes - 1 - last)\n"
        << "    return fsl_fail(FSL_ERROR_SIZE, \"%s: size %lld in dimension %d makes more than "
           "2^63 - 1 bytes\", name, (long long)t->sizes[rank - 1], rank - 1);\n"
        << "  return FSL_OK;\n}\n\n"
        << "// Bytes from the data pointer of a tensor with elements, accepted by\n"
        << "// fsl_check_tensor or fsl_check_strided_tensor, to the end of its last element:\n"
        << "// fewer than 2^63.\n"
        << "int64_t fsl_bytes(const fsl_tensor *t, int element_bytes) {\n"
        << "  int64_t last = 0;\n  for (int i = 0; i < t->rank; ++i)\n"
        << "    if (t->sizes[i] > 1)\n      last += (t->sizes[i] - 1) * t->strides[i];\n"
        << "  return (last + 1) * element_bytes;\n}\n\n";
  }

  void writeTensorChecks() {
    for (const ContractTensor &t : contract_.tensors) {
      if (t.strided) {
        out_ << "  if ((status = fsl_check_strided_tensor(" << t.cName << ", \"" << t.name << "\", "
             << runtimeDType(t.dtype) << ", " << t.dims.size() << ", " << t.elementBytes << ", "
             << std::max<int64_t>(1, t.vectorBytes / t.elementBytes)
             << ")) != FSL_OK)\n    return status;\n";
        continue;
      }
      out_ << "  if ((status = fsl_check_tensor(" << t.cName << ", \"" << t.name << "\", "
           << runtimeDType(t.dtype) << ", " << t.dims.size() << ", " << t.elementBytes
           << ")) != FSL_OK)\n    return status;\n";
    }
  }

  /// Every tensor's data, once the call has work (no tensor is empty): a kernel reads
  /// and writes whole elements, so each pointer is aligned to its element whether or not
  /// the kernel uses vectors (a misaligned access is a sticky error that poisons the
  /// CUDA context).
  void writeDataChecks() {
    for (const ContractTensor &t : contract_.tensors)
      out_ << "  if ((status = fsl_check_data(" << t.cName << ", \"" << t.name << "\", "
           << t.elementBytes << ")) != FSL_OK)\n    return status;\n";
  }

  /// The first tensor with a runtime dimension defines it; static ones must match.
  void writeSizes() {
    for (const ContractDim &d : contract_.dims) {
      bool defined = false;
      for (const TensorAxis &axis : d.axes) {
        const ContractTensor &t = contract_.tensors[axis.tensor];
        std::string size = t.cName + "->sizes[" + std::to_string(axis.axis) + "]";
        if (!defined && d.isRuntime()) {
          out_ << "  const int64_t " << d.cName << " = " << size << ";\n";
          defined = true;
          continue;
        }
        std::string expected = d.staticExtent ? std::to_string(*d.staticExtent) : d.cName;
        out_ << "  if (" << size << " != " << expected
             << ")\n    return fsl_fail(FSL_ERROR_SIZE, \"" << t.name << ": size %lld of dimension "
             << d.name << ", expected %lld" << (d.staticExtent ? " (static)" : "")
             << "\", (long long)" << size << ", (long long)" << expected << ");\n";
      }
    }
  }

  /// An integer offset of a window (ContractWindow::offset) as a C expression.
  std::string offsetExpr(const ir::Value &value) const {
    auto operand = [&](size_t i) { return offsetExpr(*value.operands[i]); };
    switch (value.op) {
    case ir::Op::Constant:
      return "(int64_t)" + std::to_string(static_cast<int64_t>(value.constant));
    case ir::Op::DimSize: {
      const ContractDim &d = contract_.dims[value.indexed[0]];
      return d.staticExtent ? "(int64_t)" + std::to_string(*d.staticExtent) : d.cName;
    }
    case ir::Op::Scalar:
      for (const ContractScalar &scalar : contract_.scalars)
        if (scalar.param->value == &value)
          return "(int64_t)" + scalar.cName;
      break;
    case ir::Op::Cast:
      return operand(0);
    case ir::Op::Neg:
      return "(-" + operand(0) + ")";
    case ir::Op::Add:
      return "(" + operand(0) + " + " + operand(1) + ")";
    case ir::Op::Sub:
      return "(" + operand(0) + " - " + operand(1) + ")";
    case ir::Op::Mul:
      return "(" + operand(0) + " * " + operand(1) + ")";
    case ir::Op::Div: // the kernels' truncating division; 0 for a zero divisor
      return "fsl_div_or_0(" + operand(0) + ", " + operand(1) + ")";
    case ir::Op::Max:
    case ir::Op::Min: {
      std::string a = operand(0), b = operand(1);
      return "(" + a + (value.op == ir::Op::Max ? " > " : " < ") + b + " ? " + a + " : " + b + ")";
    }
    default:
      break;
    }
    FSL_UNREACHABLE("a window offset sema should have refused");
  }

  /// Windows that do not fit the sizes of this call: refused, with the sizes.
  void writeWindows() {
    for (const ContractWindow &window : contract_.windows) {
      const ContractDim &along = contract_.dims[window.along];
      const ContractDim &size = contract_.dims[window.size];
      auto extent = [](const ContractDim &d) {
        return d.staticExtent ? "(int64_t)" + std::to_string(*d.staticExtent) : d.cName;
      };
      std::string from = offsetExpr(*window.offset);
      out_ << "  if (" << from << " < 0 || " << from << " > " << extent(along) << " - "
           << extent(size) << ")\n    return fsl_fail(FSL_ERROR_SIZE, \"" << window.tensor
           << ": the window along " << along.name << " from %lld of size " << size.name
           << " = %lld is outside " << along.name << " = %lld\", (long long)" << from
           << ", (long long)" << extent(size) << ", (long long)" << extent(along) << ");\n";
      usesDivision_ |= from.find("fsl_div_or_0") != std::string::npos;
    }
  }

  void writeAlignment() {
    for (const ContractTensor &t : contract_.tensors) {
      if (t.vectorBytes <= t.elementBytes)
        continue;
      int64_t bytes = t.vectorBytes;
      out_ << "  if ((uintptr_t)" << t.cName << "->data % " << bytes
           << " != 0)\n    return fsl_fail(FSL_ERROR_ALIGNMENT, \"" << t.name
           << ": data pointer %p is not aligned to " << bytes << " bytes (the kernel reads "
           << bytes << "-byte vectors)\", " << t.cName << "->data);\n";
    }
  }

  void writeOverlaps() {
    for (const OverlapPair &pair : contract_.overlaps) {
      const ContractTensor &output = contract_.tensors[pair.output];
      const ContractTensor &other = contract_.tensors[pair.other];
      out_ << "  if (fsl_overlap(" << output.cName << ", " << output.elementBytes << ", "
           << other.cName << ", " << other.elementBytes
           << "))\n    return fsl_fail(FSL_ERROR_OVERLAP, \"" << output.name << " overlaps "
           << other.name << " in memory; only inout parameters are updated in place\");\n";
    }
  }

  /// Empty tensors: nothing to do. Unless an output without the empty dimension still
  /// has elements (a row's argmax or sum over an empty row): that call is refused, as its
  /// values would come from reductions over no elements (ContractDim::emptyRefusal).
  void writeEmpty() {
    for (const ContractDim &d : contract_.dims) {
      if (!d.isRuntime() || !d.emptyRefusal)
        continue;
      const EmptyRefusal &refusal = *d.emptyRefusal;
      std::vector<std::string> condition{d.cName + " == 0"}, over;
      for (ir::DimId kept : refusal.outputDims) {
        over.push_back(contract_.dims[kept].name);
        if (contract_.dims[kept].isRuntime())
          condition.push_back(dimName(kept) + " != 0");
      }
      std::string shape = over.empty() ? "" : "[" + llvm::join(over, ", ") + "]";
      out_ << "  if (" << llvm::join(condition, " && ") << ")\n"
           << "    return fsl_fail(FSL_ERROR_SIZE, \"" << d.name << " is 0, but " << refusal.output
           << shape << " has elements, which cannot be computed over an empty " << d.name
           << "\");\n";
    }
    std::vector<std::string> empty;
    for (const ContractDim &d : contract_.dims)
      if (d.isRuntime())
        empty.push_back(d.cName + " == 0");
    if (!empty.empty())
      out_ << "  if (" << llvm::join(empty, " || ") << ")\n    return FSL_OK;\n";
  }

  void writeVariant(const ContractVariant &variant) {
    std::vector<std::string> names;
    for (unsigned k : variant.launches)
      names.push_back(contract_.kernels[k].symbol);
    out_ << "  " << (variant.guard ? "if (" + printExpr(variant.guard) + ") {" : "{") << "  // "
         << llvm::join(names, ", ") << "\n";
    // One launch prints in the variant's block; several get a block each, so that each
    // one's grid, block and configuration are its own.
    bool several = variant.launches.size() > 1;
    // Every launch's shape is computed and checked before the first is launched: a
    // variant runs whole or not at all.
    std::vector<LaunchValues> shapes;
    overflowDeclared_ = false;
    for (unsigned k : variant.launches)
      shapes.push_back(
          writeLaunchShape(contract_.kernels[k], several ? "_" + std::to_string(k) : ""));
    writeWorkspaces(variant);
    for (size_t i = 0; i < variant.launches.size(); ++i) {
      const ContractKernel &kernel = contract_.kernels[variant.launches[i]];
      std::string indent = several ? "      " : "    ";
      if (several)
        out_ << "    {  // " << kernel.symbol << "\n";
      names_.open(); // the launch's block (the variant's, for one launch)
      writeLaunch(kernel, shapes[i], indent);
      names_.close();
      if (several)
        out_ << "    }\n";
    }
    out_ << "    return FSL_OK;\n  }\n";
  }

  /// The workspaces the variant's kernels take, allocated on the call's stream after every
  /// check and before the first launch; each is freed on the stream when the variant's
  /// block ends, whether its launches went or one failed (fsl_workspace's destructor).
  /// Another variant's are not allocated: each is a stream-ordered allocation and free,
  /// host time of every call and, captured in a CUDA graph, two nodes between the kernels
  /// (the JIT's launch plan allocates the same ones).
  void writeWorkspaces(const ContractVariant &variant) {
    std::set<std::string> taken;
    for (unsigned k : variant.launches)
      for (const ContractArg &arg : contract_.kernels[k].args)
        if (arg.kind == ContractArg::Kind::Tensor && arg.workspace)
          taken.insert(arg.cName);
    for (const ContractWorkspace &workspace : contract_.workspaces) {
      const std::string &name = workspace.cName;
      if (!taken.count(name))
        continue;
      std::string bytes = "fsl_bytes_" + name;
      writeCheckedValue(workspace.bytes, bytes, "the size of workspace " + workspace.name);
      out_ << "    fsl_workspace " << name << "(stream);  // "
           << (workspace.comment.empty() ? "a temporary" : workspace.comment) << "\n"
           << "    if ((status = " << name << ".allocate(\"" << workspace.name << "\", " << bytes
           << ")) != FSL_OK)\n      return status;\n";
    }
  }

  // --- Launch limits ---------------------------------------------------------------
  //
  // A launch shape is an expression over the runtime sizes. The launcher evaluates it in
  // 64 bits with every operation checked (a helper sets `fsl_overflow` instead of
  // wrapping) and refuses, with FSL_ERROR_SIZE and before any launch, a grid, block,
  // cluster or shared-memory size beyond the target's limits: `(unsigned)T` with
  // T = 2^32 + 5 once launched 5 blocks and returned FSL_OK. Extents the compiler knows
  // are checked by the schedule checker and printed as constants.

  /// The C++ names (or constants) of one launch's extents, after their checks.
  struct LaunchValues {
    std::array<std::string, 3> grid, block, cluster;
    std::string sharedBytes; // empty: none
  };

  /// `e` as C++ whose every addition, subtraction, multiplication and division is
  /// checked through the fsl_* helpers.
  std::string checkedExpr(const kir::Expr &e) {
    if (e->kind == kir::ExprKind::Const || e->kind == kir::ExprKind::Var)
      return printExpr(e);
    if (e->kind == kir::ExprKind::Binary && e->operands.size() == 2 &&
        (e->dtype == ir::DType::I64 || e->dtype == ir::DType::I32)) {
      const char *helper = nullptr;
      switch (e->binary) {
      case kir::BinaryOp::Add:
        helper = "fsl_add";
        break;
      case kir::BinaryOp::Sub:
        helper = "fsl_sub";
        break;
      case kir::BinaryOp::Mul:
        helper = "fsl_mul";
        break;
      case kir::BinaryOp::Div:
        helper = "fsl_div";
        break;
      case kir::BinaryOp::Mod:
        helper = "fsl_mod";
        break;
      case kir::BinaryOp::Min:
        helper = "fsl_min";
        break;
      case kir::BinaryOp::Max:
        helper = "fsl_max";
        break;
      default:
        break;
      }
      // A positive constant divisor cannot fault: plain C.
      std::optional<int64_t> divisor = kir::asConstant(e->operands[1]);
      if ((e->binary == kir::BinaryOp::Div || e->binary == kir::BinaryOp::Mod) && divisor &&
          *divisor > 0)
        return "(" + checkedExpr(e->operands[0]) +
               (e->binary == kir::BinaryOp::Div ? " / " : " % ") + std::to_string(*divisor) + ")";
      if (helper) {
        helpersUsed_.insert(helper);
        std::string a = checkedExpr(e->operands[0]), b = checkedExpr(e->operands[1]);
        return std::string(helper) + "(" + a + ", " + b + ", &fsl_overflow)";
      }
    }
    // Nothing else appears in launch shapes today; were it to, it is printed as the
    // kernel printer prints it, and the result is still compared with the limits.
    return printExpr(e);
  }

  /// One extent: a constant as it is, else a checked local `name` whose bounds
  /// 1..limit are checked before any launch. `what` is "grid extent", `axis` "x".
  std::string checkedExtent(const kir::Expr &e, const std::string &name, int64_t limit,
                            const std::string &what, const char *axis, const std::string &symbol) {
    if (!e)
      return "1";
    std::optional<int64_t> known = kir::evaluateStatic(e);
    if (known && *known >= 1 && *known <= limit)
      return std::to_string(*known);
    std::string source = escape(printExpr(e));
    writeCheckedValue(e, name, symbol + ": " + what + " along " + axis + " (" + source + ")");
    out_ << "    if (" << name << " < 1 || " << name << " > " << limit
         << ")\n      return fsl_fail(FSL_ERROR_SIZE, \"" << symbol << ": " << what
         << " %lld along " << axis << " (" << source << ") is outside 1.." << limit << " on "
         << contract_.limits.target << "\", (long long)" << name << ");\n";
    return name;
  }

  /// `const int64_t name = e;` computed with checked arithmetic, refused (FSL_ERROR_SIZE,
  /// "`what` does not fit in 64 bits") when an operation overflows.
  void writeCheckedValue(const kir::Expr &e, const std::string &name, const std::string &what) {
    std::string value = checkedExpr(e);
    bool checked = value.find("&fsl_overflow") != std::string::npos;
    if (checked && !overflowDeclared_) {
      out_ << "    bool fsl_overflow = false;  // set by the checked arithmetic below\n";
      overflowDeclared_ = true;
    }
    out_ << "    const int64_t " << name << " = " << value << ";\n";
    if (checked)
      out_ << "    if (fsl_overflow)\n      return fsl_fail(FSL_ERROR_SIZE, \"" << what
           << " does not fit in 64 bits\");\n";
  }

  static std::string escape(const std::string &text) {
    std::string escaped;
    for (char c : text) {
      if (c == '%')
        escaped += "%%";
      else if (c == '"' || c == '\\')
        escaped += std::string("\\") + c;
      else
        escaped += c;
    }
    return escaped;
  }

  /// Computes and checks one kernel's launch shape (grid, block, cluster, dynamic shared
  /// memory) against the target's limits, before any launch of its variant.
  LaunchValues writeLaunchShape(const ContractKernel &launch, const std::string &suffix) {
    const LaunchLimits &limits = contract_.limits;
    const std::string &symbol = launch.symbol;
    static const char *axes[] = {"x", "y", "z"};
    LaunchValues values;
    auto isRuntime = [](const kir::Expr &e) { return e && !kir::evaluateStatic(e); };
    for (int a = 0; a < 3; ++a) {
      values.grid[a] = checkedExtent(launch.grid[a], "fsl_grid_" + std::string(axes[a]) + suffix,
                                     limits.maxGridDim[a], "grid extent", axes[a], symbol);
      values.block[a] = checkedExtent(launch.block[a], "fsl_block_" + std::string(axes[a]) + suffix,
                                      limits.maxBlockDim[a], "block extent", axes[a], symbol);
    }
    // Threads a block, within the target's limit and the kernel's __launch_bounds__,
    // unless the checks above already bound the product. Each extent is within its
    // axis's limit here (1024 x 1024 x 64 at most): the product cannot overflow.
    int64_t most = limits.maxThreadsPerBlock, reach = 1;
    std::string bound = limits.target + "'s limit of " + std::to_string(most);
    if (launch.maxThreads && *launch.maxThreads < most) {
      most = *launch.maxThreads;
      bound = "the kernel's __launch_bounds__ of " + std::to_string(most);
    }
    for (int a = 0; a < 3; ++a)
      reach *= isRuntime(launch.block[a]) ? limits.maxBlockDim[a]
                                          : kir::evaluateStatic(launch.block[a]).value_or(1);
    if (reach > most) {
      std::string threads = values.block[0] + " * " + values.block[1] + " * " + values.block[2];
      out_ << "    if (" << threads << " > " << most
           << ")\n      return fsl_fail(FSL_ERROR_SIZE, \"" << symbol
           << ": %lld threads a block exceed " << bound << "\", (long long)(" << threads << "));\n";
    }
    if (launch.clustered) {
      for (int a = 0; a < 3; ++a) {
        values.cluster[a] = launch.cluster[a] ? printOperand(launch.cluster[a]) : "1";
        if (isRuntime(launch.cluster[a]))
          values.cluster[a] =
              checkedExtent(launch.cluster[a], "fsl_cluster_" + std::string(axes[a]) + suffix,
                            limits.maxClusterSize, "cluster extent", axes[a], symbol);
      }
      // The checker holds a static cluster to the target's size.
      std::optional<int64_t> size = 1;
      for (int a = 0; a < 3; ++a) {
        std::optional<int64_t> extent =
            launch.cluster[a] ? kir::evaluateStatic(launch.cluster[a]) : 1;
        size = size && extent ? llvm::checkedMul(*size, *extent) : std::nullopt;
      }
      if (!size || *size > limits.maxClusterSize)
        out_ << "    if (" << values.cluster[0] << " * " << values.cluster[1] << " * "
             << values.cluster[2] << " > " << limits.maxClusterSize
             << ")\n      return fsl_fail(FSL_ERROR_SIZE, \"" << symbol
             << ": clusters of %lld blocks; " << limits.target << " allows at most "
             << limits.maxClusterSize << "\", (long long)(" << values.cluster[0] << " * "
             << values.cluster[1] << " * " << values.cluster[2] << "));\n";
      for (int a = 0; a < 3; ++a)
        if (isRuntime(launch.grid[a]) || isRuntime(launch.cluster[a]))
          out_ << "    if (" << values.grid[a] << " % " << values.cluster[a]
               << " != 0)\n      return fsl_fail(FSL_ERROR_SIZE, \"" << symbol
               << ": the grid extent %lld along " << axes[a]
               << " is not a multiple of the cluster extent %lld\", (long long)" << values.grid[a]
               << ", (long long)" << values.cluster[a] << ");\n";
    }
    if (launch.sharedBytes) {
      std::optional<int64_t> known = kir::evaluateStatic(launch.sharedBytes);
      if (known && *known >= 0 && *known <= limits.maxSharedBytesPerBlock) {
        values.sharedBytes = std::to_string(*known);
      } else {
        std::string name = "fsl_shared_bytes" + suffix;
        std::string source = escape(printExpr(launch.sharedBytes));
        writeCheckedValue(launch.sharedBytes, name,
                          symbol + ": the dynamic shared memory (" + source + " bytes)");
        out_ << "    if (" << name << " > " << limits.maxSharedBytesPerBlock
             << ")\n      return fsl_fail(FSL_ERROR_SIZE, \"" << symbol
             << ": %lld bytes of dynamic shared memory (" << source << "); " << limits.target
             << " allows " << limits.maxSharedBytesPerBlock << " a block\", (long long)" << name
             << ");\n";
        values.sharedBytes = name;
      }
    }
    return values;
  }

  /// The checked arithmetic the launch shapes use, each helper only if called.
  void writeArithmeticHelpers() {
    if (helpersUsed_.empty())
      return;
    final_ << "\n// 64-bit arithmetic that sets *overflow instead of wrapping (launch shapes).\n";
    struct Helper {
      const char *name, *body;
    };
    static const Helper helpers[] = {
        {"fsl_add", "  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))\n"
                    "    return (*overflow = true), 0;\n  return a + b;\n"},
        {"fsl_sub", "  if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b))\n"
                    "    return (*overflow = true), 0;\n  return a - b;\n"},
        {"fsl_mul", "  if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)\n"
                    "            : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))\n"
                    "    return (*overflow = true), 0;\n  return a * b;\n"},
        {"fsl_div", "  if (b == 0 || (a == INT64_MIN && b == -1))\n"
                    "    return (*overflow = true), 0;\n  return a / b;\n"},
        {"fsl_mod", "  if (b == 0 || (a == INT64_MIN && b == -1))\n"
                    "    return (*overflow = true), 0;\n  return a % b;\n"},
        {"fsl_min", "  (void)overflow;\n  return a < b ? a : b;\n"},
        {"fsl_max", "  (void)overflow;\n  return a > b ? a : b;\n"},
    };
    for (const Helper &helper : helpers)
      if (helpersUsed_.count(helper.name))
        final_ << "int64_t " << helper.name << "(int64_t a, int64_t b, bool *overflow) {\n"
               << helper.body << "}\n";
  }

  void writeTensorMap(const ContractTensorMap &map, const std::string &indent) {
    size_t rank = map.extents.size();
    FSL_INTERNAL_ASSERT(rank >= 1 && rank <= 5 && map.box.size() == rank,
                        "a tensor map of other than 1 to 5 dimensions, or without a box of each");
    // The IR lists extents and box innermost last; the driver wants them innermost first,
    // with the byte strides of every dimension but the innermost.
    std::vector<std::string> sizes, strides, box;
    std::string stride = std::to_string(ir::dtypeBytes(map.dtype));
    for (size_t i = 0; i < rank; ++i) {
      const kir::Expr &extent = map.extents[rank - 1 - i];
      sizes.push_back("(cuuint64_t)" + printOperand(extent));
      box.push_back(std::to_string(map.box[rank - 1 - i]));
      if (i > 0)
        strides.push_back("(cuuint64_t)" + stride);
      stride = stride + " * " + printOperand(extent);
    }
    const std::string &tensor = map.cTensor, &label = map.tensor;
    std::string mapName = names_.declare(map.map, map.map->name);
    out_ << indent << "CUtensorMap " << mapName << ";  // TMA descriptor of " << label << "\n"
         << indent << "{\n"
         << indent << "  const cuuint64_t sizes[" << rank << "] = {" << llvm::join(sizes, ", ")
         << "};\n";
    if (!strides.empty())
      out_ << indent << "  const cuuint64_t strides[" << strides.size() << "] = {"
           << llvm::join(strides, ", ") << "};\n";
    out_ << indent << "  const cuuint32_t box[" << rank << "] = {" << llvm::join(box, ", ")
         << "};\n"
         << indent << "  if ((status = fsl_encode_tensor_map(&" << mapName << ", \"" << label
         << "\", " << tensorMapDType(map.dtype) << ", " << rank << ", " << tensor << "->data, "
         << "sizes, " << (strides.empty() ? "nullptr" : "strides") << ", box, "
         << tensorMapSwizzle(map.swizzle) << ")) != FSL_OK)\n"
         << indent << "    return status;\n"
         << indent << "}\n";
  }

  std::vector<std::string> arguments(const ContractKernel &kernel) {
    std::vector<std::string> args;
    for (const ContractArg &arg : kernel.args) {
      switch (arg.kind) {
      case ContractArg::Kind::Tensor:
        args.push_back("(" + std::string(arg.written ? "" : "const ") +
                       memoryType(arg.dtype).str() + " *)" + arg.cName +
                       (arg.workspace ? ".data" : "->data"));
        break;
      case ContractArg::Kind::Scalar:
      case ContractArg::Kind::Dim:
        args.push_back(arg.cName);
        break;
      case ContractArg::Kind::Stride:
        args.push_back(arg.cName + "->strides[" + std::to_string(arg.axis) + "]");
        break;
      case ContractArg::Kind::TensorMap:
        args.push_back(nameOf(kernel.tensorMaps[arg.tensorMap].map));
        break;
      }
    }
    return args;
  }

  void writeLaunch(const ContractKernel &launch, const LaunchValues &values,
                   const std::string &indent) {
    const std::string &symbol = launch.symbol;
    for (const ContractTensorMap &map : launch.tensorMaps)
      writeTensorMap(map, indent);
    // Checked above: each extent is in 1..its limit, so the casts keep its value.
    auto dims = [](const std::array<std::string, 3> &v) {
      return "(unsigned)" + v[0] + ", (unsigned)" + v[1] + ", (unsigned)" + v[2];
    };
    out_ << indent << "const dim3 grid(" << dims(values.grid) << ");\n"
         << indent << "const dim3 block(" << dims(values.block) << ");\n";
    std::optional<int64_t> staticShared = kir::evaluateStatic(launch.sharedBytes);
    out_ << indent << "const size_t shared_bytes = "
         << (launch.sharedBytes ? "(size_t)" + values.sharedBytes : "0")
         << ";  // dynamic shared memory\n";
    if (launch.sharedBytes && !(staticShared && *staticShared <= 48 * 1024))
      out_ << indent << "if (shared_bytes > 48 * 1024) {\n"
           << indent << "  const cudaError_t opt_in = cudaFuncSetAttribute(" << symbol
           << ", cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes);\n"
           << indent << "  if (opt_in != cudaSuccess)\n"
           << indent << "    return fsl_fail(FSL_ERROR_LAUNCH, \"" << symbol
           << ": %zu bytes of shared memory: %s\", shared_bytes, cudaGetErrorString(opt_in));\n"
           << indent << "}\n";
    // A cooperative launch goes without programmatic dependent launch, so the kernel starts
    // once the previous one has finished (its griddepcontrol instructions are then no-ops).
    // The driver takes both attributes (tests/gpu/cooperative_pdl_test.cu), but grid_sync
    // with both measured no faster (docs/performance.md), so the simpler launch stays.
    bool cooperative = launch.cooperative,
         pdl = options_.programmaticDependentLaunch && !cooperative, cluster = launch.clustered;
    std::string args = llvm::join(arguments(launch), ", ");
    int count = (pdl ? 1 : 0) + (cluster ? 1 : 0) + (cooperative ? 1 : 0), next = 0;
    if (pdl)
      out_ << indent
           << "// Programmatic dependent launch: the grid may start while the stream's "
              "previous kernel\n"
           << indent
           << "// finishes (the kernel waits for its memory first). -DFSL_PDL=0 turns it "
              "off.\n";
    if (count > 0)
      out_ << indent << "cudaLaunchAttribute attributes[" << count << "];\n";
    if (pdl) {
      out_ << indent << "attributes[" << next
           << "].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n"
           << indent << "attributes[" << next
           << "].val.programmaticStreamSerializationAllowed = FSL_PDL";
      // A persistent grid of fewer CTAs than SMs goes without it: two such launches in a
      // row ran 1.14x (128 CTAs on 132 SMs) and 1.35x (96) faster so, full grids level
      // (docs/performance.md, run S27F); the kernel's griddepcontrol instructions are
      // then no-ops.
      if (launch.fullGrid)
        out_ << " && grid.x >= " << *launch.fullGrid
             << "u;  // fewer CTAs than SMs: no early launch";
      else
        out_ << ";";
      out_ << "\n";
      ++next;
    }
    if (cluster) {
      out_ << indent << "attributes[" << next
           << "].id = cudaLaunchAttributeClusterDimension;  // thread block clusters\n";
      static const char *axes[] = {"x", "y", "z"};
      for (int a = 0; a < 3; ++a)
        out_ << indent << "attributes[" << next << "].val.clusterDim." << axes[a] << " = (unsigned)"
             << values.cluster[a] << ";\n";
      ++next;
    }
    if (cooperative) {
      out_ << indent << "attributes[" << next
           << "].id = cudaLaunchAttributeCooperative;  // every block resident: a grid barrier\n"
           << indent << "attributes[" << next << "].val.cooperative = 1;\n";
      ++next;
    }
    if (launch.gridFromOccupancy) {
      // A persistent kernel walks its tiles from gridDim.x: its CTAs must all be resident.
      // Clusters need their CTAs in one GPC, so fewer clusters than SMs / size may fit
      // (30 clusters of 4 of a 213 KB kernel on the H200, not 33): the grid is what the
      // device holds at once.
      out_ << indent << "int max_clusters = 0;  // resident at once\n"
           << indent << "{\n"
           << indent << "  cudaLaunchConfig_t probe = {};\n"
           << indent << "  probe.gridDim = grid;\n"
           << indent << "  probe.blockDim = block;\n"
           << indent << "  probe.dynamicSmemBytes = shared_bytes;\n"
           << indent << "  cudaLaunchAttribute cluster_shape[1];\n"
           << indent << "  cluster_shape[0].id = cudaLaunchAttributeClusterDimension;\n"
           << indent << "  cluster_shape[0].val.clusterDim.x = (unsigned)" << values.cluster[0]
           << ";\n"
           << indent << "  cluster_shape[0].val.clusterDim.y = 1;\n"
           << indent << "  cluster_shape[0].val.clusterDim.z = 1;\n"
           << indent << "  probe.attrs = cluster_shape;\n"
           << indent << "  probe.numAttrs = 1;\n"
           << indent
           << "  const cudaError_t occupancy = cudaOccupancyMaxActiveClusters(&max_clusters, "
           << symbol << ", &probe);\n"
           << indent << "  if (occupancy != cudaSuccess || max_clusters < 1)\n"
           << indent << "    return fsl_fail(FSL_ERROR_LAUNCH, \"" << symbol
           << ": no cluster of %u CTAs fits the device (%s)\", (unsigned)" << values.cluster[0]
           << ", cudaGetErrorString(occupancy));\n"
           << indent << "}\n"
           << indent << "const unsigned resident = (unsigned)max_clusters * (unsigned)"
           << values.cluster[0] << ";\n"
           << indent
           << "const dim3 persistent_grid(grid.x < resident ? grid.x : resident, 1, 1);\n";
    }
    // cudaLaunchKernelEx also without attributes: its result is this launch's own status,
    // where `<<<>>>` + cudaGetLastError would also return, and clear, an earlier unrelated
    // error of the calling thread.
    out_ << indent << "cudaLaunchConfig_t config = {};\n"
         << indent << "config.gridDim = " << (launch.gridFromOccupancy ? "persistent_grid" : "grid")
         << ";\n"
         << indent << "config.blockDim = block;\n"
         << indent << "config.dynamicSmemBytes = shared_bytes;\n"
         << indent << "config.stream = stream;\n";
    if (count > 0)
      out_ << indent << "config.attrs = attributes;\n"
           << indent << "config.numAttrs = " << count << ";\n";
    out_ << indent << "const cudaError_t launched = cudaLaunchKernelEx(&config, " << symbol
         << (args.empty() ? "" : ", ") << args << ");\n";
    if (cooperative)
      out_ << indent << "if (launched == cudaErrorCooperativeLaunchTooLarge)\n"
           << indent << "  return fsl_fail(FSL_ERROR_LAUNCH, \"" << symbol
           << ": its blocks meet at a grid barrier (grid_sync), so all %u must be resident at "
              "once; this device holds fewer\", grid.x * grid.y * grid.z);\n";
    out_ << indent << "if (launched != cudaSuccess)\n"
         << indent << "  return fsl_fail(FSL_ERROR_LAUNCH, \"" << symbol
         << ": %s\", cudaGetErrorString(launched));\n";
  }

  const LaunchContract &contract_;
  const CodegenOptions &options_;
  llvm::raw_ostream &final_;
  std::string bodyText_;
  llvm::raw_string_ostream body_{bodyText_};
  llvm::raw_ostream &out_;            // the launcher's body, written before its helpers
  NameScope names_;                   // the contract's, with the launch blocks' tensor maps
  std::set<std::string> helpersUsed_; // the checked-arithmetic helpers it calls
  bool overflowDeclared_ = false;     // in the variant being written
  bool usesDivision_ = false;         // a window's offset divides: fsl_div_or_0
};

} // namespace

std::string printLauncherHeader(const LaunchContract &contract, const std::string &sourcePath,
                                const CodegenOptions &options) {
  // `bf16[T, H]`, as the fusion declares it.
  auto typeString = [&](ir::DType dtype, const std::vector<ir::DimId> &dims) {
    std::vector<std::string> names;
    for (ir::DimId dim : dims)
      names.push_back(contract.dims[dim].name);
    return ir::dtypeName(dtype).str() + (dims.empty() ? "" : "[" + llvm::join(names, ", ") + "]");
  };
  const std::string &prefix = contract.launcher;
  std::vector<std::string> docs;
  for (const ContractParam &param : contract.signature) {
    if (param.kind == ContractParam::Kind::Scalar) {
      const ContractScalar &scalar = contract.scalars[param.index];
      docs.push_back(
          " *   " + scalar.name + ": " + typeString(scalar.dtype, {}) + " scalar" +
          (scalar.defaultValue
               ? llvm::formatv(" (default {0})", llvm::format("%g", *scalar.defaultValue)).str()
               : ""));
      continue;
    }
    const ContractTensor &tensor = contract.tensors[param.index];
    docs.push_back(" *   " + tensor.name + ": " +
                   (tensor.role == TensorRole::InOut ? "inout "
                    : tensor.role == TensorRole::Out ? "output "
                                                     : "") +
                   typeString(tensor.dtype, tensor.dims) +
                   (tensor.strided ? ", strided (outer strides in elements, positive; the "
                                     "innermost stride 1)"
                                   : ", contiguous (row-major)"));
  }
  std::string signature = launcherSignature(contract);
  std::string header;
  llvm::raw_string_ostream h(header);
  // After the header's name, so that two specializations' headers include together.
  std::string guard =
      "FSL_" + llvm::StringRef(generatedName(contract.fusion, options)).upper() + "_H";
  h << "/* Generated by fslc from " << sourcePath << ": fusion " << contract.fusion << ".\n *\n"
    << " * " << signature << "\n *\n * Parameters:\n"
    << llvm::join(docs, "\n") << "\n"
    << " *\n * Static dimensions: ";
  std::vector<std::string> statics, runtime;
  for (const ContractDim &dim : contract.dims)
    (dim.staticExtent ? statics : runtime)
        .push_back(dim.staticExtent ? dim.name + " = " + std::to_string(*dim.staticExtent)
                                    : dim.name);
  h << (statics.empty() ? "none" : llvm::join(statics, ", "))
    << "; runtime dimensions: " << (runtime.empty() ? "none" : llvm::join(runtime, ", "))
    << " (taken from the tensors' sizes).\n"
    << " * Every tensor is checked before launching; on an error nothing is launched or "
       "written,\n"
    << " * and " << prefix << "_error() says why.\n */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n#include \"fsl/runtime.h\"\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << signature << ";\n\n/* The message of the last error of " << prefix << " on this thread. */\n"
    << "const char *" << prefix << "_error(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return header;
}

void printLauncher(const LaunchContract &contract, const CodegenOptions &options,
                   llvm::raw_ostream &out) {
  LauncherWriter(contract, options, out).write();
}

} // namespace fsl::codegen
