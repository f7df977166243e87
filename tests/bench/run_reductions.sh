#!/usr/bin/env bash
# On the H200 machine: builds bench-build/red (generate_reductions.sh) and the copy kernel,
# then runs reductions.py; arguments pass through (which fusions, H, T).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build/red"
out="${OUT:-$build}"
ls "$build"/*/*.cu | xargs -P 16 -I{} bash -c 'f={}; d=$(dirname $f); n=$(basename $f .cu); nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC -I '"$root"'/runtime/include -I $d -o $d/lib$n.so $f > $d/$n.ptxas.txt 2>&1 || echo "BUILD FAILED $f"'
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC -o "$build/libcopy16.so" "$root/tests/bench/copy16.cu"
grep -H -E "registers" "$build"/*/*.ptxas.txt | sed "s|$build/||" > "$out/ptxas.txt"
PYTHONUNBUFFERED=1 python3 "$root/tests/bench/reductions.py" "$build" "$out" "$@"
