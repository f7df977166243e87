#!/usr/bin/env bash
# report.sh — regenerates the plots (SVG) and tables of docs/performance.md from the result
# files kept in docs/perf/ (python -m fslc.tune run's results, or benchmark documents of the
# same shape). No GPU and no build: python/fslc/report.py runs on its own.
#
#   scripts/report.sh            # writes docs/perf/*.svg and docs/perf/tables.md
#   scripts/report.sh OUT_DIR    # the same files into OUT_DIR (tests compare them)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/docs/perf}"
mkdir -p "$out"
cd "$root/docs/perf"
python3 "$root/python/fslc/report.py" ./*.json -o "$out" --table "$out/tables.md" >/dev/null
echo "report.sh: $(ls "$out"/*.svg | wc -l) plots and tables.md in $out"
