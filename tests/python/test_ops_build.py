"""The compiled op path's build (python/fslc/_ops) without torch and without a GPU.

usage: python3 tests/python/test_ops_build.py LIBFSL SOURCE_DIR WORK_DIR
       python3 tests/python/test_ops_build.py --installed SOURCE_DIR WORK_DIR

With a fake `torch` module (its version, CUDA version, C++ ABI flag, cpp_extension's
include and library paths, ops.load_library): the compiler's command line (flags, the ABI
define, include and library paths), the cache key (changed by the torch version, the CUDA
version, the ABI, the compiler and the source), the build into the cache and its reuse
with a stand-in compiler, the fallback to the ctypes path with one warning when no
compiler is found or the compiler fails, the FSLC_OPS switch and load(ops=...), the plan
of norms.fsl's fusions the C++ kernel is given, and the mapping of the kernel's
"<class>: message" errors back to fslc.errors. The second form checks the installed
package (a wheel's) finds its own headers and extension source.
"""

import os
import shutil
import stat
import sys
import tempfile
import types
import unittest
import warnings

INSTALLED = sys.argv[1] == "--installed"
ROOT, WORK = (os.path.abspath(a) for a in sys.argv[2:4])
if not INSTALLED:
    sys.path.insert(0, os.path.join(ROOT, "python"))
import fslc  # noqa: E402
from fslc._ops import build  # noqa: E402
from fslc._ops.plan import op_plan  # noqa: E402

PACKAGE = os.path.dirname(os.path.abspath(fslc.__file__))
LIBRARY = os.path.join(PACKAGE, "lib", "libfsl.so") if INSTALLED else os.path.abspath(sys.argv[1])
NORMS = os.path.join(ROOT, "stdlib", "std", "norms.fsl")


def fake_torch(version="2.5.1+cu124", cuda="12.4", abi=True, cuda_home=None):
    """What fslc/_ops/build.py reads of torch, recording load_library's calls."""
    loaded = []
    extension = types.SimpleNamespace(
        include_paths=lambda: ["/fake/torch/include", "/fake/torch/include/torch/csrc/api/include"],
        library_paths=lambda: ["/fake/torch/lib"],
        CUDA_HOME=cuda_home,
    )
    torch = types.SimpleNamespace(
        __name__="torch", __version__=version,
        version=types.SimpleNamespace(cuda=cuda),
        _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=abi),
        utils=types.SimpleNamespace(cpp_extension=extension),
        ops=types.SimpleNamespace(load_library=loaded.append),
    )
    torch.loaded = loaded
    return torch


def read(path):
    with open(path) as f:
        return f.read()


def write_script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


class OpsBuildTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="ops-build-", dir=WORK)
        self.environ = dict(os.environ)
        os.environ["FSL_CACHE_DIR"] = os.path.join(self.work, "cache")
        for name in ("FSLC_OPS", "CXX", "CUDA_HOME", "CUDA_PATH"):
            os.environ.pop(name, None)
        # CUDA headers of a stand-in toolkit, found through torch's CUDA_HOME.
        self.cuda_home = os.path.join(self.work, "cuda")
        os.makedirs(os.path.join(self.cuda_home, "include"))
        open(os.path.join(self.cuda_home, "include", "cuda_runtime.h"), "w").close()
        build._status = None

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.environ)
        build._status = None

    def stand_in_compiler(self):
        """A compiler that writes its -o file and counts its runs in runs.txt."""
        runs = os.path.join(self.work, "runs.txt")
        script = write_script(os.path.join(self.work, "cxx"), (
            'echo run >> "%s"\n'
            'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo ELF > "$2"; fi; shift; done\n') % runs)
        return script, runs

    # --- the switch ---------------------------------------------------------------------

    def test_mode(self):
        self.assertEqual(build.mode(), "auto")
        os.environ["FSLC_OPS"] = "ctypes"
        self.assertEqual(build.mode(), "ctypes")
        self.assertEqual(build.mode("compiled"), "compiled")  # load(ops=) over the environment
        os.environ["FSLC_OPS"] = "Compiled "
        self.assertEqual(build.mode(), "compiled")
        os.environ["FSLC_OPS"] = "python"
        with self.assertRaisesRegex(fslc.FslArgumentError, r"\$FSLC_OPS is 'python': expected auto, compiled or ctypes"):
            build.mode()
        with self.assertRaisesRegex(fslc.FslArgumentError, r"ops= is 'fast'"):
            build.mode("fast")

    def test_program_refuses_an_unknown_path(self):
        with self.assertRaisesRegex(fslc.FslArgumentError, "ops= is 'cuda'"):
            fslc.load(NORMS, arch="sm_90a", library=LIBRARY, torch_ops=False, ops="cuda")

    # --- the command line and the cache key -----------------------------------------------

    def test_headers_found(self):
        dirs = build.fsl_include_dirs()
        for header in ("fsl/jit_session.h", "fsl/compiler.h", "fsl/runtime.h"):
            self.assertTrue(any(os.path.isfile(os.path.join(d, header)) for d in dirs), (header, dirs))
        if INSTALLED:
            self.assertEqual(dirs, [os.path.join(PACKAGE, "include")])
        self.assertTrue(os.path.isfile(build.SOURCE), build.SOURCE)
        self.assertEqual(os.path.dirname(build.SOURCE), os.path.join(PACKAGE, "_ops"))

    def test_build_command(self):
        torch = fake_torch(abi=True, cuda_home=self.cuda_home)
        dirs = build.fsl_include_dirs()
        cuda = build.cuda_include_dir(torch)
        self.assertEqual(cuda, os.path.join(self.cuda_home, "include"))
        command = build.build_command(torch, ["/usr/bin/c++"], dirs, cuda, "/tmp/out.so")
        self.assertEqual(command[0], "/usr/bin/c++")
        for flag in ("-std=c++17", "-O2", "-fPIC", "-shared", "-D_GLIBCXX_USE_CXX11_ABI=1", "-ldl",
                     "-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch", "-Wl,-rpath,/fake/torch/lib"):
            self.assertIn(flag, command)
        includes = [command[i + 1] for i, c in enumerate(command) if c == "-I"]
        self.assertEqual(includes, dirs + ["/fake/torch/include", "/fake/torch/include/torch/csrc/api/include", cuda])
        self.assertEqual([command[i + 1] for i, c in enumerate(command) if c == "-L"], ["/fake/torch/lib"])
        self.assertEqual(command[command.index("-o") - 1], build.SOURCE)
        self.assertEqual(command[command.index("-o") + 1], "/tmp/out.so")
        for flag in ("-DFSLC_DIRECT_CALL", "-ltorch_python"):
            self.assertNotIn(flag, command)
        # With Python's headers: the ops' direct call, linked with torch's Python bindings.
        direct = build.build_command(torch, ["/usr/bin/c++"], dirs, cuda, "/tmp/out.so", "/fake/python/include")
        self.assertIn("-DFSLC_DIRECT_CALL", direct)
        self.assertIn("-ltorch_python", direct)
        self.assertEqual([direct[i + 1] for i, c in enumerate(direct) if c == "-I"][0], "/fake/python/include")
        old_abi = build.build_command(fake_torch(abi=False), ["c++"], dirs, cuda, "/tmp/out.so")
        self.assertIn("-D_GLIBCXX_USE_CXX11_ABI=0", old_abi)
        self.assertNotIn("-D_GLIBCXX_USE_CXX11_ABI=1", old_abi)

    def test_cache_key(self):
        dirs = build.fsl_include_dirs()
        key = build.cache_key(fake_torch(), ["c++"], dirs)
        self.assertRegex(key, r"^torch2\.5\.1\+cu124-cuda12\.4-abi1-[0-9a-f]{16}$")
        self.assertEqual(key, build.cache_key(fake_torch(), ["c++"], dirs))
        others = {
            "torch version": build.cache_key(fake_torch(version="2.6.0"), ["c++"], dirs),
            "CUDA version": build.cache_key(fake_torch(cuda="12.8"), ["c++"], dirs),
            "ABI": build.cache_key(fake_torch(abi=False), ["c++"], dirs),
            "compiler": build.cache_key(fake_torch(), ["clang++"], dirs),
            "direct call": build.cache_key(fake_torch(), ["c++"], dirs, "/fake/python/include"),
        }
        saved = build.sysconfig
        build.sysconfig = types.SimpleNamespace(get_config_var=lambda name: "cpython-313t-x86_64-linux-gnu")
        try:  # another Python ABI (free-threaded 3.13): another library with the direct call
            others["Python ABI"] = build.cache_key(fake_torch(), ["c++"], dirs, "/fake/python/include")
            self.assertEqual(build.cache_key(fake_torch(), ["c++"], dirs), key)  # none without it
        finally:
            build.sysconfig = saved
        source = os.path.join(self.work, "ext.cpp")
        shutil.copy(build.SOURCE, source)
        with open(source, "a") as f:
            f.write("// changed\n")
        original = build.SOURCE
        build.SOURCE = source
        try:
            others["source"] = build.cache_key(fake_torch(), ["c++"], dirs)
        finally:
            build.SOURCE = original
        for what, other in others.items():
            self.assertNotEqual(other, key, what)
        self.assertEqual(len(set(others.values())), len(others))

    # --- build, reuse, fallback -------------------------------------------------------------

    def test_build_then_reuse(self):
        cxx, runs = self.stand_in_compiler()
        os.environ["CXX"] = cxx
        torch = fake_torch(cuda_home=self.cuda_home)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(build.load(torch), "compiled")
        (library,) = torch.loaded
        self.assertTrue(library.startswith(build.cache_root() + os.sep), library)
        self.assertEqual(os.path.basename(library), "fslc_ops.so")
        self.assertTrue(os.path.isfile(library))
        self.assertIn("-D_GLIBCXX_USE_CXX11_ABI=1", read(os.path.join(os.path.dirname(library), "build.log")))
        self.assertEqual(build.status()["path"], "compiled")
        # A new process (no decision yet) finds the library in the cache: no second build.
        build._status = None
        self.assertEqual(build.ensure_built(torch), library)
        self.assertEqual(read(runs).count("run"), 1)
        # Another torch: another key, another build.
        other = build.ensure_built(fake_torch(version="2.6.0", cuda_home=self.cuda_home))
        self.assertNotEqual(other, library)
        self.assertEqual(read(runs).count("run"), 2)

    def test_direct_call_that_does_not_load(self):
        # Built with the ops' direct call (Python's and pybind11's headers found), the
        # library does not load (a torch whose Python bindings hide a symbol it uses): the
        # extension is built again without it, and the ops go through the dispatcher alone.
        cxx, runs = self.stand_in_compiler()
        os.environ["CXX"] = cxx
        torch = self.with_python_headers()
        tried = []

        def load_library(path):
            tried.append(path)
            if "-DFSLC_DIRECT_CALL" in read(os.path.join(os.path.dirname(path), "build.log")):
                raise OSError("Could not load this library: %s" % path)
            torch.loaded.append(path)

        torch.ops.load_library = load_library
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(build.load(torch, "compiled"), "compiled")
        self.assertEqual(len(tried), 2)
        self.assertNotEqual(tried[0], tried[1])
        self.assertEqual(torch.loaded, [tried[1]])
        self.assertEqual(read(runs).count("run"), 2)
        status = build.status()
        self.assertEqual((status["path"], status["library"], status["direct_call"]), ("compiled", tried[1], False))
        # The loader's own reason (here: the stand-in library is no shared object).
        self.assertIn("torch.ops.load_library(%s) failed: " % tried[0], status["direct_call_reason"])
        self.assertIn(tried[0], status["direct_call_reason"])

    def with_python_headers(self):
        """Headers of Python and of pybind11 (in a stand-in torch's include directory):
        python_include_dir finds them, so builds take the direct call."""
        headers = os.path.join(self.work, "headers")
        for name in ("torch/pybind11/pybind11.h", "python/Python.h"):
            os.makedirs(os.path.dirname(os.path.join(headers, name)), exist_ok=True)
            open(os.path.join(headers, name), "w").close()
        torch = fake_torch(cuda_home=self.cuda_home)
        torch.utils.cpp_extension.include_paths = lambda: [os.path.join(headers, "torch")]
        saved = build.sysconfig
        build.sysconfig = types.SimpleNamespace(get_paths=lambda: {"include": os.path.join(headers, "python")},
                                                get_config_var=saved.get_config_var)
        self.addCleanup(setattr, build, "sysconfig", saved)
        return torch

    def test_direct_call_that_does_not_compile(self):
        # The direct call's build fails (a compiler that refuses -DFSLC_DIRECT_CALL): the
        # extension is built without it, and a later process does not try it again.
        runs = os.path.join(self.work, "runs.txt")
        os.environ["CXX"] = write_script(os.path.join(self.work, "cxx"), (
            'echo run >> "%s"\n'
            'for a in "$@"; do [ "$a" = -DFSLC_DIRECT_CALL ] && { echo "ext.cpp: error: no Python.h" >&2; exit 1; }; done\n'
            'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo ELF > "$2"; fi; shift; done\n') % runs)
        torch = self.with_python_headers()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(build.load(torch, "compiled"), "compiled")
        status = build.status()
        self.assertEqual(status["path"], "compiled")
        self.assertIn("the compiler failed (exit status 1)", status["direct_call_reason"])
        (library,) = torch.loaded
        self.assertNotIn("-DFSLC_DIRECT_CALL", read(os.path.join(os.path.dirname(library), "build.log")))
        self.assertEqual(read(runs).count("run"), 2)
        # A new process: the failed build is remembered, the one without it is cached.
        build._status = None
        torch.loaded.clear()
        self.assertEqual(build.load(torch, "compiled"), "compiled")
        self.assertEqual(torch.loaded, [library])
        self.assertEqual(read(runs).count("run"), 2)
        self.assertIn("an earlier build with the direct call failed (the compiler failed",
                      build.status()["direct_call_reason"])

    def test_no_compiler_falls_back_with_one_warning(self):
        os.environ["PATH"] = os.path.join(self.work, "empty")
        torch = fake_torch(cuda_home=self.cuda_home)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertEqual(build.load(torch), "ctypes")
            self.assertEqual(build.load(torch), "ctypes")  # decided once: no second warning
        self.assertEqual(len(caught), 1, [str(w.message) for w in caught])
        self.assertIn("no C++ compiler ($CXX, c++, g++ or clang++ on PATH)", str(caught[0].message))
        self.assertIn("FSLC_OPS=ctypes", str(caught[0].message))
        self.assertEqual(torch.loaded, [])
        self.assertEqual(build.status()["path"], "ctypes")
        # FSLC_OPS=compiled: the same reason, as an exception.
        os.environ["FSLC_OPS"] = "compiled"
        with self.assertRaisesRegex(fslc.FslExtensionError, "no C\\+\\+ compiler"):
            build.load(torch)
        # ctypes asked for: no build, no warning.
        build._status = None
        os.environ["FSLC_OPS"] = "ctypes"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(build.load(torch), "ctypes")
        self.assertIsNone(build.status())

    def test_failing_compiler(self):
        os.environ["CXX"] = write_script(os.path.join(self.work, "broken-cxx"),
                                         'echo "ext.cpp:1:10: fatal error: torch/library.h: No such file" >&2\nexit 1\n')
        torch = fake_torch(cuda_home=self.cuda_home)
        with self.assertRaises(fslc.FslExtensionError) as raised:
            build.load(torch, "compiled")
        message = str(raised.exception)
        self.assertIn("the compiler failed (exit status 1)", message)
        self.assertRegex(message, r"its command and output: .*/torch-ops/torch2\.5\.1\+cu124-cuda12\.4-abi1-[0-9a-f]{16}/build\.log")
        self.assertIn("broken-cxx", message)  # the command
        self.assertIn("-D_GLIBCXX_USE_CXX11_ABI=1", message)
        self.assertIn("torch/library.h: No such file", message)  # its output
        self.assertEqual(torch.loaded, [])
        # Nothing half-built is left for a later process to load.
        leftovers = [n for _, _, names in os.walk(build.cache_root()) for n in names if n.endswith(".so")]
        self.assertEqual(leftovers, [])

    def test_missing_cuda_headers(self):
        cxx, _ = self.stand_in_compiler()
        os.environ["CXX"] = cxx
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            saved = build.cuda_include_dir
            build.cuda_include_dir = lambda torch: (_ for _ in ()).throw(build.Unavailable("no CUDA headers (test)"))
            try:
                self.assertEqual(build.load(fake_torch()), "ctypes")
            finally:
                build.cuda_include_dir = saved
        ours = [w for w in caught if "compiled op path" in str(w.message)]
        self.assertEqual(len(ours), 1, [str(w.message) for w in caught])
        self.assertIn("no CUDA headers (test)", str(ours[0].message))

    def test_torch_without_cuda(self):
        cxx, runs = self.stand_in_compiler()
        os.environ["CXX"] = cxx
        with self.assertRaisesRegex(fslc.FslExtensionError, r"torch 2\.5\.1\+cpu has no CUDA"):
            build.load(fake_torch(version="2.5.1+cpu", cuda=None, cuda_home=self.cuda_home), "compiled")
        self.assertFalse(os.path.exists(runs))  # nothing built

    def test_cxx_not_executable(self):
        os.environ["CXX"] = os.path.join(self.work, "no-such-compiler")
        with self.assertRaisesRegex(build.Unavailable, "which is not an executable"):
            build.compiler()

    # --- what the C++ kernel is given, and what it raises -------------------------------------

    def test_plans(self):
        prog = fslc.load(NORMS, runtime_dims="H", arch="sm_90a", cache_dir=os.path.join(self.work, "jit"),
                         library=LIBRARY, torch_ops=False)
        plan = op_plan(prog.rms_norm_add.signature, "reduced", prog.source).splitlines()
        self.assertEqual(plan[0], "fusion rms_norm_add %s" % prog.source)
        self.assertEqual(plan[1:], [
            "tensor x bf16 in 2 0",
            "tensor residual bf16 inout 2 1",
            "tensor weight bf16 in 1 2",
            "scalar eps 0 float",
            "dim T -1 0:0 1:0",
            "dim H -1 0:1 1:1 2:0",
            "out y bf16 3 0 1",
            "specialize 1",
            "counts 4 1",
        ])
        # softmax (S static: runtime_dims="H" leaves it so): T runtime, S never specialized.
        self.assertIn("\ndim S 4096 0:1\n", op_plan(prog.softmax.signature, "all", prog.source))
        self.assertIn("\nspecialize 0\n", op_plan(prog.softmax.signature, "all", prog.source))
        self.assertIn("\nspecialize\n", op_plan(prog.softmax.signature, "none", prog.source))
        prog.close()

    def test_op_errors(self):
        mapped = fslc.errors.op_error(ValueError("FslSizeError: residual: size 9 of dimension T, expected 8"))
        self.assertIsInstance(mapped, fslc.FslSizeError)
        self.assertEqual((mapped.message, mapped.status), ("residual: size 9 of dimension T, expected 8", 4))
        mapped = fslc.errors.op_error(TypeError("FslDtypeError: weight: dtype f32, expected bf16"))
        self.assertIsInstance(mapped, fslc.FslDtypeError)
        self.assertIsInstance(mapped, TypeError)
        mapped = fslc.errors.op_error(RuntimeError("FslCaptureError: softmax: first call at S = 5"))
        self.assertIsInstance(mapped, fslc.FslCaptureError)
        self.assertIsNone(mapped.status)
        self.assertIsInstance(fslc.errors.op_error(ValueError("FslDeviceError: x: a cpu tensor, expected a CUDA tensor")),
                              fslc.FslDeviceError)
        self.assertIsNone(fslc.errors.op_error(RuntimeError("CUDA error: out of memory")))
        self.assertIsNone(fslc.errors.op_error(TypeError("NotAnFslError: x")))
        self.assertIsNone(fslc.errors.op_error(fslc.FslSizeError("FslSizeError: already ours", 4)))


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])
