"""Strided inputs on a GPU through the Python package: the stdlib's QK-norm (std/qk_norm.fsl,
`x: strided bf16[T, NH, D]`) on the q and k views of one attention projection
qkv: [T, 3 * NH * D] (q = qkv.view(T, 3, NH, D)[:, 0], strides (3 * NH * D, D, 1)), read
in place without a .contiguous() copy, against PyTorch in float64, at T in {1, 7, 1024},
NH in {8, 32}, D in {128, 64}; once through torch.compile(fullgraph=True). Then the calls
the package must refuse before launching anything: an innermost stride that is not 1
(FslLayoutError), a row stride that breaks the kernel's 16-byte vectors
(FslAlignmentError), and a non-contiguous tensor for a parameter that is not strided
(FslLayoutError, the contiguity message); the output of a refused call is never written.

usage: python3 tests/gpu/strided_test.py [--library build/lib/libfsl.so] [--stdlib stdlib]
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


def reference(x, weight, eps=1e-6):
    xd = x.double()
    return xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps) * weight.double()


print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name()), flush=True)
prog = fslc.load(os.path.join(args.stdlib, "std", "qk_norm.fsl"), library=args.library, stdlib=args.stdlib,
                 cache_dir=tempfile.mkdtemp(prefix="fsl-strided-test-"))


def views(T, NH, D, seed):
    qkv = randn(T, 3 * NH * D, seed=seed)
    heads = qkv.view(T, 3, NH, D)
    return qkv, heads[:, 0], heads[:, 1]


def qk_norm_case(T, NH, D):
    qkv, q, k = views(T, NH, D, seed=T * 131 + NH * 7 + D)
    # With one row the view is contiguous to PyTorch (a size-1 dimension's stride does not
    # count); its stride is still the projection's.
    assert q.stride() == (3 * NH * D, D, 1) and (T == 1 or not q.is_contiguous()), q.stride()
    before = qkv.clone()
    weight = randn(D, seed=D + 1)
    for name, x in (("q", q), ("k", k)):
        y = prog.qk_norm(x, weight)
        torch.cuda.synchronize()
        check("qk_norm %s T=%d NH=%d D=%d: a contiguous output" % (name, T, NH, D),
              y.shape == x.shape and y.is_contiguous(), "shape %s strides %s" % (tuple(y.shape), y.stride()))
        close("qk_norm %s T=%d NH=%d D=%d" % (name, T, NH, D), y, reference(x, weight))
    check("qk_norm T=%d NH=%d D=%d: qkv unchanged" % (T, NH, D), torch.equal(qkv, before))


def compiled_case(T, NH, D):
    _, q, _ = views(T, NH, D, seed=5)
    weight = randn(D, seed=6)

    def f(qkv_q, w):
        return prog.qk_norm(qkv_q, w, 1e-5) * 2

    y = torch.compile(f, fullgraph=True)(q, weight)
    torch.cuda.synchronize()
    close("qk_norm through torch.compile T=%d NH=%d D=%d" % (T, NH, D), y, reference(q, weight, 1e-5) * 2)


def refused(name, error_type, message, call, untouched=None):
    """`call` must raise `error_type` with `message` in its text, and write nothing."""
    before = untouched.clone() if untouched is not None else None
    try:
        call()
    except error_type as error:
        torch.cuda.synchronize()
        ok = message in str(error)
        if before is not None:
            ok = ok and torch.equal(untouched, before)
        return check(name, ok, "%s: %s" % (type(error).__name__, error))
    except Exception as error:  # noqa: BLE001
        return check(name, False, "%s instead of %s: %s" % (type(error).__name__, error_type.__name__, error))
    check(name, False, "no error")


def refusals():
    T, NH, D = 7, 8, 128
    weight = randn(D, seed=3)
    # Every other element of the last dimension: stride 2 where 1 is required.
    wide = randn(T, NH, 2 * D, seed=4)
    x = wide[:, :, ::2]
    refused("inner stride 2 is refused", fslc.FslLayoutError,
            "x: stride 2 in dimension 2, expected 1 (a strided tensor's innermost dimension is contiguous)",
            lambda: prog.qk_norm(x, weight), wide)
    # Heads 132 elements apart: rows that 16-byte vectors cannot start on.
    padded = randn(T, NH, D + 4, seed=5)
    x = padded[:, :, :D]
    refused("a row stride of 132 elements is refused", fslc.FslAlignmentError,
            "x: stride 132 in dimension 1 is not a multiple of 8 elements", lambda: prog.qk_norm(x, weight), padded)
    # A parameter that is not strided stays contiguous.
    _, q, _ = views(T, NH, D, seed=6)
    spaced = randn(2 * D, seed=7)
    refused("a non-contiguous weight is refused", fslc.FslLayoutError,
            "weight: stride 2 in dimension 0, expected 1 (contiguous row-major)",
            lambda: prog.qk_norm(q, spaced[::2]), spaced)
    # The out-of-place variant that users wrote before: the same numbers as the view.
    y_view = prog.qk_norm(q, weight)
    y_copy = prog.qk_norm(q.contiguous(), weight)
    torch.cuda.synchronize()
    check("the view and its contiguous copy give the same output", torch.equal(y_view, y_copy))


for T in (1, 7, 1024):
    for NH in (8, 32):
        for D in (128, 64):
            run("qk_norm T=%d NH=%d D=%d" % (T, NH, D), lambda: qk_norm_case(T, NH, D))
run("qk_norm through torch.compile", lambda: compiled_case(33, 8, 128))
run("refused calls", refusals)

print("%d checks, %d passed, %d failed" % (len(results), sum(results), len(results) - sum(results)))
sys.exit(0 if all(results) else 1)
