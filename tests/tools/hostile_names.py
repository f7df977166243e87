#!/usr/bin/env python3
"""Hygiene of generated code: random fusions whose every name (fusion, dimension, tensor,
scalar, value, output and loop) is drawn from a hostile list -- C++ and CUDA keywords and
builtins, the runtime's and the launcher's own names, and the names the lowering
generates (`H_i`, `Hp_i`, `acc`) -- must compile, simulate and run as if they had plain
names.

For each program (a fixed seed, so a failure reproduces; each failure prints its .fsl):
- `fslc --simulate` matches the float64 reference (the IR is right);
- `fslc --emit=ptx` compiles the kernels with NVRTC, and nvcc compiles the kernels and
  the launcher strictly (-Werror, every warning) -- the printed text is legal C++;
- the printed text is the IR's: the GPU suite (tests/gpu/hostile_names_gpu.py) builds
  the same programs, runs them on random inputs and compares with PyTorch, which catches
  a name that compiles but reads the wrong variable (the simulator executes the IR, not
  the text, so only a run of the text can).
A fusion is refused with [reserved-fusion-name] exactly when its generated symbols are not
free: its launcher `fsl_<fusion>` would redeclare one of the runtime's types or variables
(`status`, `tensor`), or the name begins with `_` or contains `__`. A launcher named like
a runtime function overloads it: every other `fsl_` name of the runtime's headers and the
launcher's helpers is a fine fusion name (nvcc compiled all of them), as are keywords.

usage: hostile_names.py FSLC NVCC WORKDIR [COUNT]
       hostile_names.py --generate FSLC DIR   (the GPU suite's sources: DIR/<fusion>/)
       hostile_names.py --dictionary FILE     (tests/fuzz/fsl.dict, the fuzzer's dictionary)
       (tests/gpu/hostile_names_gpu.py imports programs() from here)
"""
import os
import random
import re
import shutil
import subprocess
import sys

# Names a user may write that generated C++ also uses, or that C++ owns.
HOSTILE = [
    # The lowering's generated names and patterns.
    "H_i", "T_i", "Hp", "Hp_i", "Ho_i", "Hx_i", "x_1", "acc", "acc_1", "v", "v_1", "v_float",
    "ms", "h", "lane", "row", "i", "j", "k", "N", "M", "K", "T", "H",
    # C++ keywords and types.
    "float", "double", "int", "class", "struct", "template", "new", "delete", "auto", "const",
    "return", "for", "if", "namespace", "operator", "register", "int64_t", "int32_t",
    "size_t", "uintptr_t", "bool", "char", "signed", "unsigned", "void", "inline", "not",
    "and", "or", "xor", "main", "std", "NULL",
    # CUDA builtins, intrinsics and math.
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "expf", "exp",
    "rsqrtf", "fmaxf", "min", "max", "abs", "half", "CUtensorMap", "cudaStream_t",
    # The runtime's and the launcher's names.
    "stream", "status", "grid", "block", "config", "launched", "shared_bytes", "sizes",
    "strides", "box", "attributes", "fsl_shared", "fsl_fail", "fsl_tensor", "fsl_status",
    "fsl_error_message", "fsl_check_tensor", "FSL_OK", "fsl_workspace", "add", "overlap",
    "fail", "check_tensor", "bytes", "mul",
]


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runtime_names():
    """Every global `fsl_` name of the runtime's headers and the launcher's helpers."""
    found = set()
    for path in [os.path.join(ROOT, "runtime", "include", "fsl", name)
                 for name in ("runtime.h", "jit.h", "device.cuh")] + [
                     os.path.join(ROOT, "compiler", "codegen", "LauncherPrinter.cpp")]:
        with open(path) as f:
            found.update(re.findall(r"\bfsl_[a-z0-9_]*[a-z0-9]\b", f.read()))
    return found


RUNTIME_NAMES = runtime_names()
# The runtime's types and variables: a launcher fsl_<fusion> of these names cannot be.
REFUSED_FUSIONS = ["status", "tensor", "dtype", "error_message", "shared", "workspace",
                   "workspace_pool"]


class Program:
    """One random fusion with its names; `kind` says what it computes (for references)."""

    def __init__(self, kind, names, text):
        self.kind, self.names, self.text = kind, names, text


def _pick(rng, count, taken):
    chosen = []
    while len(chosen) < count:
        name = rng.choice(HOSTILE)
        if name not in taken and name not in chosen:
            chosen.append(name)
    return chosen


def programs(seed=1, count=24):
    """`count` random programs: pointwise (y = x * s + w) and row reductions
    (y = sum(x * s, over D1)), each with a hostile name at every place, and a schedule
    that splits, parallelizes and names loops."""
    rng = random.Random(seed)
    result = []
    used_fusions = set()
    # The fusion language's own keywords and builtin functions are not names there.
    language = {"auto", "bool", "inline", "true", "false", "in", "over", "let", "fusion",
                "schedule", "exp", "max", "min", "abs", "sum", "mean"}
    for n in range(count):
        taken = set(language)
        fusion, d0, d1, x, w, s, v, y, outer, inner = _pick(rng, 10, taken)
        if fusion in REFUSED_FUSIONS:  # tested in main
            fusion = "f_" + fusion
        # One folder and one library a program: fusion names are unique in the list.
        base, k = fusion, 0
        while fusion in used_fusions:
            k += 1
            fusion = f"{base}_{k}"
        used_fusions.add(fusion)
        kind = "pointwise" if n % 2 == 0 else "row_sum"
        names = dict(fusion=fusion, d0=d0, d1=d1, x=x, w=w, s=s, v=v, y=y, outer=outer,
                     inner=inner)
        if kind == "pointwise":
            text = (f"fusion {fusion}({x}: f32[{d0}, {d1}], {w}: f32[{d1}], {s}: f32) -> "
                    f"({y}: f32[{d0}, {d1}]) {{\n"
                    f"    let {v} = {x} * {s};\n"
                    f"    {y} = {v} + {w};\n}}\n"
                    f"schedule {fusion} {{\n"
                    f"    split {d1} by 32 -> ({outer}, {inner});\n"
                    f"    parallelize {d0} -> BIDx, {inner} -> TIDx;\n}}\n")
        else:
            text = (f"fusion {fusion}({x}: f32[{d0}, {d1}], {w}: f32[{d1}], {s}: f32) -> "
                    f"({y}: f32[{d0}]) {{\n"
                    f"    let {v} = {x} * {s} + {w};\n"
                    f"    {y} = sum({v}, over {d1});\n}}\n"
                    f"schedule {fusion} {{\n"
                    f"    split {d1} by 32 -> ({outer}, {inner});\n"
                    f"    parallelize {d0} -> BIDx, {inner} -> TIDx;\n}}\n")
        result.append(Program(kind, names, text))
    return result


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)


def generate(fslc, folder):
    os.makedirs(folder, exist_ok=True)
    for program in programs():
        name = program.names["fusion"]
        path = os.path.join(folder, name + ".fsl")
        with open(path, "w") as f:
            f.write(program.text)
        subprocess.run([fslc, "-o", os.path.join(folder, name), path], check=True)
    return 0


def dictionary(path):
    """libFuzzer's dictionary: the language's words, then the hostile names."""
    with open(os.path.join(ROOT, "grammar", "FSL.g4")) as f:
        words = sorted(set(re.findall(r"'([a-zA-Z_][a-zA-Z_0-9]*)'", f.read())))
    lines = ["# libFuzzer dictionary: the language's keywords and directive words (grammar/FSL.g4),",
             "# then the hostile names of tests/tools/hostile_names.py (C++ and CUDA keywords and",
             "# builtins, the runtime's and the launcher's names, the lowering's generated patterns),",
             "# so mutations put them where the naming scope must keep them apart.",
             "# Regenerate: python3 tests/tools/hostile_names.py --dictionary tests/fuzz/fsl.dict"]
    lines += [f'kw_{w}="{w}"' for w in words]
    lines += [f'name_{n}="{n}"' for n in sorted(set(HOSTILE) - set(words))]
    pieces = [" -> BIDx", " -> TIDx", "split ", " by 32 -> (", "schedule ", "fusion ", " = auto;",
              "when ", "persistent ", "parallelize "]
    lines += [f'piece_{i}="{p}"' for i, p in enumerate(pieces)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--dictionary":
        return dictionary(argv[2])
    if len(argv) == 4 and argv[1] == "--generate":
        return generate(argv[2], argv[3])
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    fslc, nvcc, work = argv[1], argv[2], argv[3]
    count = int(argv[4]) if len(argv) > 4 else 24
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    root = ROOT
    failures = 0

    def fail(what, program, result):
        nonlocal failures
        failures += 1
        print(f"FAIL {what}:\n{program.text}\n{result.stdout}{result.stderr}")

    for program in programs(count=count):
        name = program.names["fusion"]
        path = os.path.join(work, name + ".fsl")
        with open(path, "w") as f:
            f.write(program.text)
        d0, d1 = program.names["d0"], program.names["d1"]
        result = run([fslc, f"--simulate={d0}=3,{d1}=70,{program.names['s']}=0.75", path])
        if result.returncode != 0 or "match" not in result.stdout:
            fail("simulate", program, result)
            continue
        result = run([fslc, "--emit=ptx", path])
        if result.returncode != 0:
            fail("NVRTC", program, result)
            continue
        out = os.path.join(work, name)
        result = run([fslc, "-o", out, path])
        if result.returncode != 0:
            fail("fslc -o", program, result)
            continue
        result = run([nvcc, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Werror",
                      "all-warnings", "-Xcompiler", "-Wall,-Wextra,-Werror", "-I",
                      os.path.join(root, "runtime", "include"), "-I", out, "-c",
                      os.path.join(out, name + ".cu"), "-o", os.path.join(out, name + ".o")])
        if result.returncode != 0:
            fail("nvcc", program, result)
    # Fusion names whose symbols are taken or reserved are refused at their line, and
    # only those: the runtime's function names are fine (hostile programs use some).
    refused = REFUSED_FUSIONS + ["_x", "_X", "a__b"]
    accepted = sorted(name[4:] for name in RUNTIME_NAMES if name[4:] not in REFUSED_FUSIONS)
    for fusion, expected in [(name, True) for name in refused] + [
            (name, False) for name in accepted + ["class", "float", "threadIdx", "int64_t"]]:
        path = os.path.join(work, "name.fsl")
        with open(path, "w") as f:
            f.write(f"fusion {fusion}(x: f32[T]) -> (y: f32[T]) {{\n    y = x;\n}}\n")
        result = run([fslc, "--emit=check", path])
        was_refused = result.returncode == 1 and "[reserved-fusion-name]" in result.stderr
        if was_refused != expected:
            failures += 1
            print(f"FAIL: fusion '{fusion}' {'not ' if expected else ''}refused:\n{result.stderr}")
    print(f"{count} hostile-name programs: {count - failures if failures <= count else 0} "
          f"passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
