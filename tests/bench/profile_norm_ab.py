#!/usr/bin/env python3
"""One call each of a norm fusion's kernel from two builds (BUILD/auto_H and BUILD/before_H,
as ab_before.py times them), for Nsight Compute side by side:

  ncu --clock-control none --metrics ... python3 tests/bench/profile_norm_ab.py BUILD FUSION H T

Each library is called three times (the first two warm up); profile with --launch-skip.
"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

build, fusion, H, T = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# Optional: the two folders' names (BUILD/<name>_H), as ab_before.py takes them.
builds = sys.argv[5:7] if len(sys.argv) > 6 else ["before", "auto"]
inputs = bench.make_inputs(fusion, T, H)
for which in builds:
    lib = ctypes.CDLL(os.path.join(build, f"{which}_{H}", f"lib{fusion}.so"))
    call = bench.fsl_call(lib, fusion, inputs)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
