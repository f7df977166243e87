#!/usr/bin/env python3
"""Runs fslc's argmax at one shape, for Nsight Compute: the heuristics' kernel (argmax_<V>)
and each named hand schedule (am<VARIANT>_<V>), then torch.argmax; one profiled call each.

    ncu --profile-from-start off ... profile_argmax.py BUILD V T [VARIANT...]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import reductions  # noqa: E402


def main():
    build, V, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dirs = [f"argmax_{V}"] + [f"am{v}_{V}" for v in sys.argv[4:]]
    s = {"x": torch.randn(T, V, device="cuda", dtype=torch.bfloat16),
         "token": torch.empty(T, device="cuda", dtype=torch.int64)}
    calls = [reductions.argmax_call(reductions.load(os.path.join(build, d, "libargmax_row.so")), s)
             for d in dirs]
    calls.append(lambda: torch.argmax(s["x"], -1))
    bench.profile_once(calls)


if __name__ == "__main__":
    main()
