#!/usr/bin/env python3
"""Matrix product with a bias + tanh-GELU epilogue on the H200: correctness, then speed.

usage: matmul.py LIB FUSION OUT

LIB is the shared library built from fslc's CUDA for a fusion with the signature of
examples/linear_bias_gelu.fsl: (a: bf16[M, K], w: bf16[N, K], bias: bf16[N]) -> (y: bf16[M, N]).
Correctness: outputs poisoned with NaN, fresh normal inputs, shapes with tails in M, N
and K, against PyTorch in float32 (bf16 inputs, f32 accumulate, rounded to bf16 at the
end): |out - ref| <= 2e-2 + 2e-2 |ref| and no NaN. Speed: CUDA-graph replays of the
launcher, cuBLAS (torch.matmul), cuBLASLt's fused bias (F.linear) followed by GELU, and
torch.compile of the same function, in one process; TFLOP/s counts 2*M*N*K.
"""
import ctypes
import os
import statistics
import sys

import torch
import torch.nn.functional as F

FSL_BF16 = 4


class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def desc(t):
    d = FslTensor()
    d.data, d.dtype, d.rank = t.data_ptr(), FSL_BF16, t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


def reference(a, w, bias):
    return F.gelu(F.linear(a.float(), w.float(), bias.float()), approximate="tanh").to(torch.bfloat16)


def time_us(call, replays=20):
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
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000 / 10)
    return statistics.median(times)


def main():
    lib_path, fusion, out = sys.argv[1], sys.argv[2], sys.argv[3]
    lib = ctypes.CDLL(lib_path)
    fn = getattr(lib, "fsl_" + fusion)
    fn.restype = ctypes.c_int
    P = ctypes.POINTER(FslTensor)
    fn.argtypes = [P, P, P, P, ctypes.c_void_p]
    err = getattr(lib, "fsl_" + fusion + "_error")
    err.restype = ctypes.c_char_p
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    lines = []
    failures = 0
    torch.manual_seed(0)
    for M, N, K in [(1, 136, 200), (16, 256, 64), (70, 136, 200), (128, 4104, 5120),
                    (4096, 14336, 5120), (4095, 1000, 1000)]:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        da, dw, db, dy = desc(a), desc(w), desc(bias), desc(y)
        status = fn(da, dw, db, dy, stream())
        torch.cuda.synchronize()
        if status != 0:
            failures += 1
            lines.append(f"| {M} | {N} | {K} | FAIL | status {status}: {err().decode()} |")
            continue
        ref = reference(a, w, bias).float()
        got = y.float()
        bad = (~torch.isfinite(got)) | ((got - ref).abs() > 2e-2 + 2e-2 * ref.abs())
        worst = (got - ref).abs().nan_to_num(float("inf")).max().item()
        ok = not bool(bad.any())
        failures += not ok
        lines.append(f"| {M} | {N} | {K} | {'pass' if ok else 'FAIL'} | max abs err {worst:.3g}, "
                     f"{int(bad.sum())} elements out of tolerance |")
    print("| M | N | K | result | detail |\n|---|---|---|---|---|")
    print("\n".join(lines))
    # Speed at nvFuser's MLP shape and two squares.
    print("\n| M | N | K | fslc us | TFLOP/s | cuBLAS matmul us | TFLOP/s | % of cuBLAS | F.linear+gelu us | torch.compile us |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    compiled = torch.compile(reference)
    for M, N, K in [(4096, 14336, 5120), (8192, 8192, 8192), (4096, 4096, 4096)]:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        d = [desc(a), desc(w), desc(bias), desc(y)]
        ours = time_us(lambda: fn(d[0], d[1], d[2], d[3], stream()))
        cublas = time_us(lambda: torch.matmul(a, w.t()))
        linear = time_us(lambda: F.gelu(F.linear(a, w, bias), approximate="tanh"))
        comp = time_us(lambda: compiled(a, w, bias))
        tf = lambda us: 2 * M * N * K / (us * 1e-6) / 1e12
        print(f"| {M} | {N} | {K} | {ours:.1f} | {tf(ours):.0f} | {cublas:.1f} | {tf(cublas):.0f} | "
              f"{100 * cublas / ours:.0f} % | {linear:.1f} | {comp:.1f} |")
    print(f"\nmatmul correctness: {failures} failures")


if __name__ == "__main__":
    main()
