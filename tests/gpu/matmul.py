#!/usr/bin/env python3
"""Matrix products with a bias + tanh-GELU epilogue on the H200: correctness, then speed.

usage: matmul.py BUILD OUT

BUILD/matmul/variants.txt lists the variants (tests/gpu/generate.sh), one a line: a name
and the layout of w ("nk": w: bf16[N, K]; "kn": w: bf16[K, N]); BUILD/matmul/NAME/
liblinear.so is the fusion of examples/linear_bias_gelu.fsl built from fslc's CUDA
(a: bf16[M, K], w, bias: bf16[N]) -> (y: bf16[M, N]).
Correctness: outputs poisoned with NaN, fresh normal inputs, shapes with tails in M, N
and K (M in {1, 16, 128, 4096}), against PyTorch in float32 (bf16 inputs, f32 accumulate,
rounded to bf16 at the end): |out - ref| <= 2e-2 + 2e-2 |ref| and no NaN.
Speed: CUDA-graph replays, in one process: every variant, cuBLAS (torch.matmul, both
layouts of w), cuBLASLt's fused bias (F.linear) followed by GELU, and torch.compile of
that bf16 function; TFLOP/s counts 2*M*N*K.
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


def reference(a, w_nk, bias):
    return F.gelu(F.linear(a.float(), w_nk.float(), bias.float()), approximate="tanh").to(torch.bfloat16)


def linear_gelu(a, w_nk, bias):
    return F.gelu(F.linear(a, w_nk, bias), approximate="tanh")


def time_us(call, replays=15):
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


class Variant:
    def __init__(self, build, name, layout):
        self.name, self.layout = name, layout
        lib = ctypes.CDLL(os.path.join(build, "matmul", name, "liblinear.so"))
        self.fn = lib.fsl_linear_bias_gelu
        self.fn.restype = ctypes.c_int
        P = ctypes.POINTER(FslTensor)
        self.fn.argtypes = [P, P, P, P, ctypes.c_void_p]
        self.err = lib.fsl_linear_bias_gelu_error
        self.err.restype = ctypes.c_char_p

    def weight(self, w_nk):
        return w_nk if self.layout == "nk" else w_nk.t().contiguous()

    def call(self, a, w, bias, y):
        d = [desc(a), desc(w), desc(bias), desc(y)]
        # The stream is read at each call: CUDA-graph capture runs on a stream of its own.
        return lambda: self.fn(d[0], d[1], d[2], d[3],
                               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))


def main():
    build, out = sys.argv[1], sys.argv[2]
    with open(os.path.join(build, "matmul", "variants.txt")) as f:
        variants = [Variant(build, *line.split()) for line in f if line.strip()]
    failures = 0
    torch.manual_seed(0)
    print("| variant | M | N | K | result | detail |\n|---|---|---|---|---|---|")
    for M, N, K in [(1, 136, 200), (16, 256, 64), (70, 136, 200), (300, 264, 8), (128, 4104, 5120),
                    (4096, 14336, 5120), (4095, 1000, 1000)]:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w_nk = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        ref = reference(a, w_nk, bias).float()
        for v in variants:
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            status = v.call(a, v.weight(w_nk), bias, y)()
            torch.cuda.synchronize()
            if status != 0:
                failures += 1
                print(f"| {v.name} | {M} | {N} | {K} | FAIL | status {status}: {v.err().decode()} |")
                continue
            got = y.float()
            bad = (~torch.isfinite(got)) | ((got - ref).abs() > 2e-2 + 2e-2 * ref.abs())
            worst = (got - ref).abs().nan_to_num(float("inf")).max().item()
            ok = not bool(bad.any())
            failures += not ok
            print(f"| {v.name} | {M} | {N} | {K} | {'pass' if ok else 'FAIL'} | max abs err "
                  f"{worst:.3g}, {int(bad.sum())} out of tolerance |")
    print(f"\nmatmul correctness: {failures} failures\n")
    compiled = torch.compile(linear_gelu)
    shapes = [(4096, 14336, 5120), (8192, 8192, 8192), (4096, 4096, 4096), (128, 14336, 5120)]
    names = [v.name for v in variants]
    print("| M | N | K | " + " | ".join(f"{n} TFLOP/s" for n in names) +
          " | cuBLAS a@w^T | cuBLAS a@w (kn) | F.linear+gelu | torch.compile | best fslc / cuBLAS |")
    print("|---" * (len(names) + 8) + "|")
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w_nk = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        w_kn = w_nk.t().contiguous()
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        tf = lambda us: 2 * M * N * K / (us * 1e-6) / 1e12
        ours = [time_us(v.call(a, w_nk if v.layout == "nk" else w_kn, bias, y)) for v in variants]
        cublas = time_us(lambda: torch.matmul(a, w_nk.t()))
        cublas_kn = time_us(lambda: torch.matmul(a, w_kn))
        linear = time_us(lambda: linear_gelu(a, w_nk, bias))
        comp = time_us(lambda: compiled(a, w_nk, bias))
        print(f"| {M} | {N} | {K} | " + " | ".join(f"{tf(t):.0f}" for t in ours) +
              f" | {tf(cublas):.0f} | {tf(cublas_kn):.0f} | {tf(linear):.0f} | {tf(comp):.0f} | "
              f"{100 * cublas / min(ours):.0f} % ({names[ours.index(min(ours))]}) |")


if __name__ == "__main__":
    main()
