// session.cpp — the specializing JIT's core (session.h).
#include "session.h"

#include "fsl/jit.h"

#include <cuda.h> // types only (CUlaunchConfig): the driver is loaded at run time
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <tuple>

namespace fsl::jit {
namespace {

// The driver API calls a launch needs, found at run time (as fsl_jit_load finds its own).
struct DriverApi {
  using CtxGetCurrent = int (*)(void **);
  using CtxGetDevice = int (*)(int *);
  using DeviceGetAttribute = int (*)(int *, int, int);
  using FuncSetAttribute = int (*)(void *, int, int);
  using LaunchKernel = int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, void *, void **, void **);
  using LaunchKernelEx = int (*)(const CUlaunchConfig *, void *, void **, void **);
  using TensorMapEncodeTiled = int (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                       const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                       const cuuint32_t *, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
  using OccupancyMaxActiveClusters = int (*)(int *, void *, const CUlaunchConfig *);
  using MemPoolCreate = int (*)(CUmemoryPool *, const CUmemPoolProps *);
  using MemPoolDestroy = int (*)(CUmemoryPool);
  using MemPoolSetAttribute = int (*)(CUmemoryPool, CUmemPool_attribute, void *);
  using MemAllocFromPoolAsync = int (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
  using MemFreeAsync = int (*)(CUdeviceptr, CUstream);
  std::once_flag once;
  std::string why;
  CtxGetCurrent ctxGetCurrent = nullptr;
  CtxGetDevice ctxGetDevice = nullptr;
  DeviceGetAttribute deviceGetAttribute = nullptr;
  FuncSetAttribute funcSetAttribute = nullptr;
  LaunchKernel launchKernel = nullptr;
  /// CUDA 12's launch with attributes; null on an older driver (then no PDL, no clusters).
  LaunchKernelEx launchKernelEx = nullptr;
  // What matrix products need (CUDA 12): null on an older driver, which then refuses them.
  TensorMapEncodeTiled tensorMapEncodeTiled = nullptr;
  OccupancyMaxActiveClusters occupancyMaxActiveClusters = nullptr;
  MemPoolCreate memPoolCreate = nullptr;
  MemPoolDestroy memPoolDestroy = nullptr;
  MemPoolSetAttribute memPoolSetAttribute = nullptr;
  MemAllocFromPoolAsync memAllocFromPoolAsync = nullptr;
  MemFreeAsync memFreeAsync = nullptr;

  bool load(std::string &error) {
    std::call_once(once, [this] {
      void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
      if (!library) {
        why = std::string("cannot load the CUDA driver (libcuda.so.1): ") + dlerror();
        return;
      }
      ctxGetCurrent = reinterpret_cast<CtxGetCurrent>(dlsym(library, "cuCtxGetCurrent"));
      ctxGetDevice = reinterpret_cast<CtxGetDevice>(dlsym(library, "cuCtxGetDevice"));
      deviceGetAttribute =
          reinterpret_cast<DeviceGetAttribute>(dlsym(library, "cuDeviceGetAttribute"));
      funcSetAttribute = reinterpret_cast<FuncSetAttribute>(dlsym(library, "cuFuncSetAttribute"));
      launchKernel = reinterpret_cast<LaunchKernel>(dlsym(library, "cuLaunchKernel"));
      launchKernelEx = reinterpret_cast<LaunchKernelEx>(dlsym(library, "cuLaunchKernelEx"));
      tensorMapEncodeTiled =
          reinterpret_cast<TensorMapEncodeTiled>(dlsym(library, "cuTensorMapEncodeTiled"));
      occupancyMaxActiveClusters = reinterpret_cast<OccupancyMaxActiveClusters>(
          dlsym(library, "cuOccupancyMaxActiveClusters"));
      memPoolCreate = reinterpret_cast<MemPoolCreate>(dlsym(library, "cuMemPoolCreate"));
      memPoolDestroy = reinterpret_cast<MemPoolDestroy>(dlsym(library, "cuMemPoolDestroy"));
      memPoolSetAttribute =
          reinterpret_cast<MemPoolSetAttribute>(dlsym(library, "cuMemPoolSetAttribute"));
      memAllocFromPoolAsync =
          reinterpret_cast<MemAllocFromPoolAsync>(dlsym(library, "cuMemAllocFromPoolAsync"));
      memFreeAsync = reinterpret_cast<MemFreeAsync>(dlsym(library, "cuMemFreeAsync"));
      if (!ctxGetCurrent || !ctxGetDevice || !deviceGetAttribute || !funcSetAttribute ||
          !launchKernel)
        why = "the CUDA driver lacks cuCtxGetCurrent, cuCtxGetDevice, cuDeviceGetAttribute, "
              "cuFuncSetAttribute or cuLaunchKernel";
    });
    if (why.empty())
      return true;
    error = why;
    return false;
  }
};
DriverApi driverApi;

constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr int kMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int64_t kDefaultSharedBytes = 48 * 1024;
/// Tensor maps kept for reuse; past this many the cache starts again (a program that
/// meets ever new pointers does not grow it without bound).
constexpr size_t kTensorMapCacheEntries = 4096;

CUtensorMapDataType tensorMapType(fsl_dtype dtype) {
  switch (dtype) {
  case FSL_BOOL:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case FSL_I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case FSL_I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case FSL_F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case FSL_BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case FSL_F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case FSL_F64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle tensorMapSwizzle(int bytes) {
  return bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
         : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                       : CU_TENSOR_MAP_SWIZZLE_NONE;
}

void copy(char *to, size_t size, const std::string &from) {
  std::snprintf(to, size, "%s", from.c_str());
}

} // namespace

/// One specialization in memory: its plan, its cubin, and the module loaded from it in
/// each context it was launched in.
struct Session::Entry {
  std::string name;
  std::unique_ptr<LaunchPlan> plan;
  fsl_jit_binary binary{};
  bool diskHit = false;
  struct Loaded {
    void *module = nullptr;
    std::vector<void *> functions; // per plan kernel
    /// Clusters resident at once of a persistent kernel, by (kernel, block, shared
    /// memory, cluster): the occupancy query, once.
    std::map<std::array<int64_t, 8>, int> maxClusters;
  };
  std::map<void *, Loaded> loaded; // by CUcontext
  ~Entry() { fsl_jit_free(&binary); }
};

static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) <= 128,
              "Session::TensorMapBytes holds a CUtensorMap");

bool Session::TensorMapKey::operator<(const TensorMapKey &other) const {
  return std::tie(data, dtype, swizzle, rank, sizes, strides, box) <
         std::tie(other.data, other.dtype, other.swizzle, other.rank, other.sizes, other.strides,
                  other.box);
}

Session::~Session() {
  // A pool with allocations still being freed on a stream is released once they are
  // (cuMemPoolDestroy); graphs that captured a workspace own theirs.
  std::string ignored;
  if (!workspacePools_.empty() && driverApi.load(ignored) && driverApi.memPoolDestroy)
    for (const auto &[device, pool] : workspacePools_)
      driverApi.memPoolDestroy(static_cast<CUmemoryPool>(pool));
}

fsl_status Session::create(const std::map<std::string, std::string> &signatures,
                           const std::string &targetArch, Specializer specializer,
                           const fsl_jit_session_options &options,
                           std::unique_ptr<Session> &session, std::string &error) {
  std::unique_ptr<Session> created(new Session());
  for (const auto &[fusion, text] : signatures) {
    std::unique_ptr<LaunchPlan> plan = parseLaunchPlan(text, error);
    if (!plan) {
      error = fusion + ": " + error;
      return FSL_ERROR_ARGUMENT;
    }
    created->signatures_[fusion] = std::move(plan);
  }
  if (options.policy != FSL_SPECIALIZE_REDUCED && options.policy != FSL_SPECIALIZE_ALL &&
      options.policy != FSL_SPECIALIZE_NONE) {
    error = "unknown specialization policy " + std::to_string(static_cast<int>(options.policy));
    return FSL_ERROR_ARGUMENT;
  }
  created->policy_ = options.policy;
  created->targetArch_ = targetArch;
  created->arch_ = options.arch ? options.arch : "";
  created->cacheDir_ = options.cache_dir ? options.cache_dir : "";
  created->specializer_ = std::move(specializer);
  session = std::move(created);
  return FSL_OK;
}

fsl_jit_stats Session::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

/// The current device's architecture, which must be the target's: sm_90 for sm_90a.
fsl_status Session::deviceArch(std::string &arch, std::string &error) {
  if (!driverApi.load(error))
    return FSL_ERROR_DRIVER;
  void *context = nullptr;
  if (driverApi.ctxGetCurrent(&context) == 0 && context) {
    if (auto known = archOf_.find(context); known != archOf_.end()) {
      arch = known->second;
      return FSL_OK;
    }
  }
  int device = 0, major = 0, minor = 0;
  if (driverApi.ctxGetDevice(&device) != 0 ||
      driverApi.deviceGetAttribute(&major, kComputeCapabilityMajor, device) != 0 ||
      driverApi.deviceGetAttribute(&minor, kComputeCapabilityMinor, device) != 0) {
    error = "no current CUDA context (call cudaFree(0) or cuCtxSetCurrent first)";
    return FSL_ERROR_DRIVER;
  }
  std::string device_arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (targetArch_.rfind(device_arch, 0) != 0 ||
      (targetArch_.size() > device_arch.size() && targetArch_.substr(device_arch.size()) != "a")) {
    error = "the device is " + device_arch + ", the program's target is " + targetArch_ +
            ": load the program for the device's target, or give the session an arch";
    return FSL_ERROR_DRIVER;
  }
  arch = targetArch_;
  if (context)
    archOf_[context] = arch;
  return FSL_OK;
}

fsl_status Session::entryFor(const std::string &fusion, const LaunchPlan &signature,
                             const std::map<std::string, int64_t> &dims, const std::string &arch,
                             Entry *&entry, bool &memoryHit, std::string &error) {
  // The dimensions to specialize on, by the policy, in the fusion's order. "reduced": the
  // dimensions some reduction reduces, and the innermost of each tensor of two or more
  // dimensions (its extent decides the vector width and how a short row is laid on the
  // threads: left runtime, RoPE's head of 128 and cross-entropy's gradient over V ran at
  // one scalar access a thread). A specialization that does not compile with the
  // innermost dimensions static is made again with the reduced dimensions alone
  // (tests/runtime/jit_session_test.cpp refuses one on purpose).
  std::vector<std::pair<std::string, int64_t>> chosen, reducedOnly;
  for (const auto &[dim, extent] : signature.dims) {
    if (extent || policy_ == FSL_SPECIALIZE_NONE)
      continue;
    bool reduced = false, innermost = false;
    for (const std::string &r : signature.reduced)
      reduced |= r == dim;
    for (const PlanTensor &tensor : signature.tensors)
      innermost |= tensor.dims.size() >= 2 && tensor.dims.back() == dim;
    if (policy_ == FSL_SPECIALIZE_ALL || reduced)
      reducedOnly.emplace_back(dim, dims.at(dim));
    if (policy_ == FSL_SPECIALIZE_ALL || reduced || innermost)
      chosen.emplace_back(dim, dims.at(dim));
  }
  std::string key = fusion + "|" + arch;
  for (const auto &[dim, value] : chosen)
    key += "|" + dim + "=" + std::to_string(value);
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    entry = found->second.get();
    memoryHit = true;
    return FSL_OK;
  }
  memoryHit = false;
  auto created = std::make_unique<Entry>();
  Specialized specialized;
  if (fsl_status status = specializer_(fusion, chosen, specialized, error); status != FSL_OK) {
    if (status != FSL_ERROR_COMPILE || reducedOnly.size() == chosen.size())
      return status;
    if (fsl_status again = specializer_(fusion, reducedOnly, specialized, error); again != FSL_OK)
      return again;
  }
  ++stats_.specializations;
  created->name = specialized.name;
  created->plan = parseLaunchPlan(specialized.launch, error);
  if (!created->plan) {
    error = specialized.name + ": " + error;
    return FSL_ERROR_COMPILE;
  }
  char message[8192] = "";
  fsl_status status = fsl_jit_compile(
      specialized.source.c_str(), specialized.name.c_str(), arch.c_str(), nullptr, 0,
      cacheDir_.empty() ? nullptr : cacheDir_.c_str(), &created->binary, message, sizeof message);
  if (status != FSL_OK) {
    error = message;
    return status;
  }
  created->diskHit = created->binary.cache_hit != 0;
  if (!created->diskHit)
    ++stats_.nvrtc_compiles;
  entry = created.get();
  entries_[key] = std::move(created);
  return FSL_OK;
}

void Session::describeLayout(const fsl_tensor *const *tensors, int tensorCount,
                             std::vector<int64_t> &layout) {
  layout.clear();
  layout.push_back(tensorCount);
  for (int i = 0; tensors && i < tensorCount; ++i) {
    const fsl_tensor *t = tensors[i];
    if (!t) {
      layout.push_back(-1);
      continue;
    }
    layout.push_back(t->dtype);
    layout.push_back(t->rank);
    for (int d = 0; d < t->rank && d < FSL_MAX_RANK; ++d) {
      layout.push_back(t->sizes[d]);
      layout.push_back(t->strides[d]);
    }
  }
}

fsl_status Session::run(const std::string &fusion, const fsl_tensor *const *tensors,
                        int tensorCount, const double *scalars, int scalarCount, void *stream,
                        bool launch, fsl_jit_launch_info *info, std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.calls;
  auto refuse = [&](fsl_status status) {
    ++stats_.refused;
    return status;
  };
  if (info)
    *info = fsl_jit_launch_info{};
  auto signature = signatures_.find(fusion);
  if (signature == signatures_.end()) {
    std::string known;
    for (const auto &[name, plan] : signatures_)
      known += (known.empty() ? "" : ", ") + name;
    error = "no fusion '" + fusion + "' in the program (fusions: " + known + ")";
    return refuse(FSL_ERROR_ARGUMENT);
  }
  if (scalarCount > 0 && !scalars) {
    error = "scalars is null with scalar_count " + std::to_string(scalarCount);
    return refuse(FSL_ERROR_NULL_POINTER);
  }
  // Scalars the kernels can take, with values their types hold.
  const LaunchPlan &sig = *signature->second;
  for (int i = 0; i < scalarCount && i < static_cast<int>(sig.scalars.size()); ++i) {
    const PlanScalar &scalar = sig.scalars[i];
    double value = scalars[i];
    bool integral = scalar.dtype == FSL_I32 || scalar.dtype == FSL_I64 || scalar.dtype == FSL_BOOL;
    double low = scalar.dtype == FSL_I32 ? -2147483648.0 : -9223372036854775808.0;
    double high = scalar.dtype == FSL_I32 ? 2147483647.0 : 9223372036854775807.0;
    if (scalar.dtype == FSL_F16 || scalar.dtype == FSL_BF16) {
      error = scalar.name + ": the JIT passes f32, f64, i32, i64 and bool scalars, not " +
              (scalar.dtype == FSL_F16 ? "f16" : "bf16");
      return refuse(FSL_ERROR_DTYPE);
    }
    if (integral && (value != static_cast<double>(static_cast<int64_t>(value)) || value < low ||
                     value >= high + (scalar.dtype == FSL_I32 ? 1.0 : 0.0) ||
                     (scalar.dtype == FSL_BOOL && value != 0 && value != 1))) {
      char shown[64];
      std::snprintf(shown, sizeof shown, "%.17g", value);
      error = scalar.name + ": " + shown + " is not a value of its type " +
              (scalar.dtype == FSL_I32   ? "i32"
               : scalar.dtype == FSL_I64 ? "i64"
                                         : "bool");
      return refuse(FSL_ERROR_ARGUMENT);
    }
  }
  bool checkData = launch;
  for (int i = 0; !launch && tensors && i < tensorCount; ++i)
    checkData |= tensors[i] && tensors[i]->data;
  // The signature's checks (descriptors and sizes) come before anything is compiled: a
  // wrong call costs nothing. The data's (alignment to the kernels' vectors, overlaps)
  // follow with the specialized plan, in the launcher's order. A call laid out as the
  // fusion's last one (LastCall) passes the first checks as that call did, and takes its
  // specialization when the architecture is the same.
  std::string arch = arch_.empty() && !launch ? targetArch_ : arch_;
  auto findArch = [&]() -> fsl_status { return arch.empty() ? deviceArch(arch, error) : FSL_OK; };
  thread_local std::vector<int64_t> layout;
  describeLayout(tensors, tensorCount, layout);
  LastCall &last = lastCalls_[fusion];
  Entry *entry = nullptr;
  bool memoryHit = false;
  if (last.entry && last.scalarCount == scalarCount && last.layout == layout) {
    if (fsl_status status = findArch(); status != FSL_OK)
      return refuse(status);
    if (last.arch == arch) {
      entry = last.entry;
      memoryHit = true;
    }
  }
  if (!entry) {
    std::map<std::string, int64_t> dims;
    bool empty = false;
    if (fsl_status status = checkCall(*signature->second, tensors, tensorCount, scalarCount,
                                      /*checkData=*/false, dims, empty, error);
        status != FSL_OK)
      return refuse(status);
    if (empty)
      return FSL_OK; // nothing to do, as the launcher: no kernel is specialized either
    if (fsl_status status = findArch(); status != FSL_OK)
      return refuse(status);
    if (fsl_status status =
            entryFor(fusion, *signature->second, dims, arch, entry, memoryHit, error);
        status != FSL_OK)
      return refuse(status);
    last.layout = layout;
    last.scalarCount = scalarCount;
    last.arch = arch;
    last.entry = entry;
    last.planned = false;
  }
  stats_.memory_hits += memoryHit;
  // The specialized plan's own checks (its static extents) and its launches, once for
  // this layout, in the launcher's order (the data's checks before the plan's); on a later
  // call of the layout, the data's checks and the tensor maps' pointers alone.
  if (!last.planned) {
    if (fsl_status status = checkCall(*entry->plan, tensors, tensorCount, scalarCount, checkData,
                                      last.dims, last.empty, error);
        status != FSL_OK)
      return refuse(status);
    if (!last.empty) {
      if (fsl_status status =
              planLaunches(*entry->plan, last.dims, tensors, checkData, last.call, error);
          status != FSL_OK)
        return refuse(status);
    }
    last.planned = true;
  } else if (checkData && !last.empty) {
    if (fsl_status status = checkCallData(*entry->plan, tensors, error); status != FSL_OK)
      return refuse(status);
    if (fsl_status status = bindTensorMaps(*entry->plan, tensors, last.call, error);
        status != FSL_OK)
      return refuse(status);
  }
  if (last.empty)
    return FSL_OK;
  const std::map<std::string, int64_t> &dims = last.dims;
  PlannedCall &call = last.call;
  const std::vector<PlannedLaunch> &launches = call.launches;
  if (launches.size() > FSL_JIT_MAX_LAUNCHES || call.workspaces.size() > FSL_JIT_MAX_WORKSPACES) {
    error = entry->name + ": more than " + std::to_string(FSL_JIT_MAX_LAUNCHES) + " launches or " +
            std::to_string(FSL_JIT_MAX_WORKSPACES) + " workspaces";
    return refuse(FSL_ERROR_LAUNCH);
  }
  if (info) {
    copy(info->specialization, sizeof info->specialization, entry->name);
    copy(info->cache_path, sizeof info->cache_path, entry->binary.path);
    info->memory_hit = memoryHit;
    info->disk_hit = entry->diskHit;
    info->launch_count = static_cast<int>(launches.size());
    for (size_t i = 0; i < launches.size(); ++i) {
      copy(info->launches[i].kernel, sizeof info->launches[i].kernel, launches[i].kernel->name);
      for (int a = 0; a < 3; ++a) {
        info->launches[i].grid[a] = launches[i].grid[a];
        info->launches[i].block[a] = launches[i].block[a];
        info->launches[i].cluster[a] = launches[i].cluster[a];
      }
      info->launches[i].shared_bytes = launches[i].shared;
      info->launches[i].grid_from_occupancy = launches[i].kernel->gridFromOccupancy;
      info->launches[i].tensor_maps = static_cast<int>(launches[i].tensorMaps.size());
      info->launches[i].cooperative = launches[i].kernel->cooperative;
    }
    info->workspace_count = static_cast<int>(call.workspaces.size());
    for (size_t i = 0; i < call.workspaces.size(); ++i) {
      copy(info->workspaces[i].name, sizeof info->workspaces[i].name,
           call.workspaces[i].workspace->name);
      info->workspaces[i].bytes = call.workspaces[i].bytes;
    }
  }
  if (!launch)
    return FSL_OK;
  if (fsl_status status =
          launchPlanned(*entry, call, dims, tensors, scalars, scalarCount, stream, error);
      status != FSL_OK)
    return refuse(status);
  return FSL_OK;
}

fsl_status Session::encodeTensorMap(const PlannedTensorMap &planned, void *map,
                                    std::string &error) {
  TensorMapKey key;
  key.data = planned.data;
  key.dtype = planned.map->dtype;
  key.swizzle = planned.map->swizzleBytes;
  key.rank = planned.rank;
  key.sizes = planned.sizes;
  key.strides = planned.strides;
  key.box = planned.box;
  if (auto found = tensorMaps_.find(key); found != tensorMaps_.end()) {
    std::memcpy(map, &found->second, sizeof(CUtensorMap));
    return FSL_OK;
  }
  if (!driverApi.tensorMapEncodeTiled) {
    error = planned.map->tensor + ": the CUDA driver has no cuTensorMapEncodeTiled";
    return FSL_ERROR_DRIVER;
  }
  const cuuint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  // The launcher's arguments (fsl_encode_tensor_map): no interleave, 128-byte L2
  // promotion, out-of-bounds elements read as zero.
  int result = driverApi.tensorMapEncodeTiled(
      static_cast<CUtensorMap *>(map), tensorMapType(planned.map->dtype),
      static_cast<cuuint32_t>(planned.rank), planned.data, planned.sizes.data(),
      planned.rank > 1 ? planned.strides.data() : nullptr, planned.box.data(), elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, tensorMapSwizzle(planned.map->swizzleBytes),
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != 0) {
    error = planned.map->tensor + ": cuTensorMapEncodeTiled failed (CUresult " +
            std::to_string(result) + ")";
    return FSL_ERROR_LAUNCH;
  }
  ++stats_.tensor_maps_encoded;
  if (tensorMaps_.size() >= kTensorMapCacheEntries)
    tensorMaps_.clear();
  std::memcpy(&tensorMaps_[key], map, sizeof(CUtensorMap));
  return FSL_OK;
}

/// The current device's pool for workspaces: created once, keeping its memory between
/// calls (release threshold: all), as the launcher's fsl_workspace_pool; destroyed with
/// the session.
fsl_status Session::workspacePool(void *&pool, std::string &error) {
  int device = 0;
  if (driverApi.ctxGetDevice(&device) != 0) {
    error = "no current CUDA context (call cudaFree(0) or cuCtxSetCurrent first)";
    return FSL_ERROR_DRIVER;
  }
  if (auto found = workspacePools_.find(device); found != workspacePools_.end()) {
    pool = found->second;
    return FSL_OK;
  }
  if (!driverApi.memPoolCreate || !driverApi.memPoolSetAttribute ||
      !driverApi.memAllocFromPoolAsync || !driverApi.memFreeAsync) {
    error = "the CUDA driver lacks stream-ordered memory pools (cuMemPoolCreate, "
            "cuMemAllocFromPoolAsync, cuMemFreeAsync), which workspaces need";
    return FSL_ERROR_DRIVER;
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool created = nullptr;
  if (int result = driverApi.memPoolCreate(&created, &props); result != 0) {
    error = "cannot create the workspaces' memory pool (CUresult " + std::to_string(result) + ")";
    return FSL_ERROR_LAUNCH;
  }
  cuuint64_t keep = UINT64_MAX;
  if (int result = driverApi.memPoolSetAttribute(created, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
      result != 0) {
    driverApi.memPoolDestroy(created);
    error = "cannot keep the workspaces' memory pool (CUresult " + std::to_string(result) + ")";
    return FSL_ERROR_LAUNCH;
  }
  pool = workspacePools_[device] = created;
  return FSL_OK;
}

fsl_status Session::launchPlanned(Entry &entry, const PlannedCall &call,
                                  const std::map<std::string, int64_t> &dims,
                                  const fsl_tensor *const *tensors, const double *scalars,
                                  int scalarCount, void *stream, std::string &error) {
  // The module, once per context; its functions by the plan's kernel names.
  if (!driverApi.load(error))
    return FSL_ERROR_DRIVER;
  void *context = nullptr;
  if (driverApi.ctxGetCurrent(&context) != 0 || !context) {
    error = "no current CUDA context (call cudaFree(0) or cuCtxSetCurrent first)";
    return FSL_ERROR_DRIVER;
  }
  Entry::Loaded &loaded = entry.loaded[context];
  char message[1024] = "";
  if (!loaded.module) {
    if (fsl_jit_load(&entry.binary, &loaded.module, message, sizeof message) != FSL_OK) {
      entry.loaded.erase(context);
      error = entry.name + ": " + message;
      return FSL_ERROR_DRIVER;
    }
    for (const PlanKernel &kernel : entry.plan->kernels) {
      void *function = nullptr;
      if (fsl_jit_function(loaded.module, kernel.name.c_str(), &function, message,
                           sizeof message) != FSL_OK) {
        error = entry.name + ": " + message;
        return FSL_ERROR_DRIVER;
      }
      loaded.functions.push_back(function);
    }
  }
  const LaunchPlan &plan = *entry.plan;
  const std::vector<PlannedLaunch> &launches = call.launches;
  // Before anything goes on the stream: what each launch needs of the driver, its shared
  // memory, its grid (a persistent one lowered to what is resident) and its tensor maps.
  // (Fixed arrays and inline storage: an eager call's host time, no allocation a launch;
  // run() refused more than FSL_JIT_MAX_LAUNCHES launches or FSL_JIT_MAX_WORKSPACES.)
  std::array<std::array<unsigned, 3>, FSL_JIT_MAX_LAUNCHES> grids{};
  std::array<std::vector<TensorMapBytes>, FSL_JIT_MAX_LAUNCHES> maps;
  for (size_t l = 0; l < launches.size(); ++l) {
    const PlannedLaunch &planned = launches[l];
    const PlanKernel &kernel = *planned.kernel;
    void *function = loaded.functions[static_cast<size_t>(&kernel - plan.kernels.data())];
    if ((planned.clustered || kernel.gridFromOccupancy || kernel.cooperative) &&
        !driverApi.launchKernelEx) {
      error = kernel.name + ": the CUDA driver has no cuLaunchKernelEx, which " +
              (planned.clustered    ? "thread-block clusters need"
               : kernel.cooperative ? "a cooperative launch (grid_sync) needs"
                                    : "a persistent grid sized by occupancy needs");
      return FSL_ERROR_DRIVER;
    }
    if (planned.shared > kDefaultSharedBytes &&
        driverApi.funcSetAttribute(function, kMaxDynamicSharedBytes,
                                   static_cast<int>(planned.shared)) != 0) {
      error = kernel.name + ": cannot allow " + std::to_string(planned.shared) +
              " bytes of dynamic shared memory";
      return FSL_ERROR_LAUNCH;
    }
    for (int a = 0; a < 3; ++a)
      grids[l][a] = static_cast<unsigned>(planned.grid[a]);
    if (kernel.gridFromOccupancy) {
      // A persistent kernel walks its tiles from gridDim.x: its CTAs must all be resident.
      // Clusters need their CTAs in one GPC, so fewer clusters than SMs / size may fit:
      // the grid is what the device holds at once (the launcher's rule). The count
      // depends on the function, block, shared memory and cluster only: kept.
      std::array<int64_t, 8> key = {static_cast<int64_t>(&kernel - plan.kernels.data()),
                                    planned.block[0],
                                    planned.block[1],
                                    planned.block[2],
                                    planned.shared,
                                    planned.cluster[0],
                                    planned.cluster[1],
                                    planned.cluster[2]};
      auto found = loaded.maxClusters.find(key);
      if (found == loaded.maxClusters.end()) {
        CUlaunchAttribute shape{};
        shape.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        shape.value.clusterDim.x = static_cast<unsigned>(planned.cluster[0]);
        shape.value.clusterDim.y = 1;
        shape.value.clusterDim.z = 1;
        CUlaunchConfig probe{};
        probe.gridDimX = grids[l][0];
        probe.gridDimY = grids[l][1];
        probe.gridDimZ = grids[l][2];
        probe.blockDimX = static_cast<unsigned>(planned.block[0]);
        probe.blockDimY = static_cast<unsigned>(planned.block[1]);
        probe.blockDimZ = static_cast<unsigned>(planned.block[2]);
        probe.sharedMemBytes = static_cast<unsigned>(planned.shared);
        probe.attrs = &shape;
        probe.numAttrs = 1;
        int clusters = 0;
        int result = driverApi.occupancyMaxActiveClusters
                         ? driverApi.occupancyMaxActiveClusters(&clusters, function, &probe)
                         : -1;
        if (result != 0 || clusters < 1) {
          error = kernel.name + ": no cluster of " + std::to_string(planned.cluster[0]) +
                  " CTAs fits the device (" +
                  (result == -1 ? std::string("the driver has no cuOccupancyMaxActiveClusters")
                                : "CUresult " + std::to_string(result)) +
                  ")";
          return FSL_ERROR_LAUNCH;
        }
        found = loaded.maxClusters.emplace(key, clusters).first;
      }
      uint64_t resident =
          static_cast<uint64_t>(found->second) * static_cast<uint64_t>(planned.cluster[0]);
      if (grids[l][0] > resident)
        grids[l][0] = static_cast<unsigned>(resident);
    }
    for (const PlannedTensorMap &planned : launches[l].tensorMaps) {
      maps[l].emplace_back();
      if (fsl_status status = encodeTensorMap(planned, &maps[l].back(), error); status != FSL_OK)
        return status;
    }
  }
  // The workspaces, from the session's pool in stream order: allocated after every check,
  // freed on the stream after the launches (whether they went or one failed). Under CUDA
  // graph capture both become the graph's allocation and free nodes, its own memory.
  std::array<CUdeviceptr, FSL_JIT_MAX_WORKSPACES> workspaces{};
  auto freeWorkspaces = [&] {
    for (CUdeviceptr pointer : workspaces)
      if (pointer)
        driverApi.memFreeAsync(pointer, static_cast<CUstream>(stream));
  };
  for (size_t w = 0; w < call.workspaces.size(); ++w) {
    const PlannedWorkspace &workspace = call.workspaces[w];
    if (workspace.bytes == 0)
      continue;
    void *pool = nullptr;
    if (fsl_status status = workspacePool(pool, error); status != FSL_OK) {
      freeWorkspaces();
      return status;
    }
    int result = driverApi.memAllocFromPoolAsync(
        &workspaces[w], static_cast<size_t>(workspace.bytes), static_cast<CUmemoryPool>(pool),
        static_cast<CUstream>(stream));
    if (result != 0) {
      workspaces[w] = 0;
      freeWorkspaces();
      error = "workspace " + workspace.workspace->name + " of " + std::to_string(workspace.bytes) +
              " bytes: CUresult " + std::to_string(result);
      return FSL_ERROR_LAUNCH;
    }
  }
  for (size_t l = 0; l < launches.size(); ++l) {
    const PlannedLaunch &planned = launches[l];
    const PlanKernel &kernel = *planned.kernel;
    // Arguments: every value in an 8-byte slot (pointers, int64, double; float, int32 and
    // bool at the slot's start, as the kernel's parameter reads them), tensor maps from
    // their own 128-byte aligned storage.
    constexpr size_t kInlineArgs = 32;
    std::array<uint64_t, kInlineArgs> inlineSlots{};
    std::array<void *, kInlineArgs> inlineArgs{};
    std::vector<uint64_t> moreSlots;
    std::vector<void *> moreArgs;
    uint64_t *slots = inlineSlots.data();
    void **args = inlineArgs.data();
    if (kernel.args.size() > kInlineArgs) {
      moreSlots.assign(kernel.args.size(), 0);
      moreArgs.assign(kernel.args.size(), nullptr);
      slots = moreSlots.data();
      args = moreArgs.data();
    }
    for (size_t a = 0; a < kernel.args.size(); ++a) {
      const PlanArg &arg = kernel.args[a];
      void *slot = &slots[a];
      args[a] = slot;
      switch (arg.kind) {
      case PlanArg::Kind::Dim: {
        int64_t value = dims.at(arg.name);
        std::memcpy(slot, &value, sizeof value);
        continue;
      }
      case PlanArg::Kind::Tensor: {
        void *data = tensors[arg.index]->data;
        std::memcpy(slot, &data, sizeof data);
        continue;
      }
      case PlanArg::Kind::Workspace:
        for (size_t w = 0; w < call.workspaces.size(); ++w)
          if (call.workspaces[w].workspace == &plan.workspaces[arg.index])
            std::memcpy(slot, &workspaces[w], sizeof workspaces[w]);
        continue;
      case PlanArg::Kind::TensorMap:
        args[a] = &maps[l][arg.tensorMap];
        continue;
      case PlanArg::Kind::Stride: {
        int64_t stride = tensors[arg.index]->strides[arg.axis];
        std::memcpy(slot, &stride, sizeof stride);
        continue;
      }
      case PlanArg::Kind::Scalar:
        break;
      }
      {
        size_t s = arg.index;
        double value =
            static_cast<int>(s) < scalarCount ? scalars[s] : *plan.scalars[s].defaultValue;
        switch (plan.scalars[s].dtype) {
        case FSL_F32: {
          float f = static_cast<float>(value);
          std::memcpy(slot, &f, sizeof f);
          break;
        }
        case FSL_F64:
          std::memcpy(slot, &value, sizeof value);
          break;
        case FSL_I32: {
          int32_t i = static_cast<int32_t>(value);
          std::memcpy(slot, &i, sizeof i);
          break;
        }
        case FSL_I64: {
          int64_t i = static_cast<int64_t>(value);
          std::memcpy(slot, &i, sizeof i);
          break;
        }
        case FSL_BOOL: {
          bool b = value != 0;
          std::memcpy(slot, &b, sizeof b);
          break;
        }
        default:
          freeWorkspaces();
          error = "scalar " + arg.name + ": the JIT passes f32, f64, i32, i64 and bool scalars";
          return FSL_ERROR_DTYPE;
        }
      }
    }
    void *function = loaded.functions[static_cast<size_t>(&kernel - plan.kernels.data())];
    // Programmatic dependent launch where the launcher uses it (sm_90 and later): the
    // kernel may start while the stream's previous kernel finishes, and its
    // griddepcontrol.wait holds it until that kernel's memory is visible. Clusters as the
    // launcher's cluster attribute.
    CUlaunchAttribute attributes[3]{};
    unsigned count = 0;
    // A cooperative launch without it, and a persistent grid of fewer CTAs than SMs, as the
    // launcher's (LauncherPrinter.cpp).
    if (driverApi.launchKernelEx && usesProgrammaticLaunch(plan, kernel, planned.grid[0])) {
      attributes[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attributes[count++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (planned.clustered) {
      attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attributes[count].value.clusterDim.x = static_cast<unsigned>(planned.cluster[0]);
      attributes[count].value.clusterDim.y = static_cast<unsigned>(planned.cluster[1]);
      attributes[count++].value.clusterDim.z = static_cast<unsigned>(planned.cluster[2]);
    }
    if (kernel.cooperative) { // every block resident at once: its blocks meet at a grid barrier
      attributes[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attributes[count++].value.cooperative = 1;
    }
    int result;
    bool ex = driverApi.launchKernelEx != nullptr;
    if (ex) {
      CUlaunchConfig config{};
      config.gridDimX = grids[l][0];
      config.gridDimY = grids[l][1];
      config.gridDimZ = grids[l][2];
      config.blockDimX = static_cast<unsigned>(planned.block[0]);
      config.blockDimY = static_cast<unsigned>(planned.block[1]);
      config.blockDimZ = static_cast<unsigned>(planned.block[2]);
      config.sharedMemBytes = static_cast<unsigned>(planned.shared);
      config.hStream = static_cast<CUstream>(stream);
      config.attrs = count ? attributes : nullptr;
      config.numAttrs = count;
      result = driverApi.launchKernelEx(&config, function, args, nullptr);
    } else {
      result = driverApi.launchKernel(
          function, grids[l][0], grids[l][1], grids[l][2], static_cast<unsigned>(planned.block[0]),
          static_cast<unsigned>(planned.block[1]), static_cast<unsigned>(planned.block[2]),
          static_cast<unsigned>(planned.shared), stream, args, nullptr);
    }
    if (result == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) {
      freeWorkspaces();
      error = kernel.name + ": its blocks meet at a grid barrier (grid_sync), so all " +
              std::to_string(static_cast<uint64_t>(grids[l][0]) * grids[l][1] * grids[l][2]) +
              " must be resident at once; this device holds fewer";
      return FSL_ERROR_LAUNCH;
    }
    if (result != 0) {
      freeWorkspaces();
      error = kernel.name + ": " + (ex ? "cuLaunchKernelEx" : "cuLaunchKernel") +
              " failed with CUresult " + std::to_string(result);
      return FSL_ERROR_LAUNCH;
    }
    ++stats_.launches;
  }
  freeWorkspaces();
  return FSL_OK;
}

} // namespace fsl::jit
