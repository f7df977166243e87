#!/usr/bin/env python3
"""Runs fslc's softmax and the hand-written Triton softmax at one shape, for Nsight Compute.

    ncu --profile-from-start off ... profile_softmax.py BUILD H T [VARIANT...]

BUILD is bench-build/red. Everything is compiled and warmed up first; only one call each
is profiled: fslc's heuristic kernel (auto_<H>), each named hand schedule (x<VARIANT>_<H>),
then Triton's one-row-a-program and persistent forms.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import triton_softmax  # noqa: E402


def main():
    build, H, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dirs = [f"auto_{H}"] + [f"x{v}_{H}" for v in sys.argv[4:]]
    s = bench.make_inputs("softmax", T, H)
    calls = [bench.fsl_call(bench.ctypes.CDLL(os.path.join(build, d, "libsoftmax.so")), "softmax", s)
             for d in dirs]
    calls += [lambda: triton_softmax.softmax(s["x"], s["y"], False),
              lambda: triton_softmax.softmax(s["x"], s["y"], True)]
    bench.profile_once(calls)


if __name__ == "__main__":
    main()
