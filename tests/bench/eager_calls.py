#!/usr/bin/env python3
"""Argmax called without a CUDA graph (issue 17's grid reductions): a grid reduction is two
launches and a stream-ordered workspace (cudaMallocAsync / cudaFreeAsync) a call, where a
one-block-a-row kernel is one launch. Times back-to-back calls from Python (host and GPU
pipelined: the per-call time is whichever is slower) and each call alone (synchronized),
for the heuristics' kernel (argmax_<V>/, grid variants below 16 rows) and hand schedules
(am<variant>_<V>/) at small T.

    eager_calls.py BUILD [V,V,...] [T,T,...]
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reductions  # noqa: E402


def per_call(call, n, sync_each):
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        call()
        if sync_each:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main():
    build = sys.argv[1]
    vocab = [int(v) for v in sys.argv[2].split(",")] if len(sys.argv) > 2 else [32000, 128256]
    rows = [int(t) for t in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1, 8]
    for V in vocab:
        dirs = [f"argmax_{V}"] + sorted(d for d in os.listdir(build)
                                        if d.startswith("am") and d.endswith(f"_{V}"))
        for T in rows:
            s = {"x": torch.randn(T, V, device="cuda", dtype=torch.bfloat16),
                 "token": torch.empty(T, device="cuda", dtype=torch.int64)}
            ref = torch.argmax(s["x"], -1)
            line = []
            for d in dirs:
                call = reductions.argmax_call(reductions.load(os.path.join(build, d, "libargmax_row.so")), s)
                s["token"].fill_(-1)
                ok = call() == 0 and torch.equal(s["token"], ref)
                name = "auto" if d.startswith("argmax_") else d[len("am"):-len(f"_{V}")]
                line.append(f"{name} {per_call(call, 2000, False):.2f}/{per_call(call, 300, True):.2f}"
                            + ("" if ok else " WRONG"))
            torch_call = lambda: torch.argmax(s["x"], -1)
            line.append(f"torch {per_call(torch_call, 2000, False):.2f}/{per_call(torch_call, 300, True):.2f}")
            print(f"V={V:6d} T={T:3d} (us a call, pipelined/synchronized): " + " ".join(line), flush=True)


if __name__ == "__main__":
    main()
