"""Twenty steps of training a tiny Llama-style block with the stdlib's training fusions,
against the same block in eager PyTorch.

The block (bf16 weights, T = 2 x 64 tokens, H = 256, 4 heads of 64, a SwiGLU MLP of
I = 512 from one fused [H, 2I] gate-up projection, a vocabulary of 1024):

    embedding -> RMSNorm -> q, k, v projections -> RoPE on q and k -> causal attention
    -> residual add + RMSNorm -> gate-up projection -> SwiGLU -> down projection
    -> residual add + final RMSNorm -> logits -> cross-entropy (mean over the labels)

Two copies start from the same weights. The fslc copy runs the normalizations
(std/norms.fsl's rms_norm_train and rms_norm_add_train), RoPE (std/rope.fsl's
rope_forward, halves layout, q and k as [T * heads, 64] rows with cos and sin repeated per
head), SwiGLU (std/activations.fsl's swiglu: silu of the first half of the [T, 2I]
projection times the second) and the cross-entropy (std/losses.fsl's cross_entropy_train,
i64 labels, ignore_index -100 on each sequence's last position) as fslc ops, differentiated
through their `backward` pairings; the matrix products, the embedding and the attention
(F.scaled_dot_product_attention) are PyTorch's in both. The eager copy computes the same
math in PyTorch ops (f32 inside each fusion's boundaries, bf16 between them, as the fusions
do). Both take 20 AdamW steps on the same token batches.

Checks: the parameters' gradients of the first step agree (each within 5e-2 of that
gradient's largest magnitude: the same f32 math rounded to bf16 at each op's output, where
the fused kernels and PyTorch's sum in different orders, so single bf16 steps differ and
carry through the backward pass; a wrong layout or pairing is off by O(1)); every step's
loss agrees within 2e-2 relative (one bf16 step is 2^-8 = 3.9e-3; the weights drift apart
by such roundings through AdamW, whose normalized updates turn a tiny difference of a small
gradient into a full step of the learning rate, so 20 steps are allowed about five bf16
steps of the loss); and both copies learn: the last loss is below 0.8 x the first. Both
loss curves are printed. The margins were sized on the CPU in bf16 with the eager copy
against itself changed at the rounding level (RMSNorm's products in another order, silu as
x * sigmoid(x), the cross-entropy from logsumexp): its 20 losses (6.98 down to 0.48 with
AdamW at lr 1e-3) differed by at most 1.7e-3 relative and its first gradients by 7e-3 of
their scale, while swapping SwiGLU's halves puts the gradients 0.25-0.45 of their scale off.
Needs PyTorch 2.4 or later on the GPU (torch.library.register_autograd).

usage: python3 tests/gpu/training_loop_test.py [--library build/lib/libfsl.so] [--stdlib stdlib]
       python3 tests/gpu/training_loop_test.py --cpu-check     (no GPU, no fslc: the eager
       copy against the fslc copy with CPU stand-ins for the fslc ops, float32, two steps)
Prints one PASS or FAIL line per check and a summary; exits 1 when any check fails.
"""

import argparse
import math
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
parser.add_argument("--steps", type=int, default=20, help="AdamW steps (default 20)")
parser.add_argument("--cpu-check", action="store_true",
                    help="no GPU: the eager copy against the fslc copy's glue with CPU stand-ins "
                         "for the fslc ops, in float32, for two steps")
args = parser.parse_args()
if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# The block's sizes.
BATCH, SEQ = 2, 64
T = BATCH * SEQ
H, HEADS, HEAD_DIM = 256, 4, 64
INTER = 512  # the MLP's width I; the gate-up projection is [2I, H]
VOCAB = 1024
DATA_VOCAB = 64  # the batches use the first 64 tokens, so the loss can fall in 20 steps
IGNORE = -100
RMS_EPS = 1e-6  # std/norms.fsl's default
LR = 1e-3

LOSS_RTOL = 2e-2
GRAD_RTOL = 5e-2
LEARNED = 0.8  # the last loss below this fraction of the first

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, ("  (%s)" % detail) if detail else ""), flush=True)


def run(name, body):
    try:
        body()
    except Exception as error:  # noqa: BLE001
        traceback.print_exc()
        check(name, False, "%s: %s" % (type(error).__name__, error))


# --- The model --------------------------------------------------------------------------

def init_params(device, dtype, seed=0):
    """The block's weights, from a CPU generator (the same values on every device)."""
    g = torch.Generator()
    g.manual_seed(seed)

    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=g) * std).to(device=device, dtype=dtype)

    def ones(n):
        return torch.ones(n, device=device, dtype=dtype)

    return {
        "embed": normal(VOCAB, H),
        "norm_attn": ones(H),
        "wq": normal(H, H), "wk": normal(H, H), "wv": normal(H, H), "wo": normal(H, H),
        "norm_mlp": ones(H),
        "w_gate_up": normal(2 * INTER, H),  # rows 0 ..< I: the gate; I ..< 2I: the up projection
        "w_down": normal(H, INTER),
        "norm_final": ones(H),
        "w_out": normal(VOCAB, H),
    }


def rope_tables(device, dtype):
    """cos and sin [SEQ, HEAD_DIM] in the halves layout: each of the D/2 angles twice."""
    d = HEAD_DIM
    inverse = 10000.0 ** (-torch.arange(d // 2, dtype=torch.float64) * 2 / d)
    angle = torch.arange(SEQ, dtype=torch.float64)[:, None] * inverse[None, :]
    angle = torch.cat([angle, angle], -1)
    return angle.cos().to(device=device, dtype=dtype), angle.sin().to(device=device, dtype=dtype)


def batches(count, device, seed=1):
    """Token batches [BATCH, SEQ] with a learnable rule (each token determines the next:
    t -> (37 t + 11) mod 64 from a random first token) and their next-token labels, the
    last position of each sequence ignored."""
    g = torch.Generator()
    g.manual_seed(seed)
    out = []
    for _ in range(count):
        tokens = torch.empty(BATCH, SEQ, dtype=torch.int64)
        tokens[:, 0] = torch.randint(0, DATA_VOCAB, (BATCH,), generator=g)
        for s in range(1, SEQ):
            tokens[:, s] = (37 * tokens[:, s - 1] + 11) % DATA_VOCAB
        labels = torch.full_like(tokens, IGNORE)
        labels[:, :-1] = tokens[:, 1:]
        out.append((tokens.reshape(-1).to(device), labels.reshape(-1).to(device)))
    return out


def manual_attention(q, k, v, is_causal):
    """F.scaled_dot_product_attention's math, for a torch without it (older than 2.0)."""
    scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if is_causal:
        n = scores.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


sdpa = getattr(F, "scaled_dot_product_attention", manual_attention)


def attention(q, k, v):
    """Causal attention over [T, H] projections: [BATCH, HEADS, SEQ, HEAD_DIM] for SDPA."""
    def heads(t):
        return t.view(BATCH, SEQ, HEADS, HEAD_DIM).transpose(1, 2)

    out = sdpa(heads(q), heads(k), heads(v), is_causal=True)
    return out.transpose(1, 2).reshape(T, H)


def forward(p, tokens, labels, ops):
    """The block's mean cross-entropy; `ops` supplies the five fused operations."""
    x = F.embedding(tokens, p["embed"])  # [T, H]
    y = ops.rms_norm(x, p["norm_attn"])
    q = ops.rope(F.linear(y, p["wq"]))
    k = ops.rope(F.linear(y, p["wk"]))
    v = F.linear(y, p["wv"])
    y, h = ops.rms_norm_add(F.linear(attention(q, k, v), p["wo"]), x, p["norm_mlp"])
    act = ops.swiglu(F.linear(y, p["w_gate_up"]))  # [T, I]
    y, _ = ops.rms_norm_add(F.linear(act, p["w_down"]), h, p["norm_final"])
    logits = F.linear(y, p["w_out"])  # [T, VOCAB]
    return ops.cross_entropy_mean(logits, labels)


def rope_rows(table):
    """A [SEQ, D] table as the rows of q viewed as [T * HEADS, D]: row (b SEQ + s) HEADS
    + head holds position s."""
    return table[None, :, None, :].expand(BATCH, SEQ, HEADS, HEAD_DIM).reshape(T * HEADS, HEAD_DIM).contiguous()


class EagerOps:
    """The fusions' math in PyTorch ops: f32 inside, the fusion's output dtype out."""

    def __init__(self, cos, sin):
        self.cos, self.sin = rope_rows(cos).float(), rope_rows(sin).float()

    def rms_norm(self, x, w):
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + RMS_EPS) * w.float()).to(x.dtype)

    def rms_norm_add(self, x, residual, w):
        hf = x.float() + residual.float()
        y = hf * torch.rsqrt((hf * hf).mean(-1, keepdim=True) + RMS_EPS) * w.float()
        return y.to(x.dtype), hf.to(x.dtype)

    def rope(self, x):
        rows = x.reshape(T * HEADS, HEAD_DIM).float()
        half = HEAD_DIM // 2
        rotated = torch.cat([-rows[:, half:], rows[:, :half]], -1)
        return (rows * self.cos + rotated * self.sin).to(x.dtype).reshape(T, H)

    def swiglu(self, x):
        xf = x.float()
        return (F.silu(xf[:, :INTER]) * xf[:, INTER:]).to(x.dtype)

    def cross_entropy_mean(self, logits, labels):
        loss = F.cross_entropy(logits.float(), labels, ignore_index=IGNORE, reduction="none")
        return loss.sum() / (labels != IGNORE).sum()


class FslOps:
    """The five operations as fslc ops (autograd through their `backward` pairings), called
    with the layouts the stdlib's fusions declare."""

    def __init__(self, norms, ropes, glus, losses, cos, sin):
        self.norms, self.ropes, self.glus, self.losses = norms, ropes, glus, losses
        self.cos, self.sin = rope_rows(cos), rope_rows(sin)  # rope_forward's cos, sin: [T', D] like x
        self.like = torch.empty(INTER, device=cos.device, dtype=cos.dtype)  # gives swiglu its H

    def rms_norm(self, x, w):
        y, _rstd = self.norms.rms_norm_train(x, w)
        return y

    def rms_norm_add(self, x, residual, w):
        y, h, _rstd = self.norms.rms_norm_add_train(x, residual, w)
        return y, h

    def rope(self, x):
        return self.ropes.rope_forward(x.reshape(T * HEADS, HEAD_DIM), self.cos, self.sin).reshape(T, H)

    def swiglu(self, x):
        return self.glus.swiglu(x, self.like)

    def cross_entropy_mean(self, logits, labels):
        loss, _lse = self.losses.cross_entropy_train(logits, labels, IGNORE, 0.0)
        return loss.sum() / (labels != IGNORE).sum()


class StandIn:
    """For --cpu-check: a CPU stand-in of one stdlib program, with the fusions' signatures
    (argument order, outputs, what each returns) and the checks fslc makes of a call
    (contiguous row-major tensors, dtypes, sizes that agree), computing the math as the
    .fsl file writes it."""

    def __init__(self, dtype):
        self.dtype = dtype

    def _tensor(self, name, t, dtype, shape):
        if t.dtype != dtype:
            raise TypeError("%s: dtype %s, expected %s" % (name, t.dtype, dtype))
        if tuple(t.shape) != tuple(shape):
            raise ValueError("%s: shape %s, expected %s" % (name, tuple(t.shape), tuple(shape)))
        if not t.is_contiguous():
            raise ValueError("%s: strides %s are not contiguous row-major" % (name, t.stride()))
        return t.float()

    def rms_norm_train(self, x, weight, eps=RMS_EPS):
        xf = self._tensor("x", x, self.dtype, x.shape)
        w = self._tensor("weight", weight, self.dtype, (x.shape[1],))
        r = torch.rsqrt((xf * xf).mean(-1) + eps)
        return (xf * r[:, None] * w).to(self.dtype), r.detach()

    def rms_norm_add_train(self, x, residual, weight, eps=RMS_EPS):
        hf = self._tensor("x", x, self.dtype, x.shape) + self._tensor("residual", residual, self.dtype, x.shape)
        w = self._tensor("weight", weight, self.dtype, (x.shape[1],))
        r = torch.rsqrt((hf * hf).mean(-1) + eps)
        return (hf * r[:, None] * w).to(self.dtype), hf.to(self.dtype), r.detach()

    def rope_forward(self, x, cos, sin):
        xf = self._tensor("x", x, self.dtype, x.shape)
        c = self._tensor("cos", cos, self.dtype, x.shape)
        s = self._tensor("sin", sin, self.dtype, x.shape)
        d = x.shape[1]
        index = torch.arange(d)
        # rotate_half as std/rope.fsl writes it: -x[d + D/2] in the first half, x[d - D/2] after.
        rotated = torch.where(index < d // 2, -xf[:, (index + d // 2) % d], xf[:, (index - d // 2) % d])
        return (xf * c + rotated * s).to(self.dtype)

    def swiglu(self, x, like):
        width = like.shape[0]
        xf = self._tensor("x", x, self.dtype, (x.shape[0], 2 * width))
        gate, up = xf[:, :width], xf[:, width:]
        return (gate * (1.0 / (1.0 + torch.exp(-gate))) * up).to(self.dtype)

    def cross_entropy_train(self, logits, label, ignore_index=IGNORE, smoothing=0.0):
        lf = self._tensor("logits", logits, self.dtype, logits.shape)
        self._tensor("label", label, torch.int64, (logits.shape[0],))
        top = lf.max(-1).values
        lse = torch.log(torch.exp(lf - top[:, None]).sum(-1)) + top
        target = lf.gather(1, label.clamp(0, logits.shape[1] - 1)[:, None])[:, 0]
        loss = torch.where(label == ignore_index, torch.zeros_like(lse), lse - target)
        return loss, lse.detach()


# --- Training ---------------------------------------------------------------------------

def leaves(params):
    return {name: t.detach().clone().requires_grad_(True) for name, t in params.items()}


def train(params, ops, data, steps):
    """`steps` AdamW steps over the batches; the losses, and the first step's gradients."""
    optimizer = torch.optim.AdamW(list(params.values()), lr=LR, weight_decay=0.01)
    losses, first_grads = [], None
    for step in range(steps):
        tokens, labels = data[step % len(data)]
        optimizer.zero_grad(set_to_none=True)
        loss = forward(params, tokens, labels, ops)
        loss.backward()
        if first_grads is None:
            first_grads = {name: p.grad.detach().clone() for name, p in params.items()}
        optimizer.step()
        losses.append(float(loss))
    return losses, first_grads


def compare(label, fsl_losses, eager_losses, fsl_grads, eager_grads, loss_rtol, grad_rtol, learned):
    print("step  %-12s %-12s rel. diff" % (label, "eager"))
    worst = 0.0
    for step, (a, b) in enumerate(zip(fsl_losses, eager_losses)):
        rel = abs(a - b) / abs(b)
        worst = max(worst, rel)
        print("%4d  %-12.6f %-12.6f %.2e" % (step + 1, a, b, rel))
    for name in eager_grads:
        got, ref = fsl_grads[name].double(), eager_grads[name].double()
        scale = float(ref.abs().max()) or 1.0
        error = float((got - ref).abs().max()) / scale  # relative to the scale
        check("step 1 gradient of %s within %g of its scale" % (name, grad_rtol),
              error <= grad_rtol and not bool(torch.isnan(got).any()), "max error %.3g x the largest magnitude %.3g" % (error, scale))
    finite = all(math.isfinite(x) for x in fsl_losses + eager_losses)
    check("losses finite", finite)
    check("%d losses agree within %g relative" % (len(eager_losses), loss_rtol),
          finite and worst <= loss_rtol, "largest %.3g" % worst)
    if learned is not None:
        for name, curve in ((label, fsl_losses), ("eager", eager_losses)):
            check("%s copy learns: last loss %.4f below %g x first %.4f" % (name, curve[-1], learned, curve[0]),
                  curve[-1] < learned * curve[0])


def cpu_check():
    """The eager copy against the fslc copy's glue with the CPU stand-ins, float32."""
    dtype, steps = torch.float32, 2
    cos, sin = rope_tables("cpu", dtype)
    data = batches(steps, "cpu")
    stand_in = StandIn(dtype)
    fsl_ops = FslOps(stand_in, stand_in, stand_in, stand_in, cos, sin)
    start = init_params("cpu", dtype)
    fsl_losses, fsl_grads = train(leaves(start), fsl_ops, data, steps)
    eager_losses, eager_grads = train(leaves(start), EagerOps(cos, sin), data, steps)
    # float32 on both sides: the stand-ins and the eager ops differ only in summation order.
    compare("stand-ins", fsl_losses, eager_losses, fsl_grads, eager_grads, 1e-5, 1e-4, None)
    check("first loss near log(vocabulary) = %.3f" % math.log(VOCAB),
          abs(eager_losses[0] - math.log(VOCAB)) < 0.5, "%.4f" % eager_losses[0])


def gpu_test():
    import fslc

    print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()), flush=True)
    cache = tempfile.mkdtemp(prefix="fsl-training-loop-")

    def std_program(name):
        return fslc.load(os.path.join(args.stdlib, "std", name), library=args.library, stdlib=args.stdlib,
                         cache_dir=cache)

    norms, ropes = std_program("norms.fsl"), std_program("rope.fsl")
    glus, losses = std_program("activations.fsl"), std_program("losses.fsl")
    used = [(norms, "rms_norm_train"), (norms, "rms_norm_add_train"), (ropes, "rope_forward"),
            (glus, "swiglu"), (losses, "cross_entropy_train")]
    for program, name in used:
        check("%s has autograd (its backward pairing registered)" % name, program[name].autograd,
              "" if program[name].autograd else "torch %s: needs 2.4 or later" % torch.__version__)
    if not all(program[name].autograd for program, name in used):
        return
    dtype = torch.bfloat16
    cos, sin = rope_tables("cuda", dtype)
    data = batches(args.steps, "cuda")
    start = init_params("cuda", dtype)
    fsl_losses, fsl_grads = train(leaves(start), FslOps(norms, ropes, glus, losses, cos, sin), data, args.steps)
    eager_losses, eager_grads = train(leaves(start), EagerOps(cos, sin), data, args.steps)
    compare("fslc", fsl_losses, eager_losses, fsl_grads, eager_grads, LOSS_RTOL, GRAD_RTOL,
            LEARNED if args.steps >= 20 else None)


run("cpu check" if args.cpu_check else "training loop", cpu_check if args.cpu_check else gpu_test)
print("%d checks, %d passed, %d failed" % (len(results), sum(results), len(results) - sum(results)))
sys.exit(0 if results and all(results) else 1)
