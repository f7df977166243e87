#!/usr/bin/env python3
"""Greedy decoding as the docs write it, `i32(argmax(f32(logits), over V))` with
`schedule = auto`: the schedule the heuristics chose before (the cast after the argmax made
it an outer reduction, each thread walking a whole row) against the one they choose now
(the argmax's row schedule, grid variants for few rows), both built from the CUDA fslc
printed (tests/bench/generate_post_reduction.sh writes OLD/ and NEW/ into bench-build/),
timed with CUDA events (median of 50 after warm-up) and checked against torch.argmax.

usage: post_reduction_auto.py BENCH_BUILD OUT
"""
import ctypes
import os
import subprocess
import sys

import torch

FSL_BF16, FSL_I32 = 4, 1


class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def desc(t, dtype):
    d = FslTensor()
    d.data, d.dtype, d.rank = t.data_ptr(), dtype, t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


def build(folder):
    lib = os.path.join(folder, "lib.so")
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-shared",
                    "-Xcompiler", "-fPIC", "-I", os.path.join(os.path.dirname(__file__), "..", "..",
                                                                "runtime", "include"),
                    "-I", folder, "-o", lib, os.path.join(folder, "greedy_i32.cu")], check=True)
    fn = ctypes.CDLL(lib).fsl_greedy_i32
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(FslTensor), ctypes.POINTER(FslTensor), ctypes.c_void_p]
    return fn


def median_us(call, reps=50):
    for _ in range(5):
        call()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return sorted(times)[len(times) // 2]


def main(build_dir, out):
    fns = {name: build(os.path.join(build_dir, name)) for name in ("old", "new")}
    V = 128256
    rows = ["| T | before (outer) µs | now µs | speed-up | torch.argmax µs | both exact |",
            "|---|---|---|---|---|---|"]
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for T in (1, 8, 128, 1024, 4096):
        logits = torch.randn(T, V, device="cuda").to(torch.bfloat16)
        expected = logits.float().argmax(-1).to(torch.int32)
        times, exact = {}, True
        for name, fn in fns.items():
            token = torch.full((T,), -1, device="cuda", dtype=torch.int32)
            d = (desc(logits, FSL_BF16), desc(token, FSL_I32))
            call = lambda: fn(d[0], d[1], stream)
            assert call() == 0
            torch.cuda.synchronize()
            exact = exact and bool((token == expected).all())
            times[name] = median_us(call)
        peer = median_us(lambda: logits.argmax(-1))
        rows.append(f"| {T} | {times['old']:.1f} | {times['new']:.1f} | "
                    f"{times['old'] / times['new']:.1f}x | {peer:.1f} | {'yes' if exact else 'NO'} |")
    table = "\n".join(rows)
    print(table)
    with open(os.path.join(out, "post_reduction_auto.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
