#!/usr/bin/env python3
"""Renders bench.json (from bench.py) as the Markdown tables of docs/performance.md.

    report.py bench.json gpu.txt > tables.md
"""
import json
import math
import sys

FUSIONS = ["rms_norm_add", "rms_norm", "layer_norm", "softmax"]


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    data = json.load(open(sys.argv[1]))
    gpu = open(sys.argv[2]).read().strip() if len(sys.argv) > 2 else "unknown GPU"
    rows, ceiling = data["rows"], data["ceiling"]
    print(f"## Results: {data['date']}, {gpu}\n")
    copies = ", ".join(f"{name} {value:.2f}" for name, value in data.get("copies", {}).items())
    print(f"Copy ceiling measured in the same run: **{ceiling:.2f} TB/s** (best of: {copies}).")
    print("Times are µs per call (median of 30 graph replays; ours and the peers timed in one order, then "
          "in the reverse, each the mean of its two). `compile` is `torch.compile(dynamic=True)`, "
          "`static` is `torch.compile(dynamic=False)` compiled for each shape. `x best` is the fastest "
          "peer's time over ours; `% ceiling` our bytes per second over the copy ceiling; `target` the "
          "issue's rule (not slower than either peer, and ≥ 1.10× the faster peer or ≥ 95 % of the "
          "ceiling). `nopdl` is the same code without programmatic dependent launch, `dynamic` the "
          "fusion with H a runtime size. " +
          ("Every result matched eager (bf16, 2e-2)." if all(r["correct"] for r in rows)
           else "**Some results did not match eager: see `ok`.**") + "\n")
    print("| fusion | H | T | MB | fslc | eager | compile | static | x best | TB/s | % ceiling | target | nopdl | dynamic |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["H"], r["T"], FUSIONS.index(r["fusion"]))):
        v = r.get("variants", {})
        cell = lambda k: f"{v[k]:.2f}" if k in v else ""
        print(f"| {r['fusion']} | {r['H']} | {r['T']} | {r['mb']:.1f} | {r['ours']:.2f} | {r['eager']:.2f} | "
              f"{r['compiled']:.2f} | {r['compiled_static']:.2f} | {r['speedup']:.2f} | {r['tbs']:.2f} | "
              f"{100 * r['ceiling']:.1f} | {'met' if r['meets'] else 'missed'} | {cell('nopdl')} | {cell('dynamic')} |")
    met = sum(r["meets"] for r in rows)
    print(f"\nTargets met at **{met} of {len(rows)}** points.\n")
    print("| fusion | geomean speedup over eager | over dynamic compile | over static compile | over the fastest peer | ≥ 256 MB: % of ceiling |")
    print("|---|---|---|---|---|---|")
    for f in FUSIONS:
        rs = [r for r in rows if r["fusion"] == f]
        big = [100 * r["ceiling"] for r in rs if r["mb"] >= 256]
        print(f"| {f} | {geomean(r['eager'] / r['ours'] for r in rs):.2f} | "
              f"{geomean(r['compiled'] / r['ours'] for r in rs):.2f} | "
              f"{geomean(r['compiled_static'] / r['ours'] for r in rs):.2f} | "
              f"{geomean(r['speedup'] for r in rs):.2f} | "
              + (f"{min(big):.0f}–{max(big):.0f} % |" if big else "– |"))
    extra = sorted({k for r in rows for k in r.get("variants", {})} - {"nopdl", "dynamic"})
    if extra:
        print("\nOther variants timed in the same run (µs; blank where not built):\n")
        print("| fusion | H | T | fslc | " + " | ".join(extra) + " |")
        print("|---|---|---|---|" + "---|" * len(extra))
        for r in rows:
            v = r.get("variants", {})
            if any(k in v for k in extra):
                print(f"| {r['fusion']} | {r['H']} | {r['T']} | {r['ours']:.2f} | " +
                      " | ".join(f"{v[k]:.2f}" if k in v else "" for k in extra) + " |")
    print("\n### A/B: static blockDim.x vs the baseline (`static_bdimx = false; compute_with = false`)\n")
    print("rms_norm_add; µs per call; `static again` repeats the static kernel right after the baseline.\n")
    print("| H | T | static | baseline | static again | baseline / static |")
    print("|---|---|---|---|---|---|")
    for a in data["ab"]:
        static = min(a["static"], a["static_again"])
        print(f"| {a['H']} | {a['T']} | {a['static']:.2f} | {a['baseline']:.2f} | {a['static_again']:.2f} | "
              f"{a['baseline'] / static:.2f} |")


if __name__ == "__main__":
    main()
