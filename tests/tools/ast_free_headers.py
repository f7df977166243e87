#!/usr/bin/env python3
"""Checks that the back end's headers never reach the syntax tree.

The Schedule IR and everything after it (lowering, Kernel IR, codegen, the simulator)
work on typed IR only; the AST stays with the parser, sema and the AST-to-Schedule-IR
converter (compiler/schedule/FromAst.cpp). This follows every `#include "..."` of the
headers below, transitively through the compiler's own headers, and fails when one
reaches compiler/ast/.

Usage: ast_free_headers.py REPO_ROOT
"""

import re
import sys
from pathlib import Path

# Every header in these folders, and these headers, must not reach ast/.
FOLDERS = ["lower", "codegen", "sim", "kir", "schedule", "check", "heuristics"]
HEADERS = ["schedule/ScheduleIR.h"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.MULTILINE)


def includes(compiler, header):
    """The compiler headers `header` (relative to compiler/) includes directly."""
    text = (compiler / header).read_text(encoding="utf-8")
    return [name for name in INCLUDE.findall(text) if (compiler / name).is_file()]


def path_to_ast(compiler, header):
    """The include chain from `header` to an ast/ header, or None."""
    seen = {header}
    chains = [[header]]
    while chains:
        chain = chains.pop()
        for name in includes(compiler, chain[-1]):
            if name.startswith("ast/"):
                return chain + [name]
            if name not in seen:
                seen.add(name)
                chains.append(chain + [name])
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    compiler = Path(sys.argv[1]) / "compiler"
    headers = set(HEADERS)
    for folder in FOLDERS:
        headers.update(str(p.relative_to(compiler)) for p in (compiler / folder).glob("*.h"))
    failures = []
    for header in sorted(headers):
        chain = path_to_ast(compiler, header)
        if chain:
            failures.append(" -> ".join(chain))
    for failure in failures:
        print(f"compiler/{failure}: the back end must not include the AST", file=sys.stderr)
    if failures:
        return 1
    print(f"{len(headers)} headers checked; none reaches compiler/ast/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
