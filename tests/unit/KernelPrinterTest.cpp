// KernelPrinterTest.cpp — the CUDA and launcher printers over hand-built Kernel IR.
//
// Each program is built node by node (no parser, no lowering), printed, checked for the
// lines a person tuning a schedule reads, and compiled with NVRTC for sm_90a (to a cubin,
// so ptxas assembles every inline-PTX helper it uses): what the printer writes is CUDA.
#include "codegen/KernelPrinter.h"
#include "codegen/CudaCodegen.h"
#include "codegen/Nvrtc.h"
#include "kir/Verifier.h"

#include "LowerSupport.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

using namespace fsl;
using ir::DType;
using kir::Expr;
using kir::Stmt;

namespace {

kir::BufferPtr makeBuffer(std::string name, DType dtype, kir::MemorySpace space,
                          std::vector<int64_t> shape = {}) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = space;
  b->shape = std::move(shape);
  return b;
}

kir::BufferPtr globalBuffer(std::string name, DType dtype, bool written = false,
                            bool inout = false) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = kir::MemorySpace::Global;
  b->written = written;
  b->inout = inout;
  return b;
}

kir::BufferPtr sharedBuffer(std::string name, DType dtype, std::vector<int64_t> shape,
                            int64_t alignment, kir::Swizzle swizzle = kir::Swizzle::None) {
  auto b = std::make_shared<kir::Buffer>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->space = kir::MemorySpace::Shared;
  b->shape = std::move(shape);
  b->alignment = alignment;
  b->swizzle = swizzle;
  return b;
}

Stmt allocateShared(kir::BufferPtr buffer, int64_t byteOffset) {
  return kir::allocateStmt(std::move(buffer), kir::index(byteOffset), nullptr);
}

kir::KernelParam tensorParam(kir::BufferPtr buffer, unsigned fusionParam, bool isOutput = false) {
  kir::KernelParam p;
  p.kind = kir::KernelParam::Kind::Tensor;
  p.buffer = std::move(buffer);
  p.fusionParam = fusionParam;
  p.isOutput = isOutput;
  return p;
}

kir::KernelParam varParam(kir::KernelParam::Kind kind, kir::VarPtr var, unsigned fusionParam = 0) {
  kir::KernelParam p;
  p.kind = kind;
  p.var = std::move(var);
  p.fusionParam = fusionParam;
  return p;
}

Expr f32(double value) { return kir::constant(value, DType::F32); }
Expr builtin(const char *name, kir::Builtin which) {
  return kir::var(kir::makeVar(name, DType::I64, which));
}

/// rms_norm_add's signature: x: bf16[T, H], residual: inout bf16[T, H], weight: bf16[H],
/// eps: f32 -> y: bf16[T, H], with H = 4096 static and T a runtime size.
std::unique_ptr<ir::Fusion> rmsNormAddFusion() {
  auto f = std::make_unique<ir::Fusion>();
  f->name = "rms_norm_add";
  f->dims = {{"T", std::nullopt, {}}, {"H", 4096, {}}};
  ir::Param x{"x", DType::BF16, {0, 1}};
  ir::Param residual{"residual", DType::BF16, {0, 1}};
  residual.isInout = true;
  ir::Param weight{"weight", DType::BF16, {1}};
  ir::Param eps{"eps", DType::F32, {}};
  eps.defaultValue = 1e-6;
  f->params = {x, residual, weight, eps};
  ir::Output y{"y", DType::BF16, {0, 1}};
  ir::Output residualOut{"residual", DType::BF16, {0, 1}};
  residualOut.isInout = true;
  residualOut.paramIndex = 1;
  f->outputs = {residualOut, y};
  return f;
}

/// The compile every printed source must pass: NVRTC to an sm_90a cubin (ptxas included).
void requireCompiles(const std::string &source) {
  codegen::NvrtcResult cubin = codegen::compileWithNvrtc(source, "printed.cu", "sm_90a", true, {});
  INFO(source);
  REQUIRE_MESSAGE(cubin.ok, cubin.log);
  CHECK(!cubin.output.empty());
}

std::string ptxOf(const std::string &source) {
  codegen::NvrtcResult ptx = codegen::compileWithNvrtc(source, "printed.cu", "sm_90a", false, {});
  REQUIRE_MESSAGE(ptx.ok, ptx.log);
  return ptx.output;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A pointwise kernel as the lowering builds one: blocks over rows, threads over 8-wide
/// vectors, an unrolled loop over the vectors of a thread, a vector loop over the lanes.
struct PointwiseProgram {
  std::unique_ptr<ir::Fusion> fusion = rmsNormAddFusion();
  kir::Program program;
  kir::VarPtr T = kir::makeVar("T", DType::I64);

  explicit PointwiseProgram(bool guarded) {
    kir::BufferPtr x = globalBuffer("x", DType::BF16);
    kir::BufferPtr residual = globalBuffer("residual", DType::BF16, true, true);
    kir::BufferPtr weight = globalBuffer("weight", DType::BF16);
    kir::BufferPtr y = globalBuffer("y", DType::BF16, true);
    kir::VarPtr eps = kir::makeVar("eps", DType::F32);
    kir::VarPtr Ti = kir::makeVar("T_i", DType::I64), Hxi = kir::makeVar("Hx_i", DType::I64);
    kir::VarPtr Hpi = kir::makeVar("Hp_i", DType::I64), Hvi = kir::makeVar("Hv_i", DType::I64);
    kir::BufferPtr xVec = makeBuffer("x_vec", DType::BF16, kir::MemorySpace::Local, {8});
    kir::BufferPtr rVec = makeBuffer("residual_vec", DType::BF16, kir::MemorySpace::Local, {8});
    kir::BufferPtr yVec = makeBuffer("y_vec", DType::BF16, kir::MemorySpace::Local, {8});
    Expr offset = kir::var(Ti) * kir::index(4096) + kir::var(Hpi) * kir::index(512) +
                  kir::var(Hxi) * kir::index(8);
    Expr element = offset + kir::var(Hvi);
    kir::VarPtr h = kir::makeVar("h", DType::F32), hb = kir::makeVar("hb", DType::BF16);
    Stmt lanes = kir::block({
        kir::let(h,
                 kir::binary(kir::BinaryOp::Add,
                             kir::cast(DType::F32, kir::load(xVec, kir::var(Hvi))),
                             kir::cast(DType::F32, kir::load(rVec, kir::var(Hvi)))),
                 "h"),
        kir::let(hb, kir::cast(DType::BF16, kir::var(h))),
        kir::store(residual, element, kir::var(hb)),
        kir::store(
            yVec, kir::var(Hvi),
            kir::binary(kir::BinaryOp::Mul,
                        kir::binary(kir::BinaryOp::Mul, kir::var(h), kir::var(eps)),
                        kir::load(weight, kir::var(Hpi) * kir::index(512) +
                                              kir::var(Hxi) * kir::index(8) + kir::var(Hvi)))),
    });
    Stmt vector =
        kir::forLoop(Hvi, kir::index(8), kir::LoopKind::Vectorized, lanes, {"vectorize Hv", {}});
    Stmt perVector = kir::block({
        kir::allocate(xVec),
        kir::vectorCopy(xVec, kir::index(0), x, offset, 8),
        kir::allocate(rVec),
        kir::vectorCopy(rVec, kir::index(0), residual, offset, 8),
        kir::allocate(yVec),
        vector,
        kir::vectorCopy(y, offset, yVec, kir::index(0), 8),
    });
    Stmt unrolled = kir::forLoop(Hpi, kir::index(8), kir::LoopKind::Unrolled, perVector,
                                 {"split Ho by 64 -> (Hp, Hx)", {}});
    Stmt guardedRow = kir::ifThen(kir::var(Ti) < kir::var(T), unrolled, nullptr, "row in bounds");
    Stmt threads = kir::parallelLoop(Hxi, kir::index(64), kir::Axis::TIDx, guardedRow,
                                     {"parallelize Hx -> TIDx", {}});
    Stmt blocks =
        kir::parallelLoop(Ti, kir::var(T), kir::Axis::BIDx, threads, {"parallelize T -> BIDx", {}});

    kir::Kernel kernel;
    kernel.name = "rms_norm_add_v0";
    kernel.comment = "rms_norm_add_v0: schedule of rms_norm_add";
    kernel.params = {tensorParam(x, 0),
                     tensorParam(residual, 1),
                     tensorParam(weight, 2),
                     varParam(kir::KernelParam::Kind::Scalar, eps, 3),
                     tensorParam(y, 1, /*isOutput=*/true),
                     varParam(kir::KernelParam::Kind::Dim, T)};
    kernel.launch.grid = {kir::var(T), kir::index(1), kir::index(1)};
    kernel.launch.block = {kir::index(64), kir::index(1), kir::index(1)};
    kernel.launch.maxThreads = 64;
    kernel.body = kir::block(
        {kir::gridDependency(kir::GridDependencyOp::WaitAndLaunchDependents, nullptr), blocks});
    program.fusion = fusion.get();
    program.dims = {T, nullptr};
    program.kernels.push_back(kernel);
    if (guarded) {
      kir::Kernel small = kernel;
      small.name = "rms_norm_add_v1";
      small.comment = "rms_norm_add_v1: schedule of rms_norm_add when T < 132";
      small.launch.registerNote = "maxrregcount 64";
      small.launch.minBlocksPerSm = 16;
      program.kernels.push_back(small);
      program.variants.push_back({kir::var(T) < kir::index(132), "T < 132", {1}});
    }
    program.variants.push_back({nullptr, "", {0}});
  }
};

} // namespace

TEST_CASE("kernel printer: expressions keep only the parentheses C needs") {
  kir::VarPtr a = kir::makeVar("a", DType::I64), b = kir::makeVar("b", DType::I64),
              c = kir::makeVar("c", DType::I64);
  Expr A = kir::var(a), B = kir::var(b), C = kir::var(c);
  CHECK(codegen::printExpr(A * kir::index(4096) + B * kir::index(512) + C * kir::index(8)) ==
        "a * 4096 + b * 512 + c * 8");
  CHECK(codegen::printExpr((A + B) * C) == "(a + b) * c");
  CHECK(codegen::printExpr(A - (B - C)) == "a - (b - c)");
  CHECK(codegen::printExpr(A - B - C) == "a - b - c");
  CHECK(codegen::printExpr(A / (B * C)) == "a / (b * c)");
  CHECK(codegen::printExpr(A * B / C % kir::index(7)) == "a * b / c % 7");
  CHECK(codegen::printExpr((A < B) && (B < C)) == "a < b && b < c");
  CHECK(codegen::printExpr(kir::binary(kir::BinaryOp::Or, (A < B) && (B < C), A < C)) ==
        "(a < b && b < c) || a < c");
  CHECK(codegen::printExpr(kir::select(A < B, A, B + C)) == "a < b ? a : b + c");
  CHECK(codegen::printExpr(kir::min(A, kir::index(7))) == "fsl_min<int64_t>(a, 7)");
  CHECK(codegen::printExpr(A * kir::index(-2)) == "a * -2");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Neg, kir::index(-2))) == "-(-2)");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Neg, A + B)) == "-(a + b)");
  CHECK(codegen::printExpr(kir::index(int64_t(1) << 40)) == "1099511627776LL");
  // A hardware index is unsigned in C: subtracting from it is done in its IR type.
  CHECK(codegen::printExpr(builtin("threadIdx.x", kir::Builtin::ThreadIdxX) - kir::index(32)) ==
        "(int64_t)threadIdx.x - 32");
  CHECK(codegen::printExpr(builtin("blockDim.x", kir::Builtin::BlockDimX) *
                           builtin("blockIdx.y", kir::Builtin::BlockIdxY)) ==
        "blockDim.x * blockIdx.y");
}

TEST_CASE("kernel printer: floats, narrow types and casts") {
  kir::VarPtr x = kir::makeVar("x", DType::F32), d = kir::makeVar("d", DType::F64);
  kir::VarPtr xb = kir::makeVar("xb", DType::BF16), i = kir::makeVar("i", DType::I64);
  Expr X = kir::var(x), D = kir::var(d), XB = kir::var(xb), I = kir::var(i);
  CHECK(codegen::printExpr(f32(1e-6)) == "1.000000000e-06f");
  CHECK(codegen::printExpr(kir::constant(0.5, DType::F64)) == "5.0000000000000000e-01");
  // An f64 constant keeps every digit (the simulator computes with the exact double).
  for (double value : {0.1, 0.1234567890123456, 1.0 / 3.0, 6.02214076e23})
    CHECK(std::strtod(codegen::printExpr(kir::constant(value, DType::F64)).c_str(), nullptr) ==
          value);
  CHECK(codegen::printExpr(f32(INFINITY)) == "FSL_INF32");
  CHECK(codegen::printExpr(kir::constant(-INFINITY, DType::F64)) == "-FSL_INF64");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Exp, X)) == "expf(x)");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Rsqrt, D)) == "rsqrt(d)");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Sigmoid, X)) == "1.0f / (1.0f + expf(-x))");
  CHECK(codegen::printExpr(kir::binary(kir::BinaryOp::Max, X, f32(0))) ==
        "fsl_max(x, 0.000000000e+00f)");
  CHECK(codegen::printExpr(kir::binary(kir::BinaryOp::Pow, X, f32(2))) ==
        "powf(x, 2.000000000e+00f)");
  // bf16 operations are computed in f32 and rounded; exact ones are not rounded.
  CHECK(codegen::printExpr(kir::binary(kir::BinaryOp::Add, XB, XB)) ==
        "__bfloat162float(__float2bfloat16_rn(xb + xb))");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Tanh, XB)) ==
        "__bfloat162float(__float2bfloat16_rn(tanhf(xb)))");
  CHECK(codegen::printExpr(kir::unary(kir::UnaryOp::Neg, XB)) == "-xb");
  CHECK(codegen::printExpr(kir::binary(kir::BinaryOp::Min, XB, XB)) == "fsl_min(xb, xb)");
  CHECK(codegen::printExpr(kir::cast(DType::BF16, X)) ==
        "__bfloat162float(__float2bfloat16_rn(x))");
  CHECK(codegen::printExpr(kir::cast(DType::BF16, D)) == "__bfloat162float(__double2bfloat16(d))");
  CHECK(codegen::printExpr(kir::cast(DType::F32, XB)) == "xb");
  CHECK(codegen::printExpr(kir::cast(DType::F32, I)) == "(float)(i)");
  CHECK(codegen::printExpr(kir::cast(DType::F32, I) * X) == "(float)(i) * x");
  CHECK(codegen::printExpr(kir::cast(DType::I64, X)) == "(int64_t)(x)");
  CHECK(codegen::printExpr(kir::cast(DType::Bool, X + X)) == "x + x != 0");
  kir::BufferPtr w = makeBuffer("w", DType::BF16, kir::MemorySpace::Local, {4});
  CHECK(codegen::printExpr(kir::load(w, I + kir::index(1))) == "__bfloat162float(w[i + 1])");
  CHECK(codegen::printOperand(I + kir::index(1)) == "(i + 1)");
  CHECK(codegen::printOperand(I) == "i");
}

TEST_CASE("kernel printer: a pointwise kernel and its launcher") {
  PointwiseProgram p(/*guarded=*/true);
  codegen::CodegenOptions options;
  options.programmaticDependentLaunch = true;
  codegen::GeneratedSources sources = codegen::generateCuda(p.program, "rms.fsl", options);
  const std::string &cu = sources.source;
  INFO(cu);
  CHECK(contains(cu, "#include \"fsl/device.cuh\""));
  CHECK(contains(cu, "extern __shared__ __align__(16) unsigned char fsl_shared[];"));
  CHECK(contains(cu, "// rms_norm_add_v0: schedule of rms_norm_add\n"
                     "extern \"C\" __global__ void __launch_bounds__(64) rms_norm_add_v0(\n"
                     "    const __nv_bfloat16* __restrict__ x,\n"
                     "    __nv_bfloat16* residual,\n"
                     "    const __nv_bfloat16* __restrict__ weight,\n"
                     "    float eps,\n"
                     "    __nv_bfloat16* __restrict__ y,\n"
                     "    int64_t T) {\n"));
  CHECK(contains(cu, "// maxrregcount 64\nextern \"C\" __global__ void __launch_bounds__(64, 16) "
                     "rms_norm_add_v1("));
  CHECK(contains(cu, "  fsl_grid_dependency_wait();"));
  CHECK(contains(cu, "  fsl_grid_launch_dependents();"));
  // Parallel loops: hardware indices at the same indentation as the loop would be.
  CHECK(contains(cu, "\n  const int64_t T_i = blockIdx.x;  // parallelize T -> BIDx\n"
                     "  const int64_t Hx_i = threadIdx.x;  // parallelize Hx -> TIDx\n"
                     "  if (T_i < T) {  // row in bounds\n"));
  CHECK(contains(cu, "    #pragma unroll\n"
                     "    for (int64_t Hp_i = 0; Hp_i < 8; ++Hp_i) {  // split Ho by 64 -> (Hp, "
                     "Hx)\n"));
  CHECK(contains(cu, "      __align__(16) __nv_bfloat16 x_vec[8];  // 8 x bf16\n"));
  CHECK(contains(cu, "      fsl_load_vector<16>(x_vec, x + (T_i * 4096 + Hp_i * 512 + Hx_i * "
                     "8));\n"));
  CHECK(contains(cu, "      #pragma unroll\n"
                     "      for (int64_t Hv_i = 0; Hv_i < 8; ++Hv_i) {  // vectorize Hv\n"));
  CHECK(contains(cu, "        const float h = __bfloat162float(x_vec[Hv_i]) + "
                     "__bfloat162float(residual_vec[Hv_i]);  // h\n"));
  CHECK(contains(cu, "        const float hb = __bfloat162float(__float2bfloat16_rn(h));\n"));
  CHECK(contains(cu, "        residual[T_i * 4096 + Hp_i * 512 + Hx_i * 8 + Hv_i] = "
                     "__float2bfloat16_rn(hb);\n"));
  CHECK(contains(cu, "        y_vec[Hv_i] = __float2bfloat16_rn(h * eps * "
                     "__bfloat162float(weight[Hp_i * 512 + Hx_i * 8 + Hv_i]));\n"));
  CHECK(contains(cu, "      fsl_store_vector<16>(y + (T_i * 4096 + Hp_i * 512 + Hx_i * 8), "
                     "y_vec);"));

  // The launcher: checks, the guarded variant first, programmatic dependent launch.
  CHECK(contains(cu, "#ifndef __CUDACC_RTC__\n// ---- Host launcher ----\n"));
  CHECK(contains(cu, "#include \"rms_norm_add.h\""));
  CHECK(contains(cu, "  const int64_t T = x->sizes[0];\n"));
  CHECK(contains(cu, "  if (x->sizes[1] != 4096)\n    return fsl_fail(FSL_ERROR_SIZE, \"x: size "
                     "%lld of dimension H, expected %lld (static)\""));
  CHECK(contains(cu, "  if ((uintptr_t)x->data % 16 != 0)\n    return "
                     "fsl_fail(FSL_ERROR_ALIGNMENT, \"x: data pointer %p is not aligned to 16 "
                     "bytes (the kernel reads 16-byte vectors)\", x->data);\n"));
  CHECK(contains(cu, "(uintptr_t)residual->data % 16"));
  CHECK(contains(cu, "(uintptr_t)y->data % 16"));
  CHECK(!contains(cu, "(uintptr_t)weight->data")); // read element by element
  CHECK(contains(cu, "  if (fsl_overlap(y, 2, x, 2))\n"));
  CHECK(contains(cu, "  if (T == 0)\n    return FSL_OK;\n"));
  // Runtime extents are checked against the target's limits before launching.
  CHECK(contains(cu, "  if (T < 132) {  // rms_norm_add_v1\n"
                     "    const int64_t fsl_grid_x = T;\n"
                     "    if (fsl_grid_x < 1 || fsl_grid_x > 2147483647)\n"
                     "      return fsl_fail(FSL_ERROR_SIZE, \"rms_norm_add_v1: grid extent %lld "
                     "along x (T) is outside 1..2147483647 on h200\", (long long)fsl_grid_x);\n"
                     "    const dim3 grid((unsigned)fsl_grid_x, (unsigned)1, (unsigned)1);\n"
                     "    const dim3 block((unsigned)64, (unsigned)1, (unsigned)1);\n"));
  // Data pointers only when there is work: every tensor aligned to its element.
  CHECK(contains(cu, "  if (T == 0)\n    return FSL_OK;\n"
                     "  if ((status = fsl_check_data(x, \"x\", 2)) != FSL_OK)\n"));
  CHECK(contains(cu, "  {  // rms_norm_add_v0\n"));
  CHECK(contains(cu, "attributes[0].val.programmaticStreamSerializationAllowed = FSL_PDL;"));
  CHECK(contains(cu, "cudaLaunchKernelEx(&config, rms_norm_add_v0, (const __nv_bfloat16 "
                     "*)x->data, (__nv_bfloat16 *)residual->data, (const __nv_bfloat16 "
                     "*)weight->data, eps, (__nv_bfloat16 *)y->data, T);"));
  CHECK(!contains(cu, "cudaFuncSetAttribute")); // no dynamic shared memory
  CHECK(contains(cu, "  return fsl_fail(FSL_ERROR_SIZE, \"no schedule of rms_norm_add applies "
                     "to these sizes\");\n}\n#endif // __CUDACC_RTC__\n"));

  // The header is the launcher's documentation.
  CHECK(contains(sources.header, "fsl_status fsl_rms_norm_add(const fsl_tensor *x, const "
                                 "fsl_tensor *residual, const fsl_tensor *weight, float eps, "
                                 "const fsl_tensor *y, cudaStream_t stream);"));
  CHECK(contains(sources.header, " *   eps: f32 scalar (default 1e-06)"));
  CHECK(contains(sources.header, "Static dimensions: H = 4096; runtime dimensions: T"));
  requireCompiles(cu);

  // The launcher's status is its own: each launch's result, never cudaGetLastError (which
  // would also return, and clear, an earlier error of the program); a call that succeeds
  // leaves an empty message.
  CHECK(!contains(cu, "cudaGetLastError"));
  CHECK(!contains(cu, "cudaPeekAtLastError"));
  CHECK(contains(cu, "  fsl_error_message[0] = '\\0';  // a call that succeeds leaves no "
                     "message\n"));
  CHECK(contains(cu, "    if (launched != cudaSuccess)\n      return fsl_fail(FSL_ERROR_LAUNCH, "
                     "\"rms_norm_add_v0: %s\", cudaGetErrorString(launched));\n"));

  // Without programmatic dependent launch: cudaLaunchKernelEx without attributes.
  PointwiseProgram plain(/*guarded=*/false);
  std::string plainCu = codegen::generateCuda(plain.program, "rms.fsl").source;
  INFO(plainCu);
  CHECK(contains(plainCu, "    config.stream = stream;\n"
                          "    const cudaError_t launched = cudaLaunchKernelEx(&config, "
                          "rms_norm_add_v0, (const __nv_bfloat16 *)x->data"));
  CHECK(!contains(plainCu, "<<<"));
  CHECK(!contains(plainCu, "attributes"));
}

TEST_CASE("kernel printer: a symbol prefix names the kernels, the launcher and the header") {
  PointwiseProgram p(/*guarded=*/true);
  codegen::CodegenOptions options;
  options.symbolPrefix = "h8192_";
  codegen::GeneratedSources sources = codegen::generateCuda(p.program, "rms.fsl", options);
  const std::string &cu = sources.source, &h = sources.header;
  INFO(cu);
  CHECK(sources.name == "h8192_rms_norm_add");
  CHECK(contains(cu,
                 "// h8192_rms_norm_add_v0: schedule of rms_norm_add\n"
                 "extern \"C\" __global__ void __launch_bounds__(64) h8192_rms_norm_add_v0(\n"));
  CHECK(contains(cu, "__launch_bounds__(64, 16) h8192_rms_norm_add_v1("));
  CHECK(contains(cu, "#include \"h8192_rms_norm_add.h\""));
  CHECK(contains(cu, "extern \"C\" const char *h8192_rms_norm_add_error(void)"));
  CHECK(contains(cu, "extern \"C\" fsl_status h8192_rms_norm_add(const fsl_tensor *x, "));
  CHECK(contains(cu, "  if (T < 132) {  // h8192_rms_norm_add_v1\n"));
  CHECK(contains(cu, "cudaLaunchKernelEx(&config, h8192_rms_norm_add_v0, "));
  CHECK(contains(cu, "\"h8192_rms_norm_add_v0: %s\""));
  // No unprefixed external name is left: helpers are in an anonymous namespace.
  CHECK(!contains(cu, " rms_norm_add_v"));
  CHECK(!contains(cu, "fsl_rms_norm_add"));
  CHECK(contains(h, "#ifndef FSL_H8192_RMS_NORM_ADD_H\n#define FSL_H8192_RMS_NORM_ADD_H\n"));
  CHECK(contains(h, "fsl_status h8192_rms_norm_add(const fsl_tensor *x, "));
  CHECK(contains(h, "const char *h8192_rms_norm_add_error(void);"));
  CHECK(!contains(h, "fsl_rms_norm_add"));
  requireCompiles(cu);

  // No prefix: the names fsl_<fusion> and <fusion>_v<i>.
  codegen::GeneratedSources plain = codegen::generateCuda(p.program, "rms.fsl");
  CHECK(plain.name == "rms_norm_add");
  CHECK(contains(plain.header, "#ifndef FSL_RMS_NORM_ADD_H\n"));
  CHECK(contains(plain.header, "fsl_status fsl_rms_norm_add("));
  CHECK(contains(plain.source, "void __launch_bounds__(64) rms_norm_add_v0("));
}

TEST_CASE("kernel printer: comments name the source lines of statements and directives") {
  // A lowered snippet: its statements carry the ranges of the fusion's statements and of
  // the schedule's directives.
  test::LoweredSnippet snippet(R"(fusion rms_norm_add<H = 4096>(
    x: bf16[T, H],
    residual: inout bf16[T, H],
    weight: bf16[H],
    eps: f32 = 1e-6,
) -> (y: bf16[T, H]) {
    let h = f32(x) + f32(residual);
    residual = bf16(h);
    let ms = mean(h * h, over H);
    y = bf16(h * rsqrt(ms + eps) * f32(weight));
}
schedule rms_norm_add {
    split H by 8 -> (Ho, Hv);
    split Ho by 64 -> (Hp, Hx);
    parallelize T -> BIDx, Hx -> TIDx;
    vectorize Hv;
    unroll Hp;
    persistent h in registers;
    compute_with h;
}
)");
  codegen::CodegenOptions options;
  options.sourceLocation = [&](llvm::SMRange range) {
    return "dir/test.fsl:" +
           std::to_string(snippet.parsed.sources.getLineAndColumn(range.Start).first);
  };
  std::string located = codegen::generateCuda(*snippet.lowered, "test.fsl", options).source;
  std::string plain = codegen::generateCuda(*snippet.lowered, "test.fsl").source;
  INFO(located);
  // The kernel names its schedule block; loops their directives; statements the fusion
  // statement they compute (a store its assignment, a load its parameter).
  CHECK(contains(located, "// rms_norm_add_v0: schedule of rms_norm_add (dir/test.fsl:12)\n"));
  CHECK(contains(located, "const int64_t T_i = blockIdx.x;  // parallelize T -> BIDx, extent T "
                          "(dir/test.fsl:15)\n"));
  CHECK(contains(located, "++Hv_i) {  // vectorize Hv (dir/test.fsl:16)\n"));
  CHECK(contains(located, "++Hp_i) {  // unroll Hp (dir/test.fsl:17)\n"));
  CHECK(contains(located, "const float h_6 = v4 + v5;  // h (dir/test.fsl:7)\n"));
  CHECK(contains(located, "const float v8 = h_6 * h_6;  // dir/test.fsl:9\n"));
  CHECK(contains(located, "ms_9_acc += v8;  // dir/test.fsl:9\n"));
  CHECK(contains(located, "residual_vec[Hv_i] = __float2bfloat16_rn(h_6);  // dir/test.fsl:8\n"));
  CHECK(contains(located, "y_vec[Hv_i] = __float2bfloat16_rn(v14);  // dir/test.fsl:10\n"));
  CHECK(contains(located, "y_vec);  // dir/test.fsl:10\n"));
  CHECK(
      contains(located, "const float ms_9 = ms_9_acc / (float)(4096);  // ms (dir/test.fsl:9)\n"));
  // Without a sourceLocation: no locations; the rest is the same text.
  CHECK(!contains(plain, "dir/test.fsl:"));
  CHECK(contains(plain, "// rms_norm_add_v0: schedule of rms_norm_add\n"));
  CHECK(contains(plain, "const float h_6 = v4 + v5;  // h\n"));
  CHECK(contains(plain, "const float v8 = h_6 * h_6;\n"));
  // Comments only: the compiled kernels are the same.
  CHECK(ptxOf(located) == ptxOf(plain));
}

TEST_CASE("kernel printer: shared memory and reductions") {
  auto fusion = rmsNormAddFusion();
  kir::VarPtr T = kir::makeVar("T", DType::I64);
  kir::BufferPtr x = globalBuffer("x", DType::BF16);
  kir::BufferPtr y = globalBuffer("y", DType::BF16, true);
  kir::VarPtr Ti = kir::makeVar("T_i", DType::I64), Hxi = kir::makeVar("Hx_i", DType::I64);
  kir::VarPtr Hpi = kir::makeVar("Hp_i", DType::I64);
  kir::BufferPtr scratch = sharedBuffer("fsl_scratch_f32", DType::F32, {}, 16);
  Stmt scratchAllocation = kir::withComment(
      kir::allocateStmt(scratch, kir::index(0),
                        builtin("blockDim.x", kir::Builtin::BlockDimX) * kir::index(2)),
      "block reduction scratch: 2 slots of a partial a warp");
  kir::BufferPtr staged = sharedBuffer("h_shared", DType::F32, {8 * 256}, 16);
  kir::VarPtr sum = kir::makeVar("ms_acc", DType::F32), largest = kir::makeVar("mx", DType::F32);
  kir::VarPtr value = kir::makeVar("v", DType::F32);
  Expr element = kir::var(Ti) * kir::index(4096) + kir::var(Hpi) * kir::index(256) + kir::var(Hxi);
  Expr slot = kir::var(Hpi) * kir::index(256) + kir::var(Hxi);
  Stmt namedBarrier = kir::barrierStmt(kir::BarrierKind::Named, 1, kir::index(256));
  Stmt accumulate = kir::forLoop(
      Hpi, kir::index(16), kir::LoopKind::Serial,
      kir::block({
          kir::let(value, kir::load(x, element)),
          kir::store(staged, slot, kir::var(value)),
          kir::assign(
              sum, kir::binary(kir::BinaryOp::Add, kir::var(sum),
                               kir::binary(kir::BinaryOp::Mul, kir::var(value), kir::var(value)))),
          kir::assign(largest, kir::binary(kir::BinaryOp::Max, kir::var(largest), kir::var(value))),
      }),
      {"serial Hp", {}});
  Stmt unrollByFour = kir::forLoop(
      Hpi, kir::index(16), kir::LoopKind::Unrolled,
      kir::store(y, element,
                 kir::binary(kir::BinaryOp::Mul, kir::load(staged, slot), kir::var(sum))),
      {}, /*unrollFactor=*/4);
  Stmt body = kir::block({
      scratchAllocation,
      allocateShared(staged, 4096),
      kir::declare(sum, f32(0), "sum of ms"),
      kir::declare(largest, f32(-INFINITY), "max of mx"),
      accumulate,
      kir::reduce(sum, kir::ReduceKind::Sum, kir::ReduceScope::BlockX, scratch, kir::index(0)),
      kir::reduce(largest, kir::ReduceKind::Max, kir::ReduceScope::Warp, nullptr, nullptr),
      kir::assign(sum, kir::binary(kir::BinaryOp::Div, kir::var(sum), f32(4096))),
      kir::barrier(),
      namedBarrier,
      kir::comment("phase 1: after the block reduction\nof ms"),
      unrollByFour,
  });
  kir::Kernel kernel;
  kernel.name = "norm_v0";
  kernel.comment = "norm_v0";
  kernel.params = {tensorParam(x, 0), tensorParam(y, 1, true),
                   varParam(kir::KernelParam::Kind::Dim, T)};
  kernel.launch.grid = {kir::var(T), kir::index(1), kir::index(1)};
  kernel.launch.block = {kir::index(256), kir::index(1), kir::index(1)};
  kernel.launch.sharedBytes = kir::index(4096 + 8 * 256 * 4);
  kernel.launch.maxRegisters = 64;
  kernel.body = kir::parallelLoop(Ti, kir::var(T), kir::Axis::BIDx,
                                  kir::parallelLoop(Hxi, kir::index(256), kir::Axis::TIDx, body,
                                                    {"parallelize Hx -> TIDx", {}}),
                                  {"parallelize T -> BIDx", {}});
  kir::Program program;
  program.fusion = fusion.get();
  program.dims = {T, nullptr};
  program.kernels.push_back(kernel);
  program.variants.push_back({nullptr, "", {0}});
  std::string cu = codegen::generateCuda(program, "norm.fsl").source;
  INFO(cu);
  CHECK(contains(cu, "extern \"C\" __global__ void __maxnreg__(64) norm_v0("));
  CHECK(contains(cu, "  float *fsl_scratch_f32 = reinterpret_cast<float *>(fsl_shared);  // block "
                     "reduction scratch: 2 slots of a partial a warp in shared memory\n"));
  CHECK(contains(cu, "  float *h_shared = reinterpret_cast<float *>(fsl_shared + 4096);  // 2048 "
                     "x f32 in shared memory\n"));
  CHECK(contains(cu, "  float ms_acc = 0.000000000e+00f;  // sum of ms\n"));
  CHECK(contains(cu, "  float mx = -FSL_INF32;  // max of mx\n"));
  CHECK(contains(cu, "  for (int64_t Hp_i = 0; Hp_i < 16; ++Hp_i) {  // serial Hp\n"
                     "    const float v = __bfloat162float(x[T_i * 4096 + Hp_i * 256 + Hx_i]);\n"
                     "    h_shared[Hp_i * 256 + Hx_i] = v;\n"
                     "    ms_acc += v * v;\n"
                     "    mx = fsl_max(mx, v);\n"
                     "  }\n"));
  CHECK(contains(cu, "  ms_acc = fsl_block_reduce_x<256>(ms_acc, FslSum(), "
                     "reinterpret_cast<float*>(fsl_scratch_f32), 0);  // over threadIdx.x\n"));
  CHECK(contains(cu, "  mx = fsl_warp_reduce(mx, FslMax());"));
  CHECK(contains(cu, "  ms_acc = ms_acc / 4.096000000e+03f;\n"));
  CHECK(contains(cu, "  __syncthreads();\n  fsl_named_barrier_sync(1, 256);\n"));
  CHECK(contains(cu, "  // phase 1: after the block reduction\n  // of ms\n"));
  CHECK(contains(cu, "  #pragma unroll 4\n  for (int64_t Hp_i = 0; Hp_i < 16; ++Hp_i) {\n"
                     "    y[T_i * 4096 + Hp_i * 256 + Hx_i] = __float2bfloat16_rn(h_shared[Hp_i "
                     "* 256 + Hx_i] * ms_acc);\n"));
  CHECK(contains(cu, "    const size_t shared_bytes = (size_t)12288;  // dynamic shared memory\n"));
  CHECK(!contains(cu, "cudaFuncSetAttribute")); // 12 KiB: no opt-in
  requireCompiles(cu);
}

TEST_CASE("kernel printer: the Hopper operations") {
  // C[M, N] = A[M, K] * B[N, K]^T, one 64x128 tile a block: a producer warpgroup loads
  // with TMA, a consumer warpgroup multiplies with wgmma and stores with TMA.
  auto fusion = std::make_unique<ir::Fusion>();
  fusion->name = "matmul";
  fusion->dims = {{"M", std::nullopt, {}}, {"N", 4096, {}}, {"K", 4096, {}}};
  fusion->params = {{"a", DType::BF16, {0, 2}}, {"b", DType::BF16, {1, 2}}};
  fusion->outputs = {{"c", DType::F32, {0, 1}}};
  kir::VarPtr M = kir::makeVar("M", DType::I64);
  kir::BufferPtr a = globalBuffer("a", DType::BF16), b = globalBuffer("b", DType::BF16);
  kir::BufferPtr c = globalBuffer("c", DType::F32, true);
  auto tensorMap = [](std::string name, kir::BufferPtr global, std::vector<Expr> extents,
                      std::vector<int64_t> box, kir::Swizzle swizzle) {
    auto map = std::make_shared<kir::TensorMap>();
    map->name = std::move(name);
    map->global = std::move(global);
    map->extents = std::move(extents);
    map->box = std::move(box);
    map->swizzle = swizzle;
    return map;
  };
  kir::TensorMapPtr aMap =
      tensorMap("a_map", a, {kir::var(M), kir::index(4096)}, {64, 64}, kir::Swizzle::Bytes128);
  kir::TensorMapPtr bMap = tensorMap("b_map", b, {kir::index(4096), kir::index(4096)}, {128, 64},
                                     kir::Swizzle::Bytes128);
  kir::TensorMapPtr cMap =
      tensorMap("c_map", c, {kir::var(M), kir::index(4096)}, {64, 32}, kir::Swizzle::None);
  auto mapParam = [](kir::TensorMapPtr map) {
    kir::KernelParam p;
    p.kind = kir::KernelParam::Kind::TensorMap;
    p.tensorMap = std::move(map);
    return p;
  };

  kir::BufferPtr barriers = sharedBuffer("full", DType::I64, {2}, 8);
  kir::BufferPtr tileA =
      sharedBuffer("a_tile", DType::BF16, {64 * 64}, 1024, kir::Swizzle::Bytes128);
  kir::BufferPtr tileB =
      sharedBuffer("b_tile", DType::BF16, {128 * 64}, 1024, kir::Swizzle::Bytes128);
  kir::BufferPtr tileC = sharedBuffer("c_tile", DType::F32, {64 * 32}, 128);
  kir::BufferPtr acc = makeBuffer("acc", DType::F32, kir::MemorySpace::Local, {64});
  kir::VarPtr Mo = kir::makeVar("Mo_i", DType::I64), k = kir::makeVar("k_i", DType::I64);
  Expr tid = builtin("threadIdx.x", kir::Builtin::ThreadIdxX);

  Stmt loadA = kir::tmaLoad(aMap, {kir::var(Mo) * kir::index(64), kir::var(k) * kir::index(64)},
                            tileA, kir::index(0), barriers, kir::index(0), nullptr);
  Stmt loadB =
      kir::tmaLoad(bMap, {kir::index(0), kir::var(k) * kir::index(64)}, tileB, kir::index(0),
                   barriers, kir::index(0), /*multicastMask=*/kir::index(3));
  Stmt mma = kir::wgmma({64, 128, 16}, DType::BF16, acc, /*index=*/nullptr, tileA, kir::index(0),
                        /*transposeA=*/false, /*blockBytesA=*/0, tileB,
                        kir::var(k) % kir::index(4) * kir::index(16), /*transposeB=*/false,
                        /*blockBytesB=*/0, /*accumulate=*/nullptr);
  Stmt wait = kir::wgmmaWait(0);
  Stmt storeWait = kir::tmaStoreWait(0);
  Stmt cluster = kir::comment("cluster of 2 along M");

  Stmt producer = kir::warpRole(
      "producer", tid < kir::index(128),
      {kir::block({
          kir::setMaxNReg(40, /*increase=*/false),
          kir::ifThen(
              kir::binary(kir::BinaryOp::Eq, tid, kir::index(0)),
              kir::forLoop(
                  k, kir::index(64), kir::LoopKind::Serial,
                  kir::block({
                      kir::mbarrierWait(barriers, kir::index(1), kir::var(k) % kir::index(2)),
                      kir::mbarrierArriveExpectTx(barriers, kir::index(0),
                                                  kir::index(64 * 64 * 2 + 128 * 64 * 2)),
                      loadA,
                      loadB,
                  }))),
      })});
  Stmt consumer = kir::warpRole(
      "consumer", kir::binary(kir::BinaryOp::Ge, tid, kir::index(128)),
      {kir::block({
          kir::setMaxNReg(232, /*increase=*/true),
          kir::allocate(acc),
          kir::forLoop(k, kir::index(64), kir::LoopKind::Serial,
                       kir::block({
                           kir::mbarrierWait(barriers, kir::index(0), kir::var(k) % kir::index(2)),
                           kir::wgmmaFence(),
                           mma,
                           kir::wgmmaCommit(),
                           wait,
                           kir::mbarrierArrive(barriers, kir::index(1), nullptr),
                       })),
          kir::store(tileC, tid - kir::index(128), kir::load(acc, kir::index(0))),
          kir::fenceProxyAsync(),
          kir::tmaStore(cMap, {kir::var(Mo) * kir::index(64), kir::index(0)}, tileC, kir::index(0)),
          storeWait,
      })});
  Stmt body = kir::block({
      allocateShared(barriers, 0),
      allocateShared(tileA, 1024),
      allocateShared(tileB, 1024 + 8192),
      allocateShared(tileC, 1024 + 8192 + 16384),
      cluster,
      kir::ifThen(kir::binary(kir::BinaryOp::Eq, tid, kir::index(0)),
                  kir::block({kir::mbarrierInit(barriers, kir::index(0), kir::index(1)),
                              kir::mbarrierInit(barriers, kir::index(1), kir::index(128)),
                              kir::fenceProxyAsync()})),
      kir::barrier(),
      producer,
      consumer,
  });
  kir::Kernel kernel;
  kernel.name = "matmul_v0";
  kernel.comment = "matmul_v0: warp-specialized wgmma";
  kernel.params = {tensorParam(a, 0),       mapParam(aMap),
                   mapParam(bMap),          mapParam(cMap),
                   tensorParam(c, 0, true), varParam(kir::KernelParam::Kind::Dim, M)};
  kernel.launch.grid = {
      kir::binary(kir::BinaryOp::Div, kir::var(M) + kir::index(63), kir::index(64)), kir::index(1),
      kir::index(1)};
  kernel.launch.block = {kir::index(256), kir::index(1), kir::index(1)};
  kernel.launch.cluster = {kir::index(2), kir::index(1), kir::index(1)};
  kernel.launch.sharedBytes = kir::index(1024 + 8192 + 16384 + 8192 + 40960);
  kernel.launch.maxThreads = 256;
  kernel.launch.minBlocksPerSm = 1;
  kernel.body =
      kir::parallelLoop(Mo, kir::var(M), kir::Axis::BIDx, body, {"parallelize Mo -> BIDx", {}});
  kir::Program program;
  program.fusion = fusion.get();
  program.dims = {M, nullptr, nullptr};
  program.kernels.push_back(kernel);
  program.variants.push_back({nullptr, "", {0}});
  std::string cu = codegen::generateCuda(program, "matmul.fsl").source;
  INFO(cu);
  CHECK(contains(cu, "#ifdef __CUDACC_RTC__\n"));
  CHECK(contains(cu, "#include <cuda.h>"));
  CHECK(contains(cu, "extern __shared__ __align__(1024) unsigned char fsl_shared[];"));
  CHECK(contains(cu, "__launch_bounds__(256, 1) matmul_v0(\n"
                     "    const __nv_bfloat16* __restrict__ a,\n"
                     "    const __grid_constant__ CUtensorMap a_map,\n"));
  CHECK(contains(cu, "  int64_t *full = reinterpret_cast<int64_t *>(fsl_shared);"));
  CHECK(contains(cu, "  __nv_bfloat16 *a_tile = reinterpret_cast<__nv_bfloat16 *>(fsl_shared + "
                     "1024);"));
  CHECK(contains(cu, "  // cluster of 2 along M\n"));
  CHECK(contains(cu, "    fsl_mbarrier_init(&full[0], 1);\n"
                     "    fsl_mbarrier_init(&full[1], 128);\n"
                     "    fsl_fence_proxy_async_shared();\n"));
  CHECK(contains(cu, "  if (threadIdx.x < 128) {  // producer\n    fsl_setmaxnreg_dec<40>();\n"));
  CHECK(contains(cu, "fsl_mbarrier_wait(&full[1], k_i % 2);"));
  CHECK(contains(cu, "fsl_mbarrier_arrive_expect_tx(&full[0], 24576);"));
  // Coordinates innermost first, as PTX takes them.
  CHECK(contains(cu, "fsl_tma_load_2d(a_tile, &a_map, &full[0], k_i * 64, Mo_i * 64);  // box "
                     "64 x 64 of a\n"));
  CHECK(contains(cu, "fsl_tma_load_2d_multicast(b_tile, &b_map, &full[0], 3, k_i * 64, 0);"));
  CHECK(contains(cu, "  if (threadIdx.x >= 128) {  // consumer\n    fsl_setmaxnreg_inc<232>();\n"));
  // The accumulator is pinned around the fence and the wait.
  CHECK(contains(cu, "      fsl_wgmma_pin_accumulator<64>(acc);\n"
                     "      fsl_wgmma_fence();\n"
                     "      fsl_wgmma_m64n128k16_f32_bf16<0, 0>(acc, "
                     "fsl_wgmma_descriptor_sw128(a_tile), fsl_wgmma_descriptor_sw128(b_tile + k_i "
                     "% 4 * 16), 1);  // acc += a_tile * b_tile\n"
                     "      fsl_wgmma_commit_group();\n"
                     "      fsl_wgmma_wait_group<0>();\n"
                     "      fsl_wgmma_pin_accumulator<64>(acc);\n"
                     "      fsl_mbarrier_arrive(&full[1]);\n"));
  CHECK(contains(cu, "    c_tile[(int64_t)threadIdx.x - 128] = acc[0];\n"));
  CHECK(contains(cu, "    fsl_tma_store_2d(&c_map, c_tile, 0, Mo_i * 64);  // box 64 x 32 of c\n"
                     "    fsl_bulk_commit_group();\n"
                     "    fsl_bulk_wait_group_read<0>();"));
  // The launcher encodes the tensor maps and launches a cluster with the opt-in for
  // more than 48 KiB of shared memory.
  CHECK(contains(cu, "    CUtensorMap a_map;  // TMA descriptor of a\n"));
  CHECK(contains(cu, "      const cuuint64_t sizes[2] = {(cuuint64_t)4096, (cuuint64_t)M};\n"
                     "      const cuuint64_t strides[1] = {(cuuint64_t)2 * 4096};\n"
                     "      const cuuint32_t box[2] = {64, 64};\n"));
  CHECK(contains(cu, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, a->data, sizes, strides, box, "
                     "CU_TENSOR_MAP_SWIZZLE_128B"));
  CHECK(contains(cu, "    bool fsl_overflow = false;  // set by the checked arithmetic below\n"
                     "    const int64_t fsl_grid_x = (fsl_add(M, 63, &fsl_overflow) / 64);\n"
                     "    if (fsl_overflow)\n"));
  CHECK(contains(cu, "    if (fsl_grid_x % 2 != 0)\n"));
  CHECK(contains(cu, "    const dim3 grid((unsigned)fsl_grid_x, (unsigned)1, (unsigned)1);"));
  CHECK(
      contains(cu, "cudaFuncSetAttribute(matmul_v0, cudaFuncAttributeMaxDynamicSharedMemorySize"));
  CHECK(contains(cu, "    attributes[0].id = cudaLaunchAttributeClusterDimension;"));
  CHECK(contains(cu, "    attributes[0].val.clusterDim.x = (unsigned)2;\n"));
  CHECK(contains(cu, "cudaLaunchKernelEx(&config, matmul_v0, (const __nv_bfloat16 *)a->data, "
                     "a_map, b_map, c_map, (float *)c->data, M);"));
  requireCompiles(cu);
  std::string ptx = ptxOf(cu);
  CHECK(contains(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  CHECK(contains(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                      ".multicast::cluster"));
  CHECK(contains(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  CHECK(contains(ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
  CHECK(contains(ptx, "setmaxnreg.inc.sync.aligned.u32 232"));
}

TEST_CASE("kernel printer: M/N-major wgmma operands and the distance of their blocks") {
  // B N-major (b: [K, N], N contiguous), 256 columns: four 64-column blocks of 64 rows of K
  // with the 128-byte swizzle, 8192 bytes apart. A M-major with the 64-byte swizzle: two
  // 32-row blocks of 64 rows of K, 4096 bytes apart. Both k step 1 (16 rows of K down).
  kir::BufferPtr tileA =
      sharedBuffer("a_tile", DType::BF16, {2 * 32 * 64}, 1024, kir::Swizzle::Bytes64);
  kir::BufferPtr tileB =
      sharedBuffer("b_tile", DType::BF16, {4 * 64 * 64}, 1024, kir::Swizzle::Bytes128);
  kir::BufferPtr acc = makeBuffer("acc", DType::F32, kir::MemorySpace::Local, {128});
  kir::BufferPtr out = globalBuffer("out", DType::F32, true);
  auto product = [&](int n, int64_t blockBytesA, bool transposeB, int64_t blockBytesB) {
    return kir::wgmma({64, n, 16}, DType::BF16, acc, kir::index(0), tileA, kir::index(16 * 32),
                      /*transposeA=*/true, blockBytesA, tileB, kir::index(16 * 64), transposeB,
                      blockBytesB, /*accumulate=*/nullptr);
  };
  Stmt mma = product(256, 4096, true, 8192);
  Expr tid = builtin("threadIdx.x", kir::Builtin::ThreadIdxX);
  Stmt wait = kir::wgmmaWait(0);
  kir::VarPtr i = kir::makeVar("i", DType::I64);
  kir::Kernel kernel;
  kernel.name = "mn_major";
  kernel.params = {tensorParam(out, 0, true)};
  kernel.launch.grid = {kir::index(1), kir::index(1), kir::index(1)};
  kernel.launch.block = {kir::index(128), kir::index(1), kir::index(1)};
  kernel.launch.sharedBytes = kir::index(8192 + 32768);
  kernel.body = kir::block({
      allocateShared(tileA, 0),
      allocateShared(tileB, 8192),
      kir::allocate(acc),
      kir::forLoop(i, kir::index(128), kir::LoopKind::Unrolled,
                   kir::store(acc, kir::var(i), f32(0))),
      kir::wgmmaFence(),
      mma,
      kir::wgmmaCommit(),
      wait,
      kir::forLoop(
          i, kir::index(128), kir::LoopKind::Unrolled,
          kir::store(out, kir::var(i) * kir::index(128) + tid, kir::load(acc, kir::var(i)))),
  });
  CHECK(kir::verifyKernel(kernel) == "");
  std::string text;
  llvm::raw_string_ostream textOut(text);
  kir::printStmt(mma, textOut);
  INFO(text);
  CHECK(contains(text, "acc += a_tile[512]^T blocks 4096B * b_tile[1024]^T blocks 8192B"));

  kir::Program program;
  program.kernels.push_back(kernel);
  std::string cu;
  llvm::raw_string_ostream cuOut(cu);
  codegen::printKernelPrologue(program, cuOut);
  codegen::printKernel(kernel, {}, cuOut);
  INFO(cu);
  CHECK(contains(cu, "fsl_wgmma_m64n256k16_f32_bf16<1, 1>(acc, fsl_wgmma_descriptor(a_tile + "
                     "512, 4096, 512, FSL_WGMMA_SWIZZLE_64B), fsl_wgmma_descriptor_mn_sw128("
                     "b_tile + 1024, 8192), 1);"));
  requireCompiles(cu);
  CHECK(contains(ptxOf(cu), "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));

  // The verifier's side: an M/N-major operand wider than a span needs the distance, a
  // K-major one has none, and the descriptor's field holds multiples of 16 below 2^18.
  auto broken = [&](const Stmt &copy) {
    kir::Kernel k = kernel;
    std::vector<Stmt> body = k.body->body;
    for (Stmt &s : body)
      if (s == mma)
        s = copy;
    k.body = kir::block(body);
    return kir::verifyKernel(k);
  };
  CHECK(contains(broken(product(256, 4096, true, 0)),
                 "wgmma operand B (b_tile) is M/N-major and 256 elements wide, more than one "
                 "swizzle span, without the distance of its blocks"));
  CHECK(contains(broken(product(256, 4100, true, 8192)),
                 "wgmma operand A (a_tile) has blocks 4100 bytes apart: a multiple of 16 below "
                 "2^18"));
  CHECK(contains(broken(product(256, 4096, false, 8192)),
                 "wgmma operand B (b_tile) is K-major but has a block distance"));
  CHECK(broken(product(64, 4096, true, 0)) == ""); // 64 columns: one span, one block
}

TEST_CASE("kernel printer: device.cuh reaches NVRTC from inside fslc") {
  // No include path to runtime/include: the header is built into fslc.
  std::string source = "#include \"fsl/device.cuh\"\n"
                       "extern \"C\" __global__ void k(float *out) {\n"
                       "  out[threadIdx.x] = fsl_warp_reduce(fsl_max(out[0], 1.0f), FslSum());\n"
                       "}\n";
  requireCompiles(source);
}

TEST_CASE("kernel printer: every helper of device.cuh compiles under NVRTC") {
  // The file cuda_checks.sh compiles with nvcc.
  std::ifstream in(FSL_TEST_DEVICE_HEADER_TEST);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  requireCompiles(text.str());
  std::string ptx = ptxOf(text.str());
  for (const char *instruction : {"max.NaN.f32",
                                  "bar.sync",
                                  "griddepcontrol.wait",
                                  "griddepcontrol.launch_dependents",
                                  "mbarrier.init.shared::cta.b64",
                                  "mbarrier.arrive.expect_tx.shared::cta.b64",
                                  "fence.proxy.async.shared::cta",
                                  "cp.async.bulk.tensor.5d.shared::cluster",
                                  "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group",
                                  "cp.async.bulk.commit_group",
                                  "cp.async.bulk.wait_group.read 2",
                                  "wgmma.fence.sync.aligned",
                                  "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
                                  "wgmma.wait_group.sync.aligned 1",
                                  "setmaxnreg.dec.sync.aligned.u32 40",
                                  "barrier.cluster.arrive.release.aligned",
                                  "barrier.cluster.wait.acquire.aligned",
                                  "%cluster_ctarank",
                                  "mapa.shared::cluster.u32",
                                  "mbarrier.arrive.shared::cluster.b64"})
    CHECK_MESSAGE(contains(ptx, instruction), instruction);
}

TEST_CASE("kernel printer: clusters, multicast TMA loads and remote mbarrier arrivals") {
  // A cluster (2, 1, 1) of 64-thread CTAs: each loads half of an 8 x 16 tile and multicasts
  // it into both CTAs, waits for the whole tile, copies it out and frees the stage in both
  // CTAs; cluster barriers after the inits and at the end.
  auto fusion = std::make_unique<ir::Fusion>();
  fusion->name = "cluster_copy";
  fusion->dims = {{"R", 16, {}}, {"C", 16, {}}, {"B", 4, {}}, {"I", 128, {}}};
  fusion->params = {{"g", DType::F32, {0, 1}}};
  fusion->outputs = {{"out", DType::F32, {2, 3}}};
  kir::BufferPtr g = globalBuffer("g", DType::F32), out = globalBuffer("out", DType::F32, true);
  auto map = std::make_shared<kir::TensorMap>();
  map->name = "g_map";
  map->global = g;
  map->extents = {kir::index(16), kir::index(16)};
  map->box = {4, 16};
  kir::KernelParam mapParam;
  mapParam.kind = kir::KernelParam::Kind::TensorMap;
  mapParam.tensorMap = map;
  kir::BufferPtr bar = sharedBuffer("bar", DType::I64, {2}, 8);
  kir::BufferPtr tile = sharedBuffer("tile", DType::F32, {128}, 128);
  kir::VarPtr b = kir::makeVar("b", DType::I64), t = kir::makeVar("t", DType::I64),
              rank = kir::makeVar("rank", DType::I64);
  Stmt multicast = kir::tmaLoad(
      map,
      {kir::var(b) / kir::index(2) * kir::index(8) + kir::var(rank) * kir::index(4), kir::index(0)},
      tile, kir::var(rank) * kir::index(64), bar, kir::index(0), /*multicastMask=*/kir::index(3));
  Expr first = kir::binary(kir::BinaryOp::Eq, kir::var(t), kir::index(0));
  Expr peer = (kir::var(rank) + kir::index(1)) % kir::index(2);
  Stmt body = kir::block({
      allocateShared(bar, 0),
      allocateShared(tile, 128),
      kir::let(rank, kir::var(b) % kir::index(2), "rank in the cluster"),
      kir::ifThen(first, kir::block({kir::mbarrierInit(bar, kir::index(0), kir::index(1)),
                                     kir::mbarrierInit(bar, kir::index(1), kir::index(2)),
                                     kir::fenceProxyAsync()})),
      kir::clusterBarrier(),
      kir::ifThen(first,
                  kir::block({kir::mbarrierArriveExpectTx(bar, kir::index(0), kir::index(512)),
                              multicast})),
      kir::mbarrierWait(bar, kir::index(0), kir::index(0)),
      kir::store(out, kir::var(b) * kir::index(128) + kir::var(t), kir::load(tile, kir::var(t))),
      kir::ifThen(first, kir::block({kir::mbarrierArrive(bar, kir::index(1), kir::var(rank)),
                                     kir::mbarrierArrive(bar, kir::index(1), peer)})),
      kir::clusterBarrier(),
  });
  kir::Kernel kernel;
  kernel.name = "cluster_copy_v0";
  kernel.params = {mapParam, tensorParam(out, 0, true)};
  kernel.launch.grid = {kir::index(4), kir::index(1), kir::index(1)};
  kernel.launch.block = {kir::index(64), kir::index(1), kir::index(1)};
  kernel.launch.cluster = {kir::index(2), kir::index(1), kir::index(1)};
  kernel.launch.sharedBytes = kir::index(1024);
  kernel.body = kir::parallelLoop(b, kir::index(4), kir::Axis::BIDx,
                                  kir::parallelLoop(t, kir::index(64), kir::Axis::TIDx, body));
  CHECK(kir::verifyKernel(kernel) == "");

  // The Kernel IR as --emit=kernel-ir prints it.
  std::string ir;
  llvm::raw_string_ostream irStream(ir);
  kir::printKernel(kernel, irStream);
  INFO(ir);
  CHECK(contains(ir, "  cluster (2, 1, 1)\n"));
  CHECK(contains(ir, "barrier cluster\n"));
  CHECK(contains(ir, "tma.load g_map ((((b / 2) * 8) + (rank * 4)), 0) box 4 x 16 -> "
                     "tile[(rank * 64)] barrier bar[0] multicast mask 3\n"));
  CHECK(contains(ir, "mbarrier.arrive bar[1] cta rank\n"));
  CHECK(contains(ir, "mbarrier.arrive bar[1] cta ((rank + 1) % 2)\n"));

  kir::Program program;
  program.fusion = fusion.get();
  program.dims = {nullptr, nullptr, nullptr, nullptr};
  program.kernels.push_back(kernel);
  program.variants.push_back({nullptr, "", {0}});
  std::string cu = codegen::generateCuda(program, "cluster.fsl").source;
  INFO(cu);
  CHECK(contains(cu, "    fsl_fence_proxy_async_shared();\n"
                     "  }\n"
                     "  fsl_cluster_sync();  // every thread of every CTA of the cluster\n"));
  CHECK(contains(cu, "fsl_tma_load_2d_multicast(tile + rank * 64, &g_map, &bar[0], 3, 0, b / 2 "
                     "* 8 + rank * 4);"));
  CHECK(contains(cu, "    fsl_mbarrier_arrive_cluster(&bar[1], rank);\n"
                     "    fsl_mbarrier_arrive_cluster(&bar[1], (rank + 1) % 2);\n"
                     "  }\n"
                     "  fsl_cluster_sync();"));
  CHECK(contains(cu, "cudaLaunchAttributeClusterDimension"));
  requireCompiles(cu);
  std::string ptx = ptxOf(cu);
  for (const char *instruction :
       {"barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned",
        "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster"})
    CHECK_MESSAGE(contains(ptx, instruction), instruction);

  // The verifier: cluster operations only where they belong.
  kir::Kernel unclustered = kernel;
  unclustered.launch.cluster = {nullptr, nullptr, nullptr};
  CHECK(kir::verifyKernel(unclustered) ==
        "cluster_copy_v0: cluster barrier in a kernel launched without a cluster");
  kir::Kernel misplaced = kernel;
  // Nodes no constructor builds: a field set that the kind does not use.
  auto waitWithRank =
      std::make_shared<kir::StmtNode>(*kir::mbarrierWait(bar, kir::index(0), kir::index(0)));
  waitWithRank->ctaRank = kir::index(1);
  misplaced.body = kir::block({allocateShared(bar, 0), waitWithRank});
  CHECK(kir::verifyKernel(misplaced) ==
        "cluster_copy_v0: mbarrier.try_wait.parity with a CTA rank; only mbarrier.arrive has one");
  auto store = std::make_shared<kir::StmtNode>(
      *kir::tmaStore(map, {kir::index(0), kir::index(0)}, tile, kir::index(0)));
  store->multicastMask = kir::index(3);
  misplaced.body = kir::block({allocateShared(tile, 128), store});
  CHECK(kir::verifyKernel(misplaced) ==
        "cluster_copy_v0: tma.store with a multicast mask; only a TMA load has one");
}
