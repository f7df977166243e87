// Identifiers.cpp — keywords, builtins and runtime names generated code may not declare.
#include "support/Identifiers.h"

#include <llvm/ADT/StringSet.h>

#include <string>

namespace fsl {

namespace {

/// Identifiers generated code may not declare: C++20 keywords and alternative tokens,
/// the types and macros the kernels and launchers write, CUDA's builtins, and the C math
/// functions the printer calls (a local `expf` would hide the function).
const llvm::StringSet<> &reservedWords() {
  static const llvm::StringSet<> words = {
      // C++20 keywords and alternative tokens.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "final", "override",
      "restrict",
      // Types, macros and library names the generated files use.
      "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
      "intptr_t", "uintptr_t", "ptrdiff_t", "size_t", "nullptr_t", "std", "va_list", "va_start",
      "va_end", "vsnprintf", "snprintf", "printf", "assert", "NULL", "INT64_MAX", "INT64_MIN",
      "INT32_MAX", "INT32_MIN", "UINTPTR_MAX", "INT_MAX", "INT_MIN", "CUtensorMap",
      "CUtensorMap_st", "CUresult", "CUdevice", "CUstream", "cudaStream_t", "cudaError_t", "dim3",
      "cuuint32_t", "cuuint64_t",
      // CUDA's vector and narrow float types: a statement `half[i] = ...` would parse as a
      // declaration even where a variable shadows the type.
      "half", "half2", "nv_bfloat16", "nv_bfloat162", "float2", "float4", "int2", "int4", "uint2",
      "uint4", "char4", "uchar4", "short2", "double2", "longlong2", "uint",
      // CUDA builtins.
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "clusterIdx", "clusterDim",
      // Math functions the printer calls, in both precisions, and their relatives.
      "exp", "expf", "exp2", "exp2f", "log", "logf", "log2", "log2f", "sqrt", "sqrtf", "rsqrt",
      "rsqrtf", "tanh", "tanhf", "erf", "erff", "fabs", "fabsf", "abs", "fmin", "fminf", "fmax",
      "fmaxf", "min", "max", "pow", "powf", "isnan", "isinf", "isfinite", "signbit", "floor",
      "floorf", "ceil", "ceilf", "round", "roundf", "trunc", "truncf", "fma", "fmaf", "sin", "sinf",
      "cos", "cosf", "main"};
  return words;
}

/// The runtime's global names (fsl/runtime.h, fsl/jit.h, fsl/device.cuh) and the
/// launcher's helpers: a launcher `fsl_<fusion>` of one of these names would redeclare it.
/// tests/tools/hostile_names.py checks the list against the headers.
const llvm::StringSet<> &runtimeNames() {
  static const llvm::StringSet<> names = {"fsl_add",
                                          "fsl_arg_better",
                                          "fsl_block_arg_reduce_x",
                                          "fsl_block_argmax_x",
                                          "fsl_block_argmin_x",
                                          "fsl_block_max_exp_sum_x",
                                          "fsl_block_reduce_x",
                                          "fsl_block_welford_x",
                                          "fsl_bulk_commit_group",
                                          "fsl_bulk_wait_group_read",
                                          "fsl_bytes",
                                          "fsl_check_data",
                                          "fsl_check_tensor",
                                          "fsl_cluster_cta_rank",
                                          "fsl_cluster_sync",
                                          "fsl_div",
                                          "fsl_div_approx",
                                          "fsl_dtype",
                                          "fsl_dtype_name",
                                          "fsl_encode_tensor_map",
                                          "fsl_error_message",
                                          "fsl_exp",
                                          "fsl_fail",
                                          "fsl_fence_proxy_async_shared",
                                          "fsl_grid_dependency_wait",
                                          "fsl_grid_launch_dependents",
                                          "fsl_grid_launch_dependents_if",
                                          "fsl_hold_loads_above",
                                          "fsl_is_inf",
                                          "fsl_is_minus_inf",
                                          "fsl_is_nan",
                                          "fsl_jit_binary",
                                          "fsl_jit_compile",
                                          "fsl_jit_free",
                                          "fsl_jit_function",
                                          "fsl_jit_load",
                                          "fsl_load_vector",
                                          "fsl_max",
                                          "fsl_mbarrier_arrive",
                                          "fsl_mbarrier_arrive_cluster",
                                          "fsl_mbarrier_arrive_expect_tx",
                                          "fsl_mbarrier_init",
                                          "fsl_mbarrier_wait",
                                          "fsl_min",
                                          "fsl_mod",
                                          "fsl_mul",
                                          "fsl_named_barrier_sync",
                                          "fsl_overflow",
                                          "fsl_overlap",
                                          "fsl_setmaxnreg_dec",
                                          "fsl_setmaxnreg_inc",
                                          "fsl_shared",
                                          "fsl_shared_address",
                                          "fsl_shared_bytes",
                                          "fsl_shfl",
                                          "fsl_shfl_down",
                                          "fsl_shfl_xor",
                                          "fsl_status",
                                          "fsl_store_vector",
                                          "fsl_sub",
                                          "fsl_tanh_approx",
                                          "fsl_tensor",
                                          "fsl_tma_load_2d",
                                          "fsl_tma_load_2d_multicast",
                                          "fsl_tma_load_3d",
                                          "fsl_tma_load_3d_multicast",
                                          "fsl_tma_load_4d",
                                          "fsl_tma_load_4d_multicast",
                                          "fsl_tma_load_5d",
                                          "fsl_tma_load_5d_multicast",
                                          "fsl_tma_store_2d",
                                          "fsl_tma_store_3d",
                                          "fsl_tma_store_4d",
                                          "fsl_tma_store_5d",
                                          "fsl_warp_arg_reduce",
                                          "fsl_warp_argmax",
                                          "fsl_warp_argmin",
                                          "fsl_warp_max_exp_sum",
                                          "fsl_warp_reduce",
                                          "fsl_warp_welford",
                                          "fsl_wgmma_commit_group",
                                          "fsl_wgmma_descriptor",
                                          "fsl_wgmma_descriptor_mn_sw128",
                                          "fsl_wgmma_descriptor_sw128",
                                          "fsl_wgmma_fence",
                                          "fsl_wgmma_pin_accumulator",
                                          "fsl_wgmma_wait_group",
                                          "fsl_workspace",
                                          "fsl_workspace_pool"};
  return names;
}

} // namespace

bool isRuntimeName(llvm::StringRef name) {
  // The wgmma instructions: fsl_wgmma_m64n<N>k16_f32_bf16 for every N.
  return runtimeNames().contains(name) || name.starts_with("fsl_wgmma_m64n");
}

std::optional<std::string> reservedFusionName(llvm::StringRef fusion) {
  if (fusion.starts_with("_") || fusion.contains("__"))
    return std::string("C++ reserves names with '__' and those that begin with '_' for the "
                       "implementation, and the kernels are named after the fusion");
  // A launcher named like one of the runtime's functions overloads it (their parameters
  // differ: nvcc compiles every such launcher); one named like a type or a variable
  // cannot.
  static const llvm::StringSet<> typesAndVariables = {
      "fsl_status", "fsl_tensor",    "fsl_dtype",         "fsl_error_message",
      "fsl_shared", "fsl_workspace", "fsl_workspace_pool"};
  std::string launcher = "fsl_" + fusion.str();
  if (typesAndVariables.contains(launcher))
    return "its launcher '" + launcher + "' would redeclare the runtime's " + launcher;
  return std::nullopt;
}

bool isReservedIdentifier(llvm::StringRef name) {
  if (reservedWords().contains(name))
    return true;
  // The runtime's names (fsl/device.cuh, fsl/runtime.h, the launcher's helpers; other
  // `fsl_` names are the lowering's, declared like the user's), its macros, and the CUDA
  // runtime's and driver's (cudaLaunchKernelEx, CU_TENSOR_MAP_*, CUresult).
  if (isRuntimeName(name) || name.starts_with("FSL_") || name.starts_with("Fsl") ||
      name.starts_with("cuda") || name.starts_with("CU_") || name.starts_with("CUDA_"))
    return true;
  // C++ reserves identifiers with a double underscore and those that begin with an
  // underscore and a capital letter.
  if (name.contains("__"))
    return true;
  return name.size() >= 2 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z';
}

} // namespace fsl
