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
// Format, one item a line, tokens separated by blanks, expressions in prefix form with
// parentheses as tokens (`( < T 132 )`):
//   fsl-launch 1
//   fusion NAME
//   target NAME ARCH
//   limits GX GY GZ BX BY BZ THREADS CLUSTER SHARED
//   dim NAME runtime | dim NAME static N
//   reduced NAME                       a dimension some reduction reduces
//   tensor NAME DTYPE in|inout|out ALIGN DIM...   in launcher order (scalars between)
//   scalar NAME DTYPE [DEFAULT]
//   kernel NAME MAXTHREADS             (0: no __launch_bounds__)
//   arg tensor NAME | arg scalar NAME | arg dim NAME
//   grid E E E / block E E E / cluster E E E / shared E
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
  std::vector<std::string> dims;
};

struct PlanScalar {
  std::string name;
  fsl_dtype dtype = FSL_F32;
  std::optional<double> defaultValue;
};

struct PlanArg {
  enum class Kind { Tensor, Scalar, Dim } kind = Kind::Tensor;
  std::string name;
};

struct PlanKernel {
  std::string name;
  int64_t maxThreads = 0;
  std::vector<PlanArg> args;
  std::array<LaunchExpr, 3> grid, block, cluster;
  LaunchExpr shared;
};

struct PlanVariant {
  std::optional<LaunchExpr> guard;
  std::vector<unsigned> kernels;
};

struct LaunchPlan {
  std::string fusion, target, arch;
  std::array<int64_t, 3> maxGrid{}, maxBlock{};
  int64_t maxThreads = 0, maxCluster = 0, maxShared = 0;
  /// Fusion dimensions in order: a static one has its extent.
  std::vector<std::pair<std::string, std::optional<int64_t>>> dims;
  std::vector<std::string> reduced;
  std::vector<PlanTensor> tensors; // in the launcher's order
  std::vector<PlanScalar> scalars; // in the launcher's order
  std::vector<PlanKernel> kernels;
  std::vector<PlanVariant> variants;

  bool isRuntimeDim(const std::string &name) const;
};

/// Parses metadata text; on failure says why (the line and what is wrong).
std::unique_ptr<LaunchPlan> parseLaunchPlan(const std::string &text, std::string &error);

/// One kernel launch, computed and checked.
struct PlannedLaunch {
  const PlanKernel *kernel = nullptr;
  std::array<int64_t, 3> grid{}, block{}, cluster{};
  int64_t shared = 0;
};

/// Checks a call as the generated launcher does: every descriptor (null, dtype, rank,
/// sizes, contiguity, byte counts), the sizes of shared dimensions across tensors and
/// the static extents, then (when `checkData`) data pointers, alignment and overlaps.
/// `dims` receives the runtime dimensions' values. FSL_OK with `empty` set: nothing to do.
fsl_status checkCall(const LaunchPlan &plan, const fsl_tensor *const *tensors, int tensorCount,
                     int scalarCount, bool checkData, std::map<std::string, int64_t> &dims,
                     bool &empty, std::string &error);

/// The launches of the first variant whose guard holds, each shape checked against the
/// target's limits; FSL_ERROR_SIZE when none applies or a shape is out of bounds.
fsl_status planLaunches(const LaunchPlan &plan, const std::map<std::string, int64_t> &dims,
                        std::vector<PlannedLaunch> &launches, std::string &error);

} // namespace fsl::jit
