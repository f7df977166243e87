#!/usr/bin/env python3
"""Issue 17's benchmark: softmax, LayerNorm and argmax, fslc against every peer, one process.

    reductions.py BUILD OUT [softmax,layer_norm,rms_norm,argmax] [H,H,...] [T,T,...]

BUILD is bench-build/red (generate_reductions.sh, built by run_reductions.sh). Softmax and
LayerNorm in bf16 over H x T: the heuristics' kernels (two passes), the same with one pass
(`onepass`), softmax's hand schedules (x<variant>_<H>/), against PyTorch eager,
torch.compile(dynamic=False) and, for softmax, a hand-written Triton kernel
(triton_softmax.py; the faster of its two launch forms). Argmax over vocabularies V at
T rows against torch.argmax eager and compiled. Timing as bench.py (CUDA graphs over
enough input sets to defeat the L2, median of replays, ours and the peers in one order
and then the reverse); bytes moved against the copy ceiling of the same run. Every
kernel is checked against eager before it is timed; a wrong result fails the run.
"""
import ctypes
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

HIDDEN = [2048, 4096, 5120, 8192, 16384]
ROWS = [1, 128, 512, 1024, 4096, 16384]
VOCAB = [32000, 50304, 128256]
VOCAB_ROWS = [1, 128, 1024, 4096]
P = ctypes.POINTER(bench.FslTensor)


def stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def argmax_call(lib, s):
    fn = lib.fsl_argmax_row
    fn.restype, fn.argtypes = ctypes.c_int, [P, P, ctypes.c_void_p]
    d = [bench.desc(s["x"]), bench.desc(s["token"])]
    d[1].dtype = 2  # FSL_I64
    return lambda: fn(d[0], d[1], stream())


def timed(implementations):
    """ABBA: each implementation's mean over two passes in opposite orders."""
    first = {name: bench.time_calls(calls) for name, calls in implementations}
    second = {name: bench.time_calls(calls) for name, calls in reversed(implementations)}
    return {name: (first[name] + second[name]) / 2 for name in first}


def load(path):
    return ctypes.CDLL(path) if os.path.exists(path) else None


def norm_points(build, fusion, hidden, rows, static, results):
    import triton_softmax
    for H in hidden:
        libs = {"ours": load(os.path.join(build, f"auto_{H}", f"lib{fusion}.so")),
                "onepass": load(os.path.join(build, f"onepass_{H}", f"lib{fusion}.so"))}
        prefix = {"softmax": "x", "layer_norm": "ln", "rms_norm": "rn"}[fusion]
        for d in sorted(os.listdir(build)):
            if d.startswith(prefix) and d.endswith(f"_{H}"):
                libs[d[len(prefix):-len(f"_{H}")]] = load(os.path.join(build, d, f"lib{fusion}.so"))
        for T in rows:
            moved = bench.bytes_moved(fusion, T, H)
            sets = max(1, min(64, -(-3 * bench.L2_BYTES // moved)))
            inputs = [bench.make_inputs(fusion, T, H) for _ in range(sets)]
            s0 = inputs[0]
            ref = bench.torch_call(bench.eager(fusion), fusion, s0)().float()
            wrong = []
            peers = [("eager", [bench.torch_call(bench.eager(fusion), fusion, s) for s in inputs]),
                     ("static", [bench.torch_call(static, fusion, s) for s in inputs])]
            if fusion == "softmax":
                for form in ("rows", "persistent"):
                    calls = [lambda s=s, p=(form == "persistent"): triton_softmax.softmax(s["x"], s["y"], p)
                             for s in inputs]
                    calls[0]()
                    if not torch.allclose(s0["y"].float(), ref, atol=2e-2, rtol=2e-2):
                        wrong.append("triton-" + form)
                    peers.append(("triton-" + form, calls))
            ours = []
            for name, lib in libs.items():
                if lib is None:
                    continue
                status = bench.fsl_call(lib, fusion, s0)()
                torch.cuda.synchronize()
                if status != 0 or not torch.allclose(s0["y"].float(), ref, atol=2e-2, rtol=2e-2):
                    wrong.append(name)
                ours.append((name, [bench.fsl_call(lib, fusion, s) for s in inputs]))
            # ours and the peers ABBA; the variants once each, after.
            t = timed([ours[0]] + peers)
            for name, calls in ours[1:]:
                t[name] = bench.time_calls(calls)
            if "triton-rows" in t:
                t["triton"] = min(t["triton-rows"], t["triton-persistent"])
            row = dict(fusion=fusion, H=H, T=T, mb=moved / 1e6, times=t, wrong=wrong,
                       tbs=moved / (t["ours"] * 1e-6) / 1e12)
            results.append(row)
            variants = " ".join(f"{k} {v:.2f}" for k, v in t.items()
                                if k not in ("ours", "eager", "static", "triton"))
            print(f"{fusion:10s} H={H:5d} T={T:5d} ours {t['ours']:8.2f} eager {t['eager']:8.2f} "
                  f"static {t['static']:8.2f}" + (f" triton {t['triton']:8.2f}" if "triton" in t else "")
                  + f" {row['tbs']:.2f}TB/s | {variants}" + (f" WRONG {wrong}" if wrong else ""),
                  flush=True)
            del inputs
            torch.cuda.empty_cache()


def argmax_points(build, vocab, rows, results):
    eager = lambda x: torch.argmax(x, -1)
    static = torch.compile(eager, dynamic=False)
    for V in vocab:
        lib = load(os.path.join(build, f"argmax_{V}", "libargmax_row.so"))
        for T in rows:
            moved = 2 * T * V + 8 * T
            sets = max(1, min(64, -(-3 * bench.L2_BYTES // moved)))
            inputs = []
            for _ in range(sets):
                x = torch.randn(T, V, device="cuda", dtype=torch.bfloat16)
                # Ties on purpose in one row: the first index must win, as torch.argmax's.
                x[0, V // 3] = x[0, V // 2] = x[0].max() + 1
                inputs.append({"x": x, "token": torch.empty(T, device="cuda", dtype=torch.int64)})
            s0 = inputs[0]
            status = argmax_call(lib, s0)()
            torch.cuda.synchronize()
            wrong = [] if status == 0 and torch.equal(s0["token"], eager(s0["x"])) else ["ours"]
            t = timed([("ours", [argmax_call(lib, s) for s in inputs]),
                       ("eager", [lambda s=s: eager(s["x"]) for s in inputs]),
                       ("static", [lambda s=s: static(s["x"]) for s in inputs])])
            # Hand schedules (am<variant>_<V>/), each checked, then timed once.
            for d in sorted(os.listdir(build)):
                if d.startswith("am") and d.endswith(f"_{V}"):
                    name = d[len("am"):-len(f"_{V}")]
                    variant = load(os.path.join(build, d, "libargmax_row.so"))
                    s0["token"].fill_(-1)
                    if argmax_call(variant, s0)() != 0 or not torch.equal(s0["token"], eager(s0["x"])):
                        wrong.append(name)
                    t[name] = bench.time_calls([argmax_call(variant, s) for s in inputs])
            row = dict(fusion="argmax", H=V, T=T, mb=moved / 1e6, times=t, wrong=wrong,
                       tbs=moved / (t["ours"] * 1e-6) / 1e12)
            results.append(row)
            print(f"argmax     V={V:6d} T={T:5d} ours {t['ours']:8.2f} eager {t['eager']:8.2f} "
                  f"static {t['static']:8.2f} {row['tbs']:.2f}TB/s | "
                  + " ".join(f"{k} {v:.2f}" for k, v in t.items() if k not in ("ours", "eager", "static"))
                  + (f" WRONG {wrong}" if wrong else ""),
                  flush=True)
            del inputs
            torch.cuda.empty_cache()


def main():
    build, out = sys.argv[1], sys.argv[2]
    which = sys.argv[3].split(",") if len(sys.argv) > 3 else ["softmax", "layer_norm", "rms_norm", "argmax"]
    hidden = [int(h) for h in sys.argv[4].split(",")] if len(sys.argv) > 4 else HIDDEN
    rows = [int(t) for t in sys.argv[5].split(",")] if len(sys.argv) > 5 else ROWS
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 512
    ceiling, copies = bench.copy_ceiling(build)
    print(f"copy ceiling: {ceiling:.2f} TB/s", flush=True)
    results = []
    for fusion in which:
        if fusion == "argmax":
            argmax_points(build, VOCAB if len(sys.argv) <= 4 else hidden,
                          VOCAB_ROWS if len(sys.argv) <= 5 else rows, results)
        else:
            norm_points(build, fusion, hidden, rows,
                        torch.compile(bench.eager(fusion), dynamic=False), results)
        with open(os.path.join(out, "reductions.json"), "w") as f:
            json.dump({"date": str(datetime.date.today()), "gpu": torch.cuda.get_device_name(),
                       "ceiling": ceiling, "copies": copies, "rows": results}, f)
    wrong = [r for r in results if r["wrong"]]
    print(f"{len(results)} points, {len(wrong)} with a wrong result")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
