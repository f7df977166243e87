"""The stdlib's training forward fusions on a GPU through the Python package: SwiGLU from one
fused [T, 2H] projection (std/activations.fsl's swiglu_fused), RoPE (std/rope.fsl) and
cross-entropy with an ignore index (std/losses.fsl), each against PyTorch in float64 at
LLM sizes, odd sizes and one row.

usage: python3 tests/gpu/training_test.py [--library build/lib/libfsl.so] [--stdlib stdlib]
Prints one PASS or FAIL line per check and a summary; exits 1 when any check fails.
"""

import argparse
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"))
parser.add_argument("--stdlib", default=os.environ.get("FSLC_STDLIB") or os.path.join(ROOT, "stdlib"))
parser.add_argument("--python", default=os.path.join(ROOT, "python"))
args = parser.parse_args()
if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import fslc  # noqa: E402

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, ("  (%s)" % detail) if detail else ""), flush=True)


def close(name, out, ref, atol=2e-2, rtol=2e-2):
    o = out.double()
    if torch.isnan(o).any() and not torch.isnan(ref).any():
        return check(name, False, "%d NaN" % int(torch.isnan(o).sum()))
    diff = (o - ref).abs()
    bad = diff > atol + rtol * ref.abs()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        return check(name, False, "element %d = %g, reference %g" % (i, float(o.flatten()[i]), float(ref.flatten()[i])))
    check(name, True, "max abs err %.3g" % float(diff.max()))


def run(name, body):
    try:
        body()
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        check(name, False, "%s: %s" % (type(error).__name__, error))


def randn(*shape, seed=0, dtype=torch.bfloat16):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


SOURCE = """
import "std/activations.fsl";
import "std/rope.fsl";
import "std/losses.fsl";

fusion swiglu(x: bf16[T, H2], like: bf16[H]) -> (y: bf16[T, H]) {
    y = swiglu_fused(x);
}
schedule swiglu = auto;

fusion rope_one(x: bf16[T, D], cos: bf16[T, D], sin: bf16[T, D]) -> (y: bf16[T, D]) {
    y = rope(x, cos, sin);
}
schedule rope_one = auto;

fusion xent(logits: bf16[T, V], label: i64[T]) -> (loss: f32[T], lse: f32[T]) {
    loss = cross_entropy(logits, label, -100);
    lse = logsumexp(f32(logits));
}
schedule xent = auto;
"""

print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()), flush=True)
prog = fslc.load_text("training", SOURCE, library=args.library, stdlib=args.stdlib,
                      cache_dir=tempfile.mkdtemp(prefix="fsl-training-test-"))


def swiglu_case(T, H):
    x = randn(T, 2 * H, seed=T + H)
    like = torch.empty(H, device="cuda", dtype=torch.bfloat16)  # gives H to the op
    out = prog.swiglu(x, like)
    torch.cuda.synchronize()
    xd = x.double()
    close("swiglu_fused T=%d H=%d" % (T, H), out, F.silu(xd[:, :H]) * xd[:, H:])


def rope_case(T, D):
    x = randn(T, D, seed=D)
    angle = torch.arange(T, device="cuda", dtype=torch.float64)[:, None] * \
        (10000.0 ** (-torch.arange(D // 2, device="cuda", dtype=torch.float64) * 2 / D))[None, :]
    angle = torch.cat([angle, angle], -1)
    cos, sin = angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16)
    out = prog.rope_one(x, cos, sin)
    torch.cuda.synchronize()
    xd, c, s = x.double(), cos.double(), sin.double()
    rotated = torch.cat([-xd[:, D // 2:], xd[:, :D // 2]], -1)
    close("rope T=%d D=%d" % (T, D), out, xd * c + rotated * s)


def xent_case(T, V):
    logits = randn(T, V, seed=V + T) * 4
    g = torch.Generator(device="cuda")
    g.manual_seed(T)
    label = torch.randint(0, V, (T,), device="cuda", generator=g)
    label[::3] = -100  # ignore_index
    loss, lse = prog.xent(logits, label)
    torch.cuda.synchronize()
    ld = logits.double()
    ref = F.cross_entropy(ld, label, ignore_index=-100, reduction="none")
    close("cross_entropy T=%d V=%d: loss" % (T, V), loss, ref, atol=1e-3, rtol=1e-4)
    close("cross_entropy T=%d V=%d: logsumexp" % (T, V), lse, torch.logsumexp(ld, -1), atol=1e-3, rtol=1e-4)


for T, H in [(1, 4096), (7, 4096), (1024, 5120), (33, 77)]:
    run("swiglu_fused T=%d H=%d" % (T, H), lambda: swiglu_case(T, H))
for T, D in [(1, 128), (9, 128), (2048, 128), (5, 66)]:
    run("rope T=%d D=%d" % (T, D), lambda: rope_case(T, D))
for T, V in [(1, 32000), (7, 32000), (512, 128256), (13, 1001)]:
    run("cross_entropy T=%d V=%d" % (T, V), lambda: xent_case(T, V))

print("%d checks, %d passed, %d failed" % (len(results), sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
