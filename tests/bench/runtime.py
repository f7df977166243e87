#!/usr/bin/env python3
"""Benchmark of runtime hidden sizes (issue 14): the same fusion compiled four ways, one process.

    runtime.py BUILD OUT FUSION[,FUSION...] [H,H,...] [T,T,...]

- static:  fslc with -D H=<H> (bench-build/auto_<H>), the kernels of a known model size;
- jit:     the stdlib file loaded by the Python package (python/fslc) with H left runtime:
           the specializing JIT compiles the static schedule for each H it sees;
- aot:     fslc without -D H (bench-build/dynamic): the heuristics' guarded variants
           (`when H % 8 == 0 && H <= ...`) compiled ahead of time;
- generic: the one loop for every H that the runtime-H schedule was before the variants
           (bench-build/generic, `static_bdimx = true`);
against PyTorch eager, torch.compile(dynamic=True) and torch.compile(dynamic=False).
The method is bench.py's: CUDA-graph replay over rotating inputs, median, ABBA for ours
(static, jit, aot) and the peers; every implementation checked against eager first.
Also measured: the JIT's first call for each (fusion, H) (specialize + NVRTC + load, host
wall time) and a cache hit's host time through the custom op (wall time of 200 calls).
Writes OUT/runtime.json; runtime_report.py renders it.
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the timing method, inputs, eager references and C-ABI calls)

HIDDEN = [2048, 3072, 4096, 5120, 6144, 7168, 8192, 12288, 16384]
ROWS = [1, 16, 128, 1024, 4096, 16384]


def jit_call(program, fusion, s):
    """The JIT's custom op takes the eager function's arguments: the same call shape."""
    return bench.torch_call(getattr(program, fusion), fusion, s)


def check(fusion, call, s0):
    """Runs `call` on the first input set and compares y with eager (residual restored)."""
    r0 = s0["r"].clone()
    s0["y"].fill_(float("nan"))
    result = call()
    torch.cuda.synchronize()
    ours = result if isinstance(result, torch.Tensor) else s0["y"]
    if not isinstance(result, torch.Tensor) and result != 0:
        return False
    ours = ours.clone()
    ours_r = s0["r"].clone()
    s0["r"].copy_(r0)
    ref = bench.torch_call(bench.eager(fusion), fusion, s0)()
    ok = torch.allclose(ours.float(), ref.float(), atol=2e-2, rtol=2e-2)
    if fusion == "rms_norm_add":
        ok = ok and torch.equal(ours_r, s0["r"])
    s0["r"].copy_(r0)
    return bool(ok)


def main():
    build, out, fusions = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    hidden = [int(h) for h in sys.argv[4].split(",")] if len(sys.argv) > 4 else HIDDEN
    rows_list = [int(t) for t in sys.argv[5].split(",")] if len(sys.argv) > 5 else ROWS
    torch.manual_seed(0)
    ceiling, copies = bench.copy_ceiling(build)
    print(f"copy ceiling: {ceiling:.2f} TB/s")
    torch._dynamo.config.cache_size_limit = 512
    compiled = {f: torch.compile(bench.eager(f), dynamic=True) for f in fusions}
    static = {f: torch.compile(bench.eager(f), dynamic=False) for f in fusions}
    program, jit_error = None, ""
    try:
        import fslc
        stdlib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stdlib")
        program = fslc.load(os.path.join(stdlib, "std", "norms.fsl"), runtime_dims="H,S",
                           cache_dir=os.environ.get("FSL_BENCH_CACHE", "/tmp/fsl-bench-cache"))
    except Exception as e:  # the table then has no jit column, and says why
        jit_error = f"{type(e).__name__}: {e}"
        print("no JIT:", jit_error)
    results = {"ceiling": ceiling, "copies": copies, "rows": [], "first_call_ms": {},
               "hit_host_us": {}, "jit_error": jit_error, "date": time.strftime("%Y-%m-%d")}
    for fusion in fusions:
        aot = bench.ctypes.CDLL(os.path.join(build, "dynamic", f"lib{fusion}.so"))
        generic = bench.ctypes.CDLL(os.path.join(build, "generic", f"lib{fusion}.so"))
        for H in hidden:
            lib = bench.ctypes.CDLL(os.path.join(build, f"auto_{H}", f"lib{fusion}.so"))
            for T in rows_list:
                moved = bench.bytes_moved(fusion, T, H)
                sets = max(1, min(64, -(-3 * bench.L2_BYTES // moved)))
                inputs = [bench.make_inputs(fusion, T, H) for _ in range(sets)]
                ours = {"static": [bench.fsl_call(lib, fusion, s) for s in inputs],
                        "aot": [bench.fsl_call(aot, fusion, s) for s in inputs]}
                if program is not None:
                    key = f"{fusion} H={H}"
                    if key not in results["first_call_ms"]:
                        start = time.perf_counter()
                        jit_call(program, fusion, inputs[0])()
                        torch.cuda.synchronize()
                        results["first_call_ms"][key] = (time.perf_counter() - start) * 1e3
                        # A hit: host time of the custom op (checks, memory cache, launch).
                        call = jit_call(program, fusion, inputs[0])
                        call()
                        torch.cuda.synchronize()
                        start = time.perf_counter()
                        for _ in range(200):
                            call()
                        results["hit_host_us"][key] = (time.perf_counter() - start) / 200 * 1e6
                        torch.cuda.synchronize()
                    ours["jit"] = [jit_call(program, fusion, s) for s in inputs]
                correct = {name: check(fusion, calls[0], inputs[0]) for name, calls in ours.items()}
                correct["generic"] = check(fusion, bench.fsl_call(generic, fusion, inputs[0]), inputs[0])
                implementations = list(ours.items()) + [
                    ("eager", [bench.torch_call(bench.eager(fusion), fusion, s) for s in inputs]),
                    ("compile", [bench.torch_call(compiled[fusion], fusion, s) for s in inputs]),
                    ("static_compile", [bench.torch_call(static[fusion], fusion, s) for s in inputs])]
                first = {name: bench.time_calls(calls) for name, calls in implementations}
                second = {name: bench.time_calls(calls) for name, calls in reversed(implementations)}
                mean = {name: (first[name] + second[name]) / 2 for name in first}
                mean["generic"] = bench.time_calls([bench.fsl_call(generic, fusion, s) for s in inputs])
                row = dict(fusion=fusion, H=H, T=T, mb=moved / 1e6, times=mean, correct=correct)
                results["rows"].append(row)
                print(f"{fusion:13s} H={H:5d} T={T:5d} " +
                      " ".join(f"{k} {v:8.2f}" for k, v in mean.items()) +
                      ("" if all(correct.values()) else f" WRONG {correct}"))
                del inputs, ours, implementations
                torch.cuda.empty_cache()
            with open(os.path.join(out, "runtime.json"), "w") as f:
                json.dump(results, f)
    wrong = sum(not all(r["correct"].values()) for r in results["rows"])
    print(f"{len(results['rows'])} points, {wrong} with a wrong result")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
