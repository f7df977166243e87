// launch_plan.h — a fusion's launch metadata, parsed and evaluated (no compiler, no CUDA).
//
// The metadata is the text serialization of a fusion's LaunchContract
// (compiler/codegen/LaunchContract.h: the facts the generated launcher prints as C++),
// which libfslc writes for a lowered program (jit/src/compiler_api.cpp; the format is
// below). This parser stays apart from the compiler and LLVM (a program without either
// launches from the text). The specializing JIT parses it and, for each call, checks the
// tensors and computes the launches the generated launcher would make: the same checks
// in the same order (codegen/LauncherPrinter.cpp), the first variant whose `when` guard
// holds, every kernel's grid, block, cluster and dynamic shared memory in checked 64-bit
// arithmetic held to the target's limits. A signature alone (no kernel lines) checks the
// tensors and gives the runtime dimensions' values, which the JIT specializes on.
//
// Matrix products add what their launcher does besides launching: the TMA descriptors of
// each kernel (each map's tensor, dtype, swizzle, extents and box, whose sizes and byte
// strides are computed per call and held to what TMA takes, as the launcher's
// fsl_encode_tensor_map refuses them), the workspaces (their bytes per call), thread-block
// clusters (each extent within the target's cluster size, the grid a multiple of it), and
// persistent kernels whose grid is an upper bound that the launch lowers to the clusters
// resident at once (the occupancy, known only on the device).
//
// Format, one item a line, tokens separated by blanks, expressions in prefix form with
// parentheses as tokens (`( < T 132 )`):
//   fsl-launch 1
//   fusion NAME
//   target NAME ARCH
//   limits GX GY GZ BX BY BZ THREADS CLUSTER SHARED
//   pdl 0|1                            launches use programmatic dependent launch
//   dim NAME runtime | dim NAME static N
//   reduced NAME                       a dimension some reduction reduces
//   backward NAME...                   the fusions computing its gradients (signatures
//                                      only: a `backward` clause, docs/language.md)
//   tensor NAME DTYPE in|inout|out ALIGN [strided] DIM...
//                                      in launcher order (scalars between); `strided`: an
//                                      input whose outer strides the kernels take
//                                      (innermost 1, the others positive multiples of
//                                      ALIGN's elements)
//   scalar NAME DTYPE [DEFAULT]
//   workspace NAME E                   a temporary of E bytes for each call
//   kernel NAME MAXTHREADS             (0: no __launch_bounds__)
//   tensormap NAME TENSOR DTYPE SWIZZLE RANK E... N...
//                                      the kernel's next TMA descriptor: SWIZZLE 0, 32, 64
//                                      or 128 (bytes), RANK extents then RANK box sizes,
//                                      innermost last (as the IR lists them)
//   arg tensor NAME | arg scalar NAME | arg dim NAME | arg workspace NAME
//   arg stride NAME AXIS               the stride (elements) of axis AXIS of strided NAME
//   arg tensormap INDEX                the kernel's INDEX-th tensormap (from 0)
//   grid E E E / block E E E / cluster E E E / shared E
//   occupancy                          grid x is an upper bound: the launch takes at most
//                                      the clusters resident at once
//   cooperative                        a cooperative launch: its blocks meet at a grid
//                                      barrier (grid_sync), every one resident at once
//   fullgrid N                         a persistent kernel's CTAs when every SM runs one
//                                      (fewer with clusters): a grid x below N (before it
//                                      is lowered to the clusters resident) goes without
//                                      programmatic dependent launch (the launcher's rule)
//   variant always|E KERNEL-INDEX...
//   end
#pragma once

#include "fsl/runtime.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsl::jit {

/// An integer expression over the runtime dimensions.
struct LaunchExpr {
  enum class Kind { Const, Dim, Op } kind = Kind::Const;
  int64_t value = 0;
  std::string name; // Dim: the dimension; Op: the operator (+ - * / % min max < <= ...)
  std::vector<LaunchExpr> operands;
  std::string text; // as written in the metadata, for messages
};

struct PlanTensor {
  std::string name;
  fsl_dtype dtype = FSL_F32;
  int elementBytes = 4;
  bool written = false;  // an output or an inout parameter
  int64_t alignment = 0; // the widest vector access (bytes); 0: only elements
  bool strided = false;  // an input at the caller's strides (innermost 1)
  std::vector<std::string> dims;
};

struct PlanScalar {
  std::string name;
  fsl_dtype dtype = FSL_F32;
  std::optional<double> defaultValue;
};

struct PlanArg {
  enum class Kind { Tensor, Scalar, Dim, Workspace, TensorMap, Stride } kind = Kind::Tensor;
  std::string name;     // Stride: the tensor's
  size_t tensorMap = 0; // TensorMap: into PlanKernel::tensorMaps
  size_t axis = 0;      // Stride: the tensor's axis (outermost 0), not its innermost
  /// Tensor, Stride: into LaunchPlan::tensors; Scalar: into LaunchPlan::scalars;
  /// Workspace: into LaunchPlan::workspaces. Resolved from the name when the plan is read,
  /// so that a launch looks nothing up by name.
  size_t index = 0;
};

/// A global temporary the launcher allocates for each call (split-K's and stream-K's parts
/// of tiles, and their arrival counters).
struct PlanWorkspace {
  std::string name;
  LaunchExpr bytes;
};

/// A TMA descriptor a kernel takes by value (cuTensorMapEncodeTiled's arguments).
struct PlanTensorMap {
  std::string name;       // the kernel's parameter
  std::string tensor;     // the launcher's tensor it describes (its name in messages)
  size_t tensorIndex = 0; // that tensor, into LaunchPlan::tensors (resolved when read)
  fsl_dtype dtype = FSL_BF16;
  int elementBytes = 2;
  int swizzleBytes = 0;            // 0 (none), 32, 64 or 128
  std::vector<LaunchExpr> extents; // innermost last
  std::vector<int64_t> box;        // innermost last
};

struct PlanKernel {
  std::string name;
  int64_t maxThreads = 0;
  std::vector<PlanArg> args;
  std::vector<PlanTensorMap> tensorMaps;
  std::array<LaunchExpr, 3> grid, block, cluster;
  LaunchExpr shared;
  bool gridFromOccupancy = false; // persistent: grid x is an upper bound
  bool cooperative = false;       // launched cooperatively: its blocks meet at a grid barrier
  int64_t fullGrid = 0;           // > 0: a grid x below it launches without PDL
};

struct PlanVariant {
  std::optional<LaunchExpr> guard;
  std::vector<unsigned> kernels;
};

struct LaunchPlan {
  std::string fusion, target, arch;
  std::array<int64_t, 3> maxGrid{}, maxBlock{};
  int64_t maxThreads = 0, maxCluster = 0, maxShared = 0;
  bool pdl = false; // programmatic dependent launch, as the launcher's
  /// Fusion dimensions in order: a static one has its extent.
  std::vector<std::pair<std::string, std::optional<int64_t>>> dims;
  std::vector<std::string> reduced;
  /// The fusions computing its gradients (a `backward` clause; signatures only), and the
  /// inputs whose gradient is another input's (`grad_residual = grad_x`: {residual, x}).
  std::vector<std::string> backward;
  std::vector<std::pair<std::string, std::string>> sameGradients;
  std::vector<PlanTensor> tensors; // in the launcher's order
  std::vector<PlanScalar> scalars; // in the launcher's order
  std::vector<PlanWorkspace> workspaces;
  std::vector<PlanKernel> kernels;
  std::vector<PlanVariant> variants;

  bool isRuntimeDim(const std::string &name) const;
};

/// Parses metadata text; on failure says why (the line and what is wrong).
std::unique_ptr<LaunchPlan> parseLaunchPlan(const std::string &text, std::string &error);

/// A TMA descriptor's arguments for one call, in the driver's order (innermost first).
struct PlannedTensorMap {
  const PlanTensorMap *map = nullptr;
  void *data = nullptr; // the tensor's (null when the call's data is not looked at)
  int rank = 0;
  std::array<uint64_t, 5> sizes{};   // elements, innermost first
  std::array<uint64_t, 4> strides{}; // bytes of dimensions 1..rank-1
  std::array<uint32_t, 5> box{};     // innermost first
};

/// One kernel launch, computed and checked.
struct PlannedLaunch {
  const PlanKernel *kernel = nullptr;
  std::array<int64_t, 3> grid{}, block{}, cluster{};
  int64_t shared = 0;
  bool clustered = false; // a cluster extent is not 1: launched with the cluster attribute
  std::vector<PlannedTensorMap> tensorMaps; // in the kernel's order
};

struct PlannedWorkspace {
  const PlanWorkspace *workspace = nullptr;
  int64_t bytes = 0;
};

/// What one call launches: the chosen variant's kernels and the workspaces they share.
struct PlannedCall {
  std::vector<PlannedLaunch> launches;
  std::vector<PlannedWorkspace> workspaces; // empty when the variant's kernels take none
};

/// Checks a call as the generated launcher does: every descriptor (null, dtype, rank,
/// sizes, contiguity or a strided input's strides, byte counts), the sizes of shared dimensions
/// across tensors and the static extents, then (when `checkData`) checkCallData's.
/// `dims` receives the runtime dimensions' values. FSL_OK with `empty` set: nothing to do.
fsl_status checkCall(const LaunchPlan &plan, const fsl_tensor *const *tensors, int tensorCount,
                     int scalarCount, bool checkData, std::map<std::string, int64_t> &dims,
                     bool &empty, std::string &error);

/// The checks of a call's data, for descriptors checkCall accepted without them: data
/// pointers (null, aligned to the elements and to the kernels' vectors, not running past
/// the address space) and overlaps of an output with any other tensor. They depend on the
/// pointers only, so a call laid out as an earlier one (same descriptors but the data)
/// needs these alone.
fsl_status checkCallData(const LaunchPlan &plan, const fsl_tensor *const *tensors,
                         std::string &error);

/// The launches of the first variant whose guard holds, each shape checked against the
/// target's limits (FSL_ERROR_SIZE when none applies or a shape is out of bounds), the
/// workspaces' bytes, and each tensor map's sizes, strides and box, refused as the
/// launcher refuses them: a data pointer not aligned to 16 bytes (FSL_ERROR_ALIGNMENT; only
/// when `checkData`), a row stride not a multiple of 16 bytes, an extent or stride beyond
/// TMA's (FSL_ERROR_SIZE). All of it before anything is launched. `tensors` are the call's,
/// accepted by checkCall.
fsl_status planLaunches(const LaunchPlan &plan, const std::map<std::string, int64_t> &dims,
                        const fsl_tensor *const *tensors, bool checkData, PlannedCall &call,
                        std::string &error);

/// Whether a launch of `kernel` with `gridX` CTAs along x (its grid before a persistent
/// grid is lowered to what is resident) uses programmatic dependent launch, as the
/// launcher's: where the plan does, except a cooperative launch and a persistent grid
/// below its full grid (`fullgrid`).
bool usesProgrammaticLaunch(const LaunchPlan &plan, const PlanKernel &kernel, int64_t gridX);

/// Gives `call`'s tensor maps the data pointers of `tensors` (a call laid out as the one
/// `call` was planned for), refusing one not aligned to 16 bytes as planLaunches does.
fsl_status bindTensorMaps(const LaunchPlan &plan, const fsl_tensor *const *tensors,
                          PlannedCall &call, std::string &error);

} // namespace fsl::jit
