#!/usr/bin/env python3
"""Benchmark: the stdlib's training fusions against eager PyTorch autograd and
torch.compile(dynamic=False) of the same math, one process.

Rows (--only picks them by name):

  rms_norm_backward      the whole backward of std/norms.fsl's rms_norm_train as autograd runs
                         it: rms_norm_grad (dx and dweight, one inner-outer kernel)
  rms_norm_add_backward  rms_norm_add_train's: rms_norm_add_grad (dx = dresidual, dweight)
  layer_norm_backward    layer_norm_train's: layer_norm_grad (dx, dgamma, dbeta)
  softmax_backward       softmax's: softmax_backward
      H (S) in {2048, 4096, 8192} x T in {1, 16, 128, 1024, 4096, 16384}
  cross_entropy          forward and backward: std/losses.fsl's cross_entropy_train then
                         cross_entropy_backward (ignore_index -100 on every 8th row),
                         V in {32000, 128256} x T in {1, ..., 16384}; shapes whose bf16 logits
                         exceed 4 GB (T = 16384 at V = 128256) are skipped and listed
  rope_forward           std/rope.fsl's rope_forward over T x 32 heads x 128, q's heads as rows
                         (cos and sin at x's [T * 32, 128], as the fusion declares)
  rope_backward          its rope_backward

Implementations, each timed the same way:

  fslc     the fusions' ops (the `fslc` package), called as autograd's backward calls them
           (fslc._program.GradientPlan: the saved tensors and the outputs' gradients)
  eager    eager PyTorch with autograd: the library call a model makes where there is one
           (F.rms_norm, residual add + F.rms_norm, F.layer_norm, torch.softmax), else the
           fusion's math (cross-entropy: F.cross_entropy of the f32 logits; RoPE: the
           halves rotation in f32); for the backward rows the forward runs outside the
           timed graph and the graph holds torch.autograd.grad(retain_graph=True): the
           backward alone
  compile  torch.compile(dynamic=False, mode default) of the fusion's own math: for the
           backward rows the backward alone, written as the backward fusions compute it
           (the same formulas, f32 inside, bf16 out); for cross_entropy the forward
           compiled and differentiated (AOTAutograd's backward), forward + backward as
           for the others; for rope_forward the forward

The method (tests/bench/bench.py's and fslc.tune's): every implementation runs once per
shape on the first input set and is checked against the same computation in float64 (bf16
outputs within 2e-2 relative plus 2e-2 of the reference's RMS, f32 within 1e-4); then a
CUDA graph of one call per input set, rotating over enough sets that one pass is twice the
L2 (at most 64 sets; the smallest shapes stay in L2), each call writing outputs of its own
(referenced while the graph is captured), is replayed for 20 ms and then
--rounds times, and the median replay over the number of calls is the time of one call;
every implementation timed in one order and again in the reverse (ABBA), each the mean of
its two. Bytes moved are each row's minimum (its inputs read once and outputs written
once); the copy column is a device-to-device copy (Tensor.copy_) of as many bytes (half
read, half written) timed the same way in the same process, so `% copy` is how near the
fslc call is to moving its bytes at the copy's speed.

usage: python3 tests/bench/training_bench.py [--library build/lib/libfsl.so] [--stdlib stdlib]
           [-o training_bench.json] [--quick] [--only NAME[,NAME...]] [--rounds N]
           [--budget-s S] [--ops ctypes|compiled|auto] [--tuning-db FILE|''] [--norm-shapes TxH,...]
       python3 tests/bench/training_bench.py --cpu-check    (no GPU: the references, the eager
           peers, the compile peers' math uncompiled and CPU stand-ins of the fusions, in
           float32 on small shapes, each against float64; then the sweep itself on the CPU)
Writes a markdown table to stdout and the results as JSON (-o, rewritten after each shape,
so a run cut short keeps what it measured). The whole sweep stays within --budget-s
(default 300 s, torch.compile's compilations included): each row kind gets a share of what
is left in proportion to its shapes, and the shapes it cannot reach are listed as skipped.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--library", default=os.environ.get("FSL_LIBRARY"))
parser.add_argument("--stdlib", default=os.environ.get("FSLC_STDLIB") or os.path.join(ROOT, "stdlib"))
parser.add_argument("--python", default=os.path.join(ROOT, "python"))
parser.add_argument("-o", "--output", default="training_bench.json", help="the JSON results")
parser.add_argument("--quick", action="store_true", help="two shapes a row kind (a smoke run)")
parser.add_argument("--only", default="", help="comma-separated row kinds (the list above)")
parser.add_argument("--rounds", type=int, default=10, help="timed graph replays a measurement")
parser.add_argument("--ops", default="ctypes", choices=["auto", "compiled", "ctypes"],
                    help="the fslc ops' path (default ctypes: a graph replay times only the device's "
                         "work, the same on either path, and ctypes needs no extension built first)")
parser.add_argument("--budget-s", type=float, default=300.0, help="wall-clock budget of the sweep")
parser.add_argument("--tuning-db", default=None,
                    help="the fslc programs' tuning_db (default: the package's, for the stdlib's "
                         "files the stdlib's database; '' none: the heuristics alone)")
parser.add_argument("--norm-shapes", default="",
                    help="the norm rows' shapes only, 'T x H' pairs: '1024x2048,16384x4096'")
parser.add_argument("--norm-variant", action="append", default=[], metavar="NAME:KNOBS",
                    help="an extra fslc implementation of the backward norm rows: the three "
                         "backward fusions as `auto(inner_outer) { KNOBS }` (no tuning database), "
                         "e.g. 'one:row_blocks = 1;'; repeatable")
parser.add_argument("--cpu-check", action="store_true",
                    help="no GPU: check the references and peers' math on CPU in float32")
args = parser.parse_args()
if args.python:
    sys.path.insert(0, args.python)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

RMS_EPS = 1e-6  # std/norms.fsl's defaults
LAYER_EPS = 1e-5
IGNORE = -100
HIDDEN = [2048, 4096, 8192]
# T in the order a sweep measures them: the training sizes first (T >= 1024), so that a
# budget cut drops the small ones; the table sorts the rows back.
ROWS = [1024, 4096, 16384, 128, 16, 1]
VOCABS = [32000, 128256]
ROPE_HEADS, ROPE_DIM = 32, 128
MAX_LOGIT_BYTES = 4e9
MAX_SETS = 64
RTOL = {torch.bfloat16: 2e-2, torch.float16: 2e-2, torch.float32: 1e-4, torch.float64: 1e-9}
IMPLEMENTATIONS = ["fslc", "eager", "compile"]


# --- Shared math (f32 inside, the input dtype out), as the fusions write it ---------------

def rotate_half(x):
    """std/rope.fsl's rotate_half: (-second half, first half) along the last dimension."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], -1)


def rms_dx(x, w, r, dy):
    """std/norms.fsl's rms_norm_dx: r (g - x r^2 mean(g x)), g = w dy; r a [T, 1] column."""
    g = w * dy
    return r * (g - x * (r * r) * (g * x).mean(-1, keepdim=True))


def rms_norm_backward_math(x, w, rstd, dy):
    xf, dyf, r = x.float(), dy.float(), rstd.float()[:, None]
    dx = rms_dx(xf, w.float(), r, dyf)
    dw = (dyf * xf * r).sum(0)
    return dx.to(x.dtype), dw.to(w.dtype)


def rms_norm_add_backward_math(h, w, rstd, dy, dh):
    hf, dyf, r = h.float(), dy.float(), rstd.float()[:, None]
    d = (rms_dx(hf, w.float(), r, dyf) + dh.float()).to(h.dtype)
    dw = (dyf * hf * r).sum(0)
    return d, d, dw.to(w.dtype)  # grad_x and grad_residual: one tensor, as autograd gives an add's operands


def layer_norm_backward_math(x, gamma, mean, rstd, dy):
    xf, dyf, r, mu = x.float(), dy.float(), rstd.float()[:, None], mean.float()[:, None]
    xhat = (xf - mu) * r
    g = gamma.float() * dyf
    dx = r * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xhat).sum(0).to(gamma.dtype), dyf.sum(0).to(gamma.dtype)


def softmax_backward_math(y, dy):
    yf, dyf = y.float(), dy.float()
    return (yf * (dyf - (dyf * yf).sum(-1, keepdim=True))).to(y.dtype)


def rope_math(x, cos, sin):
    xf = x.float()
    return (xf * cos.float() + rotate_half(xf) * sin.float()).to(x.dtype)


def rope_backward_math(cos, sin, dy):
    dyf = dy.float()
    return (dyf * cos.float() - rotate_half(dyf) * sin.float()).to(dy.dtype)


def cross_entropy_math(logits, label):
    return F.cross_entropy(logits.float(), label, ignore_index=IGNORE, reduction="none")


def rms_norm_eager(x, w):
    if hasattr(F, "rms_norm"):  # torch 2.4 and later
        return F.rms_norm(x, (x.shape[-1],), w, RMS_EPS)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w.float()).to(x.dtype)


# --- Row kinds ----------------------------------------------------------------------------
#
# Each kind gives its shapes, the bytes a call must move, one input set, the float64
# reference of a set's outputs, and per implementation a `prepare(set)` that returns the
# call to time (which returns its outputs by name).

def randn(shape, gen, device, dtype, scale=1.0):
    return (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def grads(outputs, inputs, grad_outputs, retain=True):
    return torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=retain)


def f64(s):
    return {k: (v.double() if v.is_floating_point() else v) for k, v in s.items()}


class Kind:
    name = ""
    dims = ()

    def shapes(self, quick):
        raise NotImplementedError

    def text(self, shape):
        return " ".join("%s=%d" % (d, shape[d]) for d in self.dims)


class NormKind(Kind):
    dims = ("T", "H")

    def shapes(self, quick):
        if quick:
            return [{"T": 16, "H": 2048}, {"T": 4096, "H": 4096}]
        if args.norm_shapes:
            pairs = [pair.split("x") for pair in args.norm_shapes.split(",")]
            return [{"T": int(t), "H": int(h)} for t, h in pairs]
        return [{"T": t, "H": h} for t in ROWS for h in HIDDEN]


class RmsNormBackward(NormKind):
    name = "rms_norm_backward"

    def bytes(self, s):
        t, h = s["T"], s["H"]
        return 6 * t * h + 4 * h + 4 * t  # x, dy read; dx written; weight read, dweight written; rstd

    def make(self, s, gen, device, dtype):
        x = randn((s["T"], s["H"]), gen, device, dtype)
        xf = x.float()
        return {"x": x, "w": randn((s["H"],), gen, device, dtype),
                "rstd": torch.rsqrt(xf.pow(2).mean(-1) + RMS_EPS),
                "dy": randn((s["T"], s["H"]), gen, device, dtype)}

    def reference(self, s):
        x, w = leaf(s["x"]), leaf(s["w"])
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w
        dx, dw = grads(y, (x, w), s["dy"], retain=False)
        return {"dx": dx, "dw": dw}

    def fslc(self, p):
        def prepare(s):
            def call():
                dx, dw = p.norms.rms_norm_grad(s["x"], s["w"], s["rstd"], s["dy"])
                return {"dx": dx, "dw": dw}
            return call
        return prepare

    def eager(self):
        def prepare(s):
            x, w = leaf(s["x"]), leaf(s["w"])
            y = rms_norm_eager(x, w)

            def call():
                dx, dw = grads(y, (x, w), s["dy"])
                return {"dx": dx, "dw": dw}
            return call
        return prepare

    def compile(self, compiled):
        f = compiled(rms_norm_backward_math)

        def prepare(s):
            def call():
                dx, dw = f(s["x"], s["w"], s["rstd"], s["dy"])
                return {"dx": dx, "dw": dw}
            return call
        return prepare


class RmsNormAddBackward(NormKind):
    name = "rms_norm_add_backward"

    def bytes(self, s):
        t, h = s["T"], s["H"]
        return 8 * t * h + 4 * h + 4 * t  # h, dy, dh read; dx written (dresidual is dx); weight, dweight; rstd

    def make(self, s, gen, device, dtype):
        x = randn((s["T"], s["H"]), gen, device, dtype)
        r = randn((s["T"], s["H"]), gen, device, dtype)
        hf = x.float() + r.float()
        return {"x": x, "r": r, "h": hf.to(dtype), "w": randn((s["H"],), gen, device, dtype),
                "rstd": torch.rsqrt(hf.pow(2).mean(-1) + RMS_EPS),
                "dy": randn((s["T"], s["H"]), gen, device, dtype),
                "dh": randn((s["T"], s["H"]), gen, device, dtype)}

    def reference(self, s):
        # From the rounded sum h, as rms_norm_add_train saves it: d(loss)/dx = d(loss)/dresidual.
        h, w = leaf(s["h"]), leaf(s["w"])
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w
        dh, dw = grads((y, h * 1.0), (h, w), (s["dy"], s["dh"]), retain=False)
        return {"dx": dh, "dr": dh, "dw": dw}

    def fslc(self, p):
        def prepare(s):
            def call():
                # The pairing's `grad_residual = grad_x`: one tensor for both.
                dx, dw = p.norms.rms_norm_add_grad(s["h"], s["w"], s["rstd"], s["dy"], s["dh"])
                return {"dx": dx, "dr": dx, "dw": dw}
            return call
        return prepare

    def eager(self):
        def prepare(s):
            x, r, w = leaf(s["x"]), leaf(s["r"]), leaf(s["w"])
            h = x + r
            y = rms_norm_eager(h, w)

            def call():
                dx, dr, dw = grads((y, h), (x, r, w), (s["dy"], s["dh"]))
                return {"dx": dx, "dr": dr, "dw": dw}
            return call
        return prepare

    def compile(self, compiled):
        f = compiled(rms_norm_add_backward_math)

        def prepare(s):
            def call():
                dx, dr, dw = f(s["h"], s["w"], s["rstd"], s["dy"], s["dh"])
                return {"dx": dx, "dr": dr, "dw": dw}
            return call
        return prepare


class LayerNormBackward(NormKind):
    name = "layer_norm_backward"

    def bytes(self, s):
        t, h = s["T"], s["H"]
        return 6 * t * h + 6 * h + 8 * t  # x, dy read; dx written; gamma, dgamma, dbeta; mean, rstd

    def make(self, s, gen, device, dtype):
        x = randn((s["T"], s["H"]), gen, device, dtype)
        xf = x.float()
        mean = xf.mean(-1)
        return {"x": x, "gamma": randn((s["H"],), gen, device, dtype),
                "beta": randn((s["H"],), gen, device, dtype), "mean": mean,
                "rstd": torch.rsqrt((xf - mean[:, None]).pow(2).mean(-1) + LAYER_EPS),
                "dy": randn((s["T"], s["H"]), gen, device, dtype)}

    def reference(self, s):
        x, g, b = leaf(s["x"]), leaf(s["gamma"]), leaf(s["beta"])
        y = F.layer_norm(x, (x.shape[-1],), g, b, LAYER_EPS)
        dx, dg, db = grads(y, (x, g, b), s["dy"], retain=False)
        return {"dx": dx, "dgamma": dg, "dbeta": db}

    def fslc(self, p):
        def prepare(s):
            def call():
                dx, dg, db = p.norms.layer_norm_grad(s["x"], s["gamma"], s["mean"], s["rstd"], s["dy"])
                return {"dx": dx, "dgamma": dg, "dbeta": db}
            return call
        return prepare

    def eager(self):
        def prepare(s):
            x, g, b = leaf(s["x"]), leaf(s["gamma"]), leaf(s["beta"])
            y = F.layer_norm(x, (x.shape[-1],), g, b, LAYER_EPS)

            def call():
                dx, dg, db = grads(y, (x, g, b), s["dy"])
                return {"dx": dx, "dgamma": dg, "dbeta": db}
            return call
        return prepare

    def compile(self, compiled):
        f = compiled(layer_norm_backward_math)

        def prepare(s):
            def call():
                dx, dg, db = f(s["x"], s["gamma"], s["mean"], s["rstd"], s["dy"])
                return {"dx": dx, "dgamma": dg, "dbeta": db}
            return call
        return prepare


class SoftmaxBackward(NormKind):
    name = "softmax_backward"
    dims = ("T", "S")

    def shapes(self, quick):
        return [{"T": s["T"], "S": s["H"]} for s in NormKind.shapes(self, quick)]

    def bytes(self, s):
        return 6 * s["T"] * s["S"]  # y, dy read; dx written

    def make(self, s, gen, device, dtype):
        x = randn((s["T"], s["S"]), gen, device, dtype, scale=3.0)
        return {"x": x, "y": torch.softmax(x, -1), "dy": randn((s["T"], s["S"]), gen, device, dtype)}

    def reference(self, s):
        # From the saved (rounded) y, as softmax_backward reads it.
        y, dy = s["y"], s["dy"]
        return {"dx": y * (dy - (dy * y).sum(-1, keepdim=True))}

    def fslc(self, p):
        def prepare(s):
            return lambda: {"dx": p.norms.softmax_backward(s["y"], s["dy"])}
        return prepare

    def eager(self):
        def prepare(s):
            x = leaf(s["x"])
            y = torch.softmax(x, -1)

            def call():
                (dx,) = grads(y, (x,), s["dy"])
                return {"dx": dx}
            return call
        return prepare

    def compile(self, compiled):
        f = compiled(softmax_backward_math)

        def prepare(s):
            return lambda: {"dx": f(s["y"], s["dy"])}
        return prepare


class CrossEntropy(Kind):
    name = "cross_entropy"
    dims = ("T", "V")

    def shapes(self, quick):
        if quick:
            return [{"T": 16, "V": 32000}, {"T": 1024, "V": 128256}]
        return [{"T": t, "V": v} for t in ROWS for v in VOCABS]

    def skipped(self, s):
        if 2 * s["T"] * s["V"] > MAX_LOGIT_BYTES:
            return "bf16 logits of %.1f GB (over %.0f GB)" % (2 * s["T"] * s["V"] / 1e9, MAX_LOGIT_BYTES / 1e9)
        return None

    def bytes(self, s):
        t, v = s["T"], s["V"]
        # forward: logits read; backward: logits read, gradient written; the [T] vectors
        # (labels twice, loss, lse written and read, the loss gradient)
        return 6 * t * v + 40 * t

    def make(self, s, gen, device, dtype):
        label = torch.randint(0, s["V"], (s["T"],), generator=gen, device=device)
        label[7::8] = IGNORE
        return {"logits": randn((s["T"], s["V"]), gen, device, dtype, scale=4.0), "label": label,
                "dloss": randn((s["T"],), gen, device, torch.float32)}

    def reference(self, s):
        logits = leaf(s["logits"])
        loss = F.cross_entropy(logits, s["label"], ignore_index=IGNORE, reduction="none")
        (grad,) = grads(loss, (logits,), s["dloss"].double(), retain=False)
        return {"loss": loss.detach(), "grad": grad}

    def fslc(self, p):
        def prepare(s):
            def call():
                loss, lse = p.losses.cross_entropy_train(s["logits"], s["label"], IGNORE, 0.0)
                grad = p.losses.cross_entropy_backward(s["logits"], s["label"], lse, s["dloss"], IGNORE, 0.0)
                return {"loss": loss, "grad": grad}
            return call
        return prepare

    def _autograd(self, f):
        def prepare(s):
            logits = leaf(s["logits"])

            def call():  # forward and backward, both in the timed graph
                loss = f(logits, s["label"])
                (grad,) = grads(loss, (logits,), s["dloss"], retain=False)
                return {"loss": loss.detach(), "grad": grad}
            return call
        return prepare

    def eager(self):
        return self._autograd(cross_entropy_math)

    def compile(self, compiled):
        return self._autograd(compiled(cross_entropy_math))


class RopeKind(Kind):
    dims = ("T",)

    def shapes(self, quick):
        return [{"T": t} for t in ([16, 4096] if quick else ROWS)]

    def text(self, s):
        return "T=%d x %d heads x %d" % (s["T"], ROPE_HEADS, ROPE_DIM)

    def bytes(self, s):
        return 8 * s["T"] * ROPE_HEADS * ROPE_DIM  # x (dy), cos, sin read; y (dx) written

    def make(self, s, gen, device, dtype):
        rows = s["T"] * ROPE_HEADS
        inverse = 10000.0 ** (-torch.arange(ROPE_DIM // 2, device=device, dtype=torch.float64) * 2 / ROPE_DIM)
        angle = torch.arange(s["T"], device=device, dtype=torch.float64)[:, None] * inverse[None, :]
        angle = torch.cat([angle, angle], -1)  # the halves layout: each angle twice
        # Position t's row repeated for each head: rope_forward takes cos and sin like x.
        expand = lambda a: a[:, None, :].expand(s["T"], ROPE_HEADS, ROPE_DIM).reshape(rows, ROPE_DIM).to(dtype)
        return {"x": randn((rows, ROPE_DIM), gen, device, dtype), "cos": expand(angle.cos()),
                "sin": expand(angle.sin()), "dy": randn((rows, ROPE_DIM), gen, device, dtype)}


class RopeForward(RopeKind):
    name = "rope_forward"

    def reference(self, s):
        return {"y": s["x"] * s["cos"] + rotate_half(s["x"]) * s["sin"]}

    def fslc(self, p):
        def prepare(s):
            return lambda: {"y": p.ropes.rope_forward(s["x"], s["cos"], s["sin"])}
        return prepare

    def eager(self):
        def prepare(s):
            return lambda: {"y": rope_math(s["x"], s["cos"], s["sin"])}
        return prepare

    def compile(self, compiled):
        f = compiled(rope_math)

        def prepare(s):
            return lambda: {"y": f(s["x"], s["cos"], s["sin"])}
        return prepare


class RopeBackward(RopeKind):
    name = "rope_backward"

    def reference(self, s):
        x = leaf(s["x"])
        y = x * s["cos"] + rotate_half(x) * s["sin"]
        (dx,) = grads(y, (x,), s["dy"], retain=False)
        return {"dx": dx}

    def fslc(self, p):
        def prepare(s):
            return lambda: {"dx": p.ropes.rope_backward(s["cos"], s["sin"], s["dy"])}
        return prepare

    def eager(self):
        def prepare(s):
            x = leaf(s["x"])
            y = rope_math(x, s["cos"], s["sin"])

            def call():
                (dx,) = grads(y, (x,), s["dy"])
                return {"dx": dx}
            return call
        return prepare

    def compile(self, compiled):
        f = compiled(rope_backward_math)

        def prepare(s):
            return lambda: {"dx": f(s["cos"], s["sin"], s["dy"])}
        return prepare


KINDS = [RmsNormBackward(), RmsNormAddBackward(), LayerNormBackward(), SoftmaxBackward(),
         CrossEntropy(), RopeForward(), RopeBackward()]


# --- Checking and timing ------------------------------------------------------------------

def mismatch(got, expected):
    """Why `got` differs from the float64 reference (None when it matches)."""
    for name, reference in expected.items():
        value = got[name]
        if tuple(value.shape) != tuple(reference.shape):
            return "%s: shape %s, expected %s" % (name, tuple(value.shape), tuple(reference.shape))
        rtol = RTOL.get(value.dtype, 1e-4)
        v, ref = value.double(), reference.double()
        atol = rtol * float(ref.pow(2).mean().sqrt())
        error = (v - ref).abs()
        bad = ~(error <= atol + rtol * ref.abs())  # NaN counts as bad
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            return "%s: %d of %d elements out of tolerance (element %d = %g, reference %g; rtol %g)" % (
                name, int(bad.sum()), bad.numel(), i, float(v.flatten()[i]), float(ref.flatten()[i]), rtol)
    return None


def set_count(set_bytes, l2_bytes):
    """Enough input sets that one pass over them is twice the L2 (at most MAX_SETS)."""
    return max(1, min(MAX_SETS, math.ceil(2 * l2_bytes / max(set_bytes, 1))))


class GpuTimer:
    """CUDA graphs on one side stream: the autograd forwards run on it before capture, so
    their backward ops (which run on the forward's stream) are captured with the rest."""

    device, dtype = "cuda", torch.bfloat16

    def __init__(self, rounds):
        self.rounds = rounds
        self.stream = torch.cuda.Stream()
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2_bytes = getattr(properties, "L2_cache_size", 0) or 50 << 20

    def sync(self):
        self.stream.synchronize()

    def build(self, calls):
        """A CUDA graph of the calls (each run once before, outside capture: the JIT and
        torch.compile compile there)."""
        for call in calls:
            call()
        self.stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        # Each call's outputs stay referenced while the graph is captured, so that every
        # call writes buffers of its own, as a model's calls do: freed at once, they would
        # be the next call's, one buffer the L2 keeps (bench.py's time_calls).
        outputs = []
        with torch.cuda.graph(graph, stream=self.stream):
            for call in calls:
                outputs.append(call())
        del outputs  # their memory stays the graph's, for its replays
        self.stream.synchronize()
        return graph, len(calls)

    def time(self, built):
        """µs of one call: the median over the rounds' replays, after 20 ms of warm-up."""
        graph, calls = built

        def one():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1000.0

        first = one()
        for _ in range(min(200, int(20000.0 / max(first, 1.0)))):
            graph.replay()
        times = [one() / calls for _ in range(self.rounds)]
        return statistics.median(times), times

    def release(self):
        torch.cuda.empty_cache()


class CpuTimer:
    """For --cpu-check: the same sweep on the CPU, each call timed by the host clock."""

    device, dtype = "cpu", torch.float32

    def __init__(self, rounds, l2_bytes):
        self.rounds, self.l2_bytes = rounds, l2_bytes

    def sync(self):
        pass

    def build(self, calls):
        return calls

    def time(self, calls):
        times = []
        for _ in range(self.rounds):
            started = time.perf_counter()
            for call in calls:
                call()
            times.append((time.perf_counter() - started) * 1e6 / len(calls))
        return statistics.median(times), times

    def release(self):
        pass


def copy_calls(nbytes, timer):
    """Device-to-device copies moving `nbytes` (half read, half written), rotating like the
    inputs; the buffers stay alive with the calls."""
    half = max(nbytes // 2, 16)
    calls = []
    for _ in range(set_count(nbytes, timer.l2_bytes)):
        source = torch.empty(half, dtype=torch.uint8, device=timer.device)
        target = torch.empty(half, dtype=torch.uint8, device=timer.device)
        calls.append(lambda t=target, s=source: t.copy_(s))
    return calls


class Programs:
    """The stdlib programs the fslc rows call."""

    def __init__(self):
        import fslc

        def load(name):
            return fslc.load(os.path.join(args.stdlib, "std", name), library=args.library, stdlib=args.stdlib,
                             ops=args.ops, tuning_db=args.tuning_db)

        self.norms, self.losses, self.ropes = load("norms.fsl"), load("losses.fsl"), load("rope.fsl")


class VariantPrograms:
    """--norm-variant: std/norms.fsl with the backward fusions' schedules replaced."""

    GRADS = ("rms_norm_grad", "rms_norm_add_grad", "layer_norm_grad")

    class Refused:
        """A fusion whose variant does not compile at the file's default sizes: each call
        raises the compiler's message (the row records it as the variant's error)."""

        def __init__(self, error):
            self.error = error

        def __call__(self, *args):
            raise RuntimeError(self.error)

    def __init__(self, name, knobs):
        import fslc
        path = os.path.join(args.stdlib, "std", "norms.fsl")
        with open(path) as f:
            text = f.read()
        # One program a fusion: a knob one fusion refuses at the file's default sizes
        # leaves the others measured.
        self.norms = type("VariantNorms", (), {})()
        for grad in self.GRADS:
            try:
                program = fslc.load_text(
                    os.path.join(args.stdlib, "std", "variant_%s_%s.fsl" % (name, grad)),
                    text + "schedule %s = auto(inner_outer) { %s }\n" % (grad, knobs),
                    namespace="fsl_variant_%s_%s" % (name, grad), library=args.library,
                    stdlib=args.stdlib, ops=args.ops, tuning_db="")
                setattr(self.norms, grad, getattr(program, grad))
            except Exception as error:  # noqa: BLE001 (fslc.errors.FslCompileError)
                setattr(self.norms, grad, self.Refused("%s: %s" % (type(error).__name__, error)))


def norm_variants():
    """The --norm-variant implementations: {"fslc:NAME": knobs}."""
    variants = {}
    for text in args.norm_variant:
        name, _, knobs = text.partition(":")
        if not name.isidentifier() or not knobs.strip():
            raise SystemExit("--norm-variant: want NAME:KNOBS (NAME an identifier), got %r" % text)
        variants["fslc:" + name] = knobs
    return variants


class StandInPrograms:
    """For --cpu-check: the fusions the fslc rows call, with their parameters in the .fsl
    files' order, computed in PyTorch from the formulas written there."""

    def __init__(self):
        self.norms = self.losses = self.ropes = self

    @staticmethod
    def rms_norm_backward(x, weight, rstd, grad_y):
        return rms_norm_backward_math(x, weight, rstd, grad_y)[0]

    @staticmethod
    def rms_norm_backward_weight(x, rstd, grad_y):
        return (grad_y.float() * x.float() * rstd[:, None]).sum(0).to(x.dtype)

    @staticmethod
    def rms_norm_add_backward(h, weight, rstd, grad_y, grad_h):
        return rms_norm_add_backward_math(h, weight, rstd, grad_y, grad_h)[:2]

    @staticmethod
    def rms_norm_add_backward_weight(h, rstd, grad_y):
        return (grad_y.float() * h.float() * rstd[:, None]).sum(0).to(h.dtype)

    @staticmethod
    def layer_norm_backward(x, gamma, mean, rstd, grad_y):
        return layer_norm_backward_math(x, gamma, mean, rstd, grad_y)[0]

    @staticmethod
    def layer_norm_backward_weight(x, mean, rstd, grad_y):
        dy = grad_y.float()
        return ((dy * (x.float() - mean[:, None]) * rstd[:, None]).sum(0).to(x.dtype), dy.sum(0).to(x.dtype))

    @classmethod
    def rms_norm_grad(cls, x, weight, rstd, grad_y):
        return cls.rms_norm_backward(x, weight, rstd, grad_y), cls.rms_norm_backward_weight(x, rstd, grad_y)

    @classmethod
    def rms_norm_add_grad(cls, h, weight, rstd, grad_y, grad_h):
        dx, _ = cls.rms_norm_add_backward(h, weight, rstd, grad_y, grad_h)
        return dx, cls.rms_norm_add_backward_weight(h, rstd, grad_y)

    @classmethod
    def layer_norm_grad(cls, x, gamma, mean, rstd, grad_y):
        dg, db = cls.layer_norm_backward_weight(x, mean, rstd, grad_y)
        return cls.layer_norm_backward(x, gamma, mean, rstd, grad_y), dg, db

    @staticmethod
    def softmax_backward(y, grad_y):
        return softmax_backward_math(y, grad_y)

    @staticmethod
    def cross_entropy_train(logits, label, ignore_index, smoothing):
        lf = logits.float()
        top = lf.max(-1).values
        lse = torch.log(torch.exp(lf - top[:, None]).sum(-1)) + top
        picked = lf.gather(1, label.clamp(0, lf.shape[1] - 1)[:, None])[:, 0]
        target = (1.0 - smoothing) * picked + smoothing * lf.mean(-1)
        return torch.where(label == ignore_index, torch.zeros_like(lse), lse - target), lse

    @staticmethod
    def cross_entropy_backward(logits, label, lse, grad_loss, ignore_index, smoothing):
        lf = logits.float()
        onehot = (torch.arange(lf.shape[1])[None, :] == label[:, None]).float()
        dx = (torch.exp(lf - lse[:, None]) - (1.0 - smoothing) * onehot - smoothing / lf.shape[1]) * grad_loss[:, None]
        return torch.where((label == ignore_index)[:, None], torch.zeros_like(dx), dx).to(logits.dtype)

    @staticmethod
    def rope_forward(x, cos, sin):
        return rope_math(x, cos, sin)

    @staticmethod
    def rope_backward(cos, sin, grad_y):
        return rope_backward_math(cos, sin, grad_y)


def make_compiler():
    import torch._dynamo
    # Every shape is a static recompilation of the same function: raise dynamo's limits on
    # recompilations (at the limit it would silently run eagerly).
    for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                  "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), 4096))
    made = {}

    def compiled(math_fn):
        if math_fn not in made:
            made[math_fn] = torch.compile(math_fn, dynamic=False)
        return made[math_fn]
    return compiled


def measure_shape(kind, shape, programs, compiled, timer):
    """One row: every implementation checked, then timed ABBA, with the copy of its bytes."""
    nbytes = kind.bytes(shape)
    gen = torch.Generator(device=timer.device)
    gen.manual_seed(0)
    first = kind.make(shape, gen, timer.device, timer.dtype)
    set_bytes = sum(t.numel() * t.element_size() for t in first.values())
    sets = [first] + [kind.make(shape, gen, timer.device, timer.dtype)
                      for _ in range(set_count(set_bytes, timer.l2_bytes) - 1)]
    expected = kind.reference(f64(first))
    row = {"kind": kind.name, "shape": shape, "bytes": nbytes, "sets": len(sets), "impls": {}}
    factories = {"fslc": lambda: kind.fslc(programs), "eager": kind.eager,
                 "compile": lambda: kind.compile(compiled)}
    names = list(IMPLEMENTATIONS)
    if isinstance(kind, NormKind) and kind.name != "softmax_backward":
        for name, variant in getattr(programs, "variants", {}).items():
            factories[name] = lambda v=variant: kind.fslc(v)
            names.append(name)
    built = {}
    for name in names:
        result = row["impls"].setdefault(name, {})
        try:
            started = time.monotonic()
            prepare = factories[name]()
            calls = [prepare(s) for s in sets]
            got = calls[0]()  # the first call (it compiles), checked
            timer.sync()
            why = mismatch(got, expected)
            result["status"] = "ok" if why is None else "mismatch"
            if why:
                result["error"] = why  # still timed: the table marks it
            del got
            built[name] = (timer.build(calls), calls)
            result["setup_s"] = round(time.monotonic() - started, 2)
        except Exception as error:  # noqa: BLE001 (one implementation failing keeps the rest)
            traceback.print_exc()
            result.update(status="error", error="%s: %s" % (type(error).__name__, error))
    del expected  # the float64 reference: the largest tensors of a row, not needed to time
    copies = copy_calls(nbytes, timer)
    built["copy"] = (timer.build(copies), copies)
    order = [n for n in names + ["copy"] if n in built]
    medians = {}
    for name in order + order[::-1]:  # ABBA: a drift weighs on every implementation alike
        median, times = timer.time(built[name][0])
        medians.setdefault(name, []).append(median)
        if name != "copy":
            row["impls"][name].setdefault("rounds_us", []).extend(times)
    for name, pair in medians.items():
        if name == "copy":
            row["copy_us"] = sum(pair) / len(pair)
        else:
            row["impls"][name]["us"] = sum(pair) / len(pair)
    del built, copies, sets, first
    timer.release()
    return row


# --- Reporting ----------------------------------------------------------------------------

def us_text(result):
    if "us" not in (result or {}):
        return (result or {}).get("status", "-")
    return "%.2f%s" % (result["us"], "" if result.get("status") == "ok" else " (wrong)")


def table(rows):
    lines = ["| row | shape | MB | copy µs | fslc µs | eager µs | compile µs | fslc / best peer "
             "| compile / fslc | fslc TB/s | % copy |", "|" + "---|" * 11]
    def order(r):  # kinds as listed, then the wider dimension, then T
        shape = r["shape"]
        return (KINDS.index(KIND_BY_NAME[r["kind"]]), [shape[d] for d in sorted(shape) if d != "T"], shape["T"])

    for r in sorted(rows, key=order):
        impl = r["impls"]
        fslc_us = impl.get("fslc", {}).get("us")
        peers = [impl[n]["us"] for n in ("eager", "compile") if "us" in impl.get(n, {})]
        compile_us = impl.get("compile", {}).get("us")
        cells = [r["kind"], KIND_BY_NAME[r["kind"]].text(r["shape"]), "%.1f" % (r["bytes"] / 1e6),
                 "%.2f" % r["copy_us"] if "copy_us" in r else "-",
                 us_text(impl.get("fslc")), us_text(impl.get("eager")), us_text(impl.get("compile")),
                 "%.2f" % (fslc_us / min(peers)) if fslc_us and peers else "-",
                 "%.2f" % (compile_us / fslc_us) if fslc_us and compile_us else "-",
                 "%.2f" % (r["bytes"] / (fslc_us * 1e-6) / 1e12) if fslc_us else "-",
                 "%.0f" % (100.0 * r["copy_us"] / fslc_us) if fslc_us and "copy_us" in r else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


KIND_BY_NAME = {k.name: k for k in KINDS}


def selected_kinds():
    if not args.only:
        return KINDS
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in KIND_BY_NAME]
    if unknown:
        raise SystemExit("--only: unknown row kind %s; the kinds: %s" % (", ".join(unknown), ", ".join(KIND_BY_NAME)))
    return [KIND_BY_NAME[n] for n in names]


def sweep(kinds, shapes_of, programs, compiled, timer, machine, output, budget_s):
    """Every shape of every kind, within the budget; the results document and the number of
    implementation results that are not ok."""
    started = time.monotonic()
    document = {"machine": machine,
                "method": {"rounds": timer.rounds, "l2_bytes": timer.l2_bytes, "max_sets": MAX_SETS,
                           "quick": args.quick, "budget_s": budget_s, "device": timer.device,
                           "ops": args.ops},
                "rows": [], "skipped": []}

    def save():
        document["elapsed_s"] = round(time.monotonic() - started, 1)
        with open(output, "w") as f:
            json.dump(document, f, indent=1)

    failures = 0
    for position, kind in enumerate(kinds):
        kind_started = time.monotonic()
        # This kind's part of what is left of the budget, in proportion to its shapes.
        left = sum(len(shapes_of(k)) for k in kinds[position:])
        share = (budget_s - (kind_started - started)) * len(shapes_of(kind)) / max(left, 1)
        for shape in shapes_of(kind):
            why = kind.skipped(shape) if hasattr(kind, "skipped") else None
            if why is None and time.monotonic() - kind_started > share:
                why = "over this kind's share of the budget (%.0f s)" % share
            if why:
                document["skipped"].append({"kind": kind.name, "shape": shape, "why": why})
                print("skipped %s %s: %s" % (kind.name, kind.text(shape), why), flush=True)
                continue
            shape_started = time.monotonic()
            try:
                row = measure_shape(kind, shape, programs, compiled, timer)
            except Exception as error:  # noqa: BLE001 (the sweep goes on)
                traceback.print_exc()
                row = {"kind": kind.name, "shape": shape, "bytes": kind.bytes(shape),
                       "error": "%s: %s" % (type(error).__name__, error), "impls": {}}
            row["wall_s"] = round(time.monotonic() - shape_started, 2)
            document["rows"].append(row)
            # fslc's results fail the run; a peer's mismatch (eager bf16 softmax backward
            # strays past the tolerance at a few elements) is shown as "(wrong)" only.
            failures += (row["impls"].get("fslc", {}).get("status") != "ok") + ("error" in row)
            impl = row["impls"]
            times = "  ".join("%s %s" % (n, us_text(impl.get(n))) for n in impl)
            if "copy_us" in row:
                times += "  copy %.2f" % row["copy_us"]
            errors = ["%s: %s" % (n, r["error"]) for n, r in impl.items() if "error" in r]
            errors += [row["error"]] if "error" in row else []
            print("%-22s %-26s %s  (%.1f s)%s" % (kind.name, kind.text(shape), times, row["wall_s"],
                                                  "".join("\n    " + e for e in errors)), flush=True)
            save()
    save()
    print()
    print(table([r for r in document["rows"] if "error" not in r]))
    variants = sorted({n for r in document["rows"] for n in r["impls"] if n.startswith("fslc:")})
    if variants:
        # The variants against the default fslc and torch.compile, row by row.
        print()
        print("| row | shape | fslc µs | " + " | ".join("%s µs" % n for n in variants) + " | compile µs |")
        print("|" + "---|" * (len(variants) + 4))
        for r in document["rows"]:
            impl = r["impls"]
            if not any(n in impl for n in variants):
                continue
            print("| %s | %s | %s | %s | %s |" % (
                r["kind"], KIND_BY_NAME[r["kind"]].text(r["shape"]), us_text(impl.get("fslc")),
                " | ".join(us_text(impl.get(n)) for n in variants), us_text(impl.get("compile"))))
    print()
    print("µs per call (median of %d replays of a CUDA graph over the rotating input sets, the mean "
          "of the ABBA pair); `fslc / best peer` and `compile / fslc` are ratios of times; "
          "`%% copy` is the time of a copy of the row's bytes over fslc's time. Backward rows: the "
          "backward alone (fslc's backward fusions, eager autograd.grad, the compiled backward "
          "math); cross_entropy: forward + backward; rope_forward: the forward." % timer.rounds)
    for s in document["skipped"]:
        print("skipped: %s %s (%s)" % (s["kind"], KIND_BY_NAME[s["kind"]].text(s["shape"]), s["why"]))
    print("%d rows in %.0f s, %d fslc results not ok; JSON: %s" % (
        len(document["rows"]), time.monotonic() - started, failures, output), flush=True)
    return document, failures


def main():
    timer = GpuTimer(args.rounds)
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    print("torch %s, CUDA %s, %s (L2 %d MiB); %d rounds, budget %.0f s" % (
        torch.__version__, torch.version.cuda, properties.name, timer.l2_bytes >> 20, args.rounds,
        args.budget_s), flush=True)
    machine = {"gpu": properties.name, "torch": torch.__version__, "cuda": torch.version.cuda,
               "date": datetime.date.today().isoformat()}
    programs, compiled = Programs(), make_compiler()
    programs.variants = {name: VariantPrograms(name[len("fslc:"):], knobs)
                         for name, knobs in norm_variants().items()}
    # The autograd forwards, their backward ops and the captures share the timer's stream.
    with torch.cuda.stream(timer.stream):
        _, failures = sweep(selected_kinds(), lambda kind: kind.shapes(args.quick), programs, compiled,
                            timer, machine, args.output, args.budget_s)
    return 1 if failures else 0


SMALL_SHAPES = {
    "rms_norm_backward": [{"T": 5, "H": 96}, {"T": 1, "H": 64}],
    "rms_norm_add_backward": [{"T": 5, "H": 96}, {"T": 1, "H": 64}],
    "layer_norm_backward": [{"T": 5, "H": 96}, {"T": 1, "H": 64}],
    "softmax_backward": [{"T": 5, "S": 96}, {"T": 1, "S": 64}],
    "cross_entropy": [{"T": 17, "V": 1000}, {"T": 1, "V": 77}],
    "rope_forward": [{"T": 3}, {"T": 1}],
    "rope_backward": [{"T": 3}, {"T": 1}],
}


def cpu_check():
    """No GPU: the references, the eager peers and the compile peers' math (uncompiled) at
    small shapes in float32, each against the float64 reference; then the whole sweep on
    the CPU (the fslc rows through stand-ins of the fusions with the .fsl files' parameter
    order, host-clock timing, a 64 KiB "L2" so the inputs rotate), its table and JSON."""
    failures = 0

    def report(ok, text):
        nonlocal failures
        failures += not ok
        print("%s  %s" % ("PASS" if ok else "FAIL", text), flush=True)

    uncompiled = lambda fn: fn  # noqa: E731 (the compile peers' math, run eagerly)
    kinds = selected_kinds()
    for kind in kinds:
        for shape in SMALL_SHAPES[kind.name]:
            gen = torch.Generator()
            gen.manual_seed(0)
            s = kind.make(shape, gen, "cpu", torch.float32)
            expected = kind.reference(f64(s))
            for name, factory in (("eager", kind.eager), ("compile math", lambda: kind.compile(uncompiled)),
                                  ("fslc stand-in", lambda: kind.fslc(StandInPrograms()))):
                why = mismatch(factory()(s)(), expected)
                report(why is None, "%s %s: %s%s" % (kind.name, kind.text(shape), name,
                                                      "" if why is None else "  (%s)" % why))
    output = os.path.join(tempfile.mkdtemp(prefix="training-bench-"), "cpu.json")
    document, not_ok = sweep(kinds, lambda kind: SMALL_SHAPES[kind.name], StandInPrograms(), uncompiled,
                             CpuTimer(3, 64 << 10), {"gpu": "cpu"}, output, 60.0)
    with open(output) as f:
        saved = json.load(f)
    wanted = sum(len(SMALL_SHAPES[k.name]) for k in kinds)
    report(not_ok == 0 and len(saved["rows"]) == wanted, "cpu sweep: %d rows of %d, %d results not ok" % (
        len(saved["rows"]), wanted, not_ok))
    report(all(r["impls"][n].get("us", 0) > 0 and r["copy_us"] > 0 for r in saved["rows"] for n in IMPLEMENTATIONS),
           "cpu sweep: every implementation and copy timed")
    report(any(r["sets"] > 1 for r in saved["rows"]), "cpu sweep: small shapes rotate over several input sets")
    sweep(kinds[:1], lambda kind: SMALL_SHAPES[kind.name], StandInPrograms(), uncompiled,
          CpuTimer(3, 64 << 10), {"gpu": "cpu"}, output, -1.0)
    with open(output) as f:
        saved = json.load(f)
    report(not saved["rows"] and len(saved["skipped"]) == len(SMALL_SHAPES[kinds[0].name]),
           "a spent budget skips every shape and lists it (%d skipped)" % len(saved["skipped"]))
    for kind in KINDS:
        print("%s: %d shapes (%d with --quick)" % (kind.name, len(kind.shapes(False)), len(kind.shapes(True))))
    skipped = [s for s in CrossEntropy().shapes(False) if CrossEntropy().skipped(s)]
    report([(s["T"], s["V"]) for s in skipped] == [(16384, 128256)],
           "cross_entropy skips %s" % ", ".join(CrossEntropy().text(s) for s in skipped))
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(cpu_check() if args.cpu_check else main())
