#!/usr/bin/env python3
"""Byte-for-byte comparison of what two fslc builds generate, for refactors that must not
change behaviour.

Every example and stdlib file is compiled in five forms: as written; with every dimension
of its fusions made static, at three sets of sizes (with tails: sizes that do not divide
the tiles or vectors); and with every dimension a runtime size. For each form the script
records the files `-o` writes (kernels, launcher, header), `--emit=schedule`,
`--emit=kernel-ir`, and each command's exit code and diagnostics. Two such records must be
identical.

usage:
  compare_generated.py generate FSLC DIR          write the record of FSLC into DIR
  compare_generated.py compare OLD_FSLC NEW_FSLC  generate both into temporary folders, diff
  compare_generated.py diff DIR_A DIR_B           diff two records

Exit status: 0 identical, 1 different (the differing files are listed), 2 usage.
"""
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ["examples", os.path.join("stdlib", "std")]

# Three sizes a dimension name takes in the static forms; the later ones have tails.
SIZES = {
    "T": [7, 1024, 16384],
    "H": [4096, 1000, 12288],
    "S": [4096, 1000, 8192],
    "V": [32000, 1000, 128256],
    "M": [4096, 100, 16],
    "N": [14336, 200, 4096],
    "K": [5120, 1000, 4096],
}
DEFAULT_SIZES = [64, 100, 4096]

FUSION = re.compile(r"fusion\s+(\w+)\s*(<[^>]*>)?\s*\(")
TYPE_DIMS = re.compile(r"\b(?:bf16|f16|f32|f64|i32|i64|bool)\s*\[([^\]]*)\]")


def fusion_dims(text, start):
    """The dimension names of the fusion whose header starts at `start`, in order."""
    header_end = text.find("{", start)
    names = []
    for match in TYPE_DIMS.finditer(text, start, header_end):
        for name in match.group(1).split(","):
            name = name.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in names:
                names.append(name)
    return names


def rewrite(text, which):
    """`text` with every fusion's static-dimension list replaced: `which` is None for
    every dimension a runtime size, else the index into SIZES."""
    out, last = [], 0
    for match in FUSION.finditer(text):
        dims = fusion_dims(text, match.start())
        if which is None:
            declaration = ""
        else:
            declaration = "<" + ", ".join(
                f"{d} = {SIZES.get(d, DEFAULT_SIZES)[which]}" for d in dims) + ">"
        name_end = match.start(1) + len(match.group(1))
        out.append(text[last:name_end])
        out.append(declaration)
        last = match.end(2) if match.group(2) else name_end
    out.append(text[last:])
    return "".join(out)


def forms(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    yield "as-written", text
    for which in range(3):
        yield f"static{which}", rewrite(text, which)
    yield "runtime", rewrite(text, None)


def run(fslc, args, cwd):
    result = subprocess.run([fslc] + args, cwd=cwd, capture_output=True, text=True, timeout=600)
    return result.returncode, result.stdout, result.stderr


def generate(fslc, record):
    fslc = os.path.abspath(fslc)
    os.makedirs(record, exist_ok=True)
    count = 0
    for folder in SOURCES:
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith(".fsl"):
                continue
            for form, text in forms(os.path.join(ROOT, folder, name)):
                case = f"{folder.replace(os.sep, '_')}_{name[:-4]}_{form}"
                case_dir = os.path.join(record, case)
                os.makedirs(case_dir)
                # Relative paths, so that both records name the same source file.
                with open(os.path.join(case_dir, "input.fsl"), "w", encoding="utf-8") as f:
                    f.write(text)
                for label, args in [("cuda", ["input.fsl", "-o", "out"]),
                                    ("schedule", ["--emit=schedule", "input.fsl"]),
                                    ("kernel-ir", ["--emit=kernel-ir", "input.fsl"])]:
                    code, stdout, stderr = run(fslc, args, case_dir)
                    with open(os.path.join(case_dir, label + ".txt"), "w", encoding="utf-8") as f:
                        f.write(f"exit {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")
                count += 1
    return count


def diff(a, b):
    """The relative paths that differ or exist on one side only."""
    differing = []

    def walk(relative):
        comparison = filecmp.dircmp(os.path.join(a, relative), os.path.join(b, relative))
        for name in comparison.left_only + comparison.right_only:
            differing.append(os.path.join(relative, name))
        _, mismatch, errors = filecmp.cmpfiles(os.path.join(a, relative), os.path.join(b, relative),
                                               comparison.common_files, shallow=False)
        differing.extend(os.path.join(relative, name) for name in mismatch + errors)
        for name in comparison.common_dirs:
            walk(os.path.join(relative, name))

    walk("")
    return sorted(differing)


def count_files(record):
    return sum(len(files) for _, _, files in os.walk(record))


def report(a, b):
    differing = diff(a, b)
    cases = len(os.listdir(a))
    if differing:
        print(f"{len(differing)} of {count_files(a)} files differ ({cases} cases):")
        for path in differing:
            print("  " + path)
        return 1
    print(f"identical: {count_files(a)} files, {cases} cases")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "generate":
        if os.path.exists(argv[3]) and os.listdir(argv[3]):
            print(f"compare_generated.py: {argv[3]} is not empty", file=sys.stderr)
            return 2
        print(f"{generate(argv[2], argv[3])} cases written to {argv[3]}")
        return 0
    if len(argv) == 4 and argv[1] == "diff":
        return report(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "compare":
        with tempfile.TemporaryDirectory() as scratch:
            old, new = os.path.join(scratch, "old"), os.path.join(scratch, "new")
            generate(argv[2], old)
            generate(argv[3], new)
            return report(old, new)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
