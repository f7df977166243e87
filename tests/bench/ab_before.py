#!/usr/bin/env python3
"""A/B of this commit's kernels against the previous fslc's (generate.sh --before), alone.

bench.py times the `before` kernels once, after ours and the peers; a difference of a
few per cent there can be order or drift. Here each point times new and old in
alternation (ABAB... over ROUNDS rounds, each a graph of the same rotated inputs) and
reports the median of the per-round ratios, so a systematic difference shows and noise
averages out.

usage: ab_before.py BUILD OUT [H,H,...] [T,T,...] [NEW OLD]

NEW and OLD name the two kernels' folders, BUILD/NEW_<H> and BUILD/OLD_<H> (default: auto
and before); any two builds of the same fusions compare this way.
"""
import ctypes
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ROUNDS = 7


def main():
    build, out = sys.argv[1], sys.argv[2]
    hidden = [int(h) for h in sys.argv[3].split(",")] if len(sys.argv) > 3 else [4096, 16384]
    rows = [int(t) for t in sys.argv[4].split(",")] if len(sys.argv) > 4 else [1, 1024, 32768]
    new_dir = sys.argv[5] if len(sys.argv) > 5 else "auto"
    old_dir = sys.argv[6] if len(sys.argv) > 6 else "before"
    torch.manual_seed(0)
    results = []
    for H in hidden:
        for fusion in bench.FUSIONS:
            new = ctypes.CDLL(os.path.join(build, f"{new_dir}_{H}", f"lib{fusion}.so"))
            old = ctypes.CDLL(os.path.join(build, f"{old_dir}_{H}", f"lib{fusion}.so"))
            for T in rows:
                moved = bench.bytes_moved(fusion, T, H)
                sets = max(1, min(64, -(-3 * bench.L2_BYTES // moved)))
                inputs = [bench.make_inputs(fusion, T, H) for _ in range(sets)]
                calls = {"new": [bench.fsl_call(new, fusion, s) for s in inputs],
                         "old": [bench.fsl_call(old, fusion, s) for s in inputs]}
                ratios, times = [], {"new": [], "old": []}
                for r in range(ROUNDS):
                    order = ["new", "old"] if r % 2 == 0 else ["old", "new"]
                    t = {name: bench.time_calls(calls[name]) for name in order}
                    for name in t:
                        times[name].append(t[name])
                    ratios.append(t["new"] / t["old"])
                ratio = statistics.median(ratios)
                spread = (max(ratios) - min(ratios)) / 2
                results.append(dict(fusion=fusion, H=H, T=T, new=statistics.median(times["new"]),
                                    old=statistics.median(times["old"]), ratio=ratio, spread=spread))
                print(f"{fusion:13s} H={H:5d} T={T:5d} new {results[-1]['new']:9.2f}us "
                      f"old {results[-1]['old']:9.2f}us  new/old {ratio:.3f} (+-{spread:.3f})")
                del inputs, calls
                torch.cuda.empty_cache()
    with open(os.path.join(out, f"ab_{new_dir}_{old_dir}.json"), "w") as f:
        json.dump(results, f)
    worst = max(results, key=lambda r: r["ratio"])
    print(f"worst new/old: {worst['ratio']:.3f} ({worst['fusion']} H={worst['H']} T={worst['T']}); "
          f"points over 1.02: {sum(r['ratio'] > 1.02 for r in results)} of {len(results)}")


if __name__ == "__main__":
    main()
