"""The stdlib's training fusions on a GPU through the Python package: SwiGLU from one fused
[T, 2H] projection (std/activations.fsl's swiglu_fused), RoPE (std/rope.fsl) and
cross-entropy with an ignore index (std/losses.fsl), each against PyTorch in float64 at
LLM sizes, odd sizes and one row; then autograd: every forward fusion with a `backward`
clause (norms, cross-entropy with label smoothing and ignore_index, RoPE, SwiGLU, GeGLU),
its gradients through loss.backward() against torch.autograd of the same computation in
float64, eagerly and through torch.compile(fullgraph=True), and the in-place
cross-entropy backward called directly.

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
def xent_special_case(V):
    """Infinities and NaN where PyTorch defines the result: a row whose even logits are -inf
    (finite loss), a row holding one NaN (NaN loss and logsumexp), a plain row."""
    logits = randn(3, V, seed=V + 3) * 4
    logits[0, ::2] = float("-inf")
    logits[1, 5] = float("nan")
    label = torch.tensor([1, 3, 7], device="cuda")
    loss, lse = prog.xent(logits, label)
    torch.cuda.synchronize()
    ld = logits.double()
    ref = F.cross_entropy(ld, label, ignore_index=-100, reduction="none")
    rows = [0, 2]
    close("cross_entropy special V=%d: loss of finite rows" % V, loss[rows], ref[rows], atol=1e-3, rtol=1e-4)
    close("cross_entropy special V=%d: logsumexp of finite rows" % V, lse[rows],
          torch.logsumexp(ld, -1)[rows], atol=1e-3, rtol=1e-4)
    check("cross_entropy special V=%d: a NaN logit gives NaN loss and logsumexp" % V,
          bool(torch.isnan(loss[1])) and bool(torch.isnan(lse[1])) and bool(torch.isnan(ref[1])))


# (1, 128256) and (40, 128256): rows split across blocks (a grid reduction of the one-pass
# pair: 16 and 8 pieces a row).
for T, V in [(1, 32000), (7, 32000), (512, 128256), (13, 1001), (1, 128256), (40, 128256)]:
    run("cross_entropy T=%d V=%d" % (T, V), lambda: xent_case(T, V))
for V in [32000, 128256]:
    run("cross_entropy special values V=%d" % V, lambda: xent_special_case(V))


# --- Autograd ---------------------------------------------------------------------------

cache = tempfile.mkdtemp(prefix="fsl-training-autograd-")
stdlib = args.stdlib


def std_program(name, **options):
    return fslc.load(os.path.join(stdlib, "std", name), library=args.library, stdlib=stdlib,
                     cache_dir=cache, **options)


norms = std_program("norms.fsl")
losses = std_program("losses.fsl")
ropes = std_program("rope.fsl")
glus = std_program("activations.fsl")


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def grads_of(call, inputs, weights):
    """Runs `call` on leaf copies of `inputs`, backpropagates sum(output * weight) over the
    outputs that have a weight (float64 sums), and returns the inputs' gradients."""
    leaves = [leaf(t) if t.is_floating_point() else t for t in inputs]
    outputs = call(*leaves)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    loss = sum((o.double() * w).sum() for o, w in zip(outputs, weights) if w is not None)
    loss.backward()
    return [t.grad if t.is_floating_point() else None for t in leaves]


def scaled_close(name, out, ref, rtol=3e-2):
    """Gradients of bf16 tensors: errors relative to the gradient's scale."""
    if out is None:
        return check(name, False, "no gradient")
    scale = float(ref.abs().max()) or 1.0
    close(name, out, ref, atol=rtol * scale, rtol=rtol)


def autograd_case(name, fsl_call, ref_call, inputs, weights, wanted):
    """Gradients of `wanted` (indexes into inputs) through the fslc ops, eagerly and
    compiled, against ref_call's in float64."""
    ref_inputs = [t.double() if t.is_floating_point() else t for t in inputs]
    ref = grads_of(ref_call, ref_inputs, weights)
    eager = grads_of(fsl_call, inputs, weights)
    for i in wanted:
        scaled_close("%s: grad of input %d" % (name, i), eager[i], ref[i])
    for i, g in enumerate(eager):
        if i not in wanted and inputs[i].is_floating_point():
            check("%s: input %d has no gradient" % (name, i), g is None)
    compiled = torch.compile(fsl_call, fullgraph=True, dynamic=False)
    again = grads_of(compiled, inputs, weights)
    for i in wanted:
        scaled_close("%s: grad of input %d (torch.compile)" % (name, i), again[i], ref[i])


def rms_ref(x, w, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def norms_case(T, H):
    x, r = randn(T, H, seed=T), randn(T, H, seed=T + 1)
    w, b = randn(H, seed=H), randn(H, seed=H + 1)
    dy, dh = randn(T, H, seed=3, dtype=torch.float64), randn(T, H, seed=4, dtype=torch.float64)
    autograd_case("rms_norm_train T=%d H=%d" % (T, H),
                  lambda x, w: norms.rms_norm_train(x, w)[0], rms_ref, [x, w], [dy], [0, 1])
    autograd_case("rms_norm_add_train T=%d H=%d" % (T, H),
                  lambda x, r, w: norms.rms_norm_add_train(x, r, w)[:2],
                  lambda x, r, w: (rms_ref(x + r, w), x + r), [x, r, w], [dy, dh], [0, 1, 2])
    autograd_case("layer_norm_train T=%d H=%d" % (T, H),
                  lambda x, g, b: norms.layer_norm_train(x, g, b)[0],
                  lambda x, g, b: F.layer_norm(x, (H,), g, b, 1e-5), [x, w, b], [dy], [0, 1, 2])
    autograd_case("softmax T=%d S=%d" % (T, H), lambda x: norms.softmax(x),
                  lambda x: torch.softmax(x, -1), [x * 3], [dy], [0])


def stats_case(T, H):
    """The row statistics are the float64 ones, and not differentiable."""
    x, w, b = randn(T, H, seed=5), randn(H, seed=6), randn(H, seed=7)
    _, rstd = norms.rms_norm_train(x, w)
    xd = x.double()
    close("rms_norm_train T=%d H=%d: rstd" % (T, H), rstd,
          torch.rsqrt((xd * xd).mean(-1) + 1e-6), atol=1e-4, rtol=1e-4)
    _, mean, rstd = norms.layer_norm_train(x, w, b)
    close("layer_norm_train T=%d H=%d: mean" % (T, H), mean, xd.mean(-1), atol=1e-5, rtol=1e-5)
    close("layer_norm_train T=%d H=%d: rstd" % (T, H), rstd,
          torch.rsqrt(xd.var(-1, unbiased=False) + 1e-5), atol=1e-4, rtol=1e-4)
    y, rstd = norms.rms_norm_train(leaf(x), w)
    check("rms_norm_train: rstd is not differentiable", not rstd.requires_grad and y.requires_grad)


def xent_autograd_case(T, V, smoothing):
    logits = randn(T, V, seed=V + T) * 4
    g = torch.Generator(device="cuda")
    g.manual_seed(T)
    label = torch.randint(0, V, (T,), device="cuda", generator=g)
    label[::3] = -100  # ignore_index: those rows' gradients are 0
    dloss = randn(T, seed=9, dtype=torch.float64)
    name = "cross_entropy_train T=%d V=%d smoothing=%g" % (T, V, smoothing)
    autograd_case(name, lambda l, y: losses.cross_entropy_train(l, y, -100, smoothing)[0],
                  lambda l, y: F.cross_entropy(l, y, ignore_index=-100, reduction="none",
                                               label_smoothing=smoothing),
                  [logits, label], [dloss], [0])
    # The in-place backward, called directly, equals the gradient above.
    ld = leaf(logits.double())
    F.cross_entropy(ld, label, ignore_index=-100, reduction="none",
                    label_smoothing=smoothing).mul(dloss).sum().backward()
    _, lse = losses.cross_entropy_train(logits, label, -100, smoothing)
    inplace = logits.clone()
    losses.cross_entropy_backward_inplace(inplace, label, lse, dloss.float(), -100, smoothing)
    torch.cuda.synchronize()
    scaled_close(name + ": backward in place", inplace, ld.grad)
    check(name + ": ignored rows are 0", bool((inplace[::3] == 0).all()))


def rope_autograd_case(T, D):
    x = randn(T, D, seed=D + 1)
    angle = torch.arange(T, device="cuda", dtype=torch.float64)[:, None] * \
        (10000.0 ** (-torch.arange(D // 2, device="cuda", dtype=torch.float64) * 2 / D))[None, :]
    angle = torch.cat([angle, angle], -1)
    cos, sin = angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16)
    dy = randn(T, D, seed=11, dtype=torch.float64)

    def ref(x, c, s):
        return x * c + torch.cat([-x[:, D // 2:], x[:, :D // 2]], -1) * s

    # cos and sin get no gradient from the op (the reference computes one, not compared).
    autograd_case("rope_forward T=%d D=%d" % (T, D), lambda x, c, s: ropes.rope_forward(x, c, s),
                  ref, [x, cos, sin], [dy], [0])


def glu_autograd_case(T, H):
    x = randn(T, 2 * H, seed=T + 2)
    like = torch.empty(H, device="cuda", dtype=torch.bfloat16)  # gives H to the forward
    dy = randn(T, H, seed=12, dtype=torch.float64)
    autograd_case("swiglu T=%d H=%d" % (T, H), lambda x: glus.swiglu(x, like),
                  lambda x: F.silu(x[:, :H]) * x[:, H:], [x], [dy], [0])
    autograd_case("geglu T=%d H=%d" % (T, H), lambda x: glus.geglu(x, like),
                  lambda x: F.gelu(x[:, :H]) * x[:, H:], [x], [dy], [0])


for T, H in [(1, 4096), (7, 1000), (33, 77), (256, 5120)]:
    run("autograd norms T=%d H=%d" % (T, H), lambda: norms_case(T, H))
    run("row statistics T=%d H=%d" % (T, H), lambda: stats_case(T, H))
# Rows longer than any table: few rows split into pieces that meet at grid barriers (3 x
# 65536), fewer rows than SMs recomputing the row (100 x 40960), and the backward's row walk
# without its prefetch (1500 x 24576).
for T, H in [(3, 65536), (100, 40960), (1500, 24576)]:
    run("autograd norms, long rows, T=%d H=%d" % (T, H), lambda: norms_case(T, H))
for T, V, smoothing in [(1, 32000, 0.0), (7, 1001, 0.1), (64, 32000, 0.0), (13, 128256, 0.05)]:
    run("autograd cross_entropy T=%d V=%d" % (T, V), lambda: xent_autograd_case(T, V, smoothing))
for T, D in [(1, 128), (9, 66), (512, 128)]:
    run("autograd rope T=%d D=%d" % (T, D), lambda: rope_autograd_case(T, D))
for T, H in [(1, 4096), (7, 11008), (33, 77)]:
    run("autograd swiglu/geglu T=%d H=%d" % (T, H), lambda: glu_autograd_case(T, H))

print("%d checks, %d passed, %d failed" % (len(results), sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
