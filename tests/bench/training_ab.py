#!/usr/bin/env python3
"""A/B of two kernel changes of the training fusions, old and new alternated in one process.

  rms_norm_add_grad  std/norms.fsl's fusion, which writes the gradient of x once (autograd
                     gives the same tensor to residual: `grad_residual = grad_x`), against
                     the fusion as it was before, which also wrote grad_residual (the same
                     values, stored twice); both `= auto`
  cross_entropy_train  std/losses.fsl's forward (loss and logsumexp), now in one pass by
                     default on 256 threads a row, against the schedule it had: two passes,
                     the row's vectors prefetched whole (`one_pass = false; persistent_batch
                     = 8 or 16`: 512 or 1024 threads a row)
  prefetch_rows      std/norms.fsl's backward fusions (rms_norm_grad, rms_norm_add_grad,
                     layer_norm_grad) with `prefetch_rows = true` over the H200 database's
                     knobs, against the database's schedules (old)
  swiglu             std/activations.fsl's swiglu through the JIT: H and H2 specialized
                     (policy "reduced", the default, which now compiles them static)
                     against policy "none" (one kernel for every size: the kernel the
                     default fell back to before)

Each point: both outputs checked against each other first (SwiGLU's bit-identical, the
norm's gradients within a bf16 rounding: the same math, column sums perhaps in another order),
then a CUDA graph a side over rotating inputs (one pass twice the L2), replayed
alternately for --rounds rounds; the table gives each side's median µs and the median of
the per-round ratios old / new (> 1: the new kernel is faster).

usage: python3 tests/bench/training_ab.py [--library L] [--stdlib S] [-o ab.json] [--rounds N]
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"))
parser.add_argument("--stdlib", default=os.environ.get("FSLC_STDLIB") or os.path.join(ROOT, "stdlib"))
parser.add_argument("--python", default=os.path.join(ROOT, "python"))
parser.add_argument("-o", "--output", default="training_ab.json")
parser.add_argument("--rounds", type=int, default=9)
parser.add_argument("--only", default="", help="comma-separated kernels (rms_norm_add_grad, swiglu, "
                    "cross_entropy_train, prefetch_rows)")
args = parser.parse_args()
sys.path.insert(0, args.python)

import torch  # noqa: E402

import fslc  # noqa: E402

# The add + RMSNorm backward as it was: grad_residual stored as well as grad_x.
OLD_RMS_NORM_ADD_GRAD = """
import "std/norms.fsl";
fusion rms_norm_add_grad_two_stores(
    h: bf16[T, H],
    weight: bf16[H],
    rstd: f32[T],
    grad_y: bf16[T, H],
    grad_h: bf16[T, H],
) -> (grad_x: bf16[T, H], grad_residual: bf16[T, H], grad_weight: bf16[H]) {
    let dh = rms_norm_dx(f32(h), f32(weight), rstd, f32(grad_y)) + f32(grad_h);
    grad_x = bf16(dh);
    grad_residual = bf16(dh);
    grad_weight = bf16(sum(f32(grad_y) * f32(h) * rstd, over T));
}
schedule rms_norm_add_grad_two_stores = auto;
"""

# Cross-entropy's forward as it was: two passes, the row's vectors prefetched whole by
# one block of 512 (V = 32000) or 1024 threads (V = 128256), 8 or 16 vectors a thread.
OLD_CROSS_ENTROPY = """
schedule cross_entropy_train = auto(inner_persistent) { one_pass = false; persistent_batch = %d; }
"""

L2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 50 << 20
stream = torch.cuda.Stream()


def graph_of(calls):
    for call in calls:
        call()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for call in calls:
            call()
    stream.synchronize()
    return graph, len(calls)


def replay_us(built):
    graph, calls = built
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def ab(name, shape, set_bytes, make, old_call, new_call, same):
    if args.only and name not in args.only.split(","):
        return None
    sets = max(1, min(64, math.ceil(2 * L2 / set_bytes)))
    inputs = [make(i) for i in range(sets)]
    old_out, new_out = old_call(inputs[0]), new_call(inputs[0])
    torch.cuda.synchronize()
    mismatch = same(old_out, new_out)
    if mismatch:
        print("%s %s: old and new differ: %s" % (name, shape, mismatch), flush=True)
        return {"name": name, "shape": shape, "error": mismatch}
    old = graph_of([lambda s=s: old_call(s) for s in inputs])
    new = graph_of([lambda s=s: new_call(s) for s in inputs])
    for built in (old, new):  # warm-up, 20 ms a side
        first = replay_us(built) * built[1]
        for _ in range(min(200, int(20000 / max(first, 1.0)))):
            built[0].replay()
    old_us, new_us, ratios = [], [], []
    for r in range(args.rounds):
        order = (old, new) if r % 2 == 0 else (new, old)
        t = {id(b): replay_us(b) for b in order}
        old_us.append(t[id(old)])
        new_us.append(t[id(new)])
        ratios.append(t[id(old)] / t[id(new)])
    row = {"name": name, "shape": shape, "old_us": statistics.median(old_us),
           "new_us": statistics.median(new_us), "old_over_new": statistics.median(ratios),
           "rounds": args.rounds, "sets": sets}
    print("| %s | %s | %.1f | %.1f | %.3f |" % (name, shape, row["old_us"], row["new_us"], row["old_over_new"]),
          flush=True)
    del inputs, old, new
    torch.cuda.empty_cache()
    return row


def exact(a, b):
    for x, y in zip(a, b):
        if not torch.equal(x, y):
            return "max abs difference %g" % (x.float() - y.float()).abs().max().item()
    return None


def close(a, b):
    """Within one bf16 rounding: the two fusions may reduce the weight's column sums in
    another order (their schedules are chosen apart)."""
    for x, y in zip(a, b):
        x, y = x.float(), y.float()
        if not torch.allclose(x, y, rtol=1e-2, atol=1e-2 * y.abs().max().item() + 1e-6):
            return "max abs difference %g" % (x - y).abs().max().item()
    return None


def main():
    torch.manual_seed(0)
    cache = tempfile.mkdtemp(prefix="fsl-training-ab-")
    common = dict(library=args.library, stdlib=args.stdlib, cache_dir=cache, ops="ctypes")
    norms = fslc.load(os.path.join(args.stdlib, "std", "norms.fsl"), **common)
    old_norms = fslc.load_text(os.path.join(args.stdlib, "ab_old_norms.fsl"), OLD_RMS_NORM_ADD_GRAD,
                               namespace="fsl_ab_old", **common)
    act = fslc.load(os.path.join(args.stdlib, "std", "activations.fsl"), **common)
    act_generic = fslc.load(os.path.join(args.stdlib, "std", "activations.fsl"), policy="none",
                            namespace="fsl_ab_generic", **common)
    dev, bf = "cuda", torch.bfloat16
    print("%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    print("| kernel | shape | old µs | new µs | old / new |\n|---|---|---|---|---|", flush=True)
    rows = []
    for H in (2048, 4096, 8192):
        for T in (1024, 4096, 16384):
            def make(i, T=T, H=H):
                g = torch.Generator(device=dev)
                g.manual_seed(i)
                h = torch.randn(T, H, device=dev, dtype=bf, generator=g)
                return (h, torch.randn(H, device=dev, dtype=bf, generator=g),
                        torch.rsqrt(h.float().pow(2).mean(-1) + 1e-6),
                        torch.randn(T, H, device=dev, dtype=bf, generator=g),
                        torch.randn(T, H, device=dev, dtype=bf, generator=g))

            def old(s):
                dx, dr, dw = old_norms.rms_norm_add_grad_two_stores(*s)
                return dx, dw

            rows.append(ab("rms_norm_add_grad", "T=%d H=%d" % (T, H), 8 * T * H, make, old,
                           lambda s: tuple(norms.rms_norm_add_grad(*s)), close))
    for H in (4096, 14336):
        for T in (1024, 4096, 16384):
            def make(i, T=T, H=H):
                g = torch.Generator(device=dev)
                g.manual_seed(i)
                return (torch.randn(T, 2 * H, device=dev, dtype=bf, generator=g),
                        torch.empty(H, device=dev, dtype=bf))

            rows.append(ab("swiglu", "T=%d H=%d" % (T, H), 6 * T * H, make,
                           lambda s: (act_generic.swiglu(*s),), lambda s: (act.swiglu(*s),), exact))
    losses = fslc.load(os.path.join(args.stdlib, "std", "losses.fsl"), **common)
    with open(os.path.join(args.stdlib, "std", "losses.fsl")) as f:
        losses_text = f.read()
    for V, batch in ((32000, 8), (128256, 16)):
        # V static (the knob needs it), at the size of this row.
        old_losses = fslc.load_text(os.path.join(args.stdlib, "std", "ab_old_losses_%d.fsl" % V),
                                    losses_text.replace("V = 32000", "V = %d" % V) + OLD_CROSS_ENTROPY % batch,
                                    namespace="fsl_ab_old_losses_%d" % V, runtime_dims=None, **common)
        for T in (1, 16, 128, 1024, 4096):
            def make(i, T=T, V=V):
                g = torch.Generator(device=dev)
                g.manual_seed(i)
                return (torch.randn(T, V, device=dev, dtype=bf, generator=g) * 4,
                        torch.randint(0, V, (T,), device=dev, generator=g))

            rows.append(ab("cross_entropy_train", "T=%d V=%d" % (T, V), 2 * T * V, make,
                           lambda s: tuple(old_losses.cross_entropy_train(*s)),
                           lambda s: tuple(losses.cross_entropy_train(*s)), close))
    # The backward norms' row walk with `prefetch Ts` (`prefetch_rows = true`, over the
    # database's knobs) against the database's schedules as they are.
    with open(os.path.join(args.stdlib, "std", "norms.fsl")) as f:
        norms_text = f.read()
    tuning_db = os.path.join(args.stdlib, "tuning", "h200.fsl")
    base = fslc.load_text(os.path.join(args.stdlib, "std", "ab_norms_base.fsl"), norms_text,
                          namespace="fsl_ab_norms_base", tuning_db=tuning_db, **common)
    prefetched = fslc.load_text(
        os.path.join(args.stdlib, "std", "ab_norms_prefetch.fsl"),
        norms_text + "".join("schedule %s = auto(inner_outer) { prefetch_rows = true; }\n" % f
                             for f in ("rms_norm_grad", "rms_norm_add_grad", "layer_norm_grad")),
        namespace="fsl_ab_norms_prefetch", tuning_db=tuning_db, **common)
    for fusion in ("rms_norm_grad", "rms_norm_add_grad", "layer_norm_grad"):
        for H in (2048, 4096, 8192):
            for T in (1024, 4096, 16384):
                def make(i, T=T, H=H, fusion=fusion):
                    g = torch.Generator(device=dev)
                    g.manual_seed(i)
                    x = torch.randn(T, H, device=dev, dtype=bf, generator=g)
                    w = torch.randn(H, device=dev, dtype=bf, generator=g)
                    rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
                    dy = torch.randn(T, H, device=dev, dtype=bf, generator=g)
                    if fusion == "rms_norm_grad":
                        return (x, w, rstd, dy)
                    if fusion == "rms_norm_add_grad":
                        return (x, w, rstd, dy, torch.randn(T, H, device=dev, dtype=bf, generator=g))
                    return (x, w, x.float().mean(-1), rstd, dy)

                rows.append(ab("prefetch_rows", "%s T=%d H=%d" % (fusion, T, H),
                               (8 if fusion == "rms_norm_add_grad" else 6) * T * H, make,
                               lambda s, f=fusion: tuple(getattr(base, f)(*s)),
                               lambda s, f=fusion: tuple(getattr(prefetched, f)(*s)), close))
    with open(args.output, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": [r for r in rows if r]}, f, indent=1)


main()
