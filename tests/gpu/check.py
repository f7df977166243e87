#!/usr/bin/env python3
"""GPU correctness suite: every generated fusion, at LLM sizes, against PyTorch float64.

For each variant and each T: fresh random inputs (normal, bf16), outputs poisoned with
NaN, one launch through the generated C-ABI launcher, then every output compared with a
float64 reference that rounds where the program stores (the residual write-back and y to
bf16). Passes when |out - ref| <= 1e-2 + 1e-2 |ref| everywhere and nothing is NaN.
greedy_token (argmax) gets rows of ties, NaNs, infinities and all -inf, and must give the
first largest logit's index (the first NaN's) and the largest logit exactly; softmax and
LayerNorm (two-pass and one-pass variants) get the same rows and must put NaN exactly where
the float64 reference does.
Also checks that the launcher refuses a misaligned pointer without writing anything.
Prints a table; writes results.md into the output folder.
"""
import ctypes
import datetime
import os
import re
import sys

import torch

ROWS = [1, 7, 128, 4096, 32768]
RUNTIME_SIZES = [8, 1000, 1024, 2048, 3072, 4096, 7168, 8192, 12288, 16384, 32768, 7170, 4001, 40000]
FSL_I64, FSL_BF16, FSL_F32 = 2, 4, 5


class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def desc(t, offset_bytes=0):
    d = FslTensor()
    d.data = t.data_ptr() + offset_bytes
    d.dtype = {torch.bfloat16: FSL_BF16, torch.int64: FSL_I64}.get(t.dtype, FSL_F32)
    d.rank = t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


def load(build, name):
    lib = ctypes.CDLL(os.path.join(build, name, "lib" + name.rsplit("_", 1)[0] + ".so"))
    fusion = name.rsplit("_", 1)[0]
    fn = getattr(lib, "fsl_" + fusion)
    fn.restype = ctypes.c_int
    err = getattr(lib, "fsl_" + fusion + "_error")
    err.restype = ctypes.c_char_p
    return fn, err


def stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float64)


def run_case(fusion, fn, err, T, H):
    g = torch.Generator(device="cuda")
    g.manual_seed(1000 * T + H)
    randn = lambda *shape: torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)
    P = ctypes.POINTER(FslTensor)
    if fusion == "rms_norm_add":
        x, res, w = randn(T, H), randn(T, H), randn(H)
        y = torch.full((T, H), float("nan"), device="cuda", dtype=torch.bfloat16)
        res_in = res.clone()
        fn.argtypes = [P, P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(x), desc(res), desc(w), ctypes.c_float(1e-6), desc(y), stream())
        torch.cuda.synchronize()
        h = x.double() + res_in.double()
        ref_res = bf16(h)
        ref_y = bf16(h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * w.double())
        pairs = [("y", y, ref_y), ("residual", res, ref_res)]
    elif fusion == "rms_norm":
        x, w = randn(T, H), randn(H)
        y = torch.full((T, H), float("nan"), device="cuda", dtype=torch.bfloat16)
        fn.argtypes = [P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(x), desc(w), ctypes.c_float(1e-6), desc(y), stream())
        torch.cuda.synchronize()
        xd = x.double()
        pairs = [("y", y, bf16(xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * w.double()))]
    elif fusion == "layer_norm":
        x, gm, bt = randn(T, H), randn(H), randn(H)
        y = torch.full((T, H), float("nan"), device="cuda", dtype=torch.bfloat16)
        fn.argtypes = [P, P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(x), desc(gm), desc(bt), ctypes.c_float(1e-5), desc(y), stream())
        torch.cuda.synchronize()
        xd = x.double()
        mu = xd.mean(-1, keepdim=True)
        var = ((xd - mu) ** 2).mean(-1, keepdim=True)
        pairs = [("y", y, bf16((xd - mu) * torch.rsqrt(var + 1e-5) * gm.double() + bt.double()))]
    elif fusion == "greedy_token":
        return run_argmax(fn, err, T, H, randn, g)
    else:
        x = randn(T, H)
        y = torch.full((T, H), float("nan"), device="cuda", dtype=torch.bfloat16)
        fn.argtypes = [P, P, ctypes.c_void_p]
        status = fn(desc(x), desc(y), stream())
        torch.cuda.synchronize()
        pairs = [("y", y, bf16(torch.softmax(x.double(), -1)))]
    if status != 0:
        return False, f"status {status}: {err().decode()}"
    worst = 0.0
    for name, out, ref in pairs:
        o = out.double()
        if torch.isnan(o).any():
            return False, f"{name}: {int(torch.isnan(o).sum())} NaN (unwritten or wrong)"
        diff = (o - ref).abs()
        bad = diff > 1e-2 + 1e-2 * ref.abs()
        worst = max(worst, float(diff.max()))
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            return False, f"{name}: element {i} = {float(o.flatten()[i])}, reference {float(ref.flatten()[i])}"
    return True, f"max abs err {worst:.3g}"


def special_rows(x, g):
    """Rows that take turns: values from {-1, -0.5, 0, 0.5, 1} (ties at the maximum), a few
    NaNs, a few +inf and -inf (ties between infinities), all -inf (as fslc --special-values)."""
    T, V = x.shape
    u = torch.rand(T, V, device="cuda", generator=g)
    kind = torch.arange(T, device="cuda").remainder(4)[:, None].expand(T, V)
    x = x.double()
    x = torch.where(kind == 0, torch.floor(x.clamp(-1, 1) * 2.5 + 0.5) / 2, x)
    x = torch.where((kind == 1) & (u < 0.001), float("nan"), x)
    x = torch.where((kind == 2) & (u < 0.001), float("inf"), x)
    x = torch.where((kind == 2) & (u > 0.999), float("-inf"), x)
    x = torch.where(kind == 3, float("-inf"), x)
    return x.to(torch.bfloat16)


def run_argmax(fn, err, T, V, randn, g):
    """greedy_token: the index of the first largest logit (the first NaN where a row has
    one) and the largest logit (NaN where a row has one), exactly."""
    x = special_rows(randn(T, V), g)
    token = torch.full((T,), -7, device="cuda", dtype=torch.int64)
    best = torch.full((T,), float("nan"), device="cuda", dtype=torch.float32)
    P = ctypes.POINTER(FslTensor)
    fn.argtypes = [P, P, P, ctypes.c_void_p]
    status = fn(desc(x), desc(token), desc(best), stream())
    torch.cuda.synchronize()
    if status != 0:
        return False, f"status {status}: {err().decode()}"
    xd = x.double()
    nan = torch.isnan(xd)
    top = torch.where(nan, float("-inf"), xd).max(-1).values
    # argmax of a 0/1 row gives its first 1 (PyTorch: the first of equal maxima).
    first_top = (xd == top[:, None]).to(torch.int32).argmax(-1)
    first_nan = nan.to(torch.int32).argmax(-1)
    has_nan = nan.any(-1)
    ref_token = torch.where(has_nan, first_nan, first_top)
    ref_best = torch.where(has_nan, float("nan"), top)
    wrong = (token != ref_token).nonzero()
    if len(wrong):
        r = int(wrong[0])
        return False, f"token[{r}] = {int(token[r])}, reference {int(ref_token[r])}"
    b = best.double()
    same = (b == ref_best) | (torch.isnan(b) & torch.isnan(ref_best))
    if not bool(same.all()):
        r = int((~same).nonzero()[0])
        return False, f"best[{r}] = {float(b[r])}, reference {float(ref_best[r])}"
    torch_agrees = bool((torch.argmax(xd, -1) == ref_token).all())
    return True, "exact" + ("" if torch_agrees else "; torch.argmax differs on NaN rows")


def run_special(fusion, fn, err, T, H):
    """Softmax and LayerNorm (two-pass, online softmax and Welford's alike) over
    special_rows: ties, NaNs, +-inf, all -inf. The float64 reference decides where the
    output is NaN (a row with a NaN, an infinity or only -inf has NaN in it, as two passes
    give); the kernel must have NaN exactly there and be within tolerance elsewhere."""
    g = torch.Generator(device="cuda")
    g.manual_seed(7000 * T + H)
    x = special_rows(torch.randn(T, H, device="cuda", generator=g).to(torch.bfloat16), g)
    y = torch.full((T, H), 7.0, device="cuda", dtype=torch.bfloat16)  # not NaN: unwritten shows
    P = ctypes.POINTER(FslTensor)
    xd = x.double()
    if fusion == "softmax":
        fn.argtypes = [P, P, ctypes.c_void_p]
        status = fn(desc(x), desc(y), stream())
        ref = bf16(torch.softmax(xd, -1))
    else:
        gm = torch.ones(H, device="cuda", dtype=torch.bfloat16)
        bt = torch.zeros(H, device="cuda", dtype=torch.bfloat16)
        fn.argtypes = [P, P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(x), desc(gm), desc(bt), ctypes.c_float(1e-5), desc(y), stream())
        mu = xd.mean(-1, keepdim=True)
        ref = bf16((xd - mu) * torch.rsqrt(((xd - mu) ** 2).mean(-1, keepdim=True) + 1e-5))
    torch.cuda.synchronize()
    if status != 0:
        return False, f"status {status}: {err().decode()}"
    o = y.double()
    nan_o, nan_r = torch.isnan(o), torch.isnan(ref)
    if not torch.equal(nan_o, nan_r):
        i = int((nan_o != nan_r).flatten().nonzero()[0])
        return False, (f"NaN where the reference has none or the reverse: element {i} = "
                       f"{float(o.flatten()[i])}, reference {float(ref.flatten()[i])}")
    finite = ~nan_r
    diff = (o[finite] - ref[finite]).abs()
    bad = diff > 1e-2 + 1e-2 * ref[finite].abs()
    if bad.any():
        i = int(bad.nonzero()[0])
        return False, f"element {i} of the non-NaN ones = {float(o[finite][i])}, reference {float(ref[finite][i])}"
    return True, f"special values: {int(nan_r.sum())} NaN as the reference, max abs err {float(diff.max()) if diff.numel() else 0:.3g}"


def misaligned_refused(fusion, fn, err, H):
    """The launcher refuses a pointer off the vector alignment and writes nothing."""
    T = 4
    x = torch.randn(T * H + 8, device="cuda").to(torch.bfloat16)
    view = x[1:1 + T * H].view(T, H)
    y = torch.full((T, H), float("nan"), device="cuda", dtype=torch.bfloat16)
    P = ctypes.POINTER(FslTensor)
    if fusion == "softmax":
        fn.argtypes = [P, P, ctypes.c_void_p]
        status = fn(desc(view), desc(y), stream())
    elif fusion == "greedy_token":
        token = torch.full((T,), -7, device="cuda", dtype=torch.int64)
        best = y[:, 0].float().contiguous()
        fn.argtypes = [P, P, P, ctypes.c_void_p]
        status = fn(desc(view), desc(token), desc(best), stream())
        torch.cuda.synchronize()
        return status == 6 and bool((token == -7).all()) and bool(
            torch.isnan(best.double()).all()), err().decode()
    elif fusion == "layer_norm":
        g = torch.randn(H, device="cuda").to(torch.bfloat16)
        fn.argtypes = [P, P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(view), desc(g), desc(g), ctypes.c_float(1e-5), desc(y), stream())
    else:
        r = torch.randn(T, H, device="cuda").to(torch.bfloat16)
        w = torch.randn(H, device="cuda").to(torch.bfloat16)
        fn.argtypes = [P, P, P, ctypes.c_float, P, ctypes.c_void_p]
        status = fn(desc(view), desc(r), desc(w), ctypes.c_float(1e-6), desc(y), stream())
    torch.cuda.synchronize()
    return status == 6 and bool(torch.isnan(y.double()).all()), err().decode()


def main():
    build, out = sys.argv[1], sys.argv[2]
    rows, failures = [], 0
    # softmax_4096, or softmax_4096.unswitch for a variant of the example's schedule; other
    # folders (jit/, matmul/) belong to other checks.
    variant = re.compile(r"^[a-z_]+_[0-9]+(\.[a-z0-9_]+)?$")
    for name in sorted(d for d in os.listdir(build)
                       if os.path.isdir(os.path.join(build, d)) and variant.match(d)):
        fusion, size = name.rsplit("_", 1)
        H = int(size.split(".")[0])
        try:
            fn, err = load(build, name)
        except OSError as e:
            rows.append((name, H, "-", "FAIL", f"load: {e}"))
            failures += 1
            continue
        # greedy_token's float64 reference holds a few copies of [T, V]: at most 1024 rows.
        for T in ROWS if fusion != "greedy_token" else [1, 7, 128, 1024]:
            try:
                ok, detail = run_case(fusion, fn, err, T, H)
            except Exception as e:  # a CUDA error is a failure of this case, not of the suite
                ok, detail = False, f"exception: {e}"
            failures += not ok
            rows.append((name, H, T, "pass" if ok else "FAIL", detail))
        if fusion in ("softmax", "layer_norm"):
            for T in [7, 128]:
                try:
                    ok, detail = run_special(fusion, fn, err, T, H)
                except Exception as e:
                    ok, detail = False, f"exception: {e}"
                failures += not ok
                rows.append((name, H, f"{T} special", "pass" if ok else "FAIL", detail))
        ok, message = misaligned_refused(fusion, fn, err, H)
        failures += not ok
        rows.append((name, H, "misaligned", "pass" if ok else "FAIL", message[:90]))
    # The hidden size at run time (gpu-build/runtime): sizes that pick each guarded
    # variant (multiples of 8 up to 1024, 2048, 8192, 16384, 32768) and the loop for the
    # others (not a multiple of 8, or longer).
    for fusion in ["rms_norm_add", "rms_norm", "layer_norm", "softmax"]:
        path = os.path.join(build, "runtime", f"lib{fusion}.so")
        if not os.path.exists(path):
            continue
        lib = ctypes.CDLL(path)
        fn, err = getattr(lib, "fsl_" + fusion), getattr(lib, "fsl_" + fusion + "_error")
        fn.restype, err.restype = ctypes.c_int, ctypes.c_char_p
        for H in RUNTIME_SIZES:
            for T in [1, 7, 4096] if H <= 16384 else [1, 130]:
                try:
                    ok, detail = run_case(fusion, fn, err, T, H)
                except Exception as e:
                    ok, detail = False, f"exception: {e}"
                failures += not ok
                rows.append((f"runtime {fusion}", H, T, "pass" if ok else "FAIL", detail))
    refused = open(os.path.join(build, "refused.txt")).read().strip().splitlines()
    gpu = open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(os.path.join(out, "gpu.txt")) else "?"
    lines = [f"GPU suite, {datetime.date.today()}, {gpu}", "",
             "| variant | hidden | T | result | detail |", "|---|---|---|---|---|"]
    lines += [f"| {f} | {h} | {t} | {r} | {d} |" for f, h, t, r, d in rows]
    if refused:
        lines += ["", "Refused by the checker (not built):", ""] + [f"- {line}" for line in refused]
    lines += ["", f"{len(rows) - failures} passed, {failures} failed"]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
