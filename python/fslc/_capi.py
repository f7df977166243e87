"""The C API of libfsl.so through ctypes: fsl/compiler.h, fsl/jit_session.h, fsl/runtime.h.

Pure Python and ctypes, no torch: the CI tests this layer without a GPU
(tests/python/test_capi.py).
"""

import ctypes
import os

from . import _places
from .errors import FslLibraryError, error_for

LIBRARY_NAME = _places.LIBRARY_NAME
FSL_MAX_RANK = 8
FSL_JIT_MAX_LAUNCHES = 8
FSL_JIT_MAX_WORKSPACES = 4
ERROR_SIZE = 16384

# fsl_dtype (fsl/runtime.h), by the names the launch metadata uses.
DTYPES = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 4, "f32": 5, "f64": 6}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}
DTYPE_BYTES = {"bool": 1, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8}

# fsl_specialize_policy (fsl/jit_session.h).
POLICIES = {"reduced": 0, "all": 1, "none": 2}


class Tensor(ctypes.Structure):
    """fsl_tensor: data, dtype, rank, sizes and strides (in elements)."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * FSL_MAX_RANK),
        ("strides", ctypes.c_int64 * FSL_MAX_RANK),
    ]


def descriptor(shape, dtype, strides=None, data=None):
    """An fsl_tensor for `shape` (a sequence of ints) of `dtype` ("bf16", ... or its
    fsl_dtype code): contiguous row-major unless `strides` are given; `data` an address
    (int) or None (a null pointer: fsl_jit_session_prepare then checks descriptors and
    sizes only)."""
    shape = [int(s) for s in shape]
    if len(shape) > FSL_MAX_RANK:
        raise ValueError("rank %d is more than FSL_MAX_RANK (%d)" % (len(shape), FSL_MAX_RANK))
    if strides is None:
        strides, step = [0] * len(shape), 1
        for d in range(len(shape) - 1, -1, -1):
            strides[d] = step
            step *= max(shape[d], 1)
    code = DTYPES[dtype] if isinstance(dtype, str) else int(dtype)
    t = Tensor()
    t.data = data or None
    t.dtype = code
    t.rank = len(shape)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        t.sizes[d] = size
        t.strides[d] = int(stride)
    return t


class ProgramOptions(ctypes.Structure):
    _fields_ = [
        ("runtime_dims", ctypes.c_char_p),
        ("target", ctypes.c_char_p),
        ("stdlib_dir", ctypes.c_char_p),
        ("tuning_database", ctypes.c_char_p),
    ]


class SessionOptions(ctypes.Structure):
    _fields_ = [
        ("policy", ctypes.c_int),
        ("arch", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
    ]


class _Launch(ctypes.Structure):
    _fields_ = [
        ("kernel", ctypes.c_char * 128),
        ("grid", ctypes.c_int64 * 3),
        ("block", ctypes.c_int64 * 3),
        ("shared_bytes", ctypes.c_int64),
        ("cluster", ctypes.c_int64 * 3),
        ("grid_from_occupancy", ctypes.c_int),
        ("tensor_maps", ctypes.c_int),
        ("cooperative", ctypes.c_int),
    ]


class _Workspace(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 128),
        ("bytes", ctypes.c_int64),
    ]


class LaunchInfo(ctypes.Structure):
    """fsl_jit_launch_info."""

    _fields_ = [
        ("specialization", ctypes.c_char * 256),
        ("cache_path", ctypes.c_char * 1024),
        ("memory_hit", ctypes.c_int),
        ("disk_hit", ctypes.c_int),
        ("launch_count", ctypes.c_int),
        ("launches", _Launch * FSL_JIT_MAX_LAUNCHES),
        ("workspace_count", ctypes.c_int),
        ("workspaces", _Workspace * FSL_JIT_MAX_WORKSPACES),
    ]

    def to_dict(self):
        return {
            "specialization": self.specialization.decode(),
            "cache_path": self.cache_path.decode(),
            "memory_hit": bool(self.memory_hit),
            "disk_hit": bool(self.disk_hit),
            "launches": [
                {
                    "kernel": self.launches[i].kernel.decode(),
                    "grid": tuple(self.launches[i].grid),
                    "block": tuple(self.launches[i].block),
                    "shared_bytes": self.launches[i].shared_bytes,
                    "cluster": tuple(self.launches[i].cluster),
                    "grid_from_occupancy": bool(self.launches[i].grid_from_occupancy),
                    "tensor_maps": self.launches[i].tensor_maps,
                    "cooperative": bool(self.launches[i].cooperative),
                }
                for i in range(self.launch_count)
            ],
            "workspaces": [
                {
                    "name": self.workspaces[i].name.decode(),
                    "bytes": self.workspaces[i].bytes,
                }
                for i in range(self.workspace_count)
            ],
        }


class Stats(ctypes.Structure):
    """fsl_jit_stats."""

    _fields_ = [
        (name, ctypes.c_int64)
        for name in (
            "calls",
            "refused",
            "memory_hits",
            "specializations",
            "nvrtc_compiles",
            "launches",
            "tensor_maps_encoded",
        )
    ]

    def to_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


_p = ctypes.c_void_p
_char_p = ctypes.c_char_p
_size = ctypes.c_size_t
_int = ctypes.c_int
_status = ctypes.c_int
_TensorArray = ctypes.POINTER(ctypes.POINTER(Tensor))
_DoubleArray = ctypes.POINTER(ctypes.c_double)

_PROTOTYPES = {
    "fsl_program_load": (_status, [_char_p, ctypes.POINTER(ProgramOptions), ctypes.POINTER(_p), ctypes.c_char_p, _size]),
    "fsl_program_load_text": (_status, [_char_p, _char_p, ctypes.POINTER(ProgramOptions), ctypes.POINTER(_p), ctypes.c_char_p, _size]),
    "fsl_program_free": (None, [_p]),
    "fsl_program_fusion_count": (_int, [_p]),
    "fsl_program_fusion_name": (_char_p, [_p, _int]),
    "fsl_program_arch": (_char_p, [_p]),
    "fsl_program_target": (_char_p, [_p]),
    "fsl_program_signature": (_char_p, [_p, _char_p]),
    "fsl_program_specialize": (_status, [_p, _char_p, ctypes.POINTER(_char_p), ctypes.POINTER(ctypes.c_int64), _int, ctypes.POINTER(_p), ctypes.c_char_p, _size]),
    "fsl_specialization_source": (_char_p, [_p]),
    "fsl_specialization_launch": (_char_p, [_p]),
    "fsl_specialization_name": (_char_p, [_p]),
    "fsl_specialization_free": (None, [_p]),
    "fsl_jit_session_create": (_status, [_p, ctypes.POINTER(SessionOptions), ctypes.POINTER(_p), ctypes.c_char_p, _size]),
    "fsl_jit_session_destroy": (None, [_p]),
    "fsl_jit_session_launch": (_status, [_p, _char_p, _TensorArray, _int, _DoubleArray, _int, _p, ctypes.c_char_p, _size]),
    "fsl_jit_session_prepare": (_status, [_p, _char_p, _TensorArray, _int, _DoubleArray, _int, ctypes.POINTER(LaunchInfo), ctypes.c_char_p, _size]),
    "fsl_jit_session_stats": (None, [_p, ctypes.POINTER(Stats)]),
}


def _candidates(library):
    """Where libfsl.so is looked for, in order (docs/python.md)."""
    if library:
        yield str(library), "library="
        return
    env = os.environ.get("FSL_LIBRARY")
    if env:
        yield env, "$FSL_LIBRARY"
        return
    yield from _places.library_places()


def _preload_nvrtc():
    """Loads libnvrtc.so.13 globally from where PyTorch's CUDA wheels or a toolkit keep
    it, so that libfsl.so's dependency on it is met by its soname. True if one loaded."""
    for place in _places.nvrtc_places():
        try:
            ctypes.CDLL(place, mode=ctypes.RTLD_GLOBAL)
            return True
        except OSError:
            continue
    return False


_libraries = {}


class Library:
    """libfsl.so, loaded once per path."""

    def __init__(self, handle, path):
        self.path = path
        self._handle = handle
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(handle, name)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)


def load_library(library=None):
    """The C library: `library` (a path), else $FSL_LIBRARY, else the package's own
    (fslc/lib/, a wheel's), the installation's lib/, the repository's build/lib/, else the
    loader's search path (fslc/_places.py). Raises FslLibraryError naming every place
    tried."""
    tried = []
    for path, where in _candidates(library):
        is_path = os.sep in path
        if is_path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, where))
            continue
        key = os.path.realpath(path) if is_path else path
        if key in _libraries:
            return _libraries[key]
        try:
            handle = ctypes.CDLL(path)
        except OSError as error:
            if "libnvrtc" in str(error) and _preload_nvrtc():
                try:
                    handle = ctypes.CDLL(path)
                except OSError as again:
                    tried.append("%s (%s): %s" % (path, where, again))
                    continue
            else:
                tried.append("%s (%s): %s" % (path, where, error))
                continue
        _libraries[key] = Library(handle, path)
        return _libraries[key]
    raise FslLibraryError("cannot load %s; tried:\n  %s" % (LIBRARY_NAME, "\n  ".join(tried)))


def error_buffer():
    return ctypes.create_string_buffer(ERROR_SIZE)


def check(status, buffer):
    """Raises the exception of a non-zero status with the C API's message."""
    if status != 0:
        raise error_for(status, buffer.value.decode(errors="replace"))


def encode(text):
    return None if text is None else str(text).encode()
