// session.h — the specializing JIT's core, without the compiler: signatures, the policy,
// the memory cache, NVRTC through the runtime's cache, checks and launches.
//
// Specializations come from a callback: libfslc in fsl_jit_session_create
// (jit_session_api.cpp); sources and metadata specialized ahead of time elsewhere (the
// GPU test, tests/gpu/specialize_gpu_test.cu, on a machine without the compiler).
#pragma once

#include "fsl/jit_session.h"
#include "launch_plan.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fsl::jit {

/// A specialization: the generated source, its launch metadata and its name.
struct Specialized {
  std::string name, source, launch;
};

/// Generates `fusion` with `dims` static; FSL_OK or a status and a message.
using Specializer = std::function<fsl_status(
    const std::string &fusion, const std::vector<std::pair<std::string, int64_t>> &dims,
    Specialized &out, std::string &error)>;

class Session {
public:
  /// `signatures`: launch metadata without kernels, by fusion; `arch`: the target's
  /// architecture (the device must be of it when options.arch is not given).
  static fsl_status create(const std::map<std::string, std::string> &signatures,
                           const std::string &targetArch, Specializer specializer,
                           const fsl_jit_session_options &options,
                           std::unique_ptr<Session> &session, std::string &error);

  fsl_status run(const std::string &fusion, const fsl_tensor *const *tensors, int tensorCount,
                 const double *scalars, int scalarCount, void *stream, bool launch,
                 fsl_jit_launch_info *info, std::string &error);

  fsl_jit_stats stats() const;
  ~Session();

private:
  struct Entry;
  /// Everything cuTensorMapEncodeTiled is given: a map cached under it is the map a new
  /// encoding would make (the encoding reads no device state and no memory), so a hit is
  /// safe whatever happened to the memory since, a freed and reused pointer included.
  struct TensorMapKey {
    void *data = nullptr;
    int dtype = 0, swizzle = 0, rank = 0;
    std::array<uint64_t, 5> sizes{};
    std::array<uint64_t, 4> strides{};
    std::array<uint32_t, 5> box{};
    bool operator<(const TensorMapKey &other) const;
  };
  /// A CUtensorMap (cuda.h stays out of this header).
  struct alignas(128) TensorMapBytes {
    uint64_t words[16];
  };
  Session() = default;
  fsl_status encodeTensorMap(const PlannedTensorMap &planned, void *map, std::string &error);
  fsl_status workspacePool(void *&pool, std::string &error);
  fsl_status launchPlanned(Entry &entry, const PlannedCall &call,
                           const std::map<std::string, int64_t> &dims,
                           const fsl_tensor *const *tensors, const double *scalars, int scalarCount,
                           void *stream, std::string &error);
  fsl_status entryFor(const std::string &fusion, const LaunchPlan &signature,
                      const std::map<std::string, int64_t> &dims, const std::string &arch,
                      Entry *&entry, bool &memoryHit, std::string &error);
  fsl_status deviceArch(std::string &arch, std::string &error);

  /// The last call of a fusion that passed its signature's checks and found its
  /// specialization: what those two steps depend on (each descriptor's dtype, rank, sizes
  /// and strides, the scalar count and the architecture; not the data pointers), the
  /// specialization they found (entries live as long as the session) and, once the
  /// specialized plan accepted the descriptors, its sizes and planned launches. A call that
  /// matches it skips all of that (the host time of an eager call: a string key built and
  /// looked up, every descriptor checked twice, the launches planned again); the checks of
  /// the data (checkCallData) and the tensor maps' pointers run on every call.
  struct LastCall {
    std::vector<int64_t> layout;
    int scalarCount = -1;
    std::string arch;
    Entry *entry = nullptr;
    bool planned = false; // dims, empty and call below are the specialized plan's
    std::map<std::string, int64_t> dims;
    bool empty = false;
    PlannedCall call;
  };
  static void describeLayout(const fsl_tensor *const *tensors, int tensorCount,
                             std::vector<int64_t> &layout);

  std::map<std::string, std::unique_ptr<LaunchPlan>> signatures_;
  std::string targetArch_, arch_, cacheDir_;
  fsl_specialize_policy policy_ = FSL_SPECIALIZE_REDUCED;
  Specializer specializer_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  std::map<std::string, LastCall, std::less<>> lastCalls_; // by fusion
  std::map<void *, std::string> archOf_; // by CUDA context: the device's, checked once
  /// TMA descriptors encoded before, for reuse (bounded: session.cpp).
  std::map<TensorMapKey, TensorMapBytes> tensorMaps_;
  /// The workspaces' memory pool of each device (CUmemoryPool): created at the first call
  /// that needs one, kept (its memory too) until the session ends.
  std::map<int, void *> workspacePools_;
  fsl_jit_stats stats_{};
};

} // namespace fsl::jit
