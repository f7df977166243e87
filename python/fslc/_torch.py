"""PyTorch integration: each fusion as a torch op (imported only with torch).

Each op takes one of two paths (docs/python.md; fslc/_ops/build.py decides, once a process):

- compiled: the op's schema and fake implementation are defined here, and its CUDA kernel is
  fslc/_ops/ext.cpp's boxed C++ kernel, which checks, allocates and launches through the C
  API with no Python on the way (a plan of the op from fslc/_ops/plan.py tells it what to
  check and where each value goes);
- ctypes: a torch.library custom op whose implementation is the Python below, calling the
  C API through ctypes.

Both make the same checks with the same messages and exceptions. The op
`<namespace>::<fusion>` takes the fusion's parameters in declaration order (tensors, and
scalars with their defaults), mutates its inout tensors in place, and returns its other
outputs, newly allocated: one tensor, a tuple, or None. Its fake (meta) implementation
computes the outputs' shapes and dtypes from the signature without calling the C library,
so the op works under torch.compile; its real implementation checks devices, dtypes, ranks
and sizes, then launches through the JIT session on the tensors' device's current stream,
so it can be captured in a CUDA graph once it has run at those sizes outside capture
(docs/python.md).
"""

import ctypes
import keyword
import warnings

import torch

from . import _capi
from ._ops import build as _build
from ._ops.plan import op_plan
from ._program import SCHEMA_SCALARS, op_schema_defaults
from .errors import (
    FslArgumentError,
    FslCaptureError,
    FslDeviceError,
    FslDriverError,
    FslDtypeError,
    FslError,
    FslExtensionError,
    FslRankError,
    FslSizeError,
    op_error,
)

TORCH_DTYPES = {
    "bool": torch.bool,
    "i32": torch.int32,
    "i64": torch.int64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
}
FSL_DTYPES = {dtype: name for name, dtype in TORCH_DTYPES.items()}


class _Driver:
    """The few CUDA driver calls the launch needs around the C API: the tensors' device's
    primary context (PyTorch's) made current, and whether a stream is capturing."""

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as error:
            raise FslDriverError("cannot load the CUDA driver (libcuda.so.1): %s" % error)
        void_p = ctypes.c_void_p
        self._calls = {}
        for name, argtypes in (
            ("cuInit", [ctypes.c_uint]),
            ("cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
            ("cuDevicePrimaryCtxRetain", [ctypes.POINTER(void_p), ctypes.c_int]),
            ("cuCtxGetCurrent", [ctypes.POINTER(void_p)]),
            ("cuCtxSetCurrent", [void_p]),
            ("cuStreamIsCapturing", [void_p, ctypes.POINTER(ctypes.c_int)]),
        ):
            function = getattr(lib, name)
            function.restype = ctypes.c_int
            function.argtypes = argtypes
            self._calls[name] = function
        self._lib = lib
        self._primary = {}

    def _call(self, name, *args):
        result = self._calls[name](*args)
        if result != 0:
            raise FslDriverError("%s failed with CUresult %d" % (name, result))

    def make_current(self, index):
        """Makes device `index`'s primary context current; returns the context to
        restore afterwards, or None."""
        context = self._primary.get(index)
        if context is None:
            self._call("cuInit", 0)
            device = ctypes.c_int()
            self._call("cuDeviceGet", ctypes.byref(device), index)
            context = ctypes.c_void_p()
            self._call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device.value)
            self._primary[index] = context
        current = ctypes.c_void_p()
        self._call("cuCtxGetCurrent", ctypes.byref(current))
        if current.value == context.value:
            return None
        self._call("cuCtxSetCurrent", context)
        return current if current.value else None

    def restore(self, context):
        self._call("cuCtxSetCurrent", context)

    def is_capturing(self, stream):
        status = ctypes.c_int()
        self._call("cuStreamIsCapturing", ctypes.c_void_p(stream or None), ctypes.byref(status))
        return status.value != 0  # active or invalidated


_driver = None


def driver():
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def _bind(signature, args, kwargs):
    """The call's values by parameter name, defaults applied (as Python binds them)."""
    params = signature.inputs
    if len(args) > len(params):
        raise TypeError("%s takes %d arguments (%s), given %d" % (
            signature.fusion, len(params), ", ".join(p.name for p in params), len(args)))
    values = {p.name: a for p, a in zip(params, args)}
    names = {p.name for p in params}
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError("%s has no parameter '%s'" % (signature.fusion, name))
        if name in values:
            raise TypeError("%s: '%s' given twice" % (signature.fusion, name))
        values[name] = value
    for p in params:
        if p.name not in values:
            if p.kind == "scalar" and p.default is not None:
                values[p.name] = p.default
            else:
                raise TypeError("%s: missing argument '%s'" % (signature.fusion, p.name))
    return values


def _check(signature, values):
    """The checks the C API makes on descriptors, made on the torch tensors (fake ones
    too): a CUDA tensor, one device, dtype, rank, sizes. Returns the device and the
    dimensions' sizes (from the inputs, as the generated launcher takes them).

    Python keeps these checks of its own because a fake tensor (torch.compile's meta
    implementation) never reaches the C API; they are driven by the tables of the
    signature the C API returns (fsl_program_signature: dtypes, ranks, and which input
    axes define and must match each dimension), not derived again here. A real call is
    checked once more by the C API, which also checks what only it knows (layouts, data
    pointers, alignment, overlaps, launch limits)."""
    device, first = None, None
    inputs = [p for p in signature.tensors if p.role != "out"]
    for p in inputs:
        t = values[p.name]
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: expected a torch.Tensor, got %s" % (p.name, type(t).__name__))
        if t.device.type != "cuda":
            raise FslDeviceError("%s: a %s tensor, expected a CUDA tensor" % (p.name, t.device.type))
        if device is None:
            device, first = t.device, p.name
        elif t.device != device:
            raise FslDeviceError("%s: on %s, %s is on %s" % (p.name, t.device, first, device))
        if t.dtype != TORCH_DTYPES[p.dtype]:
            raise FslDtypeError("%s: dtype %s, expected %s" % (
                p.name, FSL_DTYPES.get(t.dtype, str(t.dtype).replace("torch.", "")), p.dtype), 2)
        if t.dim() != len(p.dims):
            raise FslRankError("%s: rank %d, expected %d" % (p.name, t.dim(), len(p.dims)), 3)
    dims = {}
    for dim, extent, axes in signature.input_axes:
        for p, d in axes:
            size = values[p.name].shape[d]
            if dim not in dims and extent is None:
                dims[dim] = size
                continue
            want = extent if extent is not None else dims[dim]
            if size != want:
                raise FslSizeError("%s: size %s of dimension %s, expected %s%s" % (
                    p.name, size, dim, want, " (static)" if extent is not None else ""), 4)
        if dim not in dims and extent is not None:
            dims[dim] = extent
    for p in signature.outputs:
        for dim in p.dims:
            if dim not in dims:
                raise FslArgumentError(
                    "%s: dimension %s of output %s is not the size of any input tensor"
                    % (signature.fusion, dim, p.name), 12)
    return device, dims


def _outputs(signature, device, dims):
    return [
        torch.empty([dims[d] for d in p.dims], dtype=TORCH_DTYPES[p.dtype], device=device)
        for p in signature.outputs
    ]


def _result(outputs):
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    return tuple(outputs)


def _descriptor(t, dtype):
    d = _capi.Tensor()
    d.data = t.data_ptr() or None
    d.dtype = _capi.DTYPES[dtype]
    d.rank = t.dim()
    for i, (size, stride) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i] = size
        d.strides[i] = stride
    return d


def _make_impl(fusion):
    signature = fusion.signature
    specialized = signature.specialized_dims(fusion.program.policy)

    def impl(*args, **kwargs):
        values = _bind(signature, args, kwargs)
        device, dims = _check(signature, values)
        outputs = _outputs(signature, device, dims)
        produced = iter(outputs)
        descriptors = [
            _descriptor(next(produced) if p.role == "out" else values[p.name], p.dtype)
            for p in signature.tensors
        ]
        scalars = [float(values[p.name]) for p in signature.scalars]
        empty = any(size == 0 for size in dims.values())
        index = device.index if device.index is not None else torch.cuda.current_device()
        cuda = driver()
        previous = cuda.make_current(index)
        try:
            stream = torch.cuda.current_stream(device).cuda_stream
            key = (index,) + tuple(dims[d] for d in specialized)
            capturing = cuda.is_capturing(stream)
            if capturing and not empty and key not in fusion._warm:
                raise FslCaptureError(
                    "%s: first call at %s on cuda:%d inside CUDA-graph capture: the JIT "
                    "compiles and loads its kernels on a first call, which capture cannot "
                    "hold; call it once at these sizes before capturing" % (
                        fusion.name,
                        ", ".join("%s = %s" % (d, dims[d]) for d in specialized) or "any size",
                        index))
            fusion.launch(descriptors, scalars, stream)
            if not capturing and not empty:
                fusion._warm.add(key)
        finally:
            if previous is not None:
                cuda.restore(previous)
        return _result(outputs)

    impl.__name__ = fusion.name
    return impl


def _make_fake(fusion):
    signature = fusion.signature

    def fake(*args, **kwargs):
        values = _bind(signature, args, kwargs)
        device, dims = _check(signature, values)
        return _result(_outputs(signature, device, dims))

    return fake


_taken = set()


def _exists(qualname):
    try:
        torch._C._dispatch_find_schema_or_throw(qualname, "")
        return True
    except Exception:
        return False


def _unique_name(namespace, name):
    candidate, n = name, 1
    while (namespace, candidate) in _taken or _exists("%s::%s" % (namespace, candidate)):
        n += 1
        candidate = "%s_%d" % (name, n)
    _taken.add((namespace, candidate))
    return candidate


# The torch.library.Library objects of the compiled path's op definitions: kept for the
# process, as torch.library.custom_op keeps its own (an op outlives its program, refusing
# calls once it is closed).
_libraries = []


# True while Dynamo traces (it folds the call to a constant) and while torch.export's
# non-strict tracing runs the call: Fusion.__call__ then calls the op itself (the one
# with a fake implementation) rather than the compiled path's overloads.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
if _is_compiling is None:  # torch < 2.3
    try:
        from torch._dynamo import is_compiling as _is_compiling
    except ImportError:  # no torch.compile at all

        def _is_compiling():
            return False


def _register_fake(qualname, fake, lib):
    if hasattr(torch.library, "register_fake"):
        torch.library.register_fake(qualname, fake, lib=lib)
    else:  # torch < 2.4
        torch.library.impl_abstract(qualname, fake, lib=lib)


# The overload of an op with a `backward` pairing that has no autograd formula (the
# compiled path's calls that record no graph).
NO_GRAD_OVERLOAD = "no_grad"


def _register_compiled(program, fusion, namespace, name):
    """The op through the compiled path: the schema and fake implementation from Python,
    the CUDA kernel from the extension, given the session and the launch function of the
    program's libfsl.so. Returns the path taken: "ctypes" when the extension refused the
    op (and the path is not forced)."""
    signature = fusion.signature
    lib = torch.library.Library(namespace, "FRAGMENT")
    lib.define(name + signature.op_schema())
    qualname = "%s::%s" % (namespace, name)
    _register_fake(qualname, _make_fake(fusion), lib)
    _libraries.append(lib)
    launch = ctypes.cast(program._lib.fsl_jit_session_launch, ctypes.c_void_p).value
    try:
        handle = torch.ops.fslc_ops.register_fusion(
            namespace, name, op_plan(signature, program.policy, program.source), launch,
            program._session.value)
    except Exception as error:  # noqa: BLE001 (the extension's refusal, whatever its class)
        if _build.mode(program.ops) == "compiled":
            raise FslExtensionError("%s: the compiled op path refused the op: %s" % (qualname, error))
        # The defined op gets the ctypes path's implementation as its CUDA kernel.
        warnings.warn("fslc: %s takes the ctypes path: the compiled op path refused it (%s)"
                      % (qualname, error), RuntimeWarning, stacklevel=4)
        lib.impl(name, _make_impl(fusion), "CUDA")
        return "ctypes"
    program._op_releases.append(lambda: torch.ops.fslc_ops.release(handle))
    fusion._direct_call = _build.direct_call(handle)
    if signature.backward:
        # A fusion with a `backward` pairing gets a Python autograd kernel (register_autograd),
        # which every call would pass through. Its overload `no_grad` has the same CUDA kernel
        # and no autograd formula: `prog.f` calls it when autograd records nothing (grad
        # mode off, or no tensor that requires grad), as the other ops go, with no context
        # manager around the call.
        try:
            lib.define(name + "." + NO_GRAD_OVERLOAD + signature.op_schema())
            twin = torch.ops.fslc_ops.register_fusion(
                namespace, name + "." + NO_GRAD_OVERLOAD, op_plan(signature, program.policy, program.source),
                launch, program._session.value)
        except Exception as error:  # noqa: BLE001 (the op works without it, a little slower)
            warnings.warn("fslc: %s has no overload %s (%s): its calls that record no graph "
                          "dispatch below autograd instead" % (qualname, NO_GRAD_OVERLOAD, error),
                          RuntimeWarning, stacklevel=4)
        else:
            program._op_releases.append(lambda: torch.ops.fslc_ops.release(twin))
    return "compiled"


def _register_ctypes(fusion, qualname):
    custom = torch.library.custom_op(
        qualname, _make_impl(fusion), mutates_args=tuple(p.name for p in fusion.signature.inout),
        schema=fusion.signature.op_schema()
    )
    custom.register_fake(_make_fake(fusion))
    fusion.custom_op = custom


def _register_autograd(program, fusion):
    """torch.library.register_autograd for a fusion with a `backward` clause: the forward
    saves the tensors its backward fusions read (fslc._program.GradientPlan), and backward
    calls those fusions' ops with them, the outputs' gradients (made contiguous, as every
    op wants its tensors) and the forward's scalars. An input no backward fusion computes
    the gradient of (a scalar, cos and sin of RoPE) gets None, one named as another's
    (`grad_residual = grad_x`) that tensor; an output whose gradient no
    backward fusion reads (a row statistic) is marked non-differentiable."""
    from ._program import GradientPlan

    signature = fusion.signature
    plan = GradientPlan(signature, [program[name].signature for name in signature.backward])
    names = [p.name for p in signature.inputs]
    outputs = [p.name for p in signature.outputs]
    positions = {name: i for i, name in enumerate(names)}

    def setup_context(ctx, inputs, output):
        produced = output if isinstance(output, tuple) else (output,)
        values = dict(zip(names, inputs))
        values.update(zip(outputs, produced))
        ctx.save_for_backward(*[values[name] for name in plan.saved])
        ctx.fsl_scalars = {p.name: values[p.name] for p in signature.scalars}
        still = [t for i, t in enumerate(produced) if i not in plan.differentiable]
        if still:
            ctx.mark_non_differentiable(*still)

    def backward(ctx, *grads):
        saved = dict(zip(plan.saved, ctx.saved_tensors))
        result = [None] * len(names)
        for (name, sources), targets in zip(plan.calls, plan.results):
            args = []
            for kind, what in sources:
                if kind == "saved":
                    args.append(saved[what])
                elif kind == "scalar":
                    args.append(ctx.fsl_scalars[what])
                else:  # materialized by autograd (zeros for an unused output)
                    args.append(grads[what].contiguous())
            computed = program[name].op(*args)
            computed = computed if isinstance(computed, tuple) else (computed,)
            for target, grad in zip(targets, computed):
                result[positions[target]] = grad
        for input, source in plan.same:
            result[positions[input]] = result[positions[source]]
        return tuple(result)

    torch.library.register_autograd(fusion.op_name, backward, setup_context=setup_context)


_warned_no_autograd = False


def _warn_no_autograd():
    """Once a process: this torch predates torch.library.register_autograd (2.4), so the
    ops of fusions with a `backward` clause work without an autograd formula."""
    global _warned_no_autograd
    if not _warned_no_autograd:
        _warned_no_autograd = True
        warnings.warn("torch %s has no torch.library.register_autograd (torch 2.4 or later): the "
                      "ops of fusions with a backward clause have no autograd formula" % torch.__version__,
                      stacklevel=3)


def _eager_call_source(signature, graph, direct=False):
    """The source of a fusion's own `__call__` for the compiled path: its parameters by
    name, as the op's schema has them (its defaults too), so that a call passes them on
    without packing `*args` and `**kwargs`, and the graph check looks at its tensors
    alone. With `direct`, the op's direct call (fslc/_ops/ext.cpp) comes first: it
    launches a plain eager call without the dispatcher and answers NotImplemented for the
    others, which take the op as before. None where a name cannot be a Python parameter
    (a keyword, `self`, or a leading underscore, which the generated code keeps for its
    own names): the generic `Fusion.__call__` stays."""
    names, tensors, defaults = [], [], {}
    keep = set(op_schema_defaults(signature))
    for p in signature.inputs:
        if not p.name.isidentifier() or keyword.iskeyword(p.name) or p.name == "self" or p.name.startswith("_"):
            return None, {}
        names.append(p.name)
        if p.kind == "tensor":
            tensors.append(p.name)
        elif p.name in keep:
            kind = SCHEMA_SCALARS.get(p.dtype, "float")
            defaults[p.name] = bool(p.default) if kind == "bool" else int(p.default) if kind == "int" else float(p.default)
    params = ", ".join(n + ("=_fsl_default_" + n if n in defaults else "") for n in names)
    arguments = ", ".join(names)
    lines = ["def __call__(self%s):" % (", " + params if params else ""),
             "    if _fsl_is_compiling():",
             "        return _fsl_generic(self, %s)" % arguments,
             "    try:"]
    if direct:
        lines += ["        _fsl_result = _fsl_direct(%s)" % arguments,
                  "        if _fsl_result is not _fsl_NotImplemented:",
                  "            return _fsl_result"]
    if graph:
        # The tensors first: an inference call (none requires grad) skips the grad mode.
        # `is True`: what is not a tensor (an FX proxy, whose attribute is a proxy; a
        # number) goes to the entry, whose schema records or refuses it as before.
        requires = " or ".join('_fsl_getattr(%s, "requires_grad", False) is True' % t for t in tensors)
        lines += ["        if (%s) and _fsl_grad_enabled():" % requires,
                  "            return _fsl_graph(%s)" % arguments]
    # Every name of its own starts with _fsl_ (the builtins too: a parameter may be called
    # TypeError), so no parameter shadows one.
    lines += ["        return _fsl_entry(%s)" % arguments,
              "    except (_fsl_TypeError, _fsl_ValueError, _fsl_RuntimeError) as _fsl_error:",
              "        _fsl_mapped = _fsl_op_error(_fsl_error)",
              "        if _fsl_mapped is None:",
              "            raise",
              "        raise _fsl_mapped from None"]
    return "\n".join(lines) + "\n", {"_fsl_default_" + n: v for n, v in defaults.items()}


def _install_eager_call(fusion):
    """Gives the fusion (compiled path) a class of its own whose `__call__` is generated
    from its signature (_eager_call_source): an eager call then costs the op's own host
    time and a few checks, where the generic `Fusion.__call__` spent about 1 µs of Python
    packing and unpacking its arguments (docs/performance.md, runs H2-H5). The generic
    call stays for tracing (Dynamo reads the generated code and takes that branch)."""
    base = type(fusion)
    if getattr(base, "_fsl_generated_call", False):  # registered again: from the class below
        base = base.__bases__[0]
        fusion.__class__ = base
    direct = fusion._direct_call
    source, defaults = _eager_call_source(fusion.signature, fusion._graph_entry is not None,
                                          direct is not None)
    if source is None:
        return
    scope = dict(defaults)
    scope.update(_fsl_is_compiling=fusion._is_compiling, _fsl_grad_enabled=fusion._grad_enabled,
                 _fsl_generic=base.__call__, _fsl_entry=fusion._eager_entry,
                 _fsl_graph=fusion._graph_entry, _fsl_op_error=op_error,
                 _fsl_direct=direct, _fsl_NotImplemented=NotImplemented,
                 _fsl_getattr=getattr, _fsl_TypeError=TypeError,
                 _fsl_ValueError=ValueError, _fsl_RuntimeError=RuntimeError)
    exec(compile(source, "<fslc %s.__call__>" % fusion.name, "exec"), scope)
    fusion.__class__ = type(base.__name__, (base,), {"__call__": scope["__call__"], "__slots__": (),
                                                     "__module__": base.__module__,
                                                     "_fsl_generated_call": True})


def _below_autograd(entry):
    """`entry` called below the autograd keys (an op with a `backward` pairing whose
    `no_grad` overload is missing: calls that record no graph skip its autograd kernel)."""

    def call(*args, **kwargs):
        with torch._C._AutoDispatchBelowAutograd():
            return entry(*args, **kwargs)

    return call


def register_program(program):
    """Registers every fusion of `program` as the op `<namespace>::<fusion>` (`<fusion>_2`,
    ... when another program took the name), through the compiled path or the ctypes one
    (program.ops: the choice asked for, else $FSLC_OPS)."""
    namespace = program.namespace
    path = _build.load(torch, program.ops)
    if path != "compiled" and not hasattr(torch.library, "custom_op"):
        # Checked before any name is taken: the program keeps none of its ops.
        error = FslError("%s (namespace %s): torch %s has no torch.library.custom_op, which the "
                         "ctypes op path needs (torch 2.4 or later)"
                         % (program.source, namespace, torch.__version__))
        error.old_torch = True
        raise error
    for fusion in program.fusions.values():
        if fusion.op is not None:
            continue
        name = _unique_name(namespace, fusion.name)
        qualname = "%s::%s" % (namespace, name)
        taken = "ctypes"
        if path == "compiled":
            taken = _register_compiled(program, fusion, namespace, name)
        else:
            _register_ctypes(fusion, qualname)
        fusion.op_name = qualname
        fusion.op = getattr(getattr(torch.ops, namespace), name)
        fusion.op_path = taken
        if taken == "compiled":
            overload = fusion.op.default
            fusion._eager_entry = getattr(overload, "_op", overload)
            fusion._grad_enabled = torch.is_grad_enabled
            fusion._is_compiling = _is_compiling
    # Autograd once every op exists: a forward's backward fusions are ops of the program.
    for fusion in program.fusions.values():
        if fusion.signature.backward and not fusion.autograd:
            if not hasattr(torch.library, "register_autograd"):
                _warn_no_autograd()
                continue
            _register_autograd(program, fusion)
            if fusion.op_path == "compiled":
                # Calls that record a graph take the autograd kernel; the others its
                # `no_grad` overload, or the op below the autograd keys.
                fusion._graph_entry = fusion._eager_entry
                overload = getattr(fusion.op, NO_GRAD_OVERLOAD, None)
                fusion._eager_entry = (getattr(overload, "_op", overload) if overload is not None
                                       else _below_autograd(fusion._graph_entry))
            fusion.autograd = True
    for fusion in program.fusions.values():
        if fusion.op_path == "compiled":
            _install_eager_call(fusion)
