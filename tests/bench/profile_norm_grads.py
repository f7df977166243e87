#!/usr/bin/env python3
"""Runs fslc's rms_norm_grad (stdlib/std/norms.fsl: RMSNorm's whole backward as one
inner-outer fusion) and torch.compile(dynamic=False) of the same math at one shape, for
Nsight Compute.

    ncu --profile-from-start off ... profile_norm_grads.py H T [KNOBS]

KNOBS, optional, replaces the fusion's `= auto` with `= auto(inner_outer) { KNOBS }`
(for example "persistent_batch = 1; rows_per_block = 2;"). Both are compiled and warmed up
first; only one call of each (fslc's kernels first, then Inductor's) is profiled.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import fslc  # noqa: E402
import tune_references  # noqa: E402


def main():
    H, T = int(sys.argv[1]), int(sys.argv[2])
    knobs = sys.argv[3] if len(sys.argv) > 3 else None
    with open(os.path.join(ROOT, "stdlib", "std", "norms.fsl")) as f:
        text = f.read().replace("fusion rms_norm_grad<H = 4096>", "fusion rms_norm_grad<H = %d>" % H)
    if knobs:
        text += "\nschedule rms_norm_grad = auto(inner_outer) { %s }\n" % knobs
    program = fslc.load_text("norms", text, stdlib=os.path.join(ROOT, "stdlib"))
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    t = {
        "x": torch.randn(T, H, device="cuda", generator=g).bfloat16(),
        "weight": torch.randn(H, device="cuda", generator=g).bfloat16(),
        "rstd": torch.rand(T, device="cuda", generator=g) + 0.5,
        "grad_y": torch.randn(T, H, device="cuda", generator=g).bfloat16(),
    }

    def ours():
        return program.rms_norm_grad(t["x"], t["weight"], t["rstd"], t["grad_y"])

    def theirs():
        return tune_references.rms_norm_grad_compiled(t, {"H": H, "T": T})

    for _ in range(3):
        ours()
        theirs()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    ours()
    theirs()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
