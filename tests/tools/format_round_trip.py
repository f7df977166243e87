#!/usr/bin/env python3
"""Checks `fslc --emit=format` and `--emit=schedule` on every .fsl file of the repository.

- Printing, re-parsing and printing again gives the same text, for both.
- Examples and stdlib files are already in canonical form (like `gofmt -l`).
- A file that does not parse must be a negative test (`expected-error`, or `RUN: not %fslc`).

usage: format_round_trip.py FSLC REPO_ROOT
"""
import pathlib
import subprocess
import tempfile
import sys

SKIP_DIRS = {"build", "build-san", "node_modules", ".git", "out", "gpu-build", "bench-build"}
CANONICAL_DIRS = ("examples", "stdlib")



def schedule_round_trips(fslc, path):
    """--emit=schedule twice gives the same text (files that do not check are skipped)."""
    first = subprocess.run([fslc, "--emit=schedule", "--diagnostics-color=never", str(path)],
                           capture_output=True, timeout=60)
    if first.returncode != 0:
        return True
    # Next to the original, so that relative imports still resolve.
    printed = pathlib.Path(path.parent) / (".roundtrip-" + path.name)
    try:
        printed.write_bytes(first.stdout)
        second = subprocess.run([fslc, "--emit=schedule", "--diagnostics-color=never",
                                 str(printed)], capture_output=True, timeout=60)
    finally:
        printed.unlink()
    return second.returncode == 0 and second.stdout == first.stdout


def main():
    fslc, root = sys.argv[1], pathlib.Path(sys.argv[2])
    files = [p for p in sorted(root.rglob("*.fsl"))
             if not SKIP_DIRS.intersection(p.relative_to(root).parts)]
    failures, passed = [], 0
    for path in files:
        rel = path.relative_to(root)
        first = subprocess.run([fslc, "--emit=format", "--diagnostics-color=never", str(path)],
                               capture_output=True, timeout=60)
        if first.returncode != 0:
            text = path.read_bytes()
            if b"expected-error" in text or b"RUN: not %fslc" in text:
                passed += 1
                continue
            failures.append(f"{rel}: does not parse:\n{first.stderr.decode(errors='replace')}")
            continue
        with tempfile.NamedTemporaryFile("wb", suffix=".fsl", delete=False) as handle:
            handle.write(first.stdout)
            printed_path = handle.name
        second = subprocess.run([fslc, "--emit=format", "--diagnostics-color=never", printed_path],
                                capture_output=True, timeout=60)
        pathlib.Path(printed_path).unlink()
        if second.returncode != 0 or second.stdout != first.stdout:
            failures.append(f"{rel}: printing the printed text changes it")
            continue
        if not schedule_round_trips(fslc, path):
            failures.append(f"{rel}: --emit=schedule of the printed schedule differs")
            continue
        if rel.parts[0] in CANONICAL_DIRS and first.stdout != path.read_bytes():
            failures.append(f"{rel}: not in canonical form; run fslc --emit=format -o on it")
            continue
        passed += 1
    for failure in failures:
        print("FAIL:", failure)
    print(f"format round trip over {len(files)} files: {passed} passed, {len(failures)} failed")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main())
