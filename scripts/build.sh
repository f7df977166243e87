#!/usr/bin/env bash
# Installs what is missing, then configures and builds fslc and its tests in build/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
# FSL_LSP=ON: the language server is built and tested, or configuring fails (lsp/).
# Line tables only (-g1): stack dumps keep their files and lines, and the build takes about
# a fifth less time than with full debug info (CI's budget; -g for a debugger session).
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFSL_LSP=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" > /dev/null
cmake --build "$root/build"

# The VS Code extension's pinned tools (editor-support/vscode/package-lock.json).
if [ ! -d "$root/editor-support/vscode/node_modules" ] ||
   [ "$root/editor-support/vscode/package-lock.json" -nt "$root/editor-support/vscode/node_modules" ]; then
  (cd "$root/editor-support/vscode" && npm ci --no-audit --no-fund --loglevel=error)
fi
