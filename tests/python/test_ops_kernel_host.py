"""The compiled op path's C++ kernel (python/fslc/_ops/ext.cpp) without a GPU, on CPU torch.

usage: python3 tests/python/test_ops_kernel_host.py LIBFSL SOURCE_DIR WORK_DIR

Needs an interpreter with torch (Debian: python3-torch for /usr/bin/python3, with
libtorch-dev's headers) and a C++ compiler; exits 77 (skipped) without them.

The kernel is built as fslc/_ops/build.py builds it, with three changes that let it run on
the host: CPU tensors stand for CUDA ones (its device check and device index are rewritten
in a copy of ext.cpp), c10::cuda's current stream is a stand-in (CPU torch has no c10_cuda),
and libcuda.so.1 is a stand-in whose stream reports capture when $FAKE_CAPTURING is 1. Each
op is registered as fslc/_torch.py registers it, with a stand-in for fsl_jit_session_launch
that records what it is given and returns $FAKE_STATUS with $FAKE_MESSAGE. Checked: the
descriptors in the launcher's order (sizes, strides, dtypes), the scalars with their
defaults and keywords, the outputs' shapes, the version counter of an inout tensor, the
refusals with the messages and classes of the ctypes path (dtype, rank, sizes, static
sizes), a C API status mapped to its class, the capture rule (a first call at new sizes
refused, a warm one and an empty one not), a released (closed) program, a call of
torch.ops directly raising the built-in class with the class name in its message, and an
op the extension refuses (the ctypes path with a warning; FslExtensionError when forced).
"""

import ctypes
import os
import re
import subprocess
import sys
import types
import unittest
import warnings

ROOT, WORK = (os.path.abspath(a) for a in sys.argv[2:4])
LIBRARY = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(ROOT, "python"))
try:
    import torch
    from torch.utils import cpp_extension
except ImportError as error:
    print("skipped: no torch for %s (%s)" % (sys.executable, error))
    sys.exit(77)

import fslc  # noqa: E402
from fslc import _torch  # noqa: E402
from fslc._ops import build  # noqa: E402

NORMS = os.path.join(ROOT, "stdlib", "std", "norms.fsl")

# What the copy of ext.cpp changes, each found exactly once.
HOST_EDITS = [
    ("if (where.type() != c10::DeviceType::CUDA)", "if (where.type() != c10::DeviceType::CPU)"),
    ("const int index = device.index();", "const int index = device.index() < 0 ? 0 : device.index();"),
    ("if (t.device().type() != c10::DeviceType::CUDA)\n    return nullptr;",
     "if (t.device().type() != c10::DeviceType::CPU)\n    return nullptr;"),
]

STREAM_STUB = r"""
#include <c10/cuda/CUDAStream.h>
namespace c10 { namespace cuda {
cudaStream_t CUDAStream::stream() const { return reinterpret_cast<cudaStream_t>(0x5150); }
CUDAStream getCurrentCUDAStream(DeviceIndex) {
  return CUDAStream(CUDAStream::UNCHECKED,
                    c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::CUDA, 0), 0));
}
}}
"""

DRIVER_STUB = r"""
#include <stdlib.h>
static void *current;
int cuInit(unsigned flags) { return 0; }
int cuDeviceGet(int *device, int index) { *device = index; return 0; }
int cuDevicePrimaryCtxRetain(void **context, int device) { *context = (void *)(unsigned long)(0x1000 + device); return 0; }
int cuCtxGetCurrent(void **context) { *context = current; return 0; }
int cuCtxSetCurrent(void *context) { current = context; return 0; }
int cuStreamIsCapturing(void *stream, int *status) {
  const char *e = getenv("FAKE_CAPTURING");
  *status = e && *e == '1';
  return 0;
}
"""

LAUNCH_STUB = r"""
#include "fsl/jit_session.h"
#include <stdio.h>
#include <stdlib.h>
static char last[8192];
const char *fake_last(void) { return last; }
fsl_status fake_launch(fsl_jit_session *session, const char *fusion, const fsl_tensor *const *t,
                       int n, const double *scalars, int ns, cudaStream_t stream, char *error,
                       size_t size) {
  int o = snprintf(last, sizeof last, "%s stream=%p", fusion, (void *)stream);
  for (int i = 0; i < n; ++i) {
    o += snprintf(last + o, sizeof last - o, " [%d", (int)t[i]->dtype);
    for (int d = 0; d < t[i]->rank; ++d)
      o += snprintf(last + o, sizeof last - o, " %ldx%ld", (long)t[i]->sizes[d], (long)t[i]->strides[d]);
    o += snprintf(last + o, sizeof last - o, "%s]", t[i]->data ? "" : " null");
  }
  for (int i = 0; i < ns; ++i)
    o += snprintf(last + o, sizeof last - o, " %g", scalars[i]);
  const char *status = getenv("FAKE_STATUS");
  if (status && atoi(status)) {
    snprintf(error, size, "%s", getenv("FAKE_MESSAGE"));
    return (fsl_status)atoi(status);
  }
  return FSL_OK;
}
"""


def compile_or_skip(command, what):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print("building %s failed:\n%s\n%s" % (what, " ".join(command), result.stdout))
        sys.exit(1)


def torch_includes():
    """torch's headers: cpp_extension's paths, else Debian's /usr/include (libtorch-dev)."""
    dirs = [d for d in cpp_extension.include_paths() if os.path.isfile(os.path.join(d, "torch", "library.h"))]
    if dirs:
        return list(cpp_extension.include_paths())
    if os.path.isfile("/usr/include/torch/library.h"):
        return ["/usr/include/torch/csrc/api/include"]
    print("skipped: no torch headers (torch/library.h) for torch %s" % torch.__version__)
    sys.exit(77)


def build_host_kernel():
    os.makedirs(WORK, exist_ok=True)
    try:
        cxx = build.compiler()
        cuda = build.cuda_include_dir(torch)
    except build.Unavailable as why:
        print("skipped: %s" % why.reason)
        sys.exit(77)
    with open(build.SOURCE) as f:
        source = f.read()
    for old, new in HOST_EDITS:
        if source.count(old) != 1:
            print("ext.cpp no longer has `%s` once: update HOST_EDITS" % old)
            sys.exit(1)
        source = source.replace(old, new)
    paths = {}
    for name, text in (("ext_host.cpp", source), ("stream_stub.cpp", STREAM_STUB),
                       ("driver_stub.c", DRIVER_STUB), ("launch_stub.c", LAUNCH_STUB)):
        paths[name] = os.path.join(WORK, name)
        with open(paths[name], "w") as f:
            f.write(text)
    # CPU builds of torch lack c10/cuda's generated macros header: an empty one stands in.
    macros = os.path.join(WORK, "include", "c10", "cuda", "impl", "cuda_cmake_macros.h")
    os.makedirs(os.path.dirname(macros), exist_ok=True)
    open(macros, "w").close()
    includes = build.fsl_include_dirs() + [os.path.join(WORK, "include")] + torch_includes() + [cuda]
    flags = ["-std=c++17", "-O1", "-fPIC", "-shared", "-D_GLIBCXX_USE_CXX11_ABI=%d" % build.cxx11_abi(torch)]
    flags += [a for d in includes for a in ("-I", d)]
    python = build.python_include_dir()
    direct = ["-DFSLC_DIRECT_CALL", "-I", python] if python else []
    libdirs = [a for d in cpp_extension.library_paths() for a in ("-L", d, "-Wl,-rpath," + d)]
    kernel = os.path.join(WORK, "fslc_ops_host.so")
    compile_or_skip(list(cxx) + flags + direct + [paths["ext_host.cpp"], paths["stream_stub.cpp"], "-o", kernel]
                    + libdirs + ["-lc10", "-ltorch_cpu", "-ltorch"] + (["-ltorch_python"] if python else [])
                    + ["-ldl"], "the kernel")
    driver = os.path.join(WORK, "libcuda.so.1")
    compile_or_skip(["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", paths["driver_stub.c"], "-o", driver],
                    "the driver stand-in")
    launch = os.path.join(WORK, "launch_stub.so")
    compile_or_skip(["cc", "-shared", "-fPIC"] + [a for d in build.fsl_include_dirs() + [cuda] for a in ("-I", d)]
                    + [paths["launch_stub.c"], "-o", launch], "the launch stand-in")
    return kernel, driver, launch


KERNEL, DRIVER, LAUNCH = build_host_kernel()
ctypes.CDLL(DRIVER, mode=ctypes.RTLD_GLOBAL)  # the kernel's dlopen("libcuda.so.1") finds it
torch.ops.load_library(KERNEL)
STUB = ctypes.CDLL(LAUNCH)
STUB.fake_last.restype = ctypes.c_char_p
build._status = {"path": "compiled", "library": KERNEL, "reason": None, "detail": ""}

# Older torch (Debian's 1.13) lacks what 2.x has: FRAGMENT libraries and register_fake. The
# fake implementation is not what this test is about (tests/gpu/python_test.py has it).
if not hasattr(torch.library, "register_fake"):
    _libraries = {}
    _Library = torch.library.Library

    def _fragment(namespace, kind):
        if namespace not in _libraries:
            _libraries[namespace] = _Library(namespace, "DEF")
        return _libraries[namespace]

    torch.library.Library = _fragment
    _torch._register_fake = lambda qualname, fake, lib: None


def load(namespace, **options):
    prog = fslc.load(NORMS, arch="sm_90a", namespace=namespace, library=LIBRARY,
                     cache_dir=os.path.join(WORK, "jit"), torch_ops=False, ops="compiled", **options)
    real = prog._lib
    prog._lib = types.SimpleNamespace(fsl_jit_session_launch=STUB.fake_launch)
    prog._register_torch()
    prog._lib = real
    return prog


def launched():
    return STUB.fake_last().decode()


def bf16(*shape):
    return torch.randn(*shape).to(torch.bfloat16)


class KernelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prog = load("fsl_host", runtime_dims="H,S")

    def setUp(self):
        for name in ("FAKE_STATUS", "FAKE_MESSAGE", "FAKE_CAPTURING"):
            os.environ.pop(name, None)

    def refused(self, cls, message, call):
        with self.assertRaises(cls) as raised:
            call()
        self.assertEqual(str(raised.exception), message)
        return raised.exception

    def test_paths(self):
        self.assertEqual(set(self.prog.op_paths.values()), {"compiled"})

    def test_launch(self):
        x, res, w = bf16(3, 8), bf16(3, 8), bf16(8)
        version = res._version
        y = self.prog.rms_norm_add(x, res, w)
        self.assertEqual((tuple(y.shape), y.dtype), ((3, 8), torch.bfloat16))
        # x, residual, weight, y: bf16 (4), sizes x strides; eps's default.
        self.assertEqual(launched(), "rms_norm_add stream=0x5150 [4 3x8 8x1] [4 3x8 8x1] [4 8x1] [4 3x8 8x1] 1e-06")
        self.assertGreater(res._version, version)
        self.prog.rms_norm_add(x, res, w, eps=0.5)
        self.assertTrue(launched().endswith("] 0.5"), launched())
        self.prog.rms_norm_add.op(x, res, w, 0.25)
        self.assertTrue(launched().endswith("] 0.25"), launched())
        y = self.prog.layer_norm(bf16(2, 16), bf16(16), bf16(16))
        self.assertEqual(launched(), "layer_norm stream=0x5150 [4 2x16 16x1] [4 16x1] [4 16x1] [4 2x16 16x1] 1e-05")
        y = self.prog.softmax(bf16(5, 32))
        self.assertEqual((tuple(y.shape), launched()), ((5, 32), "softmax stream=0x5150 [4 5x32 32x1] [4 5x32 32x1]"))

    def test_generated_call(self):
        # Each op's fusion calls its op through a __call__ generated from the signature
        # (fslc/_torch.py): the parameters by name, the schema's defaults; a value that is
        # not a tensor is the op schema's error, as through the generic call.
        f = self.prog.rms_norm_add
        self.assertIsNot(type(f).__call__, fslc._program.Fusion.__call__)
        self.assertIsInstance(f, fslc._program.Fusion)
        code = type(f).__call__.__code__
        self.assertEqual(code.co_varnames[:code.co_argcount], ("self", "x", "residual", "weight", "eps"))
        x, res, w = bf16(3, 8), bf16(3, 8), bf16(8)
        f(weight=w, residual=res, x=x)
        self.assertEqual(launched(), "rms_norm_add stream=0x5150 [4 3x8 8x1] [4 3x8 8x1] [4 8x1] [4 3x8 8x1] 1e-06")
        f(x, res, w, 0.125)
        self.assertTrue(launched().endswith("] 0.125"), launched())
        self.prog._register_torch()  # again: one generated class, over Fusion itself
        self.assertIs(type(self.prog.rms_norm_add).__bases__[0], fslc._program.Fusion)
        self.prog.rms_norm_add(x, res, w)
        self.assertTrue(launched().endswith("] 1e-06"), launched())
        with self.assertRaisesRegex(RuntimeError, "Expected a value of type 'Tensor' for argument 'x'"):
            self.prog.softmax(3)  # the op's schema refuses it, as through the generic call
        with self.assertRaises(TypeError):
            f(x, res)  # weight missing: Python's own message
        # Names a generated parameter list cannot take keep the generic call; names that
        # are Python's builtins and the generated code's locals do not get in its way.
        text = ("fusion scale_kw(lambda: bf16[T, H], TypeError: f32 = 2.0) -> (y: bf16[T, H]) {\n"
                "    y = bf16(f32(lambda) * TypeError);\n}\n"
                "fusion scale_named(TypeError: bf16[T, H], error: f32 = 2.0) -> (y: bf16[T, H]) {\n"
                "    y = bf16(f32(TypeError) * error);\n}\n")
        prog = fslc.load_text(os.path.join(WORK, "names.fsl"), text, arch="sm_90a",
                              namespace="fsl_host_names", library=LIBRARY,
                              cache_dir=os.path.join(WORK, "jit"), torch_ops=False, ops="compiled")
        real = prog._lib
        prog._lib = types.SimpleNamespace(fsl_jit_session_launch=STUB.fake_launch)
        prog._register_torch()
        prog._lib = real
        self.assertIs(type(prog.scale_kw).__call__, fslc._program.Fusion.__call__)
        self.assertIsNot(type(prog.scale_named).__call__, fslc._program.Fusion.__call__)
        prog.scale_kw(bf16(2, 8))
        self.assertEqual(launched(), "scale_kw stream=0x5150 [4 2x8 8x1] [4 2x8 8x1] 2")
        prog.scale_named(TypeError=bf16(2, 8), error=0.5)
        self.assertEqual(launched(), "scale_named stream=0x5150 [4 2x8 8x1] [4 2x8 8x1] 0.5")
        e = self.refused(fslc.FslDtypeError, "TypeError: dtype f32, expected bf16",
                         lambda: prog.scale_named(torch.zeros(2, 8)))
        prog.close()

    def test_refusals(self):
        x, res, w = bf16(3, 8), bf16(3, 8), bf16(8)
        e = self.refused(fslc.FslDtypeError, "weight: dtype f32, expected bf16",
                         lambda: self.prog.rms_norm_add(x, res, w.float()))
        self.assertIsInstance(e, TypeError)
        self.assertEqual(e.status, 2)
        self.refused(fslc.FslDtypeError, "weight: dtype uint8, expected bf16",
                     lambda: self.prog.rms_norm_add(x, res, torch.zeros(8, dtype=torch.uint8)))
        self.refused(fslc.FslRankError, "x: rank 1, expected 2", lambda: self.prog.rms_norm_add(x[0], res, w))
        self.refused(fslc.FslSizeError, "residual: size 4 of dimension T, expected 3",
                     lambda: self.prog.rms_norm_add(x, bf16(4, 8), w))
        self.refused(fslc.FslSizeError, "weight: size 16 of dimension H, expected 8",
                     lambda: self.prog.rms_norm_add(x, res, bf16(16)))
        with self.assertRaisesRegex(TypeError, "^FslDtypeError: weight: dtype f32, expected bf16$"):
            self.prog.rms_norm_add.op(x, res, w.float())
        static = load("fsl_host_static", runtime_dims="")
        self.refused(fslc.FslSizeError, "x: size 8 of dimension H, expected 4096 (static)",
                     lambda: static.rms_norm_add(x, res, w))
        static.close()

    def test_status_of_the_c_api(self):
        os.environ["FAKE_STATUS"] = "5"
        os.environ["FAKE_MESSAGE"] = "x: stride 8 in dimension 1, expected 1"
        e = self.refused(fslc.FslLayoutError, "x: stride 8 in dimension 1, expected 1",
                         lambda: self.prog.softmax(bf16(2, 8)))
        self.assertEqual(e.status, 5)
        os.environ["FAKE_STATUS"] = "9"
        os.environ["FAKE_MESSAGE"] = "does not compile"
        self.assertIsInstance(self.refused(fslc.FslCompileError, "does not compile",
                                           lambda: self.prog.softmax(bf16(2, 8))), RuntimeError)

    def test_capture(self):
        self.prog.rms_norm(bf16(2, 24), bf16(24))  # H = 24 warm
        os.environ["FAKE_CAPTURING"] = "1"
        self.refused(fslc.FslCaptureError,
                     "rms_norm: first call at H = 40 on cuda:0 inside CUDA-graph capture: the JIT compiles "
                     "and loads its kernels on a first call, which capture cannot hold; call it once at "
                     "these sizes before capturing", lambda: self.prog.rms_norm(bf16(2, 40), bf16(40)))
        self.prog.rms_norm(bf16(7, 24), bf16(24))  # warm H, another T: not specialized on
        self.assertTrue(launched().startswith("rms_norm stream=0x5150 [4 7x24"), launched())
        self.prog.rms_norm(bf16(0, 40), bf16(40))  # nothing to launch
        os.environ["FAKE_CAPTURING"] = "0"
        self.prog.rms_norm(bf16(2, 40), bf16(40))

    def test_ctypes_path_needs_custom_op(self):
        # The ctypes path registers torch.library.custom_op ops (torch 2.4 and later). With
        # an older torch (Debian 12's 1.13; on a newer one custom_op is hidden for the test)
        # a load that registers ops by default warns and leaves the program without ops;
        # asked for them, it is an error naming the version. No op name is used up.
        saved = torch.library.__dict__.pop("custom_op", None)
        try:
            options = dict(arch="sm_90a", library=LIBRARY, cache_dir=os.path.join(WORK, "jit"), ops="ctypes")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                prog = fslc.load(NORMS, namespace="fsl_host_old", **options)
            runtime = [w for w in caught if w.category is RuntimeWarning]
            self.assertEqual(len(runtime), 1, [str(w.message) for w in runtime])
            self.assertRegex(str(runtime[0].message),
                             r"norms.fsl \(namespace fsl_host_old\): torch %s has no torch.library.custom_op, "
                             r"which the ctypes op path needs \(torch 2.4 or later\); its fusions are not "
                             r"registered as torch ops" % re.escape(torch.__version__))
            self.assertEqual(runtime[0].filename, __file__)  # the caller's load
            self.assertEqual({f.op for f in prog.fusions.values()}, {None})
            for _ in range(2):  # a fusion's call asks for the ops: the same error each time
                with self.assertRaisesRegex(fslc.FslError, r"\(namespace fsl_host_old\): torch .* has no "
                                            r"torch.library.custom_op"):
                    prog.softmax(bf16(2, 40))
            with self.assertRaisesRegex(fslc.FslError, r"\(namespace fsl_host_old2\): torch .* has no "
                                        r"torch.library.custom_op"):
                fslc.load(NORMS, namespace="fsl_host_old2", torch_ops=True, **options)
            self.assertEqual({ns for ns, _ in _torch._taken} & {"fsl_host_old", "fsl_host_old2"}, set())
        finally:
            if saved is not None:
                torch.library.custom_op = saved
        # With the op path registering again (custom_op present, or none needed), the names
        # are still free: the first program of the namespace takes them.
        if saved is not None:
            prog = fslc.load(NORMS, namespace="fsl_host_old", **options)
            self.assertEqual(prog.rms_norm.op_name, "fsl_host_old::rms_norm")

    def test_refused_plan(self):
        # The extension refuses an op (here: a plan it cannot read): under "auto" the op
        # takes the ctypes path with a warning, under "compiled" it is an error.
        saved = _torch.op_plan
        _torch.op_plan = lambda signature, policy, source: "fusion %s\nbogus line\n" % signature.fusion
        try:
            with self.assertWarnsRegex(RuntimeWarning, r"fsl_host_auto::softmax takes the ctypes path: "
                                       r"the compiled op path refused it \(.*cannot read line 2 of the op plan"):
                prog = fslc.load(NORMS, arch="sm_90a", namespace="fsl_host_auto", library=LIBRARY,
                                 cache_dir=os.path.join(WORK, "jit"), torch_ops=True, ops="auto")
            self.assertEqual(set(prog.op_paths.values()), {"ctypes"})
            with self.assertRaisesRegex(fslc.FslExtensionError, "fsl_host_forced::rms_norm: the compiled op "
                                        "path refused the op: .*cannot read line 2 of the op plan: 'bogus line'"):
                fslc.load(NORMS, arch="sm_90a", namespace="fsl_host_forced", library=LIBRARY,
                          cache_dir=os.path.join(WORK, "jit"), torch_ops=True, ops="compiled")
        finally:
            _torch.op_plan = saved

    def direct_calls(self):
        count = build.direct_calls()
        if count is None:
            self.skipTest("the kernel was built without Python's headers: no direct call")
        return count

    def assertDirect(self, taken, call):
        before = self.direct_calls()
        result = call()
        self.assertEqual(self.direct_calls() - before, 1 if taken else 0,
                         "direct call taken" if not taken else "direct call not taken")
        return result

    def test_direct_call(self):
        # A plain eager call launches through the op's direct call (no dispatcher), with
        # what the dispatcher's path gives the launcher; the others go through the
        # dispatcher, and their launches are the same.
        x, res, w = bf16(3, 8), bf16(3, 8), bf16(8)
        self.direct_calls()
        version = res._version
        y = self.assertDirect(True, lambda: self.prog.rms_norm_add(x, res, w))
        self.assertEqual((tuple(y.shape), y.dtype), ((3, 8), torch.bfloat16))
        self.assertEqual(launched(), "rms_norm_add stream=0x5150 [4 3x8 8x1] [4 3x8 8x1] [4 8x1] [4 3x8 8x1] 1e-06")
        self.assertGreater(res._version, version)  # inout: its version counter moves
        self.assertDirect(True, lambda: self.prog.rms_norm_add(x, res, w, 2))  # an int for a float
        self.assertTrue(launched().endswith("] 2"), launched())
        self.assertDirect(True, lambda: self.prog.rms_norm_add(x, res, w, eps=0.5))
        self.assertTrue(launched().endswith("] 0.5"), launched())
        expected = "rms_norm stream=0x5150 [4 3x8 8x1] [4 8x1] [4 3x8 8x1] 1e-06"
        # A parameter (a subclass without its own __torch_function__) is a plain tensor.
        self.assertDirect(True, lambda: self.prog.rms_norm(x, torch.nn.Parameter(w, requires_grad=False)))
        self.assertEqual(launched(), expected)

        # What goes through the dispatcher instead, launching the same.
        class Traced(torch.Tensor):
            pass

        class Mode(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        def in_mode():
            with Mode():
                return self.prog.rms_norm(x, w)

        def with_grad():
            return self.prog.rms_norm(x, w.clone().requires_grad_())

        def without_grad():
            with torch.no_grad():
                return self.prog.rms_norm(x, w.clone().requires_grad_())

        class DispatchMode(torch.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        def in_dispatch_mode():
            with DispatchMode():
                return self.prog.rms_norm(x, w)

        def profiled():
            with torch.autograd.profiler.profile() as profile:
                result = self.prog.rms_norm(x, w)
            self.assertIn("fsl_host::rms_norm", [e.name for e in profile.function_events])
            return result

        def in_inference_mode():
            with torch.inference_mode():
                return self.prog.rms_norm(x, w)

        for what, call, taken in (("a subclass", lambda: self.prog.rms_norm(x, w.as_subclass(Traced)), False),
                                  ("a torch-function mode", in_mode, False),
                                  ("a dispatch mode", in_dispatch_mode, False),
                                  ("the profiler (it records the op's name)", profiled, False),
                                  ("a negative view", lambda: self.prog.rms_norm(x, torch._neg_view(-w)), False),
                                  ("inference mode", in_inference_mode, True),
                                  ("a tensor autograd records", with_grad, False),
                                  ("requires_grad under no_grad", without_grad, True),
                                  ("a bool for a float", lambda: self.prog.rms_norm(x, w, True), False)):
            with self.subTest(what):
                try:
                    self.assertDirect(taken, call)
                except RuntimeError as error:  # this torch's dispatcher refuses a bool for a float
                    self.assertFalse(taken)
                    self.assertIn("eps", str(error))
                    continue
                self.assertEqual(launched(), expected if what != "a bool for a float" else expected[:-5] + "1")
        # Refusals of the direct call are the dispatcher's: the same class and message.
        before = self.direct_calls()
        self.refused(fslc.FslSizeError, "residual: size 4 of dimension T, expected 3",
                     lambda: self.prog.rms_norm_add(x, bf16(4, 8), w))
        with self.assertRaisesRegex(ValueError, "^FslSizeError: residual: size 4 of dimension T, expected 3$"):
            self.prog.rms_norm_add._direct_call(x, bf16(4, 8), w, 1e-6)
        self.assertEqual(self.direct_calls(), before)
        self.assertIs(self.prog.rms_norm_add._direct_call(x, res), NotImplemented)  # too few
        # A zero tensor (no storage) goes through the dispatcher, which gives the kernel zeros.
        zeros = torch._efficientzerotensor((8,), dtype=torch.bfloat16)
        self.assertDirect(False, lambda: self.prog.rms_norm(x, zeros))
        self.assertEqual(launched(), "rms_norm stream=0x5150 [4 3x8 8x1] [4 8x0] [4 3x8 8x1] 1e-06")

    def test_closed(self):
        prog = load("fsl_host_closed")
        prog.softmax(bf16(2, 4096))
        prog.close()
        e = self.refused(fslc.FslError, "softmax: the program %s is closed" % prog.source,
                         lambda: prog.softmax(bf16(2, 4096)))
        self.assertIs(type(e), fslc.FslError)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
