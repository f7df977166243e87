#!/usr/bin/env python3
"""Feeds fslc damaged and hostile inputs: it must end with diagnostics, never a crash.

Inputs: every .fsl file of the repository mutated at random (byte flips, deletions,
insertions, truncations, splices of other files), random bytes, and hand-made
pathological cases (deep nesting, long operator chains, huge literals, NUL bytes, a
large file, fns nested and chained past what inlining can copy). For each, fslc must exit with 0, 1 or 2 within the time limit, and print
no crash, assertion or "LLVM ERROR". The seed is fixed so a failure reproduces.

usage: robustness.py FSLC REPO_ROOT [COUNT] [TIME_LIMIT_S]
"""
import concurrent.futures
import os
import pathlib
import random
import subprocess
import sys
import tempfile

SKIP_DIRS = {"build", "build-san", "node_modules", ".git", "out", "gpu-build", "bench-build"}
TIME_LIMIT_S = 20
BAD_OUTPUT = (b"LLVM ERROR", b"Assertion", b"terminate called", b"Stack dump", b"Segmentation")


def seeds(root):
    return [p.read_bytes() for p in sorted(root.rglob("*.fsl"))
            if not SKIP_DIRS.intersection(p.relative_to(root).parts)]


def mutate(rng, data, corpus):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        choice = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if choice == 0 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif choice == 1:
            del data[pos:pos + rng.randint(1, 16)]
        elif choice == 2:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice == 3:
            data = data[:pos]
        elif choice == 4:
            other = rng.choice(corpus)
            start = rng.randrange(len(other) + 1)
            data[pos:pos] = other[start:start + rng.randint(1, 200)]
        else:
            data[pos:pos] = rng.choice([b"(", b")", b"{", b"}", b";", b"/*", b"\"", b"->",
                                        b"over", b"schedule", b"fusion", b"\xff", b"\x00"])
    return bytes(data)


def fn_programs():
    """fns inlined at every call: nested twice a level (exponential when copied), a chain
    past the inlining depth, and distinct arguments at every level (past the size bound)."""
    nested = ["fn n0(x) = x * 1.5;"]
    nested += [f"fn n{i}(x) = n{i - 1}(x) + n{i - 1}(x * 2.0);" for i in range(1, 24)]
    nested.append("fusion g(x: f32[T, H]) -> (y: f32[T, H]) { y = n23(x); }\nschedule g = auto;")
    chain = ["fn c0(x) = x + 1.0;"] + [f"fn c{i}(x) = c{i - 1}(x) * 2.0;" for i in range(1, 5000)]
    chain.append("fusion g(x: f32[T]) -> (y: f32[T]) { y = c4999(x); }")
    wide = ["fn w0(x) = x + 1.0;"]
    wide += [f"fn w{i}(x) = w{i - 1}(x * 2.0) + w{i - 1}(x * 3.0);" for i in range(1, 40)]
    wide.append("fusion g(x: f32[T]) -> (y: f32[T]) { y = w39(x); }")
    return ["\n".join(lines).encode() for lines in (nested, chain, wide)]


def pathological():
    chain = b"fusion f(x: f32[T]) -> (y: f32[T]) { y = x" + b" + x" * 100000 + b"; }"
    return fn_programs() + [
        b"",
        b"\x00" * 100,
        b"(" * 100000,
        b"fusion f() { y = " + b"(" * 100000 + b"x" + b")" * 100000 + b"; }",
        b"fusion f() { y = " + b"-" * 100000 + b"x; }",
        chain,
        b"fusion f<H = 99999999999999999999999999>() { }",
        b"schedule f { split H by 99999999999999999999 -> (a, b); }",
        b"fusion f() { y = sum(" * 5000,
        b"/*" + b"x" * 1000,
        b"\"" + b"a" * 10000,
        b"\xef\xbb\xbffusion f() { y = 1; }",  # byte order mark
        ("fusion f() { y = \u00e9; }").encode(),
        b"fusion f() { y = 1; }\n" * 20000,
        b"schedule s {" + b" split H by 2 -> (a, b);" * 20000 + b" }",
    ]


def run(fslc, data, workdir, index, time_limit_s):
    path = os.path.join(workdir, f"case{index}.fsl")
    with open(path, "wb") as handle:
        handle.write(data)
    for args in (["--emit=format"], ["--emit=ast"], ["--emit=fusion-ir"], ["--emit=cuda"], ["-verify"]):
        try:
            result = subprocess.run([fslc, *args, "--diagnostics-color=never", path],
                                    capture_output=True, timeout=time_limit_s)
        except subprocess.TimeoutExpired:
            return f"case {index} {args}: no answer within {time_limit_s:g} s"
        if result.returncode not in (0, 1, 2):
            return f"case {index} {args}: exit code {result.returncode}"
        if any(bad in result.stderr for bad in BAD_OUTPUT):
            return f"case {index} {args}: crash output:\n{result.stderr[-2000:].decode(errors='replace')}"
    return None


def main():
    fslc, root = sys.argv[1], pathlib.Path(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    time_limit_s = float(sys.argv[4]) if len(sys.argv) > 4 else TIME_LIMIT_S
    rng = random.Random(20261129)
    corpus = seeds(root)
    cases = pathological()
    cases += [mutate(rng, rng.choice(corpus), corpus) for _ in range(count)]
    cases += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 400))) for _ in range(20)]
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            futures = [pool.submit(run, fslc, data, workdir, i, time_limit_s) for i, data in enumerate(cases)]
            for future in futures:
                failure = future.result()
                if failure:
                    failures.append(failure)
                    if len(failures) <= 10:
                        print("FAIL:", failure)
    # Keep a failing case reproducible: the index names its bytes in this run.
    print(f"robustness: {len(cases) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
