// session.cpp — the specializing JIT's core (session.h).
#include "session.h"

#include "fsl/jit.h"

#include <cuda.h> // types only (CUlaunchConfig): the driver is loaded at run time
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

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
  std::once_flag once;
  std::string why;
  CtxGetCurrent ctxGetCurrent = nullptr;
  CtxGetDevice ctxGetDevice = nullptr;
  DeviceGetAttribute deviceGetAttribute = nullptr;
  FuncSetAttribute funcSetAttribute = nullptr;
  LaunchKernel launchKernel = nullptr;
  /// CUDA 12's launch with attributes; null on an older driver (then no PDL).
  LaunchKernelEx launchKernelEx = nullptr;

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
      if (!ctxGetCurrent || !ctxGetDevice || !deviceGetAttribute || !funcSetAttribute ||
          !launchKernel)
        why = "the CUDA driver lacks cuCtxGetCurrent, cuCtxGetDevice, cuDeviceGetAttribute, "
              "cuFuncSetAttribute or cuLaunchKernel";
    });
    error = why;
    return why.empty();
  }
};
DriverApi driverApi;

constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr int kMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int64_t kDefaultSharedBytes = 48 * 1024;

/// Whether kernels compiled for `arch` ("sm_90a") have programmatic dependent launch.
bool pdlArch(const std::string &arch) {
  int major = 0;
  return arch.rfind("sm_", 0) == 0 && std::sscanf(arch.c_str() + 3, "%d", &major) == 1 &&
         major >= 90;
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
  };
  std::map<void *, Loaded> loaded; // by CUcontext
  ~Entry() { fsl_jit_free(&binary); }
};

Session::~Session() = default;

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
  // The dimensions to specialize on, by the policy, in the fusion's order.
  std::vector<std::pair<std::string, int64_t>> chosen;
  for (const auto &[dim, extent] : signature.dims) {
    if (extent || policy_ == FSL_SPECIALIZE_NONE)
      continue;
    bool reduced = false;
    for (const std::string &r : signature.reduced)
      reduced |= r == dim;
    if (policy_ == FSL_SPECIALIZE_ALL || reduced)
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
  if (fsl_status status = specializer_(fusion, chosen, specialized, error); status != FSL_OK)
    return status;
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
  // follow with the specialized plan, in the launcher's order.
  std::map<std::string, int64_t> dims;
  bool empty = false;
  if (fsl_status status = checkCall(*signature->second, tensors, tensorCount, scalarCount,
                                    /*checkData=*/false, dims, empty, error);
      status != FSL_OK)
    return refuse(status);
  if (empty)
    return FSL_OK; // nothing to do, as the launcher: no kernel is specialized either
  std::string arch = arch_;
  if (arch.empty() && launch) {
    if (fsl_status status = deviceArch(arch, error); status != FSL_OK)
      return refuse(status);
  } else if (arch.empty()) {
    arch = targetArch_;
  }
  Entry *entry = nullptr;
  bool memoryHit = false;
  if (fsl_status status = entryFor(fusion, *signature->second, dims, arch, entry, memoryHit, error);
      status != FSL_OK)
    return refuse(status);
  stats_.memory_hits += memoryHit;
  // The specialized plan's own checks (its static extents), then its launches.
  if (fsl_status status =
          checkCall(*entry->plan, tensors, tensorCount, scalarCount, checkData, dims, empty, error);
      status != FSL_OK)
    return refuse(status);
  std::vector<PlannedLaunch> launches;
  if (fsl_status status = planLaunches(*entry->plan, dims, launches, error); status != FSL_OK)
    return refuse(status);
  if (launches.size() > FSL_JIT_MAX_LAUNCHES) {
    error = entry->name + ": more than " + std::to_string(FSL_JIT_MAX_LAUNCHES) + " launches";
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
      }
      info->launches[i].shared_bytes = launches[i].shared;
    }
  }
  if (!launch)
    return FSL_OK;

  // The module, once per context; its functions by the plan's kernel names.
  if (!driverApi.load(error))
    return refuse(FSL_ERROR_DRIVER);
  void *context = nullptr;
  if (driverApi.ctxGetCurrent(&context) != 0 || !context) {
    error = "no current CUDA context (call cudaFree(0) or cuCtxSetCurrent first)";
    return refuse(FSL_ERROR_DRIVER);
  }
  Entry::Loaded &loaded = entry->loaded[context];
  char message[1024] = "";
  if (!loaded.module) {
    if (fsl_jit_load(&entry->binary, &loaded.module, message, sizeof message) != FSL_OK) {
      entry->loaded.erase(context);
      error = entry->name + ": " + message;
      return refuse(FSL_ERROR_DRIVER);
    }
    for (const PlanKernel &kernel : entry->plan->kernels) {
      void *function = nullptr;
      if (fsl_jit_function(loaded.module, kernel.name.c_str(), &function, message,
                           sizeof message) != FSL_OK) {
        error = entry->name + ": " + message;
        return refuse(FSL_ERROR_DRIVER);
      }
      loaded.functions.push_back(function);
    }
  }
  // Arguments: every value in an 8-byte slot (pointers, int64, double; float, int32 and
  // bool at the slot's start, as the kernel's parameter reads them).
  const LaunchPlan &plan = *entry->plan;
  for (const PlannedLaunch &planned : launches) {
    const PlanKernel &kernel = *planned.kernel;
    std::vector<uint64_t> slots(kernel.args.size());
    std::vector<void *> args(kernel.args.size());
    for (size_t a = 0; a < kernel.args.size(); ++a) {
      const PlanArg &arg = kernel.args[a];
      void *slot = &slots[a];
      args[a] = slot;
      if (arg.kind == PlanArg::Kind::Dim) {
        int64_t value = dims.at(arg.name);
        std::memcpy(slot, &value, sizeof value);
        continue;
      }
      if (arg.kind == PlanArg::Kind::Tensor) {
        for (size_t t = 0; t < plan.tensors.size(); ++t)
          if (plan.tensors[t].name == arg.name) {
            void *data = tensors[t]->data;
            std::memcpy(slot, &data, sizeof data);
          }
        continue;
      }
      for (size_t s = 0; s < plan.scalars.size(); ++s) {
        if (plan.scalars[s].name != arg.name)
          continue;
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
          error = "scalar " + arg.name + ": the JIT passes f32, f64, i32, i64 and bool scalars";
          return refuse(FSL_ERROR_DTYPE);
        }
      }
    }
    size_t index = static_cast<size_t>(&kernel - plan.kernels.data());
    void *function = loaded.functions[index];
    if (planned.shared > kDefaultSharedBytes &&
        driverApi.funcSetAttribute(function, kMaxDynamicSharedBytes,
                                   static_cast<int>(planned.shared)) != 0) {
      error = kernel.name + ": cannot allow " + std::to_string(planned.shared) +
              " bytes of dynamic shared memory";
      return refuse(FSL_ERROR_LAUNCH);
    }
    // On sm_90 and later, programmatic dependent launch, as the ahead-of-time launcher
    // does: the kernel may start while the stream's previous kernel finishes, and its
    // griddepcontrol.wait holds it until that kernel's memory is visible.
    bool pdl = driverApi.launchKernelEx && pdlArch(arch);
    int result;
    if (pdl) {
      CUlaunchAttribute attribute{};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{};
      config.gridDimX = static_cast<unsigned>(planned.grid[0]);
      config.gridDimY = static_cast<unsigned>(planned.grid[1]);
      config.gridDimZ = static_cast<unsigned>(planned.grid[2]);
      config.blockDimX = static_cast<unsigned>(planned.block[0]);
      config.blockDimY = static_cast<unsigned>(planned.block[1]);
      config.blockDimZ = static_cast<unsigned>(planned.block[2]);
      config.sharedMemBytes = static_cast<unsigned>(planned.shared);
      config.hStream = static_cast<CUstream>(stream);
      config.attrs = &attribute;
      config.numAttrs = 1;
      result = driverApi.launchKernelEx(&config, function, args.data(), nullptr);
    } else {
      result = driverApi.launchKernel(
          function, static_cast<unsigned>(planned.grid[0]), static_cast<unsigned>(planned.grid[1]),
          static_cast<unsigned>(planned.grid[2]), static_cast<unsigned>(planned.block[0]),
          static_cast<unsigned>(planned.block[1]), static_cast<unsigned>(planned.block[2]),
          static_cast<unsigned>(planned.shared), stream, args.data(), nullptr);
    }
    if (result != 0) {
      error = kernel.name + ": " + (pdl ? "cuLaunchKernelEx" : "cuLaunchKernel") +
              " failed with CUresult " + std::to_string(result);
      return refuse(FSL_ERROR_LAUNCH);
    }
    ++stats_.launches;
  }
  return FSL_OK;
}

} // namespace fsl::jit
