#!/usr/bin/env python3
"""fslc's matmul kernels and cuBLAS's side by side, for Nsight Compute.

usage: ncu --profile-from-start off ... profile_vs_cublas.py BUILD "M,N,K" ...

For each shape: fslc's `plain_full` and `full` variants (tests/gpu/generate.sh: the
examples' hand schedules, a w^T and gelu(a w^T + bias)), cuBLAS's a @ w^T and F.linear +
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
    build = sys.argv[1]
    with open(os.path.join(build, "matmul", "variants.txt")) as f:
        specs = {line.split()[0]: line.split() for line in f if line.strip()}
    variants = [Variant(build, *specs[name]) for name in ("plain_full", "full")]
    cudart = torch.cuda.cudart()
    for shape in sys.argv[2:]:
        M, N, K = (int(x) for x in shape.split(","))
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
