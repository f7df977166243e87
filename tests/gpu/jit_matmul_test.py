"""The JIT's matrix products on a GPU with PyTorch: examples/matmul.fsl,
examples/linear_bias_gelu.fsl and examples/swiglu.fsl through fslc.load (libfsl.so's
session: TMA descriptors, `when` variants by M and N % 8, persistent grids), and the
split-K, stream-K and cluster schedules of tests/lit/matmul/Inputs (workspaces from the
session's pool, the kernel that zeroes the tiles' counters before the product, clusters
sized by occupancy), against PyTorch in float32 at M = 1, tails in M, N and K, and 4096 x
14336 x 5120; outputs poisoned with NaN before each call; inside
torch.compile(fullgraph=True) and a captured CUDA graph (replayed with new inputs, outputs
poisoned between replays); a refused call (rows TMA cannot step); then the 4096 x 14336 x
5120 call timed against the ahead-of-time kernels that tests/gpu/matmul.sh built
(gpu-build/matmul/*/libfusion.so), when they are there.

usage: python3 tests/gpu/jit_matmul_test.py [--library build/lib/libfsl.so] [--stdlib stdlib]
                                            [--aot gpu-build]
Prints one PASS or FAIL line per check, then the timing table; exits 1 when any check fails.
"""

import argparse
import ctypes
import os
import statistics
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
                    help="the directory holding the fslc package ('': the installed one)")
parser.add_argument("--cache-dir", default=None, help="the JIT's cache (default: a new temporary directory)")
parser.add_argument("--aot", default=os.path.join(ROOT, "gpu-build"),
                    help="tests/gpu/generate.sh's output, built by tests/gpu/matmul.sh (for the timing)")
args = parser.parse_args()

if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

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


def close(name, out, ref):
    """bf16 output against a float32 reference: every element within 2% of the reference
    plus 2% of the largest (one bf16 rounding is 0.4%; tanh.approx and __expf add a little)."""
    o = out.float()
    if torch.isnan(o).any():
        return check(name, False, "%d NaN of %d" % (int(torch.isnan(o).sum()), o.numel()))
    scale = max(float(ref.abs().max()), 1e-6)
    err = (o - ref).abs()
    bad = err > 0.02 * ref.abs() + 0.02 * scale
    return check(name, not bool(bad.any()),
                 "max error %.3g (largest |ref| %.3g), %d bad" % (float(err.max()), scale, int(bad.sum())))


cache = args.cache_dir or tempfile.mkdtemp(prefix="fsl-jit-matmul-")
options = dict(cache_dir=cache, library=args.library, stdlib=args.stdlib)
example = lambda name: os.path.join(ROOT, "examples", name)  # noqa: E731
inputs = os.path.join(ROOT, "tests", "lit", "matmul", "Inputs")
programs = {
    "matmul": fslc.load(example("matmul.fsl"), **options),
    "linear_bias_gelu": fslc.load(example("linear_bias_gelu.fsl"), **options),
    "swiglu": fslc.load(example("swiglu.fsl"), **options),
    "split_k": fslc.load(os.path.join(inputs, "split-k.fsl"), **options),
    "stream_k": fslc.load(os.path.join(inputs, "stream-k.fsl"), **options),
    "cluster": fslc.load(os.path.join(inputs, "cluster-example.fsl"), **options),
}
print("device %s, target %s, cache %s" % (torch.cuda.get_device_name(), programs["matmul"].target, cache), flush=True)


def operands(kind, M, N, K, seed=0):
    """The inputs of a product of `kind` and their float32 reference."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(M, K, device="cuda", generator=g) * 0.5).to(torch.bfloat16)
    w = (torch.randn(N, K, device="cuda", generator=g) / K ** 0.5).to(torch.bfloat16)
    acc = a.float() @ w.float().t()
    if kind == "plain":
        return (a, w), acc
    if kind == "swiglu":
        w_up = (torch.randn(N, K, device="cuda", generator=g) / K ** 0.5).to(torch.bfloat16)
        return (a, w, w_up), F.silu(acc) * (a.float() @ w_up.float().t())
    bias = (torch.randn(N, device="cuda", generator=g) * 0.1).to(torch.bfloat16)
    return (a, w, bias), F.gelu(acc + bias.float(), approximate="tanh")


KINDS = {"matmul": "plain", "linear_bias_gelu": "gelu", "swiglu": "swiglu", "split_k": "gelu",
         "stream_k": "gelu", "cluster": "gelu"}
FUSIONS = {"matmul": "matmul", "linear_bias_gelu": "linear_bias_gelu", "swiglu": "swiglu",
           "split_k": "linear", "stream_k": "linear", "cluster": "linear_bias_gelu"}


def fusion(program):
    return programs[program][FUSIONS[program]]


def desc(t):
    return fslc.descriptor(t.shape, "bf16", t.stride(), t.data_ptr())


def poisoned_call(program, M, N, K):
    """The session's launch on tensors, the output full of NaN first."""
    ins, ref = operands(KINDS[program], M, N, K, seed=M + N + K)
    y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    f = fusion(program)
    f.launch([desc(t) for t in ins] + [desc(y)], stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    info = f.prepare([desc(t) for t in ins] + [desc(y)])
    kernels = "+".join(l["kernel"] for l in info["launches"])
    close("%s M=%d N=%d K=%d (%s): the session's launch, NaN-poisoned y" % (program, M, N, K, kernels), y, ref)
    # The op (torch.empty output) gives the same.
    close("%s M=%d N=%d K=%d: the torch op" % (program, M, N, K), getattr(programs[program], FUSIONS[program])(*ins), ref)


SHAPES = {
    # M = 1, tails in M (77, 129, 300 of 64- and 128-row tiles), N (1000, 2056; 1003 with
    # N % 8 != 0: matmul's variants without TMA stores), K (520, 776, 1032: 8 elements past
    # a 64-column k tile), and the MLP shape.
    # K = 5000 (rows of a not whole 128-byte lines): from 640 rows up, 256 x 128 tiles in
    # clusters of two along N, a multicast (the specialized K and N, M at run time).
    # 48 rows over N = 14336: 64 x 112 tiles whose output leaves by TMA stores.
    "matmul": [(1, 14336, 5120), (1, 4096, 4096), (77, 1000, 520), (129, 2056, 776),
               (300, 1003, 1032), (700, 1003, 520), (4096, 14336, 5120), (1, 14000, 5000),
               (4000, 14000, 5000), (160, 4096, 4096), (48, 14336, 5120)],
    "linear_bias_gelu": [(1, 14336, 5120), (77, 1000, 520), (129, 2056, 776), (4096, 14336, 5120),
                         (4000, 14000, 5000), (48, 14336, 5120)],
    "swiglu": [(1, 14336, 5120), (77, 1000, 520), (4096, 14336, 5120)],
    "split_k": [(1, 4096, 5120), (300, 1000, 1032)],
    "stream_k": [(77, 1000, 520), (4096, 4096, 5120)],
    "cluster": [(1, 4096, 5120), (300, 2056, 776), (4096, 14336, 5120)],
}
for program, shapes in SHAPES.items():
    for M, N, K in shapes:
        run("%s %dx%dx%d" % (program, M, N, K), lambda p=program, m=M, n=N, k=K: poisoned_call(p, m, n, k))


def refused_case():
    # The output's rows leave by TMA stores: N = 1003 bf16 (2006 bytes) cannot be stepped.
    ins, _ = operands("gelu", 64, 1003, 520)
    try:
        programs["linear_bias_gelu"].linear_bias_gelu(*ins)
        check("linear_bias_gelu N = 1003: refused", False, "no exception")
    except fslc.FslSizeError as error:
        check("linear_bias_gelu N = 1003: FslSizeError naming y's rows",
              "y: rows of 2006 bytes are not a multiple of 16 bytes" in str(error), str(error))
    a = ins[0]
    misaligned = torch.empty(64 * 520 + 1, device="cuda", dtype=torch.bfloat16)[1:].view(64, 520)
    misaligned.copy_(a)
    try:
        programs["matmul"].matmul(misaligned, ins[1][:1000].contiguous())
        check("matmul with a 2 bytes off 16: refused", False, "no exception")
    except fslc.FslAlignmentError as error:
        check("matmul with a 2 bytes off 16: FslAlignmentError naming a",
              "a: data pointer" in str(error) and "16 bytes" in str(error), str(error))


run("refusals", refused_case)


def compiled_case():
    for program, (M, N, K) in [("matmul", (77, 1000, 520)), ("linear_bias_gelu", (129, 2056, 776)),
                               ("swiglu", (300, 1000, 1032)), ("split_k", (300, 1000, 1032))]:
        ins, ref = operands(KINDS[program], M, N, K, seed=7)
        op = getattr(programs[program], FUSIONS[program])
        compiled = torch.compile(lambda *t, op=op: op(*t).float() * 2.0, fullgraph=True)
        close("torch.compile(fullgraph=True): %s %dx%dx%d" % (program, M, N, K), compiled(*ins) / 2.0, ref)


run("torch.compile(fullgraph=True)", compiled_case)


def graph_case():
    # Warm-up outside capture (compiles and loads the kernels), then a graph of three
    # products (the split-K one allocates and frees its workspace inside the graph),
    # replayed with new inputs; the outputs are poisoned before each replay.
    cases = [("matmul", (129, 2056, 776)), ("swiglu", (77, 1000, 520)), ("split_k", (300, 1000, 1032)),
             ("stream_k", (77, 1000, 520)), ("cluster", (300, 2056, 776)), ("matmul", (160, 4096, 4096))]
    static = []
    for program, (M, N, K) in cases:
        ins, _ = operands(KINDS[program], M, N, K, seed=1)
        static.append([t.clone() for t in ins])
        getattr(programs[program], FUSIONS[program])(*static[-1])
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = [getattr(programs[p], FUSIONS[p])(*s) for (p, _), s in zip(cases, static)]
    for step in range(3):
        refs = []
        for (program, (M, N, K)), s in zip(cases, static):
            ins, ref = operands(KINDS[program], M, N, K, seed=100 + step)
            for dst, src in zip(s, ins):
                dst.copy_(src)
            refs.append(ref)
        for y in outs:
            y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for (program, shape), y, ref in zip(cases, outs, refs):
            close("CUDA graph replay %d: %s %s" % (step, program, "x".join(map(str, shape))), y, ref)


run("a captured CUDA graph", graph_case)


# --- Timing: the JIT's call against the ahead-of-time kernels -------------------------------
class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def aot_call(variant, fusion_name, tensors):
    """The launcher of gpu-build/matmul/VARIANT/libfusion.so on `tensors`, or None."""
    path = os.path.join(args.aot, "matmul", variant, "libfusion.so")
    if not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    fn = getattr(lib, "fsl_" + fusion_name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(FslTensor)] * len(tensors) + [ctypes.c_void_p]
    descs = []
    for t in tensors:
        d = FslTensor()
        d.data, d.dtype, d.rank = t.data_ptr(), 4, t.dim()
        for i, (s, st) in enumerate(zip(t.shape, t.stride())):
            d.sizes[i], d.strides[i] = s, st
        descs.append(d)
    return lambda: fn(*descs, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))


def graph_us(call, replays=15):
    """Median device time of one call, from graph replays of 10 calls (no host time)."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(10):
            call()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / 10)
    return statistics.median(times)


def host_us(call, n=200):
    """Wall time a call issued back to back (host overhead included), synchronized at the end."""
    call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def timing():
    M, N, K = 4096, 14336, 5120
    rows = []
    for program, fusion_name, kind, variants in [
            ("matmul", "matmul", "plain", ["plain_auto_4096_14336_5120", "plain_auto"]),
            ("linear_bias_gelu", "linear_bias_gelu", "gelu", ["full"]),
            ("swiglu", "swiglu", "swiglu", ["swiglu"])]:
        ins, ref = operands(kind, M, N, K, seed=3)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        f = fusion(program)
        stream_descs = [desc(t) for t in ins] + [desc(y)]
        jit = lambda: f.launch(stream_descs, stream=torch.cuda.current_stream().cuda_stream)  # noqa: E731
        op = getattr(programs[program], fusion_name)
        flops = 2 * M * N * K * (2 if kind == "swiglu" else 1)
        jit_us = graph_us(jit)
        close("timing %s: the JIT's output" % program, y, ref)
        rows.append((program, "JIT (fslc.load, K specialized)", jit_us, host_us(lambda: op(*ins)), flops))
        for variant in variants:
            call = aot_call(variant, fusion_name, list(ins) + [y])
            if call is None:
                rows.append((program, "AOT %s (not built)" % variant, None, None, flops))
                continue
            y.fill_(float("nan"))
            status = call()
            torch.cuda.synchronize()
            check("timing %s: AOT %s returns FSL_OK" % (program, variant), status == 0, str(status))
            close("timing %s: AOT %s's output" % (program, variant), y, ref)
            rows.append((program, "AOT " + variant, graph_us(call), host_us(call), flops))
    print("\n%dx%dx%d (M x N x K), bf16, %s" % (M, N, K, torch.cuda.get_device_name()))
    print("| fusion | launch | device us | TFLOP/s | vs JIT | host us a call |")
    print("|---|---|---:|---:|---:|---:|")
    jit_us = {}
    for program, how, us, host, flops in rows:
        if us is None:
            print("| %s | %s | - | - | - | - |" % (program, how))
            continue
        jit_us.setdefault(program, us)
        print("| %s | %s | %.1f | %.0f | %.3f | %.1f |" % (program, how, us, flops / us / 1e6,
                                                        jit_us[program] / us, host))
    print("(vs JIT: the JIT's device time over this row's; above 1: the JIT is slower)\n", flush=True)


run("timing", timing)
print("session stats: %s" % {p: programs[p].stats() for p in programs}, flush=True)

failed = [name for name, ok in results if not ok]
print("\n%d checks, %d passed, %d failed" % (len(results), len(results) - len(failed), len(failed)))
for name in failed:
    print("FAILED: " + name)
print("PASS" if not failed else "FAIL")
sys.exit(1 if failed else 0)
