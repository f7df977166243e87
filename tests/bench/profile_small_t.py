#!/usr/bin/env python3
"""The backward norms at few rows, kernel by kernel: which kernels fslc's call and
torch.compile's call launch and how long each runs on the device (torch.profiler, CUPTI),
next to the whole call in a CUDA graph (what training_bench.py times).

usage: python3 tests/bench/profile_small_t.py --library L [--shapes 1x2048,128x4096]
           [--fusions rms_norm_grad,layer_norm_grad] [--calls 50] [--norm-variant NAME:KNOBS]
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"))
parser.add_argument("--stdlib", default=os.path.join(ROOT, "stdlib"))
parser.add_argument("--shapes", default="1x2048,1x8192,16x4096,128x4096,128x8192")
parser.add_argument("--fusions", default="rms_norm_grad,layer_norm_grad")
parser.add_argument("--calls", type=int, default=50)
parser.add_argument("--norm-variant", action="append", default=[], metavar="NAME:KNOBS")
args = parser.parse_args()
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import fslc  # noqa: E402


def rms_math(x, w, rstd, dy):
    xf, dyf, r = x.float(), dy.float(), rstd[:, None]
    g = w.float() * dyf
    dx = r * (g - xf * (r * r) * (g * xf).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xf * r).sum(0).to(w.dtype)


def ln_math(x, gamma, mean, rstd, dy):
    xf, dyf, r, mu = x.float(), dy.float(), rstd[:, None], mean[:, None]
    xhat = (xf - mu) * r
    g = gamma.float() * dyf
    dx = r * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xhat).sum(0).to(gamma.dtype), dyf.sum(0).to(gamma.dtype)


def inputs(fusion, T, H):
    bf = torch.bfloat16
    x = torch.randn(T, H, device="cuda", dtype=bf)
    w = torch.randn(H, device="cuda", dtype=bf)
    dy = torch.randn(T, H, device="cuda", dtype=bf)
    xf = x.float()
    if fusion == "rms_norm_grad":
        return (x, w, torch.rsqrt(xf.pow(2).mean(-1) + 1e-6), dy)
    return (x, w, xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5), dy)


def kernels(call, calls):
    """{kernel name: (launches a call, median µs)} over `calls` calls."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    times = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and event.device_time > 0:
            times.setdefault(event.name, []).append(event.device_time)
    return {name: (len(t) / calls, statistics.median(t)) for name, t in times.items()}


def graph_us(call):
    call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(20):
            call()
    for _ in range(20):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(15):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / 20)
    return statistics.median(samples)


def main():
    path = os.path.join(args.stdlib, "std", "norms.fsl")
    common = dict(library=args.library, stdlib=args.stdlib, ops="ctypes")
    programs = {"fslc": fslc.load(path, **common)}
    with open(path) as f:
        text = f.read()
    for variant in args.norm_variant:
        name, _, knobs = variant.partition(":")
        programs["fslc:" + name] = fslc.load_text(
            os.path.join(args.stdlib, "std", "profile_%s.fsl" % name),
            text + "".join("schedule %s = auto(inner_outer) { %s }\n" % (f, knobs)
                           for f in ("rms_norm_grad", "rms_norm_add_grad", "layer_norm_grad")),
            namespace="fsl_profile_%s" % name, tuning_db="", **common)
    compiled = {"rms_norm_grad": torch.compile(rms_math, dynamic=False),
                "layer_norm_grad": torch.compile(ln_math, dynamic=False)}
    print("%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    for fusion in args.fusions.split(","):
        for pair in args.shapes.split(","):
            T, H = (int(v) for v in pair.split("x"))
            s = inputs(fusion, T, H)
            calls = {name: (lambda p=p: getattr(p, fusion)(*s)) for name, p in programs.items()}
            calls["compile"] = lambda: compiled[fusion](*s)
            for name, call in calls.items():
                found = kernels(call, args.calls)
                print("%s T=%d H=%d %s: graph %.2f µs a call; kernels: %s" % (
                    fusion, T, H, name, graph_us(call),
                    "; ".join("%s x%.0f %.2f µs" % (k[:60], n, us) for k, (n, us) in sorted(found.items()))),
                    flush=True)


main()
