#!/usr/bin/env python3
"""Host time of one eager call of an fslc op at T = 1 (M = 1), against the PyTorch call it
replaces, through both op paths (docs/python.md): the compiled one (fslc/_ops/ext.cpp) and
the ctypes one. Runs on the GPU machine; not a test.

For each op, N back-to-back calls after a warm-up and a synchronize, timed with
time.perf_counter_ns; the median over rounds of the time per call, in µs. Each round is
short (100 calls by default) and starts on an idle GPU, so the launches never fill the
stream's queue and the loop is never held back by the GPU: the time per call is the host
time of the call (its launches included), not the kernels'. The fslc ops are called as a user calls them,
`prog.<fusion>(...)`, and directly as `torch.ops.<namespace>.<fusion>(...)`.

usage: python3 tests/bench/host_time.py [--library build/lib/libfsl.so] [--stdlib stdlib]
           [--calls 100] [--rounds 101] [--hidden 4096]
Prints the paths each program took, then a markdown table.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"))
parser.add_argument("--stdlib", default=os.environ.get("FSLC_STDLIB") or os.path.join(ROOT, "stdlib"))
parser.add_argument("--python", default=os.path.join(ROOT, "python"),
                    help="the directory holding the fslc package ('': the installed one)")
parser.add_argument("--calls", type=int, default=100, help="calls a round")
parser.add_argument("--rounds", type=int, default=101)
parser.add_argument("--hidden", type=int, default=4096, help="H (and K = N of the matmul)")
parser.add_argument("--breakdown", action="store_true",
                    help="also time the parts of a compiled call: the C API's launch called "
                         "directly through ctypes (less a trivial C API call through ctypes), "
                         "and the output's allocation")
parser.add_argument("--paths", action="store_true",
                    help="also time the ways of calling softmax, one after the other in each "
                         "round (the Python binding torch.softmax and torch._softmax, the "
                         "generic op path torch.ops.aten._softmax.default, fslc's prog.softmax "
                         "and its no_grad overload called directly, torch.empty_like, the checks "
                         "prog.softmax makes, an empty Python function): where the host time of a call goes")
args = parser.parse_args()

if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import fslc  # noqa: E402


def per_call_us(call):
    """The median over rounds of the time a call of `call` takes back to back, in µs."""
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter_ns()
        for _ in range(args.calls):
            call()
        times.append((time.perf_counter_ns() - start) / args.calls / 1e3)
        torch.cuda.synchronize()
    return statistics.median(times)


def paired_us(reference, candidate):
    """Both calls timed as per_call_us does, round by round alternated (reference, then
    candidate), so that a slower or faster moment of the host weighs on both: the medians
    of each and the median of the per-round ratios candidate / reference."""
    for call in (reference, candidate):
        for _ in range(50):
            call()
    torch.cuda.synchronize()
    times = {reference: [], candidate: []}
    for _ in range(args.rounds):
        for call in (reference, candidate):
            start = time.perf_counter_ns()
            for _ in range(args.calls):
                call()
            times[call].append((time.perf_counter_ns() - start) / args.calls / 1e3)
            torch.cuda.synchronize()
    ratios = [c / r for r, c in zip(times[reference], times[candidate])]
    return statistics.median(times[reference]), statistics.median(times[candidate]), statistics.median(ratios)


def randn(*shape):
    return torch.randn(*shape, device="cuda").to(torch.bfloat16)


def main():
    H = args.hidden
    cache = tempfile.mkdtemp(prefix="fsl-host-time-")
    options = dict(cache_dir=cache, library=args.library, stdlib=args.stdlib)
    norms = os.path.join(args.stdlib, "std", "norms.fsl")
    matmul = os.path.join(ROOT, "examples", "matmul.fsl")
    programs = {}
    for path in ("compiled", "ctypes"):
        programs[path] = (
            fslc.load(norms, runtime_dims="H,S", namespace="fsl_%s" % path, ops=path, **options),
            fslc.load(matmul, namespace="fsl_mm_%s" % path, ops=path, **options),
        )
        for prog in programs[path]:
            print("%s: %s" % (prog.source, prog.op_paths), flush=True)
    print("extension: %s" % fslc.op_extension_status(), flush=True)

    x, res, w = randn(1, H), randn(1, H), randn(H)
    g, b = randn(H), randn(H)
    weight = randn(H, H)
    # (name, PyTorch call, PyTorch's name, fusion name, program index, the fusion's arguments)
    cases = [
        ("rms_norm", lambda: F.rms_norm(x, (H,), w, 1e-6), "F.rms_norm", "rms_norm", 0, (x, w)),
        ("rms_norm_add", lambda: F.rms_norm(torch.add(x, res), (H,), w, 1e-6),
         "torch.add + F.rms_norm", "rms_norm_add", 0, (x, res, w)),
        ("layer_norm", lambda: F.layer_norm(x, (H,), g, b, 1e-5), "F.layer_norm", "layer_norm", 0, (x, g, b)),
        ("softmax", lambda: torch.softmax(x, -1), "torch.softmax", "softmax", 0, (x,)),
        ("matmul M=1", lambda: F.linear(x, weight), "F.linear", "matmul", 1, (x, weight)),
    ]
    rows = []
    for name, reference, reference_name, fusion, index, call_args in cases:
        row = {"op": name, "torch": reference_name, "torch_us": per_call_us(reference)}
        for path in ("compiled", "ctypes"):
            f = programs[path][index][fusion]
            try:
                f(*call_args)
                row[path] = per_call_us(lambda: f(*call_args))
                row[path + "_op"] = per_call_us(lambda: f.op(*call_args))
                if path == "compiled":
                    row["paired"] = paired_us(reference, lambda: f(*call_args))
            except Exception as error:  # noqa: BLE001 (a row that cannot run says why)
                print("%s through %s: %s: %s" % (name, path, type(error).__name__, error), flush=True)
                row[path] = row[path + "_op"] = None
        rows.append(row)

    print("direct calls launched so far: %s" % fslc._ops.build.direct_calls(), flush=True)
    if args.breakdown:
        breakdown(programs["compiled"], cases)
    if args.paths:
        paths(programs["compiled"][0], x)

    def cell(value, reference):
        return "n/a" if value is None else "%.1f (%.2fx)" % (value, value / reference)

    print()
    print("Host µs per eager call at T = 1 (M = 1), H = %d; torch %s, CUDA %s, %s; median of %d rounds "
          "of %d calls" % (H, torch.__version__, torch.version.cuda, torch.cuda.get_device_name(),
                           args.rounds, args.calls))
    print()
    print("Alternated round by round with the PyTorch call (the ratio: the median of the rounds' ratios):")
    print()
    print("| op | PyTorch call | PyTorch µs | compiled `prog.f` µs | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r.get("paired"):
            print("| %s | %s | %.1f | %.1f | %.2fx |" % ((r["op"], r["torch"]) + tuple(r["paired"])))
    print()
    print("Each timed alone:")
    print()
    print("| op | PyTorch call | PyTorch µs | compiled `prog.f` µs (ratio) | compiled `torch.ops` µs "
          "(ratio) | ctypes `prog.f` µs (ratio) | ctypes `torch.ops` µs (ratio) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.1f | %s | %s | %s | %s |" % (
            r["op"], r["torch"], r["torch_us"], cell(r["compiled"], r["torch_us"]),
            cell(r["compiled_op"], r["torch_us"]), cell(r["ctypes"], r["torch_us"]),
            cell(r["ctypes_op"], r["torch_us"])))


def breakdown(compiled, cases):
    """Where a compiled call's host time goes: fsl_jit_session_launch called directly with
    descriptors built once (its own time is that less a trivial C API call through the same
    ctypes), and torch.empty of the output."""
    import ctypes

    from fslc import _capi
    from fslc._torch import _descriptor

    print()
    print("| op | compiled `prog.f` µs | C API launch, direct µs | ctypes floor µs | C API launch less floor µs | torch.empty µs |")
    print("|---|---|---|---|---|---|")
    for name, _, _, fusion, index, call_args in cases:
        prog = compiled[index]
        f = prog[fusion]
        out = f(*call_args)
        outs = out if isinstance(out, tuple) else (() if out is None else (out,))
        sig = f.signature
        by_name = {}
        tensors = [a for a in call_args if isinstance(a, torch.Tensor)]
        params = [p for p in sig.params if p.kind == "tensor"]
        inputs = iter(tensors)
        outputs = iter(outs)
        descriptors = []
        for p in params:
            t = next(outputs) if p.role == "out" else next(inputs)
            descriptors.append(_descriptor(t, p.dtype))
        scalars = [p.default for p in sig.params if p.kind == "scalar"]
        array = (ctypes.POINTER(_capi.Tensor) * len(descriptors))(*[ctypes.pointer(d) for d in descriptors])
        values = (ctypes.c_double * max(len(scalars), 1))(*[float(v) for v in scalars])
        error = _capi.error_buffer()
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        lib, session, name_bytes = prog._lib, prog._session, fusion.encode()
        launch = lib.fsl_jit_session_launch

        def direct():
            status = launch(session, name_bytes, array, len(descriptors), values, len(scalars), stream, error, len(error))
            if status != 0:
                raise RuntimeError(error.value.decode())

        stats = _capi.Stats()
        stats_ref = ctypes.byref(stats)
        floor = per_call_us(lambda: lib.fsl_jit_session_stats(session, stats_ref))
        shape, dtype = outs[0].shape, outs[0].dtype if outs else (None, None)
        total = per_call_us(lambda: f(*call_args))
        c_api = per_call_us(direct)
        empty = per_call_us(lambda: torch.empty(shape, dtype=dtype, device="cuda"))
        print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |" % (name, total, c_api, floor, c_api - floor, empty), flush=True)


def paths(norms, x):
    """Each way of calling softmax on x, timed as per_call_us does, all of them in turn
    within each round (so that a slow moment of the host weighs on each): the median µs."""
    f = norms["softmax"]
    overload = getattr(f.op, "no_grad", None)
    direct = getattr(overload, "_op", overload) if overload is not None else None
    aten = torch.ops.aten._softmax.default
    aten_op = getattr(aten, "_op", aten)

    def nothing(t):
        return t

    def through_python(t):
        return direct(t)

    def checked(t):
        if f._is_compiling():
            return None
        if f._grad_enabled() and t.requires_grad:
            return None
        return direct(t)

    calls = [
        ("torch.softmax(x, -1)", lambda: torch.softmax(x, -1)),
        ("torch._softmax(x, -1, False)", lambda: torch._softmax(x, -1, False)),
        ("torch.ops.aten._softmax.default(x, -1, False)", lambda: aten(x, -1, False)),
        ("torch.ops.aten._softmax.default._op(x, -1, False)", lambda: aten_op(x, -1, False)),
        ("prog.softmax(x)", lambda: f(x)),
        ("prog.softmax's direct call(x)", (lambda: f._direct_call(x)) if f._direct_call else None),
        ("prog.softmax's no_grad overload ._op(x)", (lambda: direct(x)) if direct else None),
        ("the same from a Python function", (lambda: through_python(x)) if direct else None),
        ("the same after prog.softmax's two checks", (lambda: checked(x)) if direct else None),
        ("torch.empty_like(x)", lambda: torch.empty_like(x)),
        ("torch.compiler.is_compiling()", f._is_compiling),
        ("torch.is_grad_enabled()", torch.is_grad_enabled),
        ("an empty Python function(x)", lambda: nothing(x)),
    ]
    calls = [(name, call) for name, call in calls if call is not None]
    for _, call in calls:
        for _ in range(50):
            call()
    torch.cuda.synchronize()
    times = {name: [] for name, _ in calls}
    for _ in range(args.rounds):
        for name, call in calls:
            start = time.perf_counter_ns()
            for _ in range(args.calls):
                call()
            times[name].append((time.perf_counter_ns() - start) / args.calls / 1e3)
            torch.cuda.synchronize()
    print()
    print("| softmax called as | host µs a call (median of rounds) |")
    print("|---|---|")
    for name, _ in calls:
        print("| %s | %.2f |" % (name, statistics.median(times[name])))


if __name__ == "__main__":
    main()
