"""References and peers for `python -m fslc.tune run`: the examples' matrix products and the
normalizations of stdlib/std/norms.fsl (rms_norm, rms_norm_add, layer_norm, softmax).

    python -m fslc.tune run DIR/manifest.json --reference tune_references:matmul \
        --peer cublas=tune_references:cublas -o results.json        (tests/bench on PYTHONPATH)

A reference takes the inputs as float64 tensors by name and the shape, and returns the
outputs by name; a peer takes the (bf16) inputs and the shape and runs the PyTorch call the
fusion replaces (for the norms: the eager library call, and torch.compile(dynamic=False) of
the fusion's math).
"""
import torch
import torch.nn.functional as F


def matmul(t, shape):
    """examples/matmul.fsl: y = a w^T."""
    return {"y": t["a"] @ t["w"].t()}


def linear_bias_gelu(t, shape):
    """examples/linear_bias_gelu.fsl: y = gelu_tanh(a w^T + bias)."""
    return {"y": F.gelu(t["a"] @ t["w"].t() + t["bias"], approximate="tanh")}


def cublas(t, shape):
    return torch.matmul(t["a"], t["w"].t())


def linear_gelu(t, shape):
    return F.gelu(F.linear(t["a"], t["w"], t["bias"]), approximate="tanh")


# --- The normalizations of stdlib/std/norms.fsl -----------------------------------------
#
#     fslc tune stdlib/std/norms.fsl --fusion rms_norm --shapes "T=4096,H=4096;..." -o tune/
#     python -m fslc.tune run tune/manifest.json --reference tune_references:rms_norm \
#         --peer eager=tune_references:rms_norm_eager \
#         --peer compile=tune_references:rms_norm_compiled -o results.json
#
# The references are the fusions' math in float64 with their default eps (the runner passes
# tensors only, so the scalars keep their defaults). rms_norm_add's residual is inout: the
# reference returns its new value (x + residual) with y. The shape is {"T", "H"} ({"T", "S"}
# for softmax); the math reads the sizes from the tensors.

RMS_EPS = 1e-6  # stdlib/std/norms.fsl: rms_norm and rms_norm_add
LAYER_EPS = 1e-5  # layer_norm


def rms_norm(t, shape):
    """y = x / sqrt(mean(x^2) + eps) * weight."""
    x = t["x"]
    return {"y": x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * t["weight"]}


def rms_norm_add(t, shape):
    """h = x + residual; residual = h; y = h / sqrt(mean(h^2) + eps) * weight."""
    h = t["x"] + t["residual"]
    return {"residual": h, "y": h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + RMS_EPS) * t["weight"]}


def layer_norm(t, shape):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased variance."""
    x = t["x"]
    d = x - x.mean(-1, keepdim=True)
    return {"y": d * torch.rsqrt(d.pow(2).mean(-1, keepdim=True) + LAYER_EPS) * t["gamma"] + t["beta"]}


def softmax(t, shape):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) over the row."""
    x = t["x"]
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return {"y": e / e.sum(-1, keepdim=True)}


# Eager peers: the PyTorch library calls a model makes (bf16 in, bf16 out).

def rms_norm_eager(t, shape):
    x = t["x"]
    return F.rms_norm(x, (x.shape[-1],), t["weight"], RMS_EPS)


def rms_norm_add_eager(t, shape):
    residual = t["residual"]
    residual.add_(t["x"])
    return F.rms_norm(residual, (residual.shape[-1],), t["weight"], RMS_EPS)


def layer_norm_eager(t, shape):
    x = t["x"]
    return F.layer_norm(x, (x.shape[-1],), t["gamma"], t["beta"], LAYER_EPS)


def softmax_eager(t, shape):
    return torch.softmax(t["x"], dim=-1)


# torch.compile(dynamic=False) peers: the fusions' own math (f32 inside, bf16 out), as
# Inductor fuses it. The runner's warm-up calls compile (outside the timed graph); each
# shape is a static recompilation, so dynamo's limit on recompilations of one function is
# raised above the 54 shapes of a norm's sweep (at the limit it would fall back to eager).

def _math_rms_norm(x, weight):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS) * weight.float()).to(x.dtype)


def _math_rms_norm_add(x, residual, weight):
    h = x.float() + residual.float()
    residual.copy_(h.to(residual.dtype))
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + RMS_EPS) * weight.float()).to(x.dtype)


def _math_layer_norm(x, gamma, beta):
    xf = x.float()
    d = xf - xf.mean(-1, keepdim=True)
    y = d * torch.rsqrt(d.pow(2).mean(-1, keepdim=True) + LAYER_EPS) * gamma.float() + beta.float()
    return y.to(x.dtype)


def _math_softmax(x):
    xf = x.float()
    e = torch.exp(xf - xf.amax(-1, keepdim=True))
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)


_COMPILED = {}


def _compiled(math):
    """torch.compile(math, dynamic=False), made once."""
    if math not in _COMPILED:
        import torch._dynamo
        for limit in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, limit):
                setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), 1024))
        _COMPILED[math] = torch.compile(math, dynamic=False)
    return _COMPILED[math]


def rms_norm_compiled(t, shape):
    return _compiled(_math_rms_norm)(t["x"], t["weight"])


def rms_norm_add_compiled(t, shape):
    return _compiled(_math_rms_norm_add)(t["x"], t["residual"], t["weight"])


def layer_norm_compiled(t, shape):
    return _compiled(_math_layer_norm)(t["x"], t["gamma"], t["beta"])


def softmax_compiled(t, shape):
    return _compiled(_math_softmax)(t["x"])


# --- The whole backward of RMSNorm and LayerNorm as one fusion (stdlib/std/norms.fsl's
# rms_norm_grad and layer_norm_grad, the pairings of rms_norm_train and layer_norm_train)
#
#     fslc tune stdlib/std/norms.fsl --fusion rms_norm_grad --shapes "T=16384,H=4096" -o tune/
#     python -m fslc.tune run tune/manifest.json --reference tune_references:rms_norm_grad \
#         --peer eager=tune_references:rms_norm_grad_eager \
#         --peer compile=tune_references:rms_norm_grad_compiled \
#         --peer pair=tune_references:rms_norm_grad_pair -o results.json
#
# The peers compute the same gradients from the same saved statistics: eager PyTorch ops,
# torch.compile(dynamic=False) of them, and the stdlib's two fusions that compute them apart
# (x's gradient, then the weights' column sums: the pairing before the one-kernel form).

def _math_rms_norm_grad(x, weight, rstd, grad_y):
    xf, dy, r = x.float(), grad_y.float(), rstd.float().unsqueeze(-1)
    g = weight.float() * dy
    dot = (g * xf).mean(-1, keepdim=True)
    grad_x = r * (g - xf * (r * r) * dot)
    grad_weight = (dy * xf * r).sum(0)
    return grad_x.to(x.dtype), grad_weight.to(x.dtype)


def _math_layer_norm_grad(x, gamma, mean, rstd, grad_y):
    xf, dy = x.float(), grad_y.float()
    mu, r = mean.float().unsqueeze(-1), rstd.float().unsqueeze(-1)
    g = gamma.float() * dy
    xhat = (xf - mu) * r
    grad_x = r * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    return grad_x.to(x.dtype), (dy * xhat).sum(0).to(x.dtype), dy.sum(0).to(x.dtype)


def rms_norm_grad(t, shape):
    grad_x, grad_weight = _math_rms_norm_grad(t["x"], t["weight"], t["rstd"], t["grad_y"])
    return {"grad_x": grad_x, "grad_weight": grad_weight}


def layer_norm_grad(t, shape):
    grad_x, grad_gamma, grad_beta = _math_layer_norm_grad(t["x"], t["gamma"], t["mean"], t["rstd"], t["grad_y"])
    return {"grad_x": grad_x, "grad_gamma": grad_gamma, "grad_beta": grad_beta}


def rms_norm_grad_eager(t, shape):
    return _math_rms_norm_grad(t["x"], t["weight"], t["rstd"], t["grad_y"])


def layer_norm_grad_eager(t, shape):
    return _math_layer_norm_grad(t["x"], t["gamma"], t["mean"], t["rstd"], t["grad_y"])


def rms_norm_grad_compiled(t, shape):
    return _compiled(_math_rms_norm_grad)(t["x"], t["weight"], t["rstd"], t["grad_y"])


def layer_norm_grad_compiled(t, shape):
    return _compiled(_math_layer_norm_grad)(t["x"], t["gamma"], t["mean"], t["rstd"], t["grad_y"])


_STDLIB_NORMS = []


def _stdlib_norms():
    """The stdlib's norms through the package (its JIT specializes H on the first call)."""
    if not _STDLIB_NORMS:
        import os
        import fslc
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        _STDLIB_NORMS.append(fslc.load(os.path.join(root, "stdlib", "std", "norms.fsl")))
    return _STDLIB_NORMS[0]


def rms_norm_grad_pair(t, shape):
    norms = _stdlib_norms()
    grad_x = norms.rms_norm_backward(t["x"], t["weight"], t["rstd"], t["grad_y"])
    grad_weight = norms.rms_norm_backward_weight(t["x"], t["rstd"], t["grad_y"])
    return grad_x, grad_weight


def layer_norm_grad_pair(t, shape):
    norms = _stdlib_norms()
    grad_x = norms.layer_norm_backward(t["x"], t["gamma"], t["mean"], t["rstd"], t["grad_y"])
    grad_gamma, grad_beta = norms.layer_norm_backward_weight(t["x"], t["mean"], t["rstd"], t["grad_y"])
    return grad_x, grad_gamma, grad_beta


# --- rms_norm_add_grad (stdlib/std/norms.fsl): add + RMSNorm's backward as one fusion -----
#
# dh = RMSNorm's dx of h plus the gradient arriving at h: x's gradient, and residual's (the
# pairing's `grad_residual = grad_x`: written once).

def _math_rms_norm_add_grad(h, weight, rstd, grad_y, grad_h):
    hf, dy, r = h.float(), grad_y.float(), rstd.float().unsqueeze(-1)
    g = weight.float() * dy
    dot = (g * hf).mean(-1, keepdim=True)
    dh = r * (g - hf * (r * r) * dot) + grad_h.float()
    grad_weight = (dy * hf * r).sum(0)
    return dh.to(h.dtype), grad_weight.to(h.dtype)


def rms_norm_add_grad(t, shape):
    grad_x, grad_weight = _math_rms_norm_add_grad(t["h"], t["weight"], t["rstd"], t["grad_y"], t["grad_h"])
    return {"grad_x": grad_x, "grad_weight": grad_weight}


def rms_norm_add_grad_eager(t, shape):
    return _math_rms_norm_add_grad(t["h"], t["weight"], t["rstd"], t["grad_y"], t["grad_h"])


def rms_norm_add_grad_compiled(t, shape):
    return _compiled(_math_rms_norm_add_grad)(t["h"], t["weight"], t["rstd"], t["grad_y"], t["grad_h"])


# --- cross_entropy_train (stdlib/std/losses.fsl): each row's loss and logsumexp ---------
#
#     fslc tune stdlib/std/losses.fsl --fusion cross_entropy_train --shapes "T=4096,V=128256" -o tune/
#
# The runner's labels are 0..15 (inside V); ignore_index and smoothing keep their defaults
# (-100 and 0), so the loss is logsumexp minus the label's logit.

def _math_cross_entropy(logits, label):
    lf = logits.float()
    lse = torch.logsumexp(lf, -1)
    loss = lse - lf.gather(1, label.unsqueeze(1)).squeeze(1)
    return torch.where(label == -100, torch.zeros_like(loss), loss), lse


def cross_entropy_train(t, shape):
    loss, lse = _math_cross_entropy(t["logits"], t["label"].long())
    return {"loss": loss, "lse": lse}


def cross_entropy_train_eager(t, shape):
    return F.cross_entropy(t["logits"].float(), t["label"], reduction="none"), torch.logsumexp(t["logits"].float(), -1)


def cross_entropy_train_compiled(t, shape):
    return _compiled(_math_cross_entropy)(t["logits"], t["label"])
