#!/usr/bin/env python3
"""GPU half of the hygiene property test (tests/tools/hostile_names.py): the hostile-name
programs, built with nvcc from the CUDA fslc printed (tests/gpu/generate.sh writes them into
gpu-build/hostile/), run on random inputs and compared with PyTorch. The simulator runs the
IR, not the text, so this is where a printed name that reads the wrong variable shows.

usage: hostile_names_gpu.py GPU_BUILD OUT
"""
import ctypes
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import hostile_names  # noqa: E402

FSL_F32 = 5


class FslTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


def desc(t):
    d = FslTensor()
    d.data = t.data_ptr()
    d.dtype = FSL_F32
    d.rank = t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


def main(argv):
    build, out = argv[1], argv[2]
    root = os.path.join(build, "hostile")
    lines, failures = [], 0
    for program in hostile_names.programs():
        n = program.names
        folder = os.path.join(root, n["fusion"])
        lib = os.path.join(folder, "lib.so")
        built = subprocess.run(["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a",
                                "-shared", "-Xcompiler", "-fPIC", "-I",
                                os.path.join(build, "..", "runtime", "include"), "-I", folder,
                                "-o", lib, os.path.join(folder, n["fusion"] + ".cu")],
                               capture_output=True, text=True)
        if built.returncode != 0:
            failures += 1
            lines.append(f"| {n['fusion']} | {program.kind} | BUILD FAILED |")
            print(built.stderr)
            continue
        fn = getattr(ctypes.CDLL(lib), "fsl_" + n["fusion"])
        fn.restype = ctypes.c_int
        P = ctypes.POINTER(FslTensor)
        fn.argtypes = [P, P, ctypes.c_float, P, ctypes.c_void_p]
        ok = True
        for rows, cols in [(3, 70), (130, 4099)]:
            g = torch.Generator(device="cuda")
            g.manual_seed(rows * cols)
            x = torch.randn(rows, cols, device="cuda", generator=g)
            w = torch.randn(cols, device="cuda", generator=g)
            s = 0.75
            shape = (rows, cols) if program.kind == "pointwise" else (rows,)
            y = torch.full(shape, float("nan"), device="cuda")
            status = fn(desc(x), desc(w), ctypes.c_float(s), desc(y),
                        ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            torch.cuda.synchronize()
            xd, wd = x.double(), w.double()
            ref = xd * s + wd if program.kind == "pointwise" else (xd * s + wd).sum(-1)
            err = (y.double() - ref).abs()
            # f32 arithmetic: a rounding or two a term, summed over the row for row sums.
            scale = (xd * s).abs() + wd.abs()
            bound = scale * 1e-6 if program.kind == "pointwise" else scale.sum(-1) * 1e-5
            good = status == 0 and not torch.isnan(y).any() and bool((err <= bound + 1e-6).all())
            ok = ok and good
        failures += 0 if ok else 1
        lines.append(f"| {n['fusion']} | {program.kind} | {'ok' if ok else 'WRONG'} |")
    table = "| fusion | kind | result |\n|---|---|---|\n" + "\n".join(lines)
    print(table)
    with open(os.path.join(out, "hostile_names.md"), "w") as f:
        f.write(table + "\n")
    print(f"hostile names on the GPU: {len(lines) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
