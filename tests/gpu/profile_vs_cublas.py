#!/usr/bin/env python3
"""fslc's matmul kernels and cuBLAS's side by side, for Nsight Compute.

usage: ncu --profile-from-start off ... profile_vs_cublas.py BUILD [--variants A,B] "M,N,K" ...

For each shape: fslc's `plain_full` and `full` variants (tests/gpu/generate.sh: the
examples' hand schedules, a w^T and gelu(a w^T + bias)), or the variants `--variants`
names (`{shape}` in a name becomes the shape's M_N_K: `plain_auto_{shape}` is the
static-size auto(matmul) of each shape), cuBLAS's a @ w^T and F.linear +
GELU (cuBLASLt's fused bias, then PyTorch's GELU kernel), each called three times, the
third inside cudaProfilerStart/Stop so that `--profile-from-start off` captures one call
of each.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul import Variant, linear_gelu  # noqa: E402


def main():
    args = sys.argv[1:]
    build = args.pop(0)
    names = ["plain_full", "full"]
    if args and args[0] == "--variants":
        names = args[1].split(",")
        args = args[2:]
    with open(os.path.join(build, "matmul", "variants.txt")) as f:
        specs = {line.split()[0]: line.split() for line in f if line.strip()}
    cudart = torch.cuda.cudart()
    for shape in args:
        M, N, K = (int(x) for x in shape.split(","))
        variants = [Variant(build, *specs[name.replace("{shape}", f"{M}_{N}_{K}")])
                    for name in names]
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        calls = [v.call(a, w, bias, y) for v in variants]
        calls += [lambda: torch.matmul(a, w.t()), lambda: linear_gelu(a, w, bias)]
        for call in calls:
            for _ in range(2):
                call()
            torch.cuda.synchronize()
            cudart.cudaProfilerStart()
            call()
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()


if __name__ == "__main__":
    main()
