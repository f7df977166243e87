#!/usr/bin/env python3
"""Runs fslc's static rms_norm_add and Inductor's kernel for one large shape, for Nsight Compute.

    ncu --profile-from-start off ... profile_large_t.py BUILD H T

Both are compiled and warmed up first; only the region between cudaProfilerStart and
cudaProfilerStop, one call of each (fslc's first, then torch.compile(dynamic=False)'s),
is profiled. Inductor's source for the shape is printed with TORCH_LOGS=output_code.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def main():
    build, H, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fusion = "rms_norm_add"
    lib = bench.ctypes.CDLL(os.path.join(build, f"auto_{H}", f"lib{fusion}.so"))
    static = torch.compile(bench.eager(fusion), dynamic=False)
    s = bench.make_inputs(fusion, T, H)
    ours = bench.fsl_call(lib, fusion, s)
    theirs = bench.torch_call(static, fusion, s)
    for _ in range(3):
        assert ours() == 0
        theirs()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    ours()
    theirs()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
