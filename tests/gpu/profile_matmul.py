#!/usr/bin/env python3
"""Runs one matmul variant at one shape a few times, for Nsight Compute or Systems.

usage: profile_matmul.py BUILD VARIANT M N K [CALLS]
(under `ncu --launch-skip 2 --launch-count 1 ...`: the third launch is profiled, after the
first calls have loaded the module and allocated the workspace pool.)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul import Variant  # noqa: E402


def main():
    build, name = sys.argv[1], sys.argv[2]
    M, N, K = (int(x) for x in sys.argv[3:6])
    calls = int(sys.argv[6]) if len(sys.argv) > 6 else 5
    with open(os.path.join(build, "matmul", "variants.txt")) as f:
        spec = next(line.split() for line in f if line.split()[0] == name)
    v = Variant(build, *spec)
    a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    w = v.weight(torch.randn(N, K, device="cuda").to(torch.bfloat16))
    bias = torch.randn(N, device="cuda").to(torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    call = v.call(a, w, bias, y)
    for _ in range(calls):
        assert call() == 0, v.err().decode()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
