// ext.cpp — the compiled op path: each fusion's torch op as a boxed C++ kernel that checks
// the call, allocates the outputs and launches through libfsl.so's C API
// (fsl_jit_session_launch), with no Python between the dispatcher and the launch.
//
// fslc/_ops/build.py compiles this file into a shared library on first use and loads it
// with torch.ops.load_library; fslc/_torch.py defines each op's schema and fake
// implementation in Python, then calls fslc_ops::register_fusion once per op with a plan
// of the op (what to check and where each value goes, derived from the fusion's
// signature by fslc/_ops/plan.py) and the session and launch function of the program's
// libfsl.so. The launch function comes as an address from the library the session was
// created by, so the kernel never binds to another copy of libfsl.so.
//
// With Python's headers at hand (build.py defines FSLC_DIRECT_CALL), each op also gets a
// direct call from Python for eager calls the dispatcher would bring to the same kernel
// unchanged: the section "The direct call from Python" below.
//
// A refused call raises a c10 error whose message starts with the fslc.errors class
// name ("FslSizeError: residual: size 9 ..."): the Python side maps it back to that class,
// and a caller of torch.ops.<namespace>.<fusion> sees the built-in exception the class
// derives from (TypeError for dtypes, ValueError for sizes and layouts, RuntimeError for
// compile, launch and driver failures) with the same message.
#ifdef FSLC_DIRECT_CALL
#include <Python.h> // first, as Python asks of its extensions
#endif

#include "fsl/jit_session.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <dlfcn.h>

#ifdef FSLC_DIRECT_CALL
// Only what torch's libraries export to extensions: torch_python's tensor type objects,
// THPVariable_Wrap and error handling, ATen's and c10's thread-local state (its other
// helpers, such as check_has_torch_function, are hidden in recent versions).
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/version.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---- Errors --------------------------------------------------------------------------------

enum class Kind { Type, Value, Runtime };

[[noreturn]] void fail(const char *cls, Kind kind, const std::string &message) {
  std::string text = std::string(cls) + ": " + message;
  c10::SourceLocation where{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
  if (kind == Kind::Type)
    throw c10::TypeError(where, text);
  if (kind == Kind::Value)
    throw c10::ValueError(where, text);
  throw c10::Error(where, text);
}

// The fslc.errors class of a C API status (fsl/runtime.h) and its built-in base.
void failStatus(int status, const std::string &message) {
  switch (status) {
  case FSL_ERROR_NULL_POINTER:
    fail("FslNullPointerError", Kind::Value, message);
  case FSL_ERROR_DTYPE:
    fail("FslDtypeError", Kind::Type, message);
  case FSL_ERROR_RANK:
    fail("FslRankError", Kind::Value, message);
  case FSL_ERROR_SIZE:
    fail("FslSizeError", Kind::Value, message);
  case FSL_ERROR_LAYOUT:
    fail("FslLayoutError", Kind::Value, message);
  case FSL_ERROR_ALIGNMENT:
    fail("FslAlignmentError", Kind::Value, message);
  case FSL_ERROR_OVERLAP:
    fail("FslOverlapError", Kind::Value, message);
  case FSL_ERROR_LAUNCH:
    fail("FslLaunchError", Kind::Runtime, message);
  case FSL_ERROR_COMPILE:
    fail("FslCompileError", Kind::Runtime, message);
  case FSL_ERROR_CACHE:
    fail("FslCacheError", Kind::Runtime, message);
  case FSL_ERROR_DRIVER:
    fail("FslDriverError", Kind::Runtime, message);
  case FSL_ERROR_ARGUMENT:
    fail("FslArgumentError", Kind::Value, message);
  default:
    fail("FslError", Kind::Runtime, message);
  }
}

// ---- The CUDA driver calls around a launch ------------------------------------------------

// As fslc/_torch.py's _Driver: the tensors' device's primary context (PyTorch's) current
// for the C API, and whether the stream is capturing. The driver is the process's
// libcuda.so.1 (PyTorch's CUDA has loaded it), looked up once.
class Driver {
public:
  static Driver &get() {
    static Driver driver;
    return driver;
  }

  // Makes device `index`'s primary context current; returns the context to restore
  // afterwards, or nullptr.
  void *makeCurrent(int index) {
    if (index < 0) // CUDA tensors always have one
      fail("FslDeviceError", Kind::Value, "a CUDA device without an index");
    void *primary = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (index >= static_cast<int>(primary_.size()))
        primary_.resize(index + 1, nullptr);
      primary = primary_[index];
      if (!primary) {
        check("cuInit", cuInit_(0));
        int device = 0;
        check("cuDeviceGet", cuDeviceGet_(&device, index));
        check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain_(&primary, device));
        primary_[index] = primary;
      }
    }
    void *current = nullptr;
    check("cuCtxGetCurrent", cuCtxGetCurrent_(&current));
    if (current == primary)
      return nullptr;
    check("cuCtxSetCurrent", cuCtxSetCurrent_(primary));
    return current;
  }

  // Never throws: it runs while a refused call's exception unwinds.
  void restore(void *context) noexcept { cuCtxSetCurrent_(context); }

  bool isCapturing(void *stream) {
    int status = 0;
    check("cuStreamIsCapturing", cuStreamIsCapturing_(stream, &status));
    return status != 0; // active or invalidated
  }

private:
  Driver() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
      lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
      fail("FslDriverError", Kind::Runtime,
           std::string("cannot load the CUDA driver (libcuda.so.1): ") + dlerror());
    symbol(lib, "cuInit", cuInit_);
    symbol(lib, "cuDeviceGet", cuDeviceGet_);
    symbol(lib, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain_);
    symbol(lib, "cuCtxGetCurrent", cuCtxGetCurrent_);
    symbol(lib, "cuCtxSetCurrent", cuCtxSetCurrent_);
    symbol(lib, "cuStreamIsCapturing", cuStreamIsCapturing_);
  }

  template <typename F> static void symbol(void *lib, const char *name, F &function) {
    function = reinterpret_cast<F>(dlsym(lib, name));
    if (!function)
      fail("FslDriverError", Kind::Runtime,
           std::string("the CUDA driver (libcuda.so.1) has no ") + name);
  }

  static void check(const char *name, int result) {
    if (result != 0)
      fail("FslDriverError", Kind::Runtime,
           std::string(name) + " failed with CUresult " + std::to_string(result));
  }

  int (*cuInit_)(unsigned) = nullptr;
  int (*cuDeviceGet_)(int *, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain_)(void **, int) = nullptr;
  int (*cuCtxGetCurrent_)(void **) = nullptr;
  int (*cuCtxSetCurrent_)(void *) = nullptr;
  int (*cuStreamIsCapturing_)(void *, int *) = nullptr;
  std::mutex mutex_;
  std::vector<void *> primary_;
};

// ---- The plan of an op ---------------------------------------------------------------------

struct DtypeName {
  const char *fsl;
  fsl_dtype code;
  c10::ScalarType scalar;
};

constexpr DtypeName kDtypes[] = {
    {"bool", FSL_BOOL, c10::ScalarType::Bool},     {"i32", FSL_I32, c10::ScalarType::Int},
    {"i64", FSL_I64, c10::ScalarType::Long},       {"f16", FSL_F16, c10::ScalarType::Half},
    {"bf16", FSL_BF16, c10::ScalarType::BFloat16}, {"f32", FSL_F32, c10::ScalarType::Float},
    {"f64", FSL_F64, c10::ScalarType::Double},
};

const DtypeName &dtypeNamed(const std::string &name) {
  for (const DtypeName &d : kDtypes)
    if (name == d.fsl)
      return d;
  fail("FslArgumentError", Kind::Value, "the op plan names an unknown dtype '" + name + "'");
}

// A dtype as fslc/_torch.py names it in messages: the FSL name, else torch's ("uint8").
std::string dtypeText(c10::ScalarType scalar) {
  for (const DtypeName &d : kDtypes)
    if (d.scalar == scalar)
      return d.fsl;
  switch (scalar) {
  case c10::ScalarType::Byte:
    return "uint8";
  case c10::ScalarType::Char:
    return "int8";
  case c10::ScalarType::Short:
    return "int16";
  case c10::ScalarType::ComplexHalf:
    return "complex32";
  case c10::ScalarType::ComplexFloat:
    return "complex64";
  case c10::ScalarType::ComplexDouble:
    return "complex128";
  default: {
    std::string text = c10::toString(scalar);
    for (char &c : text)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  }
  }
}

struct Input {
  bool tensor = false;
  std::string name;
  bool inout = false;
  DtypeName dtype{};
  int64_t rank = 0;
  int slot = 0;  // the launcher's tensor index, or the scalar's index
  char kind = 0; // a scalar's schema type: 'f' float, 'i' int, 'b' bool
};

struct Dim {
  std::string name;
  int64_t extent = -1;                       // static extent, or -1: runtime
  std::vector<std::pair<int, int64_t>> axes; // (input, axis) that define and must match it
};

struct Output {
  std::string name;
  DtypeName dtype{};
  int slot = 0;
  std::vector<int> dims;
};

// What register_fusion is given (fslc/_ops/plan.py writes it): one line per item.
//   fusion NAME SOURCE...        the fusion, and the program's path (messages)
//   tensor NAME DTYPE ROLE RANK SLOT
//   scalar NAME SLOT KIND           KIND: float, int or bool (the schema's)
//   dim NAME EXTENT INPUT:AXIS...   EXTENT -1: runtime
//   out NAME DTYPE SLOT DIM...      DIM: indices of dim lines
//   specialize DIM...
//   counts TENSORS SCALARS
/// A decimal integer, the whole of `text`.
bool parseInteger(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size())
    return false;
  int64_t result = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    result = result * 10 + (text[i] - '0');
  }
  value = text[0] == '-' ? -result : result;
  return true;
}

/// The whitespace-separated words of one line of the op plan.
class Tokens {
public:
  explicit Tokens(std::string line) : line_(std::move(line)) {}
  bool word(std::string &out) {
    skipSpace();
    size_t from = at_;
    while (at_ < line_.size() && !std::isspace(static_cast<unsigned char>(line_[at_])))
      ++at_;
    out = line_.substr(from, at_ - from);
    return !out.empty();
  }
  template <typename Integer> bool integer(Integer &out) {
    size_t was = at_;
    std::string text;
    int64_t value = 0;
    if (!word(text) || !parseInteger(text, value)) {
      at_ = was;
      return false;
    }
    out = static_cast<Integer>(value);
    return true;
  }
  /// The rest of the line after one run of spaces.
  std::string rest() {
    skipSpace();
    std::string out = line_.substr(at_);
    at_ = line_.size();
    return out;
  }
  bool done() {
    skipSpace();
    return at_ == line_.size();
  }

private:
  void skipSpace() {
    while (at_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[at_])))
      ++at_;
  }
  std::string line_;
  size_t at_ = 0;
};

struct Plan {
  std::string fusion, source;
  std::vector<Input> inputs;
  std::vector<Dim> dims;
  std::vector<Output> outputs;
  std::vector<int> specialized;
  int tensorCount = 0, scalarCount = 0;

  static Plan parse(const std::string &text) {
    // Read by hand, not with iostreams: an extension compiled by another compiler than the
    // libstdc++ the process loaded crashed inside istream's number extraction (its locale
    // facets), seen with torch 2.11 on the GPU machine.
    Plan plan;
    int number = 0;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos)
        end = text.size();
      std::string line = text.substr(start, end - start);
      start = end + 1;
      ++number;
      Tokens in(line);
      std::string what;
      if (!in.word(what))
        continue;
      bool ok = true;
      if (what == "fusion") {
        ok = in.word(plan.fusion);
        plan.source = in.rest();
      } else if (what == "tensor") {
        Input input;
        std::string dtype, role;
        input.tensor = true;
        ok = in.word(input.name) && in.word(dtype) && in.word(role) && in.integer(input.rank) &&
             in.integer(input.slot);
        if (ok) {
          input.dtype = dtypeNamed(dtype);
          input.inout = role == "inout";
        }
        plan.inputs.push_back(input);
      } else if (what == "scalar") {
        Input input;
        std::string kind;
        ok = in.word(input.name) && in.integer(input.slot) && in.word(kind) &&
             (kind == "float" || kind == "int" || kind == "bool") && in.done();
        input.kind = ok ? kind[0] : 0;
        plan.inputs.push_back(input);
      } else if (what == "dim") {
        Dim dim;
        ok = in.word(dim.name) && in.integer(dim.extent);
        std::string axis;
        while (ok && in.word(axis)) {
          size_t colon = axis.find(':');
          int64_t input = 0, index = 0;
          ok = colon != std::string::npos && parseInteger(axis.substr(0, colon), input) &&
               parseInteger(axis.substr(colon + 1), index);
          if (ok)
            dim.axes.emplace_back(static_cast<int>(input), index);
        }
        plan.dims.push_back(dim);
      } else if (what == "out") {
        Output out;
        std::string dtype;
        ok = in.word(out.name) && in.word(dtype) && in.integer(out.slot);
        if (ok)
          out.dtype = dtypeNamed(dtype);
        int dim = 0;
        while (ok && in.integer(dim))
          out.dims.push_back(dim);
        ok = ok && in.done();
        plan.outputs.push_back(out);
      } else if (what == "specialize") {
        int dim = 0;
        while (in.integer(dim))
          plan.specialized.push_back(dim);
        ok = in.done();
      } else if (what == "counts") {
        ok = in.integer(plan.tensorCount) && in.integer(plan.scalarCount);
      } else {
        ok = false;
      }
      if (!ok)
        fail("FslArgumentError", Kind::Value,
             "cannot read line " + std::to_string(number) + " of the op plan: '" + line + "'");
    }
    return plan;
  }
};

// ---- The kernel of one op ------------------------------------------------------------------

using LaunchFunction = decltype(&fsl_jit_session_launch);

constexpr size_t kErrorSize = 16384;

struct OpState {
  Plan plan;
  LaunchFunction launch = nullptr;
  std::mutex mutex;
  fsl_jit_session *session = nullptr; // null once the program is closed (release)
  // (device, specialized sizes) launched outside capture: their kernels are loaded in
  // that device's context, so a call inside capture is safe (as fslc/_torch.py's _warm).
  std::set<std::vector<int64_t>> warm;
  std::vector<int64_t> lastWarm; // the last of them (an eager loop's calls: no set lookup)
};

std::string deviceText(const c10::Device &device) {
  return device.str(); // "cuda:0", as torch.device's str
}

class FusionKernel final : public c10::OperatorKernel {
public:
  explicit FusionKernel(std::shared_ptr<OpState> state) : state_(std::move(state)) {}

  void operator()(const c10::OperatorHandle &, c10::DispatchKeySet, torch::jit::Stack *stack) {
    const size_t inputCount = state_->plan.inputs.size();
    c10::SmallVector<at::Tensor, 4> outputs =
        run(*state_, torch::jit::last(*stack, inputCount).data());
    torch::jit::drop(*stack, inputCount);
    for (at::Tensor &out : outputs)
      torch::jit::push(*stack, std::move(out));
  }

  /// The op on its arguments (the schema's inputs in order): checks, allocates the
  /// outputs, launches, and returns the outputs. The dispatcher's kernel and the direct
  /// call share it.
  static c10::SmallVector<at::Tensor, 4> run(OpState &state, const c10::IValue *arguments) {
    const Plan &plan = state.plan;
    const size_t inputCount = plan.inputs.size();

    // Devices, dtypes and ranks first, then sizes, in fslc/_torch.py's _check order.
    std::optional<c10::Device> device;
    const std::string *first = nullptr;
    for (size_t i = 0; i < inputCount; ++i) {
      const Input &input = plan.inputs[i];
      if (!input.tensor)
        continue;
      const c10::IValue &value = arguments[i];
      if (!value.isTensor())
        fail("FslArgumentError", Kind::Type,
             input.name + ": expected a torch.Tensor, got " + value.tagKind());
      const at::Tensor &t = value.toTensor();
      c10::Device where = t.device();
      if (where.type() != c10::DeviceType::CUDA)
        fail("FslDeviceError", Kind::Value,
             input.name + ": a " + c10::DeviceTypeName(where.type(), /*lower_case=*/true) +
                 " tensor, expected a CUDA tensor");
      if (!device) {
        device = where;
        first = &input.name;
      } else if (where != *device) {
        fail("FslDeviceError", Kind::Value,
             input.name + ": on " + deviceText(where) + ", " + *first + " is on " +
                 deviceText(*device));
      }
      if (t.scalar_type() != input.dtype.scalar)
        fail("FslDtypeError", Kind::Type,
             input.name + ": dtype " + dtypeText(t.scalar_type()) + ", expected " +
                 input.dtype.fsl);
      if (t.dim() != input.rank)
        fail("FslRankError", Kind::Value,
             input.name + ": rank " + std::to_string(t.dim()) + ", expected " +
                 std::to_string(input.rank));
    }
    if (!device)
      fail("FslDeviceError", Kind::Value, plan.fusion + ": no input tensor gives a device");

    c10::SmallVector<int64_t, 8> sizes(plan.dims.size(), -1);
    bool empty = false;
    for (size_t d = 0; d < plan.dims.size(); ++d) {
      const Dim &dim = plan.dims[d];
      for (auto [index, axis] : dim.axes) {
        int64_t size = arguments[index].toTensor().size(axis);
        if (sizes[d] < 0 && dim.extent < 0) {
          sizes[d] = size;
          continue;
        }
        int64_t want = dim.extent >= 0 ? dim.extent : sizes[d];
        if (size != want)
          fail("FslSizeError", Kind::Value,
               plan.inputs[index].name + ": size " + std::to_string(size) + " of dimension " +
                   dim.name + ", expected " + std::to_string(want) +
                   (dim.extent >= 0 ? " (static)" : ""));
      }
      if (sizes[d] < 0 && dim.extent >= 0)
        sizes[d] = dim.extent;
      if (sizes[d] == 0)
        empty = true;
    }

    // Outputs, then the descriptors in the launcher's order, and the scalars.
    c10::SmallVector<at::Tensor, 4> outputs;
    for (const Output &out : plan.outputs) {
      c10::SmallVector<int64_t, 8> shape;
      for (int d : out.dims) {
        if (sizes[d] < 0)
          fail("FslArgumentError", Kind::Value,
               plan.fusion + ": dimension " + plan.dims[d].name + " of output " + out.name +
                   " is not the size of any input tensor");
        shape.push_back(sizes[d]);
      }
      outputs.push_back(
          at::empty(shape, at::TensorOptions().dtype(out.dtype.scalar).device(*device)));
    }
    c10::SmallVector<fsl_tensor, 8> descriptors(plan.tensorCount);
    c10::SmallVector<const fsl_tensor *, 8> pointers(plan.tensorCount);
    auto describe = [&](const at::Tensor &t, fsl_dtype dtype, int slot) {
      fsl_tensor &d = descriptors[slot];
      d.data = t.data_ptr();
      d.dtype = dtype;
      d.rank = static_cast<int32_t>(t.dim());
      for (int64_t i = 0; i < t.dim() && i < FSL_MAX_RANK; ++i) {
        d.sizes[i] = t.size(i);
        d.strides[i] = t.stride(i);
      }
      pointers[slot] = &d;
    };
    c10::SmallVector<double, 8> scalars(plan.scalarCount, 0.0);
    for (size_t i = 0; i < inputCount; ++i) {
      const Input &input = plan.inputs[i];
      const c10::IValue &value = arguments[i];
      if (input.tensor)
        describe(value.toTensor(), input.dtype.code, input.slot);
      else if (value.isDouble())
        scalars[input.slot] = value.toDouble();
      else if (value.isInt())
        scalars[input.slot] = static_cast<double>(value.toInt());
      else if (value.isBool())
        scalars[input.slot] = value.toBool() ? 1.0 : 0.0;
      else
        fail("FslArgumentError", Kind::Type,
             input.name + ": expected a number, got " + value.tagKind());
    }
    for (size_t o = 0; o < outputs.size(); ++o)
      describe(outputs[o], plan.outputs[o].dtype.code, plan.outputs[o].slot);

    launch(state, *device, sizes, empty, descriptors.size() ? pointers.data() : nullptr,
           scalars.size() ? scalars.data() : nullptr);

    // In place: what the ADInplaceOrView kernel of torch.library.custom_op does.
    for (size_t i = 0; i < inputCount; ++i)
      if (plan.inputs[i].inout)
        arguments[i].toTensor().unsafeGetTensorImpl()->bump_version();
    return outputs;
  }

private:
  static void launch(OpState &state, const c10::Device &device,
                     const c10::SmallVector<int64_t, 8> &sizes, bool empty,
                     const fsl_tensor *const *tensors, const double *scalars) {
    const Plan &plan = state.plan;
    const int index = device.index();
    Driver &driver = Driver::get();
    void *previous = driver.makeCurrent(index);
    struct Restore {
      Driver &driver;
      void *context;
      ~Restore() {
        if (context)
          driver.restore(context);
      }
    } restore{driver, previous};

    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(index).stream();
    c10::SmallVector<int64_t, 8> key;
    key.push_back(index);
    for (int d : plan.specialized)
      key.push_back(sizes[d]);
    auto isLastWarm = [&] {
      return std::equal(key.begin(), key.end(), state.lastWarm.begin(), state.lastWarm.end());
    };

    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.session)
      fail("FslError", Kind::Runtime, plan.fusion + ": the program " + plan.source + " is closed");
    // A warm key launches whether the stream is capturing or not: only a call that may
    // load kernels asks the driver (an eager call's host time).
    bool warm =
        !empty && (isLastWarm() || state.warm.count(std::vector<int64_t>(key.begin(), key.end())));
    bool capturing = !warm && driver.isCapturing(stream);
    if (capturing && !empty) {
      std::string at;
      for (size_t i = 0; i < plan.specialized.size(); ++i)
        at += (i ? ", " : "") + plan.dims[plan.specialized[i]].name + " = " +
              std::to_string(key[i + 1]);
      fail("FslCaptureError", Kind::Runtime,
           plan.fusion + ": first call at " + (at.empty() ? "any size" : at) +
               " on cuda:" + std::to_string(index) +
               " inside CUDA-graph capture: the JIT compiles and loads its kernels on a first "
               "call, which capture cannot hold; call it once at these sizes before capturing");
    }
    char error[kErrorSize];
    error[0] = '\0';
    fsl_status status = state.launch(state.session, plan.fusion.c_str(), tensors, plan.tensorCount,
                                     scalars, plan.scalarCount, stream, error, sizeof error);
    if (status != FSL_OK)
      failStatus(status, error);
    if ((warm || !capturing) && !empty && !isLastWarm()) {
      state.lastWarm.assign(key.begin(), key.end());
      state.warm.insert(state.lastWarm);
    }
  }

  std::shared_ptr<OpState> state_;
};

// ---- Registration --------------------------------------------------------------------------

struct Registered {
  std::shared_ptr<OpState> state;
  std::unique_ptr<torch::Library> library;
};

std::mutex registryMutex;
std::vector<Registered> &registry() {
  static auto *ops = new std::vector<Registered>(); // never destroyed: kernels stay valid
  return *ops;
}

// Registers the CUDA kernel (and a CPU one, which refuses CPU tensors with the CUDA
// kernel's message) of the op `ns::name`, whose schema the caller has defined; returns a
// handle for release().
int64_t registerFusion(std::string ns, std::string name, std::string plan, int64_t launch,
                       int64_t session) {
  auto state = std::make_shared<OpState>();
  state->plan = Plan::parse(plan);
  state->launch = reinterpret_cast<LaunchFunction>(static_cast<uintptr_t>(launch));
  state->session = reinterpret_cast<fsl_jit_session *>(static_cast<uintptr_t>(session));
  if (!state->launch || !state->session)
    fail("FslArgumentError", Kind::Value, name + ": a null session or launch function");
  // `{}`: no dispatch key of the library's own (c10::optional or std::optional, by version).
  std::unique_ptr<torch::Library> library(
      new torch::Library(torch::Library::IMPL, ns, {}, __FILE__, static_cast<uint32_t>(__LINE__)));
  for (c10::DispatchKey key : {c10::DispatchKey::CUDA, c10::DispatchKey::CPU})
    library->impl(name.c_str(), torch::dispatch(key, torch::CppFunction::makeFromBoxedFunctor(
                                                         std::make_unique<FusionKernel>(state))));
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().push_back({state, std::move(library)});
  return static_cast<int64_t>(registry().size() - 1);
}

// The program was closed: its session is gone, and the op refuses every later call.
void release(int64_t handle) {
  std::shared_ptr<OpState> state;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    if (handle < 0 || handle >= static_cast<int64_t>(registry().size()))
      fail("FslArgumentError", Kind::Value, "no op of handle " + std::to_string(handle));
    state = registry()[handle].state;
  }
  std::lock_guard<std::mutex> lock(state->mutex);
  state->session = nullptr;
}

#ifdef FSLC_DIRECT_CALL
// ---- The direct call from Python -----------------------------------------------------------
//
// `prog.f(x, ...)` in eager mode calls this first (fslc/_torch.py's generated __call__): the
// op's kernel without the dispatcher's boxed call from Python, which matches the
// arguments against the schema into a stack and costs about 1 µs of a 6-7 µs call
// (docs/performance.md). It runs only where the dispatcher would bring the same arguments
// to the same kernel: plain strided CUDA tensors (no __torch_function__ or
// __torch_dispatch__ subclass, no functorch or functionalization wrapper, no conjugate or
// negative view), no torch-function or dispatch mode, no dispatch key a context turns on,
// no RecordFunction callback (a profiler, which names the op's call), no tensor autograd
// would record (grad mode on and requires_grad), scalars of the schema's exact Python
// types. Anything else returns NotImplemented, and the caller goes through the dispatcher
// as before. A refusal raises what the dispatcher's path raises: the same class and
// message.

constexpr const char *kCapsuleName = "fslc_ops.OpState";
std::atomic<int64_t> directCalls{0};

/// Python's thread state saved while the kernel runs (it may compile for a while).
class GilReleased {
public:
  GilReleased() : saved_(PyEval_SaveThread()) {}
  ~GilReleased() { PyEval_RestoreThread(saved_); }
  GilReleased(const GilReleased &) = delete;
  GilReleased &operator=(const GilReleased &) = delete;

private:
  PyThreadState *saved_;
};

/// Whether a torch-function mode is on (the dispatcher's path calls it first).
bool torchFunctionModeOn() {
#if TORCH_VERSION_MAJOR >= 2
  return at::impl::torch_function_mode_enabled();
#else
  return at::impl::function_mode_enabled();
#endif
}

/// The dispatch keys of a plain dense tensor of `device`'s type (its backend, autograd,
/// ADInplaceOrView and autocast keys): what `at::empty` gives, asked once a device type
/// and read without a lock on every call after (two threads asking first store the same).
c10::DispatchKeySet plainKeys(c10::DeviceType device) {
  static std::atomic<uint64_t>
      known[static_cast<size_t>(c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES)];
  std::atomic<uint64_t> &slot = known[static_cast<size_t>(device)];
  uint64_t raw = slot.load(std::memory_order_acquire);
  if (raw == 0) {
    raw = at::empty({0}, at::TensorOptions().device(device)).key_set().raw_repr();
    slot.store(raw, std::memory_order_release);
  }
  return c10::DispatchKeySet(c10::DispatchKeySet::RAW, raw);
}

/// A tensor argument the direct call takes as the dispatcher would, or null: a
/// torch.Tensor or torch.nn.Parameter itself (a subclass may have __torch_function__)
/// whose dispatch keys are a plain dense tensor's, or fewer (an inference tensor's): no
/// zero tensor, quantized, sparse, nested, conjugate or negative view, functorch or
/// functionalization wrapper, Python (fake) tensor.
const at::Tensor *plainTensor(PyObject *object, bool gradMode) {
  if (!THPVariable_CheckExact(object))
    return nullptr;
  const at::Tensor &t = THPVariable_Unpack(object);
  if (!t.defined() || at::isTensorSubclassLike(t) || t.layout() != c10::kStrided ||
      (gradMode && t.requires_grad()))
    return nullptr;
  if (t.device().type() != c10::DeviceType::CUDA)
    return nullptr;
  // A subset by union: DispatchKeySet's difference keeps the backend bits.
  const c10::DispatchKeySet plain = plainKeys(t.device().type());
  if ((t.key_set() | plain) != plain)
    return nullptr;
  return &t;
}

/// A new reference released unless handed out (a tuple being filled when a wrap throws).
class OwnedObject {
public:
  explicit OwnedObject(PyObject *object) : object_(object) {}
  ~OwnedObject() { Py_XDECREF(object_); }
  OwnedObject(const OwnedObject &) = delete;
  OwnedObject &operator=(const OwnedObject &) = delete;
  PyObject *get() const { return object_; }
  PyObject *release() {
    PyObject *out = object_;
    object_ = nullptr;
    return out;
  }

private:
  PyObject *object_;
};

/// A scalar argument of the schema's exact Python type, as the dispatcher converts it.
bool plainScalar(PyObject *object, char kind, c10::IValue &out) {
  if (kind == 'b') {
    if (!PyBool_Check(object))
      return false;
    out = c10::IValue(object == Py_True);
    return true;
  }
  if (kind == 'f' && PyFloat_CheckExact(object)) {
    out = c10::IValue(PyFloat_AS_DOUBLE(object));
    return true;
  }
  if (!PyLong_CheckExact(object))
    return false;
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
  if (overflow || (value == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = kind == 'f' ? c10::IValue(static_cast<double>(value))
                    : c10::IValue(static_cast<int64_t>(value));
  return true;
}

// Errors are torch's own (HANDLE_TH_ERRORS): the classes and messages the dispatcher's
// path raises, torch.cuda.OutOfMemoryError included, C++ warnings as Python warnings.
PyObject *directCall(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  auto *state = static_cast<OpState *>(PyCapsule_GetPointer(self, kCapsuleName));
  if (!state)
    return nullptr;
  const Plan &plan = state->plan;
  if (static_cast<size_t>(nargs) != plan.inputs.size() ||
      (c10::impl::tls_local_dispatch_key_set().included_ | c10::default_included_set) !=
          c10::default_included_set ||
      at::hasCallbacks() || torchFunctionModeOn())
    Py_RETURN_NOTIMPLEMENTED;
  const bool gradMode = at::GradMode::is_enabled();
  c10::SmallVector<c10::IValue, 8> arguments(plan.inputs.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const Input &input = plan.inputs[i];
    if (input.tensor) {
      const at::Tensor *t = plainTensor(args[i], gradMode);
      if (!t)
        Py_RETURN_NOTIMPLEMENTED;
      arguments[i] = *t;
    } else if (!plainScalar(args[i], input.kind, arguments[i])) {
      Py_RETURN_NOTIMPLEMENTED;
    }
  }
  c10::SmallVector<at::Tensor, 4> outputs;
  {
    GilReleased released;
    outputs = FusionKernel::run(*state, arguments.data());
  }
  directCalls.fetch_add(1, std::memory_order_relaxed);
  if (outputs.empty())
    Py_RETURN_NONE;
  if (outputs.size() == 1)
    return THPVariable_Wrap(std::move(outputs[0]));
  OwnedObject tuple(PyTuple_New(static_cast<Py_ssize_t>(outputs.size())));
  if (!tuple.get())
    return nullptr;
  for (size_t o = 0; o < outputs.size(); ++o) {
    PyObject *wrapped = THPVariable_Wrap(std::move(outputs[o]));
    if (!wrapped)
      return nullptr;
    PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(o), wrapped);
  }
  return tuple.release();
  END_HANDLE_TH_ERRORS
}

PyMethodDef directCallMethod = {
    "fslc_direct_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(directCall)),
    METH_FASTCALL,
    "The op's kernel called from Python without the dispatcher, or NotImplemented where "
    "the dispatcher must take the call."};
#endif

} // namespace

#ifdef FSLC_DIRECT_CALL
/// The direct call of the op registered as `handle` (a new reference; with the GIL held:
/// fslc/_ops/build.py calls it through ctypes.PyDLL). Null with a Python error set for an
/// unknown handle.
extern "C" __attribute__((visibility("default"))) PyObject *fslc_ops_direct_call(int64_t handle) {
  OpState *state = nullptr;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    if (handle >= 0 && handle < static_cast<int64_t>(registry().size()))
      state = registry()[handle].state.get(); // registered ops live as long as the process
  }
  if (!state) {
    PyErr_Format(PyExc_ValueError, "fslc_ops: no op of handle %lld",
                 static_cast<long long>(handle));
    return nullptr;
  }
  PyObject *capsule = PyCapsule_New(state, kCapsuleName, nullptr);
  if (!capsule)
    return nullptr;
  PyObject *call = PyCFunction_NewEx(&directCallMethod, capsule, nullptr);
  Py_DECREF(capsule);
  return call;
}

/// How many calls the direct calls of this process have launched (tests, benchmarks).
extern "C" __attribute__((visibility("default"))) int64_t fslc_ops_direct_calls() {
  return directCalls.load(std::memory_order_relaxed);
}
#endif

TORCH_LIBRARY(fslc_ops, m) {
  m.def("register_fusion(str ns, str name, str plan, int launch, int session) -> int",
        &registerFusion);
  m.def("release(int handle) -> ()", &release);
}
