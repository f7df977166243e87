"""Builds and loads the compiled op path (fslc/_ops/ext.cpp) on first use.

The extension is compiled by the system's C++ compiler, called directly (no ninja, no
torch.utils.cpp_extension.load), against the installed torch's headers and libraries
(torch.utils.cpp_extension's include_paths() and library_paths()), the CUDA runtime's
headers and the C API's headers (fsl/jit_session.h), into

    <cache>/torch-ops/torch<version>-cuda<version>-abi<0|1>-<key>/fslc_ops.so

where <cache> is $FSL_CACHE_DIR, else ~/.cache/fslc (the JIT's), and <key> hashes the
torch version, its CUDA version, its C++ ABI flag (torch._C._GLIBCXX_USE_CXX11_ABI), the
compiler and the text of ext.cpp and of the headers: a new torch or a changed source builds
anew, anything else loads the cached library. It does not link libfsl.so: each op is given
the address of fsl_jit_session_launch in the very library its session came from.

Which path the ops take (docs/python.md): $FSLC_OPS, or load(ops=...):
    auto      the compiled path, else the ctypes one with one warning naming why (default)
    compiled  the compiled path; FslExtensionError (with the compiler's command and output)
              when it cannot be built
    ctypes    the ctypes path (fslc/_torch.py's Python implementation)

Everything here but load() runs without torch: `torch` is a parameter (the tests give a
fake module).
"""

import ctypes
import fcntl
import hashlib
import importlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings

from .. import _places
from ..errors import FslExtensionError

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ext.cpp")
LIBRARY_FILE = "fslc_ops.so"
MODES = ("auto", "compiled", "ctypes")
# The C API headers ext.cpp includes, directly or not.
HEADERS = ("fsl/jit_session.h", "fsl/compiler.h", "fsl/runtime.h")
# Torch's libraries the extension links: the dispatcher, tensors, CUDA streams.
TORCH_LIBRARIES = ("c10", "c10_cuda", "torch_cpu", "torch")


class Unavailable(Exception):
    """Why the compiled path cannot be had: `reason` one line, `detail` the compiler's
    command and output when a build failed."""

    def __init__(self, reason, detail=""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def mode(requested=None):
    """The path asked for: `requested` (load's ops=), else $FSLC_OPS, else "auto"."""
    value = requested if requested is not None else (os.environ.get("FSLC_OPS") or "auto")
    value = str(value).strip().lower()
    if value not in MODES:
        from ..errors import FslArgumentError

        source = "ops=" if requested is not None else "$FSLC_OPS"
        raise FslArgumentError("%s is %r: expected auto, compiled or ctypes" % (source, value))
    return value


def cache_root():
    base = os.environ.get("FSL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fslc")
    return os.path.join(base, "torch-ops")


def fsl_include_dirs():
    """The directories holding the C API headers: the package's own include/ (a wheel's),
    the installation's, the repository's jit/include and runtime/include."""
    found, missing = [], []
    places = _places.include_places()
    for header in HEADERS:
        for directory, _ in places:
            if os.path.isfile(os.path.join(directory, header)):
                if directory not in found:
                    found.append(directory)
                break
        else:
            missing.append(header)
    if missing:
        raise Unavailable("the C API headers %s are not in %s" % (
            ", ".join(missing), ", ".join("%s (%s)" % p for p in places)))
    return found


def cpp_extension(torch):
    """torch.utils.cpp_extension (imported here: `import torch` does not)."""
    extension = getattr(getattr(torch, "utils", None), "cpp_extension", None)
    if extension is None:
        extension = importlib.import_module(torch.__name__ + ".utils.cpp_extension")
    return extension


def cuda_include_dir(torch):
    """The CUDA runtime's headers (cuda_runtime.h): $CUDA_HOME, $CUDA_PATH, the toolkit
    torch found, /usr/local/cuda, then the nvidia-* wheels beside torch."""
    candidates = []
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                 getattr(cpp_extension(torch), "CUDA_HOME", None), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "include"))
    for entry in sys.path:
        nvidia = os.path.join(entry or ".", "nvidia")
        if os.path.isdir(nvidia):
            for name in sorted(os.listdir(nvidia)):
                candidates.append(os.path.join(nvidia, name, "include"))
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "cuda_runtime.h")):
            return directory
    raise Unavailable("no CUDA headers (cuda_runtime.h) in %s; set CUDA_HOME" % ", ".join(candidates))


def compiler():
    """The C++ compiler: $CXX, else c++, g++ or clang++ on PATH."""
    cxx = os.environ.get("CXX")
    if cxx:
        argv = shlex.split(cxx)
        if argv and shutil.which(argv[0]):
            return argv
        raise Unavailable("$CXX is %r, which is not an executable" % cxx)
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return [path]
    raise Unavailable("no C++ compiler ($CXX, c++, g++ or clang++ on PATH)")


def python_include_dir(torch_includes=()):
    """The running interpreter's headers (Python.h), which the ops' direct call from Python
    is built with (ext.cpp's FSLC_DIRECT_CALL); None without them, or without the pybind11
    headers torch's Python headers include (a wheel of torch carries them; Debian's torch
    takes pybind11-dev's): the ops then go through the dispatcher alone."""
    if not any(os.path.isfile(os.path.join(d, "pybind11", "pybind11.h"))
               for d in list(torch_includes) + ["/usr/include", "/usr/local/include"]):
        return None
    paths = sysconfig.get_paths()
    for key in ("include", "platinclude"):
        directory = paths.get(key)
        if directory and os.path.isfile(os.path.join(directory, "Python.h")):
            return directory
    return None


def cxx11_abi(torch):
    return int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _source_text(include_dirs):
    """ext.cpp and the C API headers it includes, as the cache key reads them."""
    parts = [_read(SOURCE)]
    for header in HEADERS:
        for directory in include_dirs:
            path = os.path.join(directory, header)
            if os.path.isfile(path):
                parts.append(header.encode() + b"\0" + _read(path))
                break
    return b"\0\0".join(parts)


def cache_key(torch, cxx, include_dirs, python_include=None):
    """The cache directory's name for this torch, compiler and source (and, with the direct
    call, this Python's ABI tag, SOABI: the library then holds Python's ABI, which differs
    between versions, free-threaded and debug builds)."""
    version = str(torch.__version__)
    cuda = str(getattr(torch.version, "cuda", None) or "none")
    abi = cxx11_abi(torch)
    digest = hashlib.sha256()
    python_abi = sysconfig.get_config_var("SOABI") or (sys.implementation.cache_tag + sys.abiflags)
    direct = "direct-" + python_abi if python_include else "dispatcher-only"
    for part in (version, cuda, str(abi), " ".join(cxx), direct):
        digest.update(part.encode() + b"\0")
    digest.update(_source_text(include_dirs))
    safe = lambda text: "".join(c if c.isalnum() or c in ".+" else "_" for c in text)  # noqa: E731
    return "torch%s-cuda%s-abi%d-%s" % (safe(version), safe(cuda), abi, digest.hexdigest()[:16])


def build_command(torch, cxx, include_dirs, cuda_include, output, python_include=None):
    """The compiler's command line that builds ext.cpp into `output`; with Python's headers,
    the ops' direct call too (linked with torch's Python bindings)."""
    extension = cpp_extension(torch)
    torch_includes = list(extension.include_paths())
    torch_libraries = list(extension.library_paths())
    command = list(cxx) + [
        "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
        "-D_GLIBCXX_USE_CXX11_ABI=%d" % cxx11_abi(torch),
    ]
    if python_include:
        command += ["-DFSLC_DIRECT_CALL", "-I", python_include]
    for directory in list(include_dirs) + torch_includes + [cuda_include]:
        command += ["-I", directory]
    command += [SOURCE, "-o", output]
    for directory in torch_libraries:
        command += ["-L", directory, "-Wl,-rpath," + directory]
    command += ["-l" + name for name in TORCH_LIBRARIES + (("torch_python",) if python_include else ())]
    command += ["-ldl"]
    return command


def _tail(text, lines=60):
    rows = text.strip().splitlines()
    return "\n".join(rows[-lines:]) if rows else "(no output)"


def ensure_built(torch, direct=True):
    """The path of the built extension for this torch (with the ops' direct call where
    `direct` and Python's headers allow), building it if needed; raises Unavailable naming
    why it cannot be had."""
    if not getattr(torch.version, "cuda", None):
        raise Unavailable("torch %s has no CUDA (torch.version.cuda is None)" % torch.__version__)
    cxx = compiler()
    include_dirs = fsl_include_dirs()
    python_include = python_include_dir(cpp_extension(torch).include_paths()) if direct else None
    directory = os.path.join(cache_root(), cache_key(torch, cxx, include_dirs, python_include))
    library = os.path.join(directory, LIBRARY_FILE)
    if os.path.isfile(library):
        return library
    failed = os.path.join(directory, DIRECT_CALL_FAILED)
    if python_include and os.path.isfile(failed):
        raise Unavailable("an earlier build with the direct call failed (%s); delete %s to build "
                          "it again" % (_read_text(failed).strip(), directory))
    cuda_include = cuda_include_dir(torch)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise Unavailable("cannot create the extension's cache %s: %s" % (directory, error))
    # One build at a time per key: a second process waits, then finds the library.
    with open(os.path.join(directory, "build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(library):
            return library
        handle, partial = tempfile.mkstemp(prefix=".fslc_ops.", suffix=".so", dir=directory)
        os.close(handle)
        command = build_command(torch, cxx, include_dirs, cuda_include, partial, python_include)
        shown = " ".join(shlex.quote(c) for c in command)
        try:
            result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)
        except OSError as error:
            os.unlink(partial)
            raise Unavailable("cannot run the compiler %s: %s" % (cxx[0], error), shown)
        log = os.path.join(directory, "build.log")
        with open(log, "w") as f:
            f.write(shown + "\n" + result.stdout)
        if result.returncode != 0:
            os.unlink(partial)
            reason = ("the compiler failed (exit status %d) building %s; its command and output: %s"
                      % (result.returncode, SOURCE, log))
            if python_include:  # later processes go straight to the build without it
                with open(failed, "w") as f:
                    f.write(reason + "\n")
            raise Unavailable(reason, "%s\n%s" % (shown, _tail(result.stdout)))
        os.replace(partial, library)
    return library


# Left in a direct-call build's cache directory whose compilation failed.
DIRECT_CALL_FAILED = "direct_call.failed"


def _read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _load_library(torch, library):
    """Loads the extension; when it cannot, names the loader's reason (an undefined
    symbol, ...), which torch's own message leaves out."""
    try:
        torch.ops.load_library(library)
    except Exception as error:  # noqa: BLE001 (OSError, RuntimeError of the dispatcher)
        reason = str(error)
        try:
            ctypes.CDLL(library)
        except OSError as loader:
            reason = str(loader)
        raise Unavailable("torch.ops.load_library(%s) failed: %s" % (library, reason))


# The process's answer, once decided: {"path": "compiled" or "ctypes", "library", "reason",
# "detail"}; load() fills it.
_status = None


# ext.cpp's fslc_ops_direct_call and fslc_ops_direct_calls through ctypes.PyDLL (the GIL
# held), looked up once a library: False where it has no direct call.
_direct = {}


def _direct_functions():
    if _status is None or _status["path"] != "compiled":
        return False
    library = _status["library"]
    if library not in _direct:
        _direct[library] = False
        try:
            loaded = ctypes.PyDLL(library)
            make, count = loaded.fslc_ops_direct_call, loaded.fslc_ops_direct_calls
        except (OSError, AttributeError):  # built without Python's headers
            pass
        else:
            make.restype, make.argtypes = ctypes.py_object, [ctypes.c_int64]
            count.restype, count.argtypes = ctypes.c_int64, []
            _direct[library] = (make, count)
    return _direct[library]


def direct_call(handle):
    """The direct call from Python of the op registered as `handle` (ext.cpp): the op's
    kernel without the dispatcher for plain eager calls, NotImplemented for the others.
    None where the extension was built without it."""
    functions = _direct_functions()
    return functions[0](handle) if functions else None


def direct_calls():
    """How many launches the direct calls made in this process (None without them)."""
    functions = _direct_functions()
    return functions[1]() if functions else None


def status():
    """What load() decided in this process (None before the first program with ops), and
    whether the compiled path's ops have their direct call from Python ("direct_call")."""
    if _status is None:
        return None
    out = dict(_status)
    out["direct_call"] = bool(_direct_functions())
    return out


def load(torch, requested=None):
    """Decides the path of this process's ops and loads the extension for the compiled
    one. Returns "compiled" or "ctypes". Under "auto", a failure warns once and gives
    "ctypes"; under "compiled" it raises FslExtensionError."""
    global _status
    wanted = mode(requested)
    if wanted == "ctypes":
        return "ctypes"
    if _status is not None and _status["path"] == "compiled":
        return "compiled"
    if _status is None:
        try:
            direct_reason = None
            try:
                library = ensure_built(torch)
                _load_library(torch, library)
            except Unavailable as why:
                if python_include_dir(cpp_extension(torch).include_paths()) is None:
                    raise  # built without the direct call already
                # The direct call needs Python's headers and torch's Python bindings: where
                # its build fails or does not load (a torch that hides what it uses), the
                # ops go through the dispatcher alone.
                direct_reason = why.reason
                library = ensure_built(torch, direct=False)
                _load_library(torch, library)
            _status = {"path": "compiled", "library": library, "reason": None, "detail": "",
                       "direct_call_reason": direct_reason}
        except Unavailable as why:
            _status = {"path": "ctypes", "library": None, "reason": why.reason, "detail": why.detail,
                       "direct_call_reason": None}
            if wanted == "auto":
                warnings.warn("fslc: the compiled op path is unavailable (%s); the ops take the "
                              "ctypes path (FSLC_OPS=ctypes chooses it without this warning)"
                              % why.reason, RuntimeWarning, stacklevel=3)
    if _status["path"] == "compiled":
        return "compiled"
    if wanted == "compiled":
        raise FslExtensionError("FSLC_OPS=compiled, but the compiled op path is unavailable: %s%s"
                                % (_status["reason"], "\n" + _status["detail"] if _status["detail"] else ""))
    return "ctypes"
