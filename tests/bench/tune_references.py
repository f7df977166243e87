"""References and peers for `python -m fslc.tune run` over the examples' matrix products.

    python -m fslc.tune run DIR/manifest.json --reference tune_references:matmul \
        --peer cublas=tune_references:cublas -o results.json        (tests/bench on PYTHONPATH)

A reference takes the inputs as float64 tensors by name and the shape, and returns the
outputs by name; a peer takes the (bf16) inputs and the shape and runs the PyTorch call the
fusion replaces.
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
