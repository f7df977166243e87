#!/usr/bin/env python3
"""Simulator and NVRTC suite: randomized legal schedules of pointwise, reduction, RMSNorm(+add),
LayerNorm and Softmax fusions, over hidden sizes that do and do not divide the splits,
run on the CPU simulator and compared with the float64 reference (`fslc --simulate`);
the kernels of every case that runs are also compiled for sm_90a by NVRTC.

Every fusion is also run with `schedule f = auto;` (the heuristics) at every size, and
with the non-static baseline knobs. A case the checker or the lowering refuses (a vector width that does not divide H, a
buffer too large...) is counted as refused, not run: the suite asserts that no case
that runs disagrees with the reference or faults, and that most cases run. The seed is
fixed, so a failure reproduces; each failure prints the .fsl it ran.

usage: sim_suite.py FSLC [CASES]
"""
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

FUSIONS = {
    "pointwise": """fusion f<H = {H}>(x: bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {{
    y = bf16(f32(x) * f32(w) + 1.0);
}}""",
    "reduction": """fusion f<H = {H}>(x: bf16[T, H]) -> (y: bf16[T]) {{
    let s = sum(f32(x), over H);
    y = bf16(s);
}}""",
    "rms_norm": """fusion f<H = {H}>(x: bf16[T, H], w: bf16[H], eps: f32 = 1e-6) -> (y: bf16[T, H]) {{
    let xf = f32(x);
    let ms = mean(xf * xf, over H);
    y = bf16(xf * rsqrt(ms + eps) * f32(w));
}}""",
    "rms_norm_add": """fusion f<H = {H}>(x: bf16[T, H], residual: inout bf16[T, H], w: bf16[H]) -> (y: bf16[T, H]) {{
    let xf = f32(x) + f32(residual);
    residual = bf16(xf);
    let ms = mean(xf * xf, over H);
    y = bf16(xf * rsqrt(ms + 1e-6) * f32(w));
}}""",
    "layer_norm": """fusion f<H = {H}>(x: bf16[T, H], g: bf16[H], b: bf16[H]) -> (y: bf16[T, H]) {{
    let xf = f32(x);
    let mu = mean(xf, over H);
    let d = xf - mu;
    let var = mean(d * d, over H);
    y = bf16(d * rsqrt(var + 1e-5) * f32(g) + f32(b));
}}""",
    "softmax": """fusion f<H = {H}>(x: bf16[T, H]) -> (y: bf16[T, H]) {{
    let xf = f32(x);
    let e = exp(xf - max(xf, over H));
    y = bf16(e / sum(e, over H));
}}""",
}
HIDDEN = [1, 7, 96, 1000, 4096]
ROWS = [1, 3, 7]
REFUSALS = {"vectorize-not-dividing", "persistent-too-large", "too-many-threads", "lowering-unsupported",
            "persistent-not-buffer", "compute-with-not-persistent"}


def schedule(rng, fusion):
    vector = rng.choice([1, 2, 4, 8])
    threads = rng.choice([32, 64, 96, 128, 256])
    rows = rng.choice([1, 1, 2, 4])
    lines = [f"    split H by {vector} -> (Ho, Hv);",
             f"    split Ho by {threads} -> (Hp, Hx);"]
    if rows > 1:
        lines.append(f"    split T by {rows} -> (Tb, Ty);")
        lines.append("    parallelize Tb -> BIDx, Ty -> TIDy, Hx -> TIDx;")
    else:
        lines.append("    parallelize T -> BIDx, Hx -> TIDx;")
    if vector > 1:
        lines.append("    vectorize Hv;")
    if rng.random() < 0.5:
        lines.append("    unroll Hp;")
    buffer = {"rms_norm": "xf", "rms_norm_add": "xf", "layer_norm": "xf", "softmax": "xf"}.get(fusion)
    if buffer and (fusion == "rms_norm_add" or rng.random() < 0.6):
        lines.append(f"    persistent {buffer} in registers;")
        if rng.random() < 0.5:
            lines.append(f"    compute_with {buffer};")
    return "schedule f {\n" + "\n".join(lines) + "\n}\n"


def run(fslc, workdir, index, fusion, hidden, rows, text):
    path = os.path.join(workdir, f"case{index}.fsl")
    with open(path, "w") as handle:
        handle.write(text)
    result = subprocess.run([fslc, "--diagnostics-color=never", "--simulate", f"T={rows}", path],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == 0 and "matches the float64 reference" in result.stdout:
        # The same kernels must also compile for sm_90a through NVRTC.
        compiled = subprocess.run([fslc, "--diagnostics-color=never", "--emit=cubin", "-o",
                                   os.path.join(workdir, f"cubin{index}"), path],
                                  capture_output=True, text=True, timeout=300)
        if compiled.returncode != 0:
            return "fail", f"{fusion} H={hidden} T={rows}: NVRTC:\n{text}\n{compiled.stderr}"
        return "pass", ""
    ids = set(re.findall(r"\[([a-z0-9-]+)\]", result.stderr))
    if result.returncode == 1 and ids and ids <= REFUSALS:
        return "refused", ""
    return "fail", f"{fusion} H={hidden} T={rows}:\n{text}\n{result.stdout}{result.stderr}"


def main():
    fslc = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    rng = random.Random(20261129)
    cases = []
    for index in range(count):
        fusion = rng.choice(list(FUSIONS))
        hidden, rows = rng.choice(HIDDEN), rng.choice(ROWS)
        text = FUSIONS[fusion].format(H=hidden) + "\n\n" + schedule(rng, fusion)
        cases.append((index, fusion, hidden, rows, text))
    # Every heuristic schedule too: each fusion at each size, default knobs and the baseline.
    for fusion in FUSIONS:
        for hidden in HIDDEN:
            for knobs in ("", " { static_bdimx = false; compute_with = false; }"):
                if knobs and fusion in ("pointwise", "reduction"):
                    continue
                kind = "(inner_persistent)" if knobs else ""
                text = FUSIONS[fusion].format(H=hidden) + f"\n\nschedule f = auto{kind}{knobs}" + ("" if knobs else ";") + "\n"
                cases.append((len(cases), fusion + " auto" + knobs, hidden, rng.choice(ROWS + [200]), text))
    tally = {"pass": 0, "refused": 0, "fail": 0}
    with tempfile.TemporaryDirectory() as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for outcome, detail in pool.map(lambda c: run(fslc, workdir, *c), cases):
                tally[outcome] += 1
                if outcome == "fail":
                    print("FAIL:", detail)
    print(f"simulated {tally['pass']}, refused by the checker or lowering {tally['refused']}")
    enough = tally["pass"] >= len(cases) // 2
    if not enough:
        print(f"too few cases ran: {tally['pass']} of {len(cases)}")
    print(f"sim suite: {tally['pass']} passed, {tally['fail'] + (0 if enough else 1)} failed")
    return 0 if tally["fail"] == 0 and enough else 1


if __name__ == "__main__":
    sys.exit(main())
