#!/usr/bin/env python3
"""Runs one of fslc's backward norms (stdlib/std/norms.fsl: rms_norm_grad or
layer_norm_grad, each the whole backward as one inner-outer fusion) and
torch.compile(dynamic=False) of the same math at one shape, for Nsight Compute.

    ncu --profile-from-start off ... profile_norm_grads.py H T [KNOBS] [--fusion NAME]

KNOBS, optional, replaces the fusion's `= auto` with `= auto(inner_outer) { KNOBS }`
(for example "persistent_batch = 1; rows_per_block = 2;"). FSL_LIBRARY picks the libfsl.so
(two builds' kernels profiled side by side). Both are compiled and warmed up first; only
one call of each (fslc's kernels first, then Inductor's) is profiled.
"""
import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("H", type=int)
    parser.add_argument("T", type=int)
    parser.add_argument("knobs", nargs="?")
    parser.add_argument("--fusion", default="rms_norm_grad", choices=["rms_norm_grad", "layer_norm_grad"])
    args = parser.parse_args()
    H, T, name = args.H, args.T, args.fusion
    with open(os.path.join(ROOT, "stdlib", "std", "norms.fsl")) as f:
        text = f.read().replace("fusion %s<H = 4096>" % name, "fusion %s<H = %d>" % (name, H))
    if args.knobs:
        text += "\nschedule %s = auto(inner_outer) { %s }\n" % (name, args.knobs)
    program = fslc.load_text("norms", text, stdlib=os.path.join(ROOT, "stdlib"))
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    t = {
        "x": torch.randn(T, H, device="cuda", generator=g).bfloat16(),
        "rstd": torch.rand(T, device="cuda", generator=g) + 0.5,
        "grad_y": torch.randn(T, H, device="cuda", generator=g).bfloat16(),
    }
    if name == "rms_norm_grad":
        t["weight"] = torch.randn(H, device="cuda", generator=g).bfloat16()
        inputs = [t["x"], t["weight"], t["rstd"], t["grad_y"]]
    else:
        t["gamma"] = torch.randn(H, device="cuda", generator=g).bfloat16()
        t["mean"] = torch.randn(T, device="cuda", generator=g)
        inputs = [t["x"], t["gamma"], t["mean"], t["rstd"], t["grad_y"]]
    fusion = getattr(program, name)
    compiled = getattr(tune_references, name + "_compiled")

    def ours():
        return fusion(*inputs)

    def theirs():
        return compiled(t, {"H": H, "T": T})

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
