"""Programs and fusions over the C API (no torch): load a .fsl file, read each fusion's
signature, prepare or launch it with fsl_tensor descriptors. The PyTorch side
(fslc/_torch.py) builds on this and is imported only when torch is."""

import ctypes
import importlib.util
import math
import os
import string
import sys
import warnings

from . import _capi, _device, _places
from ._ops import build as _ops_build
from .errors import FslArgumentError, FslError, op_error


class Param:
    """A tensor or scalar of a fusion's signature."""

    def __init__(self, kind, name, dtype, role=None, alignment=0, dims=(), default=None,
                 strided=False):
        self.kind = kind  # "tensor" or "scalar"
        self.name = name
        self.dtype = dtype  # "bf16", "f32", ...
        self.role = role  # tensors: "in", "inout" or "out"
        self.alignment = alignment
        self.dims = tuple(dims)
        self.default = default  # scalars: a float, or None
        # tensors: a `strided` input, passed at its own strides (the innermost 1); every
        # other tensor is passed contiguous, as the C API checks
        self.strided = strided

    def __repr__(self):
        if self.kind == "tensor":
            return "%s: %s%s[%s]" % (
                self.name,
                ("strided " if self.strided else "") if self.role == "in" else self.role + " ",
                self.dtype,
                ", ".join(self.dims),
            )
        return "%s: %s%s" % (
            self.name,
            self.dtype,
            "" if self.default is None else " = %r" % self.default,
        )


class Signature:
    """A fusion's signature, parsed from fsl_program_signature: the signature part of
    the fusion's launch contract (compiler/codegen/LaunchContract.h), serialized as the
    launch metadata text (jit/src/launch_plan.h): its dimensions (a static one with its
    extent, None for a runtime one), the ones its reductions reduce, its tensors in the
    launcher's order and its scalars. Nothing here is derived again from the .fsl file:
    what Python checks itself (fslc/_torch.py) is read from these tables."""

    def __init__(self, text):
        self.text = text
        self.fusion = None
        self.dims = {}  # name -> extent or None, in order
        self.reduced = []
        self.backward = []  # the fusions computing its gradients (a `backward` clause)
        self.same_gradients = []  # (input, source): input's gradient is source's
        self.params = []  # tensors and scalars in declaration order, outputs last
        for number, line in enumerate(text.splitlines(), 1):
            tokens = line.split()
            if not tokens:
                continue
            what = tokens[0]
            try:
                if what == "fusion":
                    self.fusion = tokens[1]
                elif what == "dim":
                    self.dims[tokens[1]] = int(tokens[3]) if tokens[2] == "static" else None
                elif what == "reduced":
                    self.reduced.append(tokens[1])
                elif what == "backward":
                    if len(tokens) < 2:
                        raise IndexError
                    self.backward = tokens[1:]
                elif what == "same_gradient":
                    self.same_gradients.append((tokens[1], tokens[2]))
                elif what == "tensor":
                    strided = len(tokens) > 5 and tokens[5] == "strided"
                    dims = tokens[6:] if strided else tokens[5:]
                    if not dims:
                        raise IndexError
                    self.params.append(
                        Param("tensor", tokens[1], tokens[2], tokens[3], int(tokens[4]), dims,
                              strided=strided)
                    )
                elif what == "scalar":
                    default = float(tokens[3]) if len(tokens) > 3 else None
                    self.params.append(Param("scalar", tokens[1], tokens[2], default=default))
            except (IndexError, ValueError):
                raise FslError("cannot read line %d of the signature: %r" % (number, line))
        self.tensors = [p for p in self.params if p.kind == "tensor"]  # the launcher's order
        self.scalars = [p for p in self.params if p.kind == "scalar"]
        self.inputs = [p for p in self.params if p.kind == "scalar" or p.role != "out"]
        self.outputs = [p for p in self.tensors if p.role == "out"]
        self.inout = [p for p in self.tensors if p.role == "inout"]
        # Per dimension, in order: its static extent (None: runtime) and the input tensors'
        # axes of it, in the launcher's order. The first axis of a runtime dimension
        # defines its size and every other must match it, as the launcher checks; outputs
        # are left out (this package allocates them from these sizes).
        self.input_axes = [
            (dim, extent, [(p, axis) for p in self.tensors if p.role != "out"
                           for axis, name in enumerate(p.dims) if name == dim])
            for dim, extent in self.dims.items()
        ]

    def specialized_dims(self, policy):
        """The runtime dimensions a session specializes on under `policy` (as
        jit/src/session.cpp chooses them): "reduced", the default, takes the dimensions
        some reduction reduces and the innermost of each tensor of two or more dimensions.
        (A specialization that does not compile so falls back to the reduced ones alone;
        keyed by these, a call counts as new at sizes that may need no new kernel, never
        the other way round: what CUDA-graph capture needs of it.)"""
        runtime = [d for d, extent in self.dims.items() if extent is None]
        if policy == "none":
            return []
        if policy == "all":
            return runtime
        innermost = {p.dims[-1] for p in self.tensors if len(p.dims) >= 2}
        return [d for d in runtime if d in self.reduced or d in innermost]

    def op_schema(self):
        """The schema of the fusion's torch custom op (fslc/_torch.py)."""
        return op_schema(self)

    def __repr__(self):
        outs = ", ".join(repr(p) for p in self.outputs)
        return "%s(%s) -> (%s)" % (self.fusion, ", ".join(repr(p) for p in self.inputs), outs)


class GradientPlan:
    """How autograd runs a forward fusion's backward fusions (its `backward` clause, checked
    by the compiler: docs/language.md, Gradients), from the signatures alone:

    - saved: the forward tensors (inputs, then outputs, by name) some backward fusion
      reads, which the forward saves for backward;
    - calls: per backward fusion, in order, its name and its inputs' sources:
      ("saved", name), ("grad", index of the forward output) or ("scalar", name);
    - results: per backward fusion, the forward input each of its outputs is the gradient
      of (grad_<input>);
    - same: (input, source) pairs, input's gradient being source's (`grad_residual =
      grad_x` in the clause: the tensor a backward fusion computes for x, returned for
      residual too, as autograd does for an add's operands);
    - differentiable: the indexes of the forward outputs whose gradients some backward
      fusion reads; the others (row statistics such as rstd) are not differentiable.
    """

    def __init__(self, forward, backwards):
        inputs = [p.name for p in forward.inputs if p.kind == "tensor"]
        outputs = [p.name for p in forward.outputs]
        scalars = [p.name for p in forward.scalars]
        used, self.calls, self.results, grads = set(), [], [], set()
        for backward in backwards:
            sources = []
            for p in backward.inputs:
                if p.kind == "scalar" and p.name in scalars:
                    sources.append(("scalar", p.name))
                elif p.name in inputs or p.name in outputs:
                    sources.append(("saved", p.name))
                    used.add(p.name)
                elif p.name.startswith("grad_") and p.name[5:] in outputs:
                    sources.append(("grad", outputs.index(p.name[5:])))
                    grads.add(outputs.index(p.name[5:]))
                else:
                    raise FslError("%s: parameter %s of backward fusion %s is no input, output "
                                   "or output gradient of %s" % (forward.fusion, p.name,
                                                                 backward.fusion, forward.fusion))
            results = []
            for p in backward.outputs:
                if not (p.name.startswith("grad_") and p.name[5:] in inputs):
                    raise FslError("%s: output %s of backward fusion %s is not the gradient of "
                                   "an input" % (forward.fusion, p.name, backward.fusion))
                results.append(p.name[5:])
            self.calls.append((backward.fusion, sources))
            self.results.append(results)
        computed = {name for results in self.results for name in results}
        self.same = []
        for input, source in getattr(forward, "same_gradients", []):
            if input not in inputs or source not in computed:
                raise FslError("%s: the gradient of %s is said to be %s's, which no backward "
                               "fusion computes" % (forward.fusion, input, source))
            self.same.append((input, source))
        self.saved = [n for n in inputs + outputs if n in used]
        self.differentiable = sorted(grads)


# The torch.library schema type of each scalar type (the JIT refuses f16 and bf16 ones).
SCHEMA_SCALARS = {"f32": "float", "f64": "float", "f16": "float", "bf16": "float",
                  "i32": "int", "i64": "int", "bool": "bool"}


def _default(kind, value):
    if kind == "bool":
        return "True" if value else "False"
    if kind == "int":
        return str(int(value))
    return repr(float(value))


def op_schema_defaults(signature):
    """The scalars whose defaults the op's schema keeps: those every later parameter of
    which has one (a finite default)."""
    keep, trailing = set(), True
    for p in reversed(signature.inputs):
        finite = p.default is not None and math.isfinite(p.default)
        if trailing and p.kind == "scalar" and finite:
            keep.add(p.name)
        else:
            trailing = False
    return keep


def op_schema(signature):
    """The op's schema: "(Tensor x, Tensor(a!) residual, Tensor weight, float eps=1e-06)
    -> Tensor". A scalar keeps its default only when every later parameter has one."""
    keep = op_schema_defaults(signature)
    letters = iter(string.ascii_lowercase)
    parts = []
    for p in signature.inputs:
        if p.kind == "tensor":
            alias = "(%s!)" % next(letters) if p.role == "inout" else ""
            parts.append("Tensor%s %s" % (alias, p.name))
        else:
            kind = SCHEMA_SCALARS.get(p.dtype, "float")
            default = "=" + _default(kind, p.default) if p.name in keep else ""
            parts.append("%s %s%s" % (kind, p.name, default))
    n = len(signature.outputs)
    returns = "()" if n == 0 else "Tensor" if n == 1 else "(%s)" % ", ".join(["Tensor"] * n)
    return "(%s) -> %s" % (", ".join(parts), returns)


def _tensor_array(descriptors):
    array = (ctypes.POINTER(_capi.Tensor) * max(len(descriptors), 1))()
    for i, d in enumerate(descriptors):
        array[i] = ctypes.pointer(d) if d is not None else None
    return array


def _scalar_array(scalars):
    values = [float(s) for s in scalars]
    return (ctypes.c_double * max(len(values), 1))(*values), len(values)


class Fusion:
    """One fusion of a program. Calling it with torch tensors runs the custom op
    (fslc/_torch.py); prepare() and launch() take fsl_tensor descriptors (no torch)."""

    def __init__(self, program, name):
        self.program = program
        self.name = name
        text = program._lib.fsl_program_signature(program._handle, name.encode())
        if text is None:
            raise FslArgumentError("no signature for fusion '%s'" % name)
        self.signature = Signature(text.decode())
        self._name_bytes = name.encode()
        self.op = None  # the torch op, once registered
        self.op_name = None  # "fsl::rms_norm_add"
        self.op_path = None  # "compiled" or "ctypes" (fslc/_torch.py)
        self.autograd = False  # torch.library.register_autograd done (a `backward` clause)
        # The compiled path's eager calls (fslc/_torch.py sets them): the op overload called
        # when autograd records nothing (an op with a `backward` pairing: its `no_grad`
        # overload), the one with the autograd kernel when it may (None: no pairing), and
        # the checks of both, bound once (an eager call's host time: docs/python.md).
        self._eager_entry = None
        self._graph_entry = None
        # The op's direct call from Python, tried first (fslc/_ops/ext.cpp; None without it).
        self._direct_call = None
        self._grad_enabled = None
        self._is_compiling = None
        self._warm = set()  # (device, specialized values) launched outside graph capture

    def __repr__(self):
        return "<fsl fusion %r>" % self.signature

    def _call(self, function, descriptors, scalars, last):
        if not self.program._session:
            raise FslError("%s: the program %s is closed" % (self.name, self.program.source))
        error = _capi.error_buffer()
        tensors = _tensor_array(descriptors)
        values, count = _scalar_array(scalars)
        status = function(
            self.program._session, self._name_bytes, tensors, len(descriptors), values, count,
            last, error, len(error)
        )
        _capi.check(status, error)

    def prepare(self, descriptors, scalars=()):
        """fsl_jit_session_prepare: checks, specializes and compiles (NVRTC, no GPU) and
        returns what a launch would do, as a dict (specialization, cache_path,
        memory_hit, disk_hit, launches: kernel, grid, block, shared_bytes)."""
        info = _capi.LaunchInfo()
        self._call(self.program._lib.fsl_jit_session_prepare, descriptors, scalars, ctypes.byref(info))
        return info.to_dict()

    def launch(self, descriptors, scalars=(), stream=None):
        """fsl_jit_session_launch on `stream` (a cudaStream_t as an int; None: the legacy
        default stream). A CUDA context must be current."""
        self._call(self.program._lib.fsl_jit_session_launch, descriptors, scalars, ctypes.c_void_p(stream or None))

    def __call__(self, *args, **kwargs):
        # Eager calls of the compiled path go to the op's overload directly; under
        # torch.compile (tracing) the op itself, which Dynamo knows.
        entry = self._eager_entry
        if entry is not None and not self._is_compiling():
            # Its kernel raises "<FslError class>: message" in the built-in exception the
            # class derives from; the caller gets the class.
            try:
                # An op with a backward pairing has a Python autograd kernel on the way;
                # a call that records no graph (grad mode off, or no tensor that
                # requires grad) goes to its `no_grad` overload, which has none.
                graph = self._graph_entry
                if graph is not None and self._grad_enabled():
                    for value in args:
                        if getattr(value, "requires_grad", False):
                            return graph(*args, **kwargs)
                    for value in kwargs.values():
                        if getattr(value, "requires_grad", False):
                            return graph(*args, **kwargs)
                return entry(*args, **kwargs)
            except (TypeError, ValueError, RuntimeError) as error:
                mapped = op_error(error)
                if mapped is None:
                    raise
                raise mapped from None
        op = self.op
        if op is None:
            self.program._register_torch(asked=True)
            return self(*args, **kwargs)
        return op(*args, **kwargs)


def _program_options(runtime_dims, target, stdlib, tuning_db=None):
    if runtime_dims is None:
        dims = None
    elif isinstance(runtime_dims, str):
        dims = runtime_dims
    else:
        dims = ",".join(runtime_dims)
    options = _capi.ProgramOptions(_capi.encode(dims), _capi.encode(target), _capi.encode(stdlib),
                                   _capi.encode(tuning_db))
    return options


def _tuning_database(tuning_db, stdlib, target, source=None):
    """The database a program's `= auto` schedules consult: "auto" is the stdlib's for the
    target (stdlib/tuning/<target>.fsl) when it has one; None the same for a program that
    is one of the stdlib's own files (`fslc.load(".../std/norms.fsl")`: the schedules tuning
    recorded for exactly those fusions), else fsl.toml's, if any; "" none at all; else the
    path given."""
    if tuning_db is None and source is not None and _in_stdlib(source, stdlib):
        tuning_db = "auto"
    if tuning_db is None or tuning_db == "":
        return tuning_db
    if tuning_db != "auto":
        return os.fspath(tuning_db)
    if stdlib is None:
        return None
    path = os.path.join(stdlib, "tuning", (target or "h200") + ".fsl")
    return path if os.path.isfile(path) else None


def _in_stdlib(source, stdlib):
    """Whether `source` is a file of the stdlib's `std/` folder (links resolved)."""
    if stdlib is None:
        return False
    folder = os.path.realpath(os.path.join(stdlib, "std"))
    return os.path.dirname(os.path.realpath(source)) == folder


class Program:
    """A loaded .fsl program and its JIT session. Each fusion is an attribute
    (`prog.rms_norm_add`) unless its name is one of Program's own; `prog[name]` and
    `prog.fusions` always work."""

    def __init__(self, source, *, text=None, runtime_dims="auto", policy="reduced", target=None,
                 cache_dir=None, library=None, stdlib=None, arch=None, namespace="fsl",
                 torch_ops=None, ops=None, tuning_db=None):
        if policy not in _capi.POLICIES:
            raise FslArgumentError(
                "unknown specialization policy %r (reduced, all or none)" % (policy,)
            )
        self._handle = None
        self._session = None
        self._op_releases = []  # the compiled path's ops, told when the session goes
        _ops_build.mode(ops)  # refuses an unknown choice before anything is loaded
        self.ops = ops
        self._lib = _capi.load_library(library)
        self.source = os.fspath(source)
        self.policy = policy
        self.namespace = namespace
        # The package's own stdlib (a wheel's), the installation's, the repository's
        # (fslc/_places.py); None leaves it to libfsl.so.
        stdlib = _places.find_stdlib(stdlib)
        self.stdlib = stdlib
        # Without target=, the current device's (fslc/_device.py); without a GPU, the
        # library's default.
        self.device = None
        if target is None:
            self.device = _device.current_device()
            if self.device is not None:
                target = _device.device_target(stdlib, self.device)
        self.tuning_db = _tuning_database(tuning_db, stdlib, target, self.source if text is None else None)
        if runtime_dims == "auto":
            # Every static dimension of the file's fusions, so that sizes come from the
            # tensors: load once to read them, then again with them left runtime.
            self._handle = self._load(text, _program_options(None, target, stdlib, self.tuning_db))
            names = []
            for fusion in self._fusion_names():
                sig = Signature(self._lib.fsl_program_signature(self._handle, fusion.encode()).decode())
                names += [d for d, extent in sig.dims.items() if extent is not None and d not in names]
            if names:
                self._lib.fsl_program_free(self._handle)
                self._handle = None
                self._handle = self._load(text, _program_options(names, target, stdlib, self.tuning_db))
            runtime_dims = names
        else:
            self._handle = self._load(text, _program_options(runtime_dims, target, stdlib,
                                                             self.tuning_db))
        self.runtime_dims = runtime_dims
        self.arch = self._lib.fsl_program_arch(self._handle).decode()
        self.target = self._lib.fsl_program_target(self._handle).decode()
        options = _capi.SessionOptions(_capi.POLICIES[policy], _capi.encode(arch), _capi.encode(cache_dir))
        session = ctypes.c_void_p()
        error = _capi.error_buffer()
        _capi.check(
            self._lib.fsl_jit_session_create(self._handle, ctypes.byref(options), ctypes.byref(session), error, len(error)),
            error,
        )
        self._session = session
        self.fusions = {}
        for name in self._fusion_names():
            fusion = Fusion(self, name)
            self.fusions[name] = fusion
            # Not over Program's methods and attributes (target, device, ...).
            if not hasattr(type(self), name) and name not in self.__dict__ and not name.startswith("_"):
                setattr(self, name, fusion)
        if torch_ops or (torch_ops is None and "torch" in sys.modules) or (
            torch_ops is None and importlib.util.find_spec("torch") is not None
        ):
            self._register_torch(asked=bool(torch_ops))

    def _load(self, text, options):
        handle = ctypes.c_void_p()
        error = _capi.error_buffer()
        if text is None:
            status = self._lib.fsl_program_load(
                _capi.encode(self.source), ctypes.byref(options), ctypes.byref(handle), error, len(error)
            )
        else:
            status = self._lib.fsl_program_load_text(
                _capi.encode(self.source), _capi.encode(text), ctypes.byref(options),
                ctypes.byref(handle), error, len(error),
            )
        _capi.check(status, error)
        return handle

    def _fusion_names(self):
        count = self._lib.fsl_program_fusion_count(self._handle)
        return [self._lib.fsl_program_fusion_name(self._handle, i).decode() for i in range(count)]

    def _register_torch(self, asked=True):
        from . import _torch  # imports torch

        try:
            _torch.register_program(self)
        except FslError as error:
            # An importable torch older than 2.4 (Debian 12's 1.13) without the compiled
            # path leaves the program without ops: a warning where the ops were not asked
            # for, an error where they were (torch_ops=True, or a fusion's call).
            if asked or not getattr(error, "old_torch", False):
                raise
            warnings.warn(
                "%s; its fusions are not registered as torch ops (torch_ops=False silences this)"
                % error,
                RuntimeWarning,
                stacklevel=4,
            )
        return self.fusions

    def __getitem__(self, name):
        try:
            return self.fusions[name]
        except KeyError:
            raise FslArgumentError(
                "no fusion '%s' in %s (fusions: %s)" % (name, self.source, ", ".join(self.fusions))
            ) from None

    def __getattr__(self, name):
        # Only reached for names that are not attributes: an unknown fusion.
        if name.startswith("__") or "fusions" not in self.__dict__:
            raise AttributeError(name)
        raise AttributeError(
            "no fusion '%s' in %s (fusions: %s)" % (name, self.source, ", ".join(self.fusions))
        )

    @property
    def op_paths(self):
        """The path each fusion's torch op takes: {"rms_norm": "compiled", ...} ("ctypes";
        None before the ops are registered)."""
        return {name: fusion.op_path for name, fusion in self.fusions.items()}

    def stats(self):
        """fsl_jit_stats of the session, as a dict."""
        stats = _capi.Stats()
        self._lib.fsl_jit_session_stats(self._session, ctypes.byref(stats))
        return stats.to_dict()

    def specialize(self, fusion, **dims):
        """fsl_program_specialize: (name, CUDA source, launch metadata) of `fusion` with
        the given dimensions static, e.g. specialize("rms_norm_add", H=7168)."""
        if not self._handle:
            raise FslError("the program %s is closed" % self.source)
        names = (ctypes.c_char_p * max(len(dims), 1))(*[_capi.encode(n) for n in dims])
        values = (ctypes.c_int64 * max(len(dims), 1))(*[int(v) for v in dims.values()])
        handle = ctypes.c_void_p()
        error = _capi.error_buffer()
        _capi.check(
            self._lib.fsl_program_specialize(
                self._handle, _capi.encode(fusion), names, values, len(dims), ctypes.byref(handle),
                error, len(error),
            ),
            error,
        )
        try:
            return (
                self._lib.fsl_specialization_name(handle).decode(),
                self._lib.fsl_specialization_source(handle).decode(),
                self._lib.fsl_specialization_launch(handle).decode(),
            )
        finally:
            self._lib.fsl_specialization_free(handle)

    def close(self):
        """Frees the session and the program (their compiled kernels stay loaded in the
        CUDA contexts they were launched in). Registered torch ops fail afterwards."""
        for release in self.__dict__.get("_op_releases", ()):
            release()
        self.__dict__["_op_releases"] = []
        if self.__dict__.get("_session"):
            self._lib.fsl_jit_session_destroy(self._session)
            self._session = None
        if self.__dict__.get("_handle"):
            self._lib.fsl_program_free(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<fsl program %s: %s>" % (self.source, ", ".join(self.fusions))


def load(path, runtime_dims="auto", policy="reduced", target=None, cache_dir=None, library=None,
         stdlib=None, arch=None, namespace="fsl", torch_ops=None, ops=None, tuning_db=None):
    """Loads a .fsl file: a Program whose attributes are its fusions (docs/python.md).

    runtime_dims: static dimensions left runtime sizes ("H", "H,S", a list); "auto"
        (default): every static dimension of the file's fusions, so sizes come from the
        tensors; None or "": none (the declared sizes only).
    policy: the runtime dimensions the JIT specializes on: "reduced" (the ones some
        reduction reduces, default), "all", "none".
    target: a target of the stdlib ("h200"); None: the one matching the current GPU
        (compute capability and SM count; refused for an unknown GPU), without a GPU
        the stdlib's default (h200).
    cache_dir: the JIT's on-disk cache; None: $FSL_CACHE_DIR, else ~/.cache/fslc.
    library: the path of libfsl.so; None: $FSL_LIBRARY, the package's own (a wheel's),
        the installation's lib/, the repository's build/lib, the loader's path.
    stdlib: the stdlib directory; None: $FSLC_STDLIB, the package's own (a wheel's), the
        installation's, the repository's.
    arch: compile for this architecture ("sm_90a") instead of the current device's.
    namespace: the torch.library namespace of the custom ops.
    torch_ops: register the fusions as torch custom ops now (None: when torch imports).
    ops: the path of the torch ops: "compiled" (the C++ extension, built on first use),
        "ctypes" (Python through ctypes) or "auto" (compiled, else ctypes with a warning);
        None: $FSLC_OPS, else "auto". program.op_paths says which each op took.
    tuning_db: a tuning database (docs/tuning.md) whose entries `= auto` schedules take at
        the sizes the JIT specializes, before the heuristics: a path, "auto" (the stdlib's
        for the target, stdlib/tuning/h200.fsl), "" (none, not fsl.toml's either), or None
        (default: "auto" for a file of the stdlib's std/ folder, else fsl.toml's
        tuning_database, if any). program.tuning_db says which.
    """
    return Program(path, runtime_dims=runtime_dims, policy=policy, target=target,
                   cache_dir=cache_dir, library=library, stdlib=stdlib, arch=arch,
                   namespace=namespace, torch_ops=torch_ops, ops=ops, tuning_db=tuning_db)


def load_text(name, text, **options):
    """Loads a program from its text; `name` names it in diagnostics, and imports are
    found relative to its directory. Options as for load()."""
    return Program(name, text=text, **options)
