#!/usr/bin/env python3
"""Matrix products on the H200, with a bias + tanh-GELU epilogue or plain: correctness,
then speed against cuBLAS, cuBLASLt's fused bias and torch.compile.

usage: matmul.py BUILD OUT

BUILD/matmul/variants.txt lists the variants (tests/gpu/generate.sh), one a line: a name,
the layout of w ("nk": w: bf16[N, K]; "kn": w: bf16[K, N]) and the fusion ("gelu":
examples/linear_bias_gelu.fsl, (a, w, bias) -> y = gelu(a w^T + bias); "plain":
examples/matmul.fsl, (a, w) -> y = a w^T); BUILD/matmul/NAME/libfusion.so is built from
fslc's CUDA; "swiglu": examples/swiglu.fsl, (a, w_gate, w_up) -> y =
silu(a w_gate^T) * (a w_up^T).
Correctness: outputs poisoned with NaN, fresh normal inputs, shapes with tails in M, N
and K (M in {1, 16, 128, 4096}), against PyTorch in float32 (bf16 inputs, f32 accumulate,
rounded to bf16 at the end): |out - ref| <= 2e-2 + 2e-2 |ref| and no NaN (SwiGLU: plus
1e-6 K times the other factor for each product's rounding, see below).
Speed: CUDA-graph replays, in one process: the variants FSL_TIME names (all by default),
cuBLAS (torch.matmul, both layouts of w), cuBLASLt's fused bias (F.linear) followed by
GELU, torch.compile(dynamic=False) of that bf16 function (and, with FSL_MAX_AUTOTUNE=1, its
max-autotune-no-cudagraphs mode at the MLP shapes); TFLOP/s counts 2*M*N*K. The copy
ceiling is a device-to-device copy of 1 GiB in the same process; for M <= 128 the table
gives the bandwidth of reading w once against it.
"""
import ctypes
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

FSL_BF16 = 4


class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def desc(t):
    d = FslTensor()
    d.data, d.dtype, d.rank = t.data_ptr(), FSL_BF16, t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


def reference(a, w_nk, bias):
    return F.gelu(F.linear(a.float(), w_nk.float(), bias.float()), approximate="tanh").to(torch.bfloat16)


def linear_gelu(a, w_nk, bias):
    return F.gelu(F.linear(a, w_nk, bias), approximate="tanh")


def time_us(call, replays=15, warm_s=0.0):
    """µs a call: a CUDA graph of about 10 calls, replayed once (or for warm_s seconds, so that
    the clocks settle on this kernel's power), then the median of `replays` timed replays.

    `call` may be a list of calls, one an operand set: the graph's calls take them in turn,
    so that operands which fit in the L2 are read from memory as a model's layers read them
    (tests/bench/matmul_ab.py rotates sets larger than the L2 together). Each call's result
    stays referenced while the graph is captured, so a peer that allocates its output
    writes a buffer of its own each call, as our kernels write each set's y."""
    calls = call if isinstance(call, list) else [call]
    # About ten calls a graph, a whole number of turns over the sets: a replay that ended
    # on the set the next one starts with would find it in the L2.
    count = len(calls) * -(-10 // len(calls))
    for _ in range(3):
        for c in calls:
            c()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    outputs = []
    with torch.cuda.graph(graph):
        for i in range(count):
            outputs.append(calls[i % len(calls)]())
    del outputs  # the graph's private pool keeps their memory, to replays only
    start = time.perf_counter()
    graph.replay()
    torch.cuda.synchronize()
    while time.perf_counter() - start < warm_s:
        graph.replay()
        torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000 / count)
    return statistics.median(times)


class Variant:
    def __init__(self, build, name, layout, kind, shape=None):
        self.name, self.layout, self.kind = name, layout, kind
        # Static sizes: the variant runs at that shape only.
        self.shape = tuple(int(x) for x in shape.split(",")) if shape else None
        lib = ctypes.CDLL(os.path.join(build, "matmul", name, "libfusion.so"))
        fusion = {"gelu": "linear_bias_gelu", "plain": "matmul", "swiglu": "swiglu"}[kind]
        self.fn = getattr(lib, f"fsl_{fusion}")
        self.fn.restype = ctypes.c_int
        P = ctypes.POINTER(FslTensor)
        self.fn.argtypes = [P] * (3 if kind == "plain" else 4) + [ctypes.c_void_p]
        self.err = getattr(lib, f"fsl_{fusion}_error")
        self.err.restype = ctypes.c_char_p

    def weight(self, w_nk):
        return w_nk if self.layout == "nk" else w_nk.t().contiguous()

    def call(self, a, w, bias, y):
        # swiglu: `bias` is w_up (the second weight).
        tensors = [a, w, y] if self.kind == "plain" else [a, w, bias, y]
        d = [desc(t) for t in tensors]
        # The stream is read at each call: CUDA-graph capture runs on a stream of its own.
        return lambda: self.fn(*d, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))


def copy_gbps():
    """Device-to-device copy of 1 GiB: bytes read + written a second."""
    src = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), replays=5)
    return 2 * src.numel() * 2 / (us * 1e-6) / 1e9


def main():
    build, out = sys.argv[1], sys.argv[2]
    with open(os.path.join(build, "matmul", "variants.txt")) as f:
        variants = [Variant(build, *line.split()) for line in f if line.strip()]
    timed = os.environ.get("FSL_TIME", "").split()
    failures = 0
    torch.manual_seed(0)
    print("| variant | M | N | K | result | detail |\n|---|---|---|---|---|---|")
    # N = 131 and 1001: rows of the output that TMA cannot store (the runtime-size
    # variants copy the tile out by the threads there).
    shapes = [(1, 136, 200), (16, 256, 64), (70, 136, 200), (300, 264, 8), (128, 4104, 5120),
              (4096, 14336, 5120), (4095, 1000, 1000), (70, 131, 200), (600, 1001, 136)]
    shapes += sorted({v.shape for v in variants if v.shape and v.shape not in shapes})
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w_nk = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        refs = {"gelu": reference(a, w_nk, bias).float(),
                "plain": (a.float() @ w_nk.float().t()).to(torch.bfloat16).float()}
        w_up = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        gate, up = a.float() @ w_nk.float().t(), a.float() @ w_up.float().t()
        refs["swiglu"] = (F.silu(gate) * up).to(torch.bfloat16).float()
        # A product of two sums: where one cancels (up = 0.0089 from terms of size 1) its f32
        # rounding, in another order than cuBLAS's, is multiplied by the other factor (131):
        # measured 3.3e-4 on a sum over K = 5120, 0.04 on the element. Each sum's absolute
        # error is allowed 1e-6 K, times the other factor.
        slack = {"swiglu": 1e-6 * K * (F.silu(gate).abs() + up.abs() * 1.1)}
        for v in variants:
            if v.shape and v.shape != (M, N, K):
                continue
            ref = refs[v.kind]
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            status = v.call(a, v.weight(w_nk), w_up if v.kind == "swiglu" else bias, y)()
            torch.cuda.synchronize()
            if status != 0:
                message = v.err().decode()
                # A hand schedule with TMA stores cannot take rows that are not 16-byte
                # multiples: its launcher refuses them, which is right; `auto` must not.
                if "16 bytes" in message and N % 8 != 0 and "auto" not in v.name:
                    print(f"| {v.name} | {M} | {N} | {K} | refused (right) | {message} |")
                    continue
                failures += 1
                print(f"| {v.name} | {M} | {N} | {K} | FAIL | status {status}: {message} |")
                continue
            got = y.float()
            allowed = 2e-2 + 2e-2 * ref.abs() + slack.get(v.kind, 0)
            bad = (~torch.isfinite(got)) | ((got - ref).abs() > allowed)
            worst = (got - ref).abs().nan_to_num(float("inf")).max().item()
            ok = not bool(bad.any())
            failures += not ok
            print(f"| {v.name} | {M} | {N} | {K} | {'pass' if ok else 'FAIL'} | max abs err "
                  f"{worst:.3g}, {int(bad.sum())} out of tolerance |")
    print(f"\nmatmul correctness: {failures} failures\n")
    # One compiled graph a shape, as a model of fixed sizes gets it: with the default
    # (dynamic=None) Dynamo makes the sizes symbolic at the second shape, and past its
    # recompile limit (8) runs the function eagerly.
    for limit in ("recompile_limit", "cache_size_limit"):  # the name changed in torch 2.6
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 256)
    compiled = torch.compile(linear_gelu, dynamic=False)
    autotuned = torch.compile(linear_gelu, mode="max-autotune-no-cudagraphs", dynamic=False)
    max_autotune = os.environ.get("FSL_MAX_AUTOTUNE") == "1"
    ceiling = copy_gbps()
    print(f"copy ceiling: {ceiling:.0f} GB/s (1 GiB device-to-device copy)\n")
    mlp = [(4096, 14336, 5120), (4096, 5120, 14336), (8192, 28672, 8192)]
    shapes = mlp[:2] + [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), mlp[2],
                        (1024, 14336, 5120), (256, 14336, 5120), (128, 14336, 5120), (64, 14336, 5120),
                        (16, 14336, 5120), (1, 14336, 5120),
                        (4000, 14000, 5000), (1000, 5000, 3000), (3000, 7000, 2000),
                        (4096, 7424, 5120)]
    shown = [v for v in variants if (not timed or v.name in timed) and not v.shape]
    static = {(v.kind, v.shape): v for v in variants if v.shape}
    swiglu = [v for v in shown if v.kind == "swiglu"]
    gelu = [v for v in shown if v.kind == "gelu"]
    plain = [v for v in shown if v.kind == "plain"]
    names = [v.name for v in gelu + plain] + ["auto (static sizes)", "plain_auto (static sizes)"]
    peers = ["cuBLAS a@w^T", "cuBLAS a@w (kn)", "F.linear+gelu", "torch.compile"]
    print("| M | N | K | " + " | ".join(f"{n}" for n in names + peers) +
          " | best fslc+gelu / best peer+gelu | best fslc plain / cuBLAS | w read, % of copy |")
    print("|---" * (len(names) + len(peers) + 6) + "|")
    kept = {}
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w_nk = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        w_kn = w_nk.t().contiguous()
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        tf = lambda us: 2 * M * N * K / (us * 1e-6) / 1e12
        ours = {v.name: time_us(v.call(a, w_nk if v.layout == "nk" else w_kn, bias, y))
                for v in gelu + plain}
        nan = float("nan")
        for kind, column in (("gelu", "auto (static sizes)"), ("plain", "plain_auto (static sizes)")):
            v = static.get((kind, (M, N, K)))
            ours[column] = time_us(v.call(a, w_nk, bias, y)) if v else nan
        times = {"cuBLAS a@w^T": time_us(lambda: torch.matmul(a, w_nk.t())),
                 "cuBLAS a@w (kn)": time_us(lambda: torch.matmul(a, w_kn)),
                 "F.linear+gelu": time_us(lambda: linear_gelu(a, w_nk, bias)),
                 "torch.compile": time_us(lambda: compiled(a, w_nk, bias))}
        if (M, N, K) in mlp:
            kept[(M, N, K)] = (ours, times)
        row = [f"{tf(ours[n]):.0f}" for n in names] + [f"{tf(times[p]):.0f}" for p in peers]
        best_peer = min(times["F.linear+gelu"], times["torch.compile"])
        cells = []
        gelu_names = [v.name for v in gelu] + ["auto (static sizes)"]
        plain_names = [v.name for v in plain] + ["plain_auto (static sizes)"]
        for group, peer in ((gelu_names, best_peer), (plain_names, times["cuBLAS a@w^T"])):
            measured = [n for n in group if ours[n] == ours[n]]
            if measured:
                best = min(measured, key=lambda n: ours[n])
                cells.append(f"{peer / ours[best]:.2f} ({best})")
            else:
                cells.append("")
        if M <= 128:
            fastest = min(t for t in ours.values() if t == t)
            cells.append(f"{100 * N * K * 2 / (fastest * 1e-6) / 1e9 / ceiling:.0f} %")
        else:
            cells.append("")
        print(f"| {M} | {N} | {K} | " + " | ".join(row + cells) + " |")

    # SwiGLU: silu(a w_gate^T) * (a w_up^T), 4MNK flops, against eager (two cuBLAS products
    # and the pointwise kernels) and torch.compile of the same function.
    if swiglu:
        def swiglu_torch(a, w_gate, w_up):
            return F.silu(a @ w_gate.t()) * (a @ w_up.t())
        compiled_swiglu = torch.compile(swiglu_torch, dynamic=False)
        print("\n| M | N | K | " + " | ".join(v.name for v in swiglu) +
              " | cuBLAS, both products alone | eager | torch.compile | best fslc / best peer |")
        print("|---" * (len(swiglu) + 7) + "|")
        for M, N, K in [(4096, 14336, 5120), (8192, 14336, 4096), (2048, 8192, 4096),
                        (128, 14336, 5120)]:
            a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
            wg = torch.randn(N, K, device="cuda").to(torch.bfloat16)
            wu = torch.randn(N, K, device="cuda").to(torch.bfloat16)
            y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            tf = lambda us: 4 * M * N * K / (us * 1e-6) / 1e12
            ours = [time_us(v.call(a, wg, wu, y)) for v in swiglu]
            products = time_us(lambda: (torch.matmul(a, wg.t()), torch.matmul(a, wu.t())))
            eager = time_us(lambda: swiglu_torch(a, wg, wu))
            comp = time_us(lambda: compiled_swiglu(a, wg, wu))
            print(f"| {M} | {N} | {K} | " + " | ".join(f"{tf(t):.0f}" for t in ours) +
                  f" | {tf(products):.0f} | {tf(eager):.0f} | {tf(comp):.0f} | "
                  f"{min(eager, comp) / min(ours):.2f} |")

    # torch.compile's max-autotune-no-cudagraphs at the MLP shapes, last: its tuning takes
    # minutes, and the table above is printed whatever happens here.
    if max_autotune:
        print("\n| M | N | K | max-autotune TFLOP/s | best fslc+gelu / max-autotune |\n|---|---|---|---|---|")
        for M, N, K in mlp:
            a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
            w_nk = torch.randn(N, K, device="cuda").to(torch.bfloat16)
            bias = torch.randn(N, device="cuda").to(torch.bfloat16)
            us = time_us(lambda: autotuned(a, w_nk, bias))
            ours, _ = kept[(M, N, K)]
            best = min((n for n in ours if n in [v.name for v in gelu] + ["auto (static sizes)"]
                        and ours[n] == ours[n]), key=lambda n: ours[n])
            print(f"| {M} | {N} | {K} | {2 * M * N * K / (us * 1e-6) / 1e12:.0f} | "
                  f"{us / ours[best]:.2f} ({best}) |")


if __name__ == "__main__":
    main()
