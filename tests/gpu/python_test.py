"""The Python package (python/fslc) on a GPU with PyTorch: the fusions of std/norms.fsl as
torch ops, against eager PyTorch (in float64), under torch.compile(fullgraph=True)
and in a captured CUDA graph, and the exceptions of bad calls; through both op paths
(docs/python.md): the compiled one (fslc/_ops/ext.cpp, built here on first use with the
system C++ compiler; its command and output are printed when it fails) and the ctypes one.

Needs only libfsl.so (with the libantlr4-runtime.so.* copied next to it by the build),
python/ and stdlib/ of the repository, torch with CUDA, and NVRTC with the toolkit's
headers ($CUDA_HOME/include, else /usr/local/cuda/include): no compiler build.

usage: python3 tests/gpu/python_test.py [--library build/lib/libfsl.so] [--stdlib stdlib]
       (or FSL_LIBRARY and FSLC_STDLIB in the environment)
Prints one PASS or FAIL line per check and a summary; exits 1 when any check fails.
"""

import argparse
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"),
                    help="libfsl.so (default: $FSL_LIBRARY, else the package's lookup)")
parser.add_argument("--stdlib", default=os.environ.get("FSLC_STDLIB") or os.path.join(ROOT, "stdlib"),
                    help="the stdlib directory (default: $FSLC_STDLIB, else the repository's)")
parser.add_argument("--python", default=os.path.join(ROOT, "python"),
                    help="the directory holding the fslc package (default: the repository's python/; "
                         "'': the installed fslc, a wheel)")
parser.add_argument("--cache-dir", default=None,
                    help="the JIT's cache (default: a new temporary directory)")
args = parser.parse_args()

if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402

import fslc  # noqa: E402

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, ("  (%s)" % detail) if detail else ""), flush=True)
    return ok


def run(name, body):
    """Runs one check; an unexpected exception is a failure with its traceback."""
    try:
        body()
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        check(name, False, "%s: %s" % (type(error).__name__, error))


def expect_error(name, cls, message, call):
    try:
        call()
    except cls as error:
        check(name, message in str(error), "%s: %s" % (type(error).__name__, error))
        return
    except Exception as error:  # noqa: BLE001
        check(name, False, "raised %s: %s" % (type(error).__name__, error))
        return
    check(name, False, "no exception")


def close(name, out, ref):
    """out (bf16) against ref (float64), as tests/bench: |out - ref| <= 2e-2 + 2e-2 |ref|."""
    o = out.double()
    if torch.isnan(o).any():
        return check(name, False, "%d NaN" % int(torch.isnan(o).sum()))
    diff = (o - ref).abs()
    bad = diff > 2e-2 + 2e-2 * ref.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        return check(name, False, "element %d = %g, reference %g" % (i, float(o.flatten()[i]), float(ref.flatten()[i])))
    return check(name, True, "max abs err %.3g" % float(diff.max()))


def bf16(x):
    return x.to(torch.bfloat16).double()


# Eager references in float64 from the bf16 inputs (results rounded to bf16 as the
# kernels write them).
def ref_rms_norm_add(x, res, w, eps=1e-6):
    h = x.double() + res.double()
    return bf16(h * torch.rsqrt((h * h).mean(-1, keepdim=True) + eps) * w.double()), bf16(h)


def ref_rms_norm(x, w, eps=1e-6):
    xd = x.double()
    return bf16(xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps) * w.double())


def ref_layer_norm(x, g, b, eps=1e-5):
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    var = ((xd - mu) ** 2).mean(-1, keepdim=True)
    return bf16((xd - mu) * torch.rsqrt(var + eps) * g.double() + b.double())


def ref_softmax(x):
    return bf16(torch.softmax(x.double(), -1))


def randn(*shape, seed=0):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)


print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()), flush=True)
cache = args.cache_dir or tempfile.mkdtemp(prefix="fsl-python-test-")
norms = os.path.join(args.stdlib, "std", "norms.fsl")
options = dict(runtime_dims="H,S", cache_dir=cache, library=args.library, stdlib=args.stdlib)
# The compiled path, asked for: a build that fails is one failed check with the compiler's
# command and output, and the rest runs on the ctypes path.
try:
    prog = fslc.load(norms, ops="compiled", **options)
    check("the compiled op path is built and loaded: %s" % fslc.op_extension_status()["library"], True)
except fslc.FslExtensionError as error:
    print("the compiled op path failed:\n%s" % error, flush=True)
    check("the compiled op path is built and loaded", False, "see the compiler's output above")
    prog = fslc.load(norms, **options)
check("every op of the default program took the compiled path: %s" % prog.op_paths,
      set(prog.op_paths.values()) == {"compiled"})
# The ops' direct call from Python (pip's torch carries pybind11's headers): a plain eager
# call launches through it, one with a tensor autograd records through the dispatcher.
if check("the extension has the ops' direct call: %s" % fslc.op_extension_status(),
         fslc.op_extension_status().get("direct_call")):
    before = fslc._ops.build.direct_calls()
    direct_x = randn(4, 4096)
    prog.softmax(direct_x)
    check("a plain eager call goes through the direct call",
          fslc._ops.build.direct_calls() == before + 1, "%s -> %s" % (before, fslc._ops.build.direct_calls()))
    prog.softmax(direct_x.float().requires_grad_().to(torch.bfloat16))
    check("a call autograd records goes through the dispatcher", fslc._ops.build.direct_calls() == before + 1)

    def out_of_memory():
        # The output's allocation fails: torch's own class, as through the dispatcher.
        x = randn(8192, 4096)
        prog.softmax(x)  # compiled and loaded first
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info()
        filler = torch.empty(free - (16 << 20), dtype=torch.uint8, device="cuda")
        try:
            prog.softmax(x)
            check("an output that does not fit raises torch.cuda.OutOfMemoryError", False, "nothing raised")
        except torch.cuda.OutOfMemoryError as error:
            check("an output that does not fit raises torch.cuda.OutOfMemoryError", True, str(error).splitlines()[0])
        del filler
        torch.cuda.empty_cache()

    run("the direct call's out-of-memory error", out_of_memory)
# The ctypes path, side by side (its own namespace): the same checks.
prog_ctypes = fslc.load(norms, ops="ctypes", namespace="fsl_ctypes", **options)
check("every op of the ctypes program took the ctypes path: %s" % prog_ctypes.op_paths,
      set(prog_ctypes.op_paths.values()) == {"ctypes"})
PROGRAMS = [("compiled", prog), ("ctypes", prog_ctypes)]
print("loaded %s from %s; ops %s" % (
    norms, fslc.load_library(args.library).path,
    ", ".join(f.op_name for p in (prog, prog_ctypes) for f in p.fusions.values())), flush=True)
# No target= given: the current GPU's, through torch (an H200 is h200's).
check("the target of the current GPU: %s for %r" % (prog.target, prog.device),
      prog.device is not None and prog.device.name == torch.cuda.get_device_name()
      and prog.device.sm_count == torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
      and (prog.target == "h200") == ("H200" in prog.device.name))

SIZES = [(1, 4096), (8, 4096), (300, 4096), (8, 7168), (257, 7168), (64, 2048)]

# --- Eager: every fusion against PyTorch --------------------------------------------------


def eager_case(path, prog, T, H):
    seed = 1000 * T + H
    x, res, w = randn(T, H, seed=seed), randn(T, H, seed=seed + 1), randn(H, seed=seed + 2)
    res_in = res.clone()
    y = prog.rms_norm_add(x, res, w)
    ref_y, ref_res = ref_rms_norm_add(x, res_in, w)
    close("%s: rms_norm_add T=%d H=%d: y" % (path, T, H), y, ref_y)
    close("%s: rms_norm_add T=%d H=%d: residual in place" % (path, T, H), res, ref_res)
    y = prog.rms_norm_add(x, res_in.clone(), w, eps=1e-2)
    close("%s: rms_norm_add T=%d H=%d eps=1e-2: y" % (path, T, H), y, ref_rms_norm_add(x, res_in, w, 1e-2)[0])
    # The op itself (torch.ops.<namespace>.<fusion>), keywords and defaults as the schema has them.
    res_op = res_in.clone()
    y = prog.rms_norm_add.op(x, res_op, w, eps=1e-6)
    close("%s: torch.ops rms_norm_add T=%d H=%d: y" % (path, T, H), y, ref_y)
    close("%s: torch.ops rms_norm_add T=%d H=%d: residual" % (path, T, H), res_op, ref_res)
    close("%s: rms_norm T=%d H=%d" % (path, T, H), prog.rms_norm(x, w), ref_rms_norm(x, w))
    g, b = randn(H, seed=seed + 3), randn(H, seed=seed + 4)
    close("%s: layer_norm T=%d H=%d" % (path, T, H), prog.layer_norm(x, g, b), ref_layer_norm(x, g, b))
    close("%s: softmax T=%d S=%d" % (path, T, H), prog.softmax(x), ref_softmax(x))
    torch.cuda.synchronize()


for path, p in PROGRAMS:
    for T, H in SIZES:
        run("%s: eager T=%d H=%d" % (path, T, H), lambda: eager_case(path, p, T, H))


def version_bumped():
    # In place through the compiled path: the residual's version counter moves, as with
    # torch.library.custom_op's mutates_args (autograd's saved-tensor checks rely on it).
    x, res, w = randn(4, 4096), randn(4, 4096), randn(4096)
    before = res._version
    prog.rms_norm_add(x, res, w)
    check("the inout residual's version counter moved (%d -> %d)" % (before, res._version), res._version > before)


run("version counter", version_bumped)


def no_grad_overload():
    # softmax has a `backward` pairing: a call that records no graph goes to its overload
    # `no_grad` (no autograd kernel on the way); one that does records softmax's node.
    x = randn(3, 4096, seed=11)
    check("softmax's op has the overload no_grad", hasattr(prog.softmax.op, "no_grad"))
    close("torch.ops softmax.no_grad", prog.softmax.op.no_grad(x), ref_softmax(x))
    xg = x.clone().requires_grad_(True)
    y = prog.softmax(xg)
    check("a call with a tensor that requires grad records a node (%s)" % y.grad_fn, y.grad_fn is not None)
    with torch.no_grad():
        y = prog.softmax(xg)
    check("a call under torch.no_grad records none", y.grad_fn is None and not y.requires_grad)
    close("softmax under torch.no_grad", y, ref_softmax(x))


run("the no_grad overload", no_grad_overload)


def closed_program():
    # A closed program's ops refuse calls (the compiled kernel holds the session).
    closing = fslc.load(norms, namespace="fsl_closing", **options)
    x = randn(2, 4096)
    close("before close: softmax", closing.softmax(x), ref_softmax(x))
    closing.close()
    expect_error("after close: FslError", fslc.FslError, "is closed", lambda: closing.softmax(x))


run("a closed program", closed_program)

run("T = 0: an empty output, nothing launched",
    lambda: check("T = 0: an empty output, nothing launched",
                  prog.softmax(torch.empty(0, 4096, device="cuda", dtype=torch.bfloat16)).shape == (0, 4096)))


def on_side_stream():
    # The op launches on the current stream: on a side stream, ordered after its inputs.
    T, H = 300, 7168
    x, res, w = randn(T, H, seed=5), randn(T, H, seed=6), randn(H, seed=7)
    ref_y, ref_res = ref_rms_norm_add(x, res, w)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = prog.rms_norm_add(x, res, w)
    torch.cuda.current_stream().wait_stream(side)
    close("on a side stream (torch.cuda.stream): y", y, ref_y)
    close("on a side stream (torch.cuda.stream): residual", res, ref_res)


run("on a side stream", on_side_stream)

# --- torch.compile(fullgraph=True) --------------------------------------------------------


def block(x, res, w, g, b):
    # The custom ops between PyTorch operations, as in a model.
    y = prog.rms_norm_add(x * 2, res, w)
    z = prog.layer_norm(y, g, b, eps=1e-5)
    return torch.relu(z) + prog.softmax(z), y


def compiled_case():
    compiled = torch.compile(block, fullgraph=True)
    for T, H in [(8, 4096), (300, 4096), (8, 7168)]:
        x, res, w = randn(T, H, seed=11), randn(T, H, seed=12), randn(H, seed=13)
        g, b = randn(H, seed=14), randn(H, seed=15)
        res_eager, res_compiled = res.clone(), res.clone()
        out_e, y_e = block(x, res_eager, w, g, b)
        direct_before = fslc._ops.build.direct_calls()
        out_c, y_c = compiled(x, res_compiled, w, g, b)
        torch.cuda.synchronize()
        if direct_before is not None:
            check("torch.compile T=%d H=%d: the compiled graph calls the ops, not their direct call" % (T, H),
                  fslc._ops.build.direct_calls() == direct_before)
        close("torch.compile T=%d H=%d: rms_norm_add's y as eager" % (T, H), y_c, y_e.double())
        close("torch.compile T=%d H=%d: the block's output as eager" % (T, H), out_c, out_e.double())
        check("torch.compile T=%d H=%d: residual updated in place as eager" % (T, H),
              torch.equal(res_compiled, res_eager))


run("torch.compile(fullgraph=True)", compiled_case)


def compiled_op_case():
    # The op itself, as torch.ops.<namespace>.<fusion>, and its fake implementation.
    op = prog.rms_norm_add.op
    x, res, w = randn(16, 4096, seed=21), randn(16, 4096, seed=22), randn(4096, seed=23)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fx, fr, fw = (mode.from_tensor(t) for t in (x, res, w))
        fy = op(fx, fr, fw)
    check("fake implementation: shape, dtype and device from the signature",
          tuple(fy.shape) == (16, 4096) and fy.dtype == torch.bfloat16 and fy.device == x.device)
    ref_y, _ = ref_rms_norm_add(x, res, w)
    y = torch.compile(lambda a, r, b: op(a, r, b), fullgraph=True, dynamic=True)(x, res.clone(), w)
    close("torch.compile(dynamic=True) of the op", y, ref_y)
    try:
        from torch.library import opcheck

        r = opcheck(op, (x, res.clone(), w), test_utils=("test_schema", "test_faketensor"))
        check("torch.library.opcheck (schema, fake tensor)", all(v == "SUCCESS" for v in r.values()), str(r))
    except ImportError:
        pass


run("the op under FakeTensorMode and dynamic shapes", compiled_op_case)

# --- CUDA graphs --------------------------------------------------------------------------


def graph_case():
    T, H = 64, 7168
    x, res, w = randn(T, H, seed=31), randn(T, H, seed=32), randn(H, seed=33)
    static_x, static_res = x.clone(), res.clone()
    # Warm-up outside capture (compiles and loads the kernels), as torch.cuda.graph wants.
    prog.rms_norm_add(static_x, static_res.clone(), w)
    prog.softmax(static_x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = prog.rms_norm_add(static_x, static_res, w)
        static_p = prog.softmax(static_y)
    for step in range(3):
        nx, nres = randn(T, H, seed=40 + step), randn(T, H, seed=50 + step)
        static_x.copy_(nx)
        static_res.copy_(nres)
        graph.replay()
        torch.cuda.synchronize()
        ref_y, ref_res = ref_rms_norm_add(nx, nres, w)
        close("CUDA graph replay %d: y" % step, static_y, ref_y)
        close("CUDA graph replay %d: residual" % step, static_res, ref_res)
        close("CUDA graph replay %d: softmax of y" % step, static_p, ref_softmax(static_y))


run("a captured CUDA graph", graph_case)


def compiled_graph_case():
    # torch.compile's CUDA graphs (mode="reduce-overhead").
    f = torch.compile(lambda a, r, b: prog.rms_norm_add(a, r, b) * 1, mode="reduce-overhead", fullgraph=True)
    T, H = 32, 4096
    w = randn(H, seed=61)
    for step in range(4):
        x, res = randn(T, H, seed=62 + step), randn(T, H, seed=72 + step)
        ref_y, ref_res = ref_rms_norm_add(x, res, w)
        y = f(x, res, w).clone()
        torch.cuda.synchronize()
        close("torch.compile(mode='reduce-overhead') call %d: y" % step, y, ref_y)
        close("torch.compile(mode='reduce-overhead') call %d: residual" % step, res, ref_res)


run("torch.compile(mode='reduce-overhead')", compiled_graph_case)

# --- Bad calls: Python exceptions with the C API's messages, nothing launched --------------


def errors_case(path, prog):
    T, H = 8, 4096
    x, res, w = randn(T, H, seed=81), randn(T, H, seed=82), randn(H, seed=83)
    before = res.clone()
    expect_error(path + ": " + "a CPU tensor: FslDeviceError", fslc.FslDeviceError, "x: a cpu tensor, expected a CUDA tensor",
                 lambda: prog.rms_norm_add(x.cpu(), res, w))
    expect_error(path + ": " + "weight in float32: FslDtypeError (a TypeError)", TypeError, "weight: dtype f32, expected bf16",
                 lambda: prog.rms_norm_add(x, res, w.float()))
    expect_error(path + ": " + "x of rank 1: FslRankError", fslc.FslRankError, "x: rank 1, expected 2",
                 lambda: prog.rms_norm_add(x[0], res, w))
    expect_error(path + ": " + "residual with 9 rows: FslSizeError", fslc.FslSizeError,
                 "residual: size 9 of dimension T, expected 8",
                 lambda: prog.rms_norm_add(x, randn(9, H), w))
    expect_error(path + ": " + "weight of 7168: FslSizeError (a ValueError)", ValueError,
                 "weight: size 7168 of dimension H, expected 4096",
                 lambda: prog.rms_norm_add(x, res, randn(7168)))
    expect_error(path + ": " + "x transposed: FslLayoutError", fslc.FslLayoutError, "x: stride",
                 lambda: prog.rms_norm_add(randn(H, T).t(), res, w))
    expect_error(path + ": " + "y over x: residual is x: FslOverlapError", fslc.FslOverlapError, "overlaps",
                 lambda: prog.rms_norm_add(x, x, w))
    if torch.cuda.device_count() > 1:
        expect_error(path + ": " + "tensors on two devices: FslDeviceError", fslc.FslDeviceError, "is on cuda:0",
                     lambda: prog.rms_norm_add(x, res.to("cuda:1"), w))
    expect_error(path + ": " + "an unknown keyword: refused by the op", (TypeError, RuntimeError), "epsilon",
                 lambda: prog.rms_norm_add(x, res, w, epsilon=1.0))
    if path == "compiled":
        # torch.ops directly: the built-in class the fslc one derives from, named in the message.
        expect_error(path + ": torch.ops with weight in float32: a TypeError naming FslDtypeError", TypeError,
                     "FslDtypeError: weight: dtype f32, expected bf16", lambda: prog.rms_norm_add.op(x, res, w.float()))
        expect_error(path + ": torch.ops with x transposed: a ValueError naming FslLayoutError", ValueError,
                     "FslLayoutError: x: stride", lambda: prog.rms_norm_add.op(randn(H, T).t(), res, w))
    torch.cuda.synchronize()
    check(path + ": refused calls wrote nothing", torch.equal(res, before))
    # Dynamo reports the fake implementation's exception as its own (TorchRuntimeError).
    expect_error(path + ": " + "the fake implementation refuses too (torch.compile)", Exception,
                 "weight: dtype f32, expected bf16",
                 lambda: torch.compile(lambda a, r, b: prog.rms_norm_add(a, r, b), fullgraph=True)(x, res, w.float()))


for path, p in PROGRAMS:
    run("%s: exceptions" % path, lambda: errors_case(path, p))


def capture_without_warmup(path, prog):
    # A first call at new sizes inside capture: refused before anything is launched.
    T, H = 16, 5120
    x, res, w = randn(T, H), randn(T, H), randn(H)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            prog.rms_norm_add(x, res, w)
    except fslc.FslCaptureError as error:
        check(path + ": a first call inside capture: FslCaptureError", "call it once at these sizes" in str(error), str(error))
    except Exception as error:  # noqa: BLE001
        check(path + ": a first call inside capture: FslCaptureError", False, "%s: %s" % (type(error).__name__, error))
    else:
        check(path + ": a first call inside capture: FslCaptureError", False, "no exception")
    torch.cuda.synchronize()
    y = prog.rms_norm_add(x, res.clone(), w)
    check(path + ": after the refused capture, the call works", not torch.isnan(y.double()).any())


for path, p in PROGRAMS:
    run("%s: capture without warm-up" % path, lambda: capture_without_warmup(path, p))

# --- Host time of a call (memory hit) ---------------------------------------------------------


def timing():
    x, res, w = randn(8, 4096), randn(8, 4096), randn(4096)
    n = 2000
    for path, p in PROGRAMS:
        for _ in range(10):
            p.rms_norm_add(x, res, w)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            p.rms_norm_add(x, res, w)
        host = (time.perf_counter() - start) / n * 1e6
        torch.cuda.synchronize()
        print("host time: %.1f us a call of prog.rms_norm_add, %s path" % (host, path), flush=True)
        print("session stats (%s): %s" % (path, p.stats()), flush=True)
    start = time.perf_counter()
    for _ in range(n):
        torch.add(x, res)
    eager = (time.perf_counter() - start) / n * 1e6
    torch.cuda.synchronize()
    print("host time: %.1f us a call of eager torch.add; tests/bench/host_time.py compares each op "
          "with the PyTorch call it replaces" % eager, flush=True)


run("timing", timing)

failed = [name for name, ok in results if not ok]
print("\n%d checks, %d passed, %d failed" % (len(results), len(results) - len(failed), len(failed)))
for name in failed:
    print("FAILED: " + name)
print("PASS" if not failed else "FAIL")
sys.exit(1 if failed else 0)
