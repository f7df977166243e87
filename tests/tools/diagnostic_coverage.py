#!/usr/bin/env python3
"""Fails when a diagnostic id in the registry has no lit test that triggers it.

A lit test triggers a diagnostic when it asserts the printed id, `[id]`: in a -verify
expectation (`// expected-error {{... [id]}}`, matched against `message [id]`) or in a
FileCheck line (any prefix, but not a -NOT line) of the tool's output. lit runs these tests, so an id that appears here was
really printed. Ids named in tests but missing from the registry are reported too.

With a third argument, every id must also be listed in that documentation file.

usage: diagnostic_coverage.py Diagnostics.def LIT_TEST_DIR [DOC.md]
"""
import pathlib
import re
import sys


def registry_ids(def_path):
    text = pathlib.Path(def_path).read_text()
    return re.findall(r'^DIAGNOSTIC\(\s*\w+\s*,\s*\w+\s*,\s*"([^"]+)"', text, re.MULTILINE)


def tested_ids(test_dir):
    found = {}
    for path in sorted(pathlib.Path(test_dir).rglob("*")):
        if path.suffix not in (".fsl", ".test") or "Inputs" in path.parts:
            continue
        for line in path.read_text(errors="replace").splitlines():
            # RUN lines are commands, and a -NOT check asserts absence.
            if "RUN:" in line or "-NOT:" in line:
                continue
            for ident in re.findall(r"\[([a-z0-9]+(?:-[a-z0-9]+)*)\]", line):
                found.setdefault(ident, path)
    return found


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    ids = registry_ids(sys.argv[1])
    if not ids:
        print(f"error: no DIAGNOSTIC entries in {sys.argv[1]}", file=sys.stderr)
        return 2
    tested = tested_ids(sys.argv[2])
    missing = [i for i in ids if i not in tested]
    for ident in missing:
        print(f"error: diagnostic '{ident}' has no lit test that triggers it")
    if len(sys.argv) == 4:
        documented = pathlib.Path(sys.argv[3]).read_text()
        undocumented = [i for i in ids if f"| {i} |" not in documented]
        for ident in undocumented:
            print(f"error: diagnostic '{ident}' is not listed in {sys.argv[3]}")
        missing += [i for i in undocumented if i not in missing]
    passed = len(ids) - len(missing)
    print(f"diagnostic coverage: {passed} passed, {len(missing)} failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
