#!/usr/bin/env python3
"""A/B of matrix-product kernels: several builds of one fusion, alternated in one process.

usage: matmul_ab.py OUT NAME=LIB[:KIND[@M,N,K]] ... [--shapes M,N,K;M,N,K...] [--rounds R]
                    [--max-autotune] [--no-rotate]

Each LIB is a libfusion.so built from fslc's CUDA (or a hand-edited copy, to measure an
idea before building it into the compiler). KIND is "gelu" (examples/linear_bias_gelu.fsl:
y = gelu_tanh(a w^T + bias)), "plain" (examples/matmul.fsl: y = a w^T) or "swiglu"; the
default is gelu. `@M,N,K` marks a library of static sizes (`@,N,K`: N and K static, M at
run time): it is checked and timed at those sizes only (its cells elsewhere are empty, and
the ratios take the first variant that runs at the shape); libraries of static sizes may
share a NAME, one a shape, and so a column. Every variant is first checked against PyTorch at shapes with tails in
M, N and K (outputs poisoned with NaN), and ten calls at 1000 x 5000 x 3000 must agree to
the bit; then, at each timed shape, the variants and the
peers (cuBLAS a@w^T; F.linear + GELU and torch.compile(dynamic=False) of it, and with
--max-autotune its max-autotune-no-cudagraphs mode at shapes of at least 128 rows; for
SwiGLU, eager and torch.compile(dynamic=False) of silu(a w_gate^T) * (a w_up^T); TFLOP/s
of SwiGLU count both products as 2MNK each; each compiled once a shape before the rounds)
are timed in turn, ROUNDS times in a new random order each round, each run for 0.3 s
before it is timed (its clocks settled), then timed as CUDA-graph replays of about 10
calls (whole turns over the sets), which take turns over sets of operands (a, w, bias, y)
that together are at least twice the L2 (at most ten sets; --no-rotate: one set, as the
runs until 2026-12-06 timed them), each peer's outputs kept
referenced so that each call writes a buffer of its own; the table gives the median
TFLOP/s (2MNK) of each, each variant's median ratio to the first one (a variant after the
first of its kind: to that one, so `gelu_heur / gelu`), and each variant's
median ratio to its peer (plain: cuBLAS; gelu: the fastest of its peers that round;
swiglu: torch.compile), round by round, so that drift between rounds cancels. Written to OUT/matmul_ab.md and printed.
"""
import ctypes
import os
import random
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
import matmul  # noqa: E402  (FslTensor, desc, time_us, reference, linear_gelu)


class Lib:
    def __init__(self, name, path, kind, shape=None):
        self.name, self.kind, self.shape = name, kind, shape
        lib = ctypes.CDLL(path)
        fusion = {"gelu": "linear_bias_gelu", "plain": "matmul", "swiglu": "swiglu"}[kind]
        self.fn = getattr(lib, f"fsl_{fusion}")
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.POINTER(matmul.FslTensor)] * (3 if kind == "plain" else 4) + \
            [ctypes.c_void_p]
        self.err = getattr(lib, f"fsl_{fusion}_error")
        self.err.restype = ctypes.c_char_p

    def call(self, a, w, second, y):
        d = [matmul.desc(t) for t in ([a, w, y] if self.kind == "plain" else [a, w, second, y])]
        return lambda: self.fn(*d, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))

    def runs_at(self, M, N, K):
        return self.shape is None or all(s is None or s == v for s, v in zip(self.shape, (M, N, K)))


# Seconds each kernel runs before it is timed (its clocks settled on its own power).
WARM_S = 0.3


def reference(kind, a, w, second):
    af, wf = a.float(), w.float()
    if kind == "plain":
        return (af @ wf.t()).to(torch.bfloat16).float()
    if kind == "gelu":
        return matmul.reference(a, w, second).float()
    return (F.silu(af @ wf.t()) * (af @ second.float().t())).to(torch.bfloat16).float()


def main():
    args = sys.argv[1:]
    out = args.pop(0)
    shapes = [(4096, 14336, 5120), (4096, 4096, 4096), (8192, 8192, 8192)]
    rounds = 7
    max_autotune = False
    rotate = True
    libs = []
    while args:
        arg = args.pop(0)
        if arg == "--shapes":
            shapes = [tuple(int(x) for x in s.split(",")) for s in args.pop(0).split(";")]
        elif arg == "--rounds":
            rounds = int(args.pop(0))
        elif arg == "--max-autotune":
            max_autotune = True
        elif arg == "--no-rotate":
            rotate = False
        else:
            name, spec = arg.split("=", 1)
            path, _, kind = spec.partition(":")
            kind, _, static = kind.partition("@")
            shape = tuple(int(x) if x else None for x in static.split(",")) if static else None
            libs.append(Lib(name, path, kind or "gelu", shape))
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    torch.manual_seed(0)
    failures = 0
    checks = [(1, 136, 200), (300, 264, 72), (4095, 1000, 1000), (4096, 14336, 5120)]
    for lib in libs:  # static sizes: the library's shape; a runtime M among them: 1 and 700 rows
        if lib.shape:
            for M in ([lib.shape[0]] if lib.shape[0] else [1, 700]):
                if (M, lib.shape[1], lib.shape[2]) not in checks:
                    checks.append((M, lib.shape[1], lib.shape[2]))
    for M, N, K in checks:
        a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
        w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        w_up = torch.randn(N, K, device="cuda").to(torch.bfloat16)
        for lib in libs:
            if not lib.runs_at(M, N, K):
                continue
            second = w_up if lib.kind == "swiglu" else bias
            ref = reference(lib.kind, a, w, second)
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            status = lib.call(a, w, second, y)()
            torch.cuda.synchronize()
            slack = 0
            if lib.kind == "swiglu":  # each product's rounding times the other factor (matmul.py)
                gate, up = a.float() @ w.float().t(), a.float() @ second.float().t()
                slack = 1e-6 * K * (F.silu(gate).abs() + up.abs() * 1.1)
            bad = (~torch.isfinite(y.float())) | ((y.float() - ref).abs() > 2e-2 + 2e-2 * ref.abs() + slack)
            if status != 0 or bool(bad.any()):
                failures += 1
                detail = lib.err().decode() if status else f"{int(bad.sum())} elements out of tolerance"
                say(f"FAIL {lib.name} at {M}x{N}x{K}: {detail}")
    # The same call twice gives the same bits: every sum here (split-K's and stream-K's
    # parts of tiles too) has a fixed order, so a difference is a race.
    M, N, K = 1000, 5000, 3000
    a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    second = torch.randn(N, device="cuda").to(torch.bfloat16)
    for lib in libs:
        if lib.kind == "swiglu" or not lib.runs_at(M, N, K):
            continue
        outputs = []
        for _ in range(10):
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            lib.call(a, w, second, y)()
            outputs.append(y)
        torch.cuda.synchronize()
        if any(not torch.equal(outputs[0], o) for o in outputs[1:]):
            failures += 1
            say(f"FAIL {lib.name} at {M}x{N}x{K}: two calls gave different bits")
    say(f"correctness: {failures} failures over {len(libs)} variants\n")
    say("operands: " + ("rotated over sets of at least twice the L2 together (at most ten)"
                        if rotate else "one set a shape (--no-rotate)") + "\n")
    kinds = {lib.kind for lib in libs}
    # One compiled graph a shape, as a model of fixed sizes gets it: without dynamic=False
    # Dynamo makes the sizes symbolic at the second shape, and past its recompile limit
    # (8) it runs the function eagerly.
    for limit in ("recompile_limit", "cache_size_limit"):  # the name changed in torch 2.6
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 256)
    compiled = torch.compile(matmul.linear_gelu, dynamic=False)
    autotuned = torch.compile(matmul.linear_gelu, mode="max-autotune-no-cudagraphs", dynamic=False)
    peers = {}
    if kinds != {"swiglu"}:
        peers["cuBLAS a@w^T"] = lambda a, w, b, y: (lambda: torch.matmul(a, w.t()))
    if "swiglu" in kinds:
        def swiglu(a, w, w_up):
            return F.silu(F.linear(a, w)) * F.linear(a, w_up)
        compiled_swiglu = torch.compile(swiglu, dynamic=False)
        peers["eager swiglu"] = lambda a, w, b, y: (lambda: swiglu(a, w, b))
        peers["torch.compile swiglu"] = lambda a, w, b, y: (lambda: compiled_swiglu(a, w, b))
    if "gelu" in kinds:
        peers["F.linear+gelu"] = lambda a, w, b, y: (lambda: matmul.linear_gelu(a, w, b))
        peers["torch.compile"] = lambda a, w, b, y: (lambda: compiled(a, w, b))
        if max_autotune:
            peers["max-autotune"] = lambda a, w, b, y: (lambda: autotuned(a, w, b))
    gelu_peers = ["F.linear+gelu", "torch.compile", "max-autotune"]
    peer_of = {"plain": "cuBLAS a@w^T", "swiglu": "torch.compile swiglu"}
    # Libraries of static sizes may share a name (one a shape): they share a column.
    kind_of = {}
    for lib in libs:
        if kind_of.setdefault(lib.name, lib.kind) != lib.kind:
            raise SystemExit(f"{lib.name}: one name, two kinds ({kind_of[lib.name]}, {lib.kind})")
    columns = list(kind_of)
    names = columns + list(peers)
    # Each column after the first against the first of its kind (`plain_heur / plain`),
    # or, the first of its kind, against the first column (`gelu / plain`).
    first_of_kind = {}
    for c in columns:
        first_of_kind.setdefault(kind_of[c], c)
    base_of = {c: first_of_kind[kind_of[c]] if first_of_kind[kind_of[c]] != c else columns[0]
               for c in columns[1:]}
    say("| M | N | K | " + " | ".join(names) + " | " +
        " | ".join(f"{c} / {base_of[c]}" for c in columns[1:]) + " | " +
        " | ".join(f"{c} / peer" for c in columns) + " |")
    say("|---" * (3 + len(names) + 2 * len(columns) - 1) + "|")
    # Operand sets a shape, taken in turn by the graph's calls: as many as make at least
    # twice the L2 together (at most ten), so that w is read from memory where it would fit
    # in the L2 (N = K = 4096: 32 MiB), as a model's layer reads it, and not found there by
    # every call after the first. A set of twice the L2 or more is one set.
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    set_counts = []
    for M, N, K in shapes:
        set_bytes = 2 * (M * K + N * K * (2 if "swiglu" in kinds else 1) + N + M * N)
        sets = max(1, min(10, -(-2 * l2_bytes // set_bytes))) if rotate else 1
        set_counts.append(f"{M}x{N}x{K}: {sets}")
        operands = []
        for _ in range(sets):
            a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
            w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
            bias = torch.randn(N, device="cuda").to(torch.bfloat16)
            w_up = torch.randn(N, K, device="cuda").to(torch.bfloat16) if "swiglu" in kinds else None
            y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            operands.append((a, w, bias, w_up, y))
        here = [lib for lib in libs if lib.runs_at(M, N, K)]
        if len({lib.name for lib in here}) != len(here):
            raise SystemExit(f"two libraries of one name run at {M}x{N}x{K}")
        calls = {lib.name: [lib.call(a, w, w_up if lib.kind == "swiglu" else bias, y)
                            for a, w, bias, w_up, y in operands] for lib in here}
        for lib in here:  # a call that fails would time nothing
            if calls[lib.name][0]() != 0:
                raise SystemExit(f"{lib.name} at {M}x{N}x{K}: {lib.err().decode()}")
        calls.update({name: [make(a, w, w_up if "swiglu" in name else bias, y)
                             for a, w, bias, w_up, y in operands]
                      for name, make in peers.items() if name != "max-autotune" or M >= 128})
        for name in peers:  # compiled (and autotuned) before the rounds
            if name in calls:
                calls[name][0]()
        torch.cuda.synchronize()
        timed = [n for n in names if n in calls]
        times = {name: [] for name in timed}
        # A new order each round, and each kernel run for WARM_S before it is timed: with a
        # fixed order and a few calls of warm-up, the same library placed first ran 4.5 %
        # faster than its copy placed second at 4096 x 14336 x 5120 (the clocks a kernel
        # inherits from the lighter one before it), enough to invert an A/B.
        order = random.Random(M * 31 + N * 17 + K)
        for _ in range(rounds):
            for name in order.sample(timed, len(timed)):
                times[name].append(matmul.time_us(calls[name], replays=5, warm_s=WARM_S))
        flops = 2 * M * N * K * (2 if kinds == {"swiglu"} else 1)
        tf = lambda us: flops / (us * 1e-6) / 1e12
        cells = [f"{tf(statistics.median(times[n])):.0f}" if n in times else "" for n in names]
        # A base that does not run at this shape: the first variant that does.
        def base(c):
            return base_of[c] if base_of[c] in times else (here[0].name if here else None)
        ratios = [f"{statistics.median(t0 / t for t0, t in zip(times[base(c)], times[c])):.3f}"
                  if c in times and base(c) else "" for c in columns[1:]]

        def peer_ratio(column):
            if column not in times:
                return ""
            if kind_of[column] == "gelu":
                rounds_peer = [min(times[p][r] for p in gelu_peers if p in times) for r in range(rounds)]
            else:
                rounds_peer = times[peer_of[kind_of[column]]]
            return f"{statistics.median(p / t for p, t in zip(rounds_peer, times[column])):.3f}"
        vs_peer = [peer_ratio(c) for c in columns]
        say(f"| {M} | {N} | {K} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " | " +
            " | ".join(vs_peer) + " |")
    say(f"\noperand sets a shape (L2 {l2_bytes >> 20} MiB): " + ", ".join(set_counts))
    with open(os.path.join(out, f"matmul_ab{os.environ.get('FSL_AB_TAG', '')}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
