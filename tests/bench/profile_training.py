#!/usr/bin/env python3
"""Runs the stdlib's cross-entropy (forward, then backward) and RoPE forward once each at
one shape, for Nsight Compute:

    ncu --profile-from-start off ... profile_training.py [T] [V]

T rows of V logits (default 4096 x 32000); RoPE over T x 32 heads of 128. Everything is
compiled and warmed up first; only one call of each is profiled.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import fslc  # noqa: E402


def main():
    T = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    V = int(sys.argv[2]) if len(sys.argv) > 2 else 32000
    stdlib = os.path.join(ROOT, "stdlib")
    losses = fslc.load(os.path.join(stdlib, "std", "losses.fsl"), stdlib=stdlib)
    rope = fslc.load(os.path.join(stdlib, "std", "rope.fsl"), stdlib=stdlib)
    logits = torch.randn(T, V, device="cuda").bfloat16()
    label = torch.randint(0, V, (T,), device="cuda")
    x = torch.randn(T * 32, 128, device="cuda").bfloat16()
    cos, sin = torch.randn_like(x), torch.randn_like(x)
    grad_loss = torch.ones(T, device="cuda")

    def calls():
        loss, lse = losses.cross_entropy_train(logits, label)
        losses.cross_entropy_backward(logits, label, lse, grad_loss)
        rope.rope_forward(x, cos, sin)

    for _ in range(3):
        calls()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    calls()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
