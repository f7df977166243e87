#!/usr/bin/env python3
"""A/B of two fslc builds: the stdlib's norm fusions compiled by an old libfsl.so and a new
one, their kernels alternated in one process (what a change to the code generator moved).

Each point: both builds' outputs compared first (within a bf16 rounding: a change may
reorder a sum), then one CUDA graph a build over rotating inputs (one pass twice the L2),
replayed alternately for --rounds rounds, the first build first in even rounds; the table
gives each build's median µs and the median of the per-round ratios old / new (> 1: the
new build's kernel is faster).

usage: python3 tests/bench/ab_libraries.py --old OLD/libfsl.so --new NEW/libfsl.so
           [--fusions layer_norm_grad,rms_norm_grad] [--shapes 1x2048,1024x4096]
(fusions: the stdlib's rms_norm_grad, rms_norm_add_grad, layer_norm_grad, rms_norm,
layer_norm, rms_norm_backward, rms_norm_add_backward, layer_norm_backward, softmax_backward
from std/norms.fsl, cross_entropy_train from
std/losses.fsl; T x H, with H the fusion's S for softmax and V for cross-entropy, whose
labels are random with ignore_index on every 8th row)
           [--rounds 9] [--tuning-db FILE|''] [-o ab.json]
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--old", required=True, help="the old build's libfsl.so")
parser.add_argument("--new", required=True, help="the new build's libfsl.so")
parser.add_argument("--stdlib", default=os.path.join(ROOT, "stdlib"))
parser.add_argument("--fusions", default="layer_norm_grad,rms_norm_grad,rms_norm_add_grad")
parser.add_argument("--shapes", default="1x2048,16x4096,128x4096,1024x2048,1024x4096,1024x8192,"
                    "4096x4096,16384x2048,16384x4096,16384x8192")
parser.add_argument("--rounds", type=int, default=9)
parser.add_argument("--tuning-db", default=None,
                    help="both builds' tuning database (default: the stdlib's, as the package loads it)")
parser.add_argument("-o", "--output", default="ab_libraries.json")
args = parser.parse_args()
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import fslc  # noqa: E402

L2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 50 << 20
BF16 = torch.bfloat16


def inputs(fusion, T, H, seed):
    """The fusion's arguments in std/norms.fsl's order, and the bytes they hold."""
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, device="cuda", dtype=BF16, generator=g)

    x, w, dy = randn(T, H), randn(H), randn(T, H)
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + 1e-6)
    if fusion == "rms_norm_grad":
        return (x, w, rstd, dy)
    if fusion == "rms_norm_add_grad":
        return (x, w, rstd, dy, randn(T, H))
    if fusion == "layer_norm_grad":
        return (x, w, xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5), dy)
    if fusion == "rms_norm":
        return (x, w)
    if fusion == "layer_norm":
        return (x, w, randn(H))
    if fusion == "rms_norm_backward":  # dx only
        return (x, w, rstd, dy)
    if fusion == "rms_norm_add_backward":  # dx (written twice) from h, with grad_h
        return (x, w, rstd, dy, randn(T, H))
    if fusion == "layer_norm_backward":  # dx only
        return (x, w, xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5), dy)
    if fusion == "softmax_backward":  # y a softmax's output (rows summing to 1), H is S
        return (torch.softmax(xf, -1).to(BF16), dy)
    if fusion == "cross_entropy_train":  # logits [T, V] and labels, H is V
        label = torch.randint(0, H, (T,), device="cuda", generator=g)
        label[::8] = -100
        return (x, label)
    raise SystemExit("--fusions: %s is not one of rms_norm_grad, rms_norm_add_grad, "
                     "layer_norm_grad, rms_norm, layer_norm, rms_norm_backward, "
                     "rms_norm_add_backward, layer_norm_backward, softmax_backward, "
                     "cross_entropy_train" % fusion)


def source(fusion):
    """The stdlib file that defines `fusion`."""
    return os.path.join(args.stdlib, "std", "losses.fsl" if fusion.startswith("cross_entropy") else "norms.fsl")


def as_tuple(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def mismatch(old, new):
    for a, b in zip(old, new):
        a, b = a.float(), b.float()
        if not torch.allclose(a, b, rtol=1e-2, atol=1e-2 * b.abs().max().item() + 1e-6):
            return "max abs difference %g" % (a - b).abs().max().item()
    return None


def graph(calls, stream):
    for call in calls:
        call()
    stream.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        for call in calls:
            call()
    stream.synchronize()
    return g


def replay_us(g, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def main():
    stream = torch.cuda.Stream()
    options = dict(stdlib=args.stdlib, ops="ctypes")
    if args.tuning_db is not None:
        options["tuning_db"] = args.tuning_db
    paths = sorted({source(fusion) for fusion in args.fusions.split(",")})
    builds = {side: {path: fslc.load(path, library=library,
                                     cache_dir=tempfile.mkdtemp(prefix="fsl-ab-%s-" % side),
                                     namespace="fsl_ab_%s_%s" % (side, os.path.basename(path)[:-4]),
                                     **options)
                     for path in paths}
              for side, library in (("old", args.old), ("new", args.new))}
    print("%s, torch %s; old %s, new %s" % (torch.cuda.get_device_name(), torch.__version__, args.old, args.new))
    print("| fusion | T x H | old µs | new µs | old / new |\n|---|---|---|---|---|", flush=True)
    rows, failed = [], 0
    for fusion in args.fusions.split(","):
        for shape in args.shapes.split(","):
            T, H = (int(v) for v in shape.split("x"))
            first = inputs(fusion, T, H, 0)
            set_bytes = sum(t.numel() * t.element_size() for t in first)
            sets = [first] + [inputs(fusion, T, H, s) for s in range(1, max(1, min(64, math.ceil(2 * L2 / set_bytes))))]
            calls = {side: [lambda s=s, f=getattr(p[source(fusion)], fusion): f(*s) for s in sets]
                     for side, p in builds.items()}
            # The inputs were made on the default stream: without this wait the first build's
            # call raced their making (softmax_backward at 16384 x 8192: "old and new differ").
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                why = mismatch(as_tuple(calls["old"][0]()), as_tuple(calls["new"][0]()))
            stream.synchronize()
            if why:
                failed += 1
                print("| %s | %d x %d | old and new differ: %s |" % (fusion, T, H, why), flush=True)
                rows.append({"fusion": fusion, "T": T, "H": H, "error": why})
                continue
            graphs = {side: graph(c, stream) for side, c in calls.items()}
            for side, g in graphs.items():  # warm-up, about 20 ms a build
                once = replay_us(g, len(sets)) * len(sets)
                for _ in range(min(200, int(20000 / max(once, 1.0)))):
                    g.replay()
            times = {"old": [], "new": []}
            ratios = []
            for r in range(args.rounds):
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                t = {side: replay_us(graphs[side], len(sets)) for side in order}
                for side in order:
                    times[side].append(t[side])
                ratios.append(t["old"] / t["new"])
            row = {"fusion": fusion, "T": T, "H": H, "sets": len(sets), "rounds": args.rounds,
                   "old_us": statistics.median(times["old"]), "new_us": statistics.median(times["new"]),
                   "old_over_new": statistics.median(ratios)}
            rows.append(row)
            print("| %s | %d x %d | %.2f | %.2f | %.3f |" % (fusion, T, H, row["old_us"], row["new_us"],
                                                            row["old_over_new"]), flush=True)
            del graphs, calls, sets, first
            torch.cuda.empty_cache()
    with open(args.output, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "old": args.old, "new": args.new, "rows": rows}, f,
                  indent=1)
    return 1 if failed else 0


sys.exit(main())
