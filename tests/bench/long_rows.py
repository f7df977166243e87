#!/usr/bin/env python3
"""The forward norms at rows too long to keep (H > 32768 bf16: softmax over a vocabulary),
this fslc's kernels against another build's and `torch.compile(dynamic=False)`.

Each point checks every fslc kernel against eager first (rms_norm_add's residual too), then
times the implementations alternated over ROUNDS rounds (the order reversed every other
round), each a CUDA graph over input sets that together exceed the L2 three times; the
table gives the median time of the rounds and the median of the per-round ratios.

usage: long_rows.py BUILD OUT [H,H,...] [T,T,...] [NEW OLD ...]

BUILD/<name>_<H>/lib<fusion>.so for each name (default: new and old; LONG_FUSIONS=a,b
times only those fusions), as
tests/bench/long_rows.sh builds them; every other kernel and torch.compile are compared
with the first. BUILD/libcopy16.so gives the copy ceiling.
"""
import ctypes
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ROUNDS = 5


def check(lib, fusion, s):
    """Our kernel's y (and rms_norm_add's residual) against eager's on set `s`."""
    r0 = s["r"].clone()
    status = bench.fsl_call(lib, fusion, s)()
    torch.cuda.synchronize()
    ours_y, ours_r = s["y"].clone(), s["r"].clone()
    s["r"].copy_(r0)
    ref = bench.torch_call(bench.eager(fusion), fusion, s)()  # writes the residual in place
    ok = status == 0 and torch.allclose(ours_y.float(), ref.float(), atol=2e-2, rtol=2e-2)
    if fusion == "rms_norm_add":
        ok = ok and torch.equal(ours_r, s["r"])
    s["r"].copy_(r0)
    return ok


def main():
    build, out = sys.argv[1], sys.argv[2]
    hidden = [int(h) for h in sys.argv[3].split(",")] if len(sys.argv) > 3 else [65536, 131072]
    rows = [int(t) for t in sys.argv[4].split(",")] if len(sys.argv) > 4 else [1, 1024, 4096]
    kernels = sys.argv[5:] or ["new", "old"]
    first = kernels[0]
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 512  # one static compile per shape
    ceiling, _ = bench.copy_ceiling(build)
    print(f"copy ceiling: {ceiling:.2f} TB/s", flush=True)
    static = {f: torch.compile(bench.eager(f), dynamic=False) for f in bench.FUSIONS}
    results, failures = [], 0
    fusions = os.environ.get("LONG_FUSIONS", ",".join(bench.FUSIONS)).split(",")
    for H in hidden:
        for fusion in fusions:
            paths = {name: os.path.join(build, f"{name}_{H}", f"lib{fusion}.so")
                     for name in kernels}
            missing = [p for p in paths.values() if not os.path.exists(p)]
            if missing:
                print(f"{fusion} H={H}: not timed, no {', '.join(missing)}", flush=True)
            if not os.path.exists(paths[first]):
                continue  # every ratio is against the first kernel
            libs = {name: ctypes.CDLL(p) for name, p in paths.items() if os.path.exists(p)}
            for T in rows:
                moved = bench.bytes_moved(fusion, T, H)
                sets = max(1, min(64, -(-3 * bench.L2_BYTES // moved)))
                inputs = [bench.make_inputs(fusion, T, H) for _ in range(sets)]
                ok = {name: check(lib, fusion, inputs[0]) for name, lib in libs.items()}
                failures += sum(not v for v in ok.values())
                calls = {name: [bench.fsl_call(lib, fusion, s) for s in inputs]
                         for name, lib in libs.items()}
                calls["static"] = [bench.torch_call(static[fusion], fusion, s) for s in inputs]
                names = list(calls)
                times = {name: [] for name in names}
                # Each other implementation's time over the first kernel's, round by round.
                ratios = {name: [] for name in names if name != first}
                for r in range(ROUNDS):
                    order = names if r % 2 == 0 else list(reversed(names))
                    t = {name: bench.time_calls(calls[name]) for name in order}
                    for name in names:
                        times[name].append(t[name])
                    for name in ratios:
                        ratios[name].append(t[name] / t[first])
                med = {name: statistics.median(v) for name, v in times.items()}
                row = dict(fusion=fusion, H=H, T=T, times=med,
                           over_first={n: statistics.median(v) for n, v in ratios.items()},
                           tbs=moved / (med[first] * 1e-6) / 1e12, ok=ok)
                row["ceiling_pct"] = 100 * row["tbs"] / ceiling
                results.append(row)
                print(f"{fusion:13s} H={H:6d} T={T:5d} " +
                      " ".join(f"{n} {med[n]:.2f}us" for n in names) + "  x" + first + ": " +
                      " ".join(f"{n} {v:.3f}" for n, v in row["over_first"].items()) +
                      f"  {row['tbs']:.2f} TB/s ({row['ceiling_pct']:.0f} %) ok {ok}", flush=True)
                del inputs, calls
                torch.cuda.empty_cache()
    with open(os.path.join(out, "long_rows.json"), "w") as f:
        json.dump({"ceiling": ceiling, "rows": results, "failures": failures,
                   "gpu": torch.cuda.get_device_name()}, f, indent=1)
    print(f"failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
