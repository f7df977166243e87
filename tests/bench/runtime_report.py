#!/usr/bin/env python3
"""Renders runtime.json (runtime.py; several files are merged) as docs/performance.md tables.

    runtime_report.py gpu.txt runtime.json [runtime.json...] > tables.md
"""
import json
import math
import sys


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    gpu = open(sys.argv[1]).read().strip()
    data = [json.load(open(path)) for path in sys.argv[2:]]
    rows = [r for d in data for r in d["rows"]]
    first = {k: v for d in data for k, v in d["first_call_ms"].items()}
    hits = {k: v for d in data for k, v in d["hit_host_us"].items()}
    print(f"Run of {data[0]['date']}, {gpu}; copy ceiling {data[0]['ceiling']:.2f} TB/s.\n")
    print("µs per call. `static`: H known to fslc; `jit`: H runtime, specialized by the JIT "
          "(python/fsl); `aot`: H runtime, the guarded variants compiled ahead of time; "
          "`generic`: the one loop for every H of before. `eager`, `compile` "
          "(`torch.compile(dynamic=True)`), `static c.` (`dynamic=False`). `jit/static` and "
          "`aot/best dyn` (the faster of eager and dynamic compile over aot, > 1: aot faster).\n")
    print("| fusion | H | T | static | jit | aot | generic | eager | compile | static c. | jit / static | best dyn / aot | ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["times"]
        jit = t.get("jit")
        jit_cell = f"{jit:.2f}" if jit else "–"
        ratio = f"{jit / t['static']:.3f}" if jit else "–"
        best_dynamic = min(t["eager"], t["compile"])
        print(f"| {r['fusion']} | {r['H']} | {r['T']} | {t['static']:.2f} | {jit_cell} | "
              f"{t['aot']:.2f} | {t['generic']:.2f} | {t['eager']:.2f} | {t['compile']:.2f} | "
              f"{t['static_compile']:.2f} | {ratio} | {best_dynamic / t['aot']:.2f} | "
              f"{'yes' if all(r['correct'].values()) else 'NO'} |")
    print("\n| fusion | points | jit within 5 % of static | aot not slower than eager and dynamic compile "
          "| geomean aot / static | geomean generic / static | static not slower than static compile (T ≥ 1024) |")
    print("|---|---|---|---|---|---|---|")
    for fusion in sorted({r["fusion"] for r in rows}):
        rs = [r for r in rows if r["fusion"] == fusion]
        jit_ok = sum(1 for r in rs if "jit" in r["times"] and r["times"]["jit"] <= 1.05 * r["times"]["static"])
        aot_ok = sum(1 for r in rs if r["times"]["aot"] <= min(r["times"]["eager"], r["times"]["compile"]))
        big = [r for r in rs if r["T"] >= 1024]
        static_ok = sum(1 for r in big if r["times"]["static"] <= r["times"]["static_compile"])
        print(f"| {fusion} | {len(rs)} | {jit_ok} | {aot_ok} | "
              f"{geomean(r['times']['aot'] / r['times']['static'] for r in rs):.2f} | "
              f"{geomean(r['times']['generic'] / r['times']['static'] for r in rs):.2f} | "
              f"{static_ok} of {len(big)} |")
    if first:
        print("\nJIT first call (specialize + NVRTC + load, ms) and cache-hit host time through the "
              "custom op (µs):\n")
        print("| fusion, H | first call ms | hit host µs |")
        print("|---|---|---|")
        for key in first:
            print(f"| {key} | {first[key]:.0f} | {hits.get(key, float('nan')):.1f} |")


if __name__ == "__main__":
    main()
