#!/usr/bin/env python3
"""Fails when a diagnostic id in the registry has no lit test that triggers it.

A lit test triggers a diagnostic when it asserts the printed id, `[id]`: in a -verify
expectation (`// expected-error {{... [id]}}`, matched against `message [id]`) or in a
FileCheck line (any prefix, but not a -NOT line) of the tool's output. lit runs these tests, so an id that appears here was
really printed. Ids named in tests but missing from the registry are reported too.

With DOC.md arguments, every id must be a table row (`| id |`) of one of them, and a
document that says `<!-- registry-sections: A; B -->` must list every id of those
sections of the registry (the `// --- A ---` comments of Diagnostics.def).

usage: diagnostic_coverage.py Diagnostics.def LIT_TEST_DIR [DOC.md ...]
"""
import pathlib
import re
import sys


def registry_ids(def_path):
    text = pathlib.Path(def_path).read_text()
    return re.findall(r'^DIAGNOSTIC\(\s*\w+\s*,\s*\w+\s*,\s*"([^"]+)"', text, re.MULTILINE)


def registry_sections(def_path):
    """{section title: [ids]} from the `// --- Title ---` comments."""
    sections, current = {}, None
    for line in pathlib.Path(def_path).read_text().splitlines():
        heading = re.match(r"^// --- (.*?) -*$", line)
        if heading:
            current = heading.group(1).strip()
            continue
        entry = re.match(r'^DIAGNOSTIC\(\s*\w+\s*,\s*\w+\s*,\s*"([^"]+)"', line)
        if entry and current:
            sections.setdefault(current, []).append(entry.group(1))
    return sections


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
    if len(sys.argv) < 3:
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
    docs = {path: pathlib.Path(path).read_text() for path in sys.argv[3:]}
    if docs:
        undocumented = [i for i in ids if not any(f"| {i} |" in text for text in docs.values())]
        for ident in undocumented:
            print(f"error: diagnostic '{ident}' is not listed in {', '.join(docs)}")
        missing += [i for i in undocumented if i not in missing]
        sections = registry_sections(sys.argv[1])
        for path, text in docs.items():
            marker = re.search(r"<!-- registry-sections: (.*?) -->", text)
            if not marker:
                continue
            for title in (t.strip() for t in marker.group(1).split(";")):
                if title not in sections:
                    print(f"error: {path} names registry section '{title}', which does not exist")
                    missing.append(title)
                    continue
                for ident in sections[title]:
                    if f"| {ident} |" not in text:
                        print(f"error: {path} does not list '{ident}' of section '{title}'")
                        if ident not in missing:
                            missing.append(ident)
    passed = len(ids) - len(missing)
    print(f"diagnostic coverage: {passed} passed, {len(missing)} failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
