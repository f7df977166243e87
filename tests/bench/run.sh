#!/usr/bin/env bash
# On the H200 machine: builds the generated kernels and the copy kernel, then times
# everything against PyTorch eager and torch.compile in one process (bench.py).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build"
out="${OUT:-$build}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$out/gpu.txt"
ls "$build"/*/*.cu | xargs -P 16 -I{} bash -c 'f={}; d=$(dirname $f); n=$(basename $f .cu); nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC -I '"$root"'/runtime/include -I $d -o $d/lib$n.so $f > $d/$n.ptxas.txt 2>&1 || echo "BUILD FAILED $f"'
# The same kernels launched without programmatic dependent launch, for its A/B.
ls "$build"/auto_*/*.cu | grep -v -e fastexp -e _cs -e _stcs -e _reg64 | xargs -P 16 -I{} bash -c 'f={}; d=$(dirname $f); n=$(basename $f .cu); nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DFSL_PDL=0 -shared -Xcompiler -fPIC -I '"$root"'/runtime/include -I $d -o $d/lib${n}_nopdl.so $f || echo "BUILD FAILED $f (no PDL)"'
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC -o "$build/libcopy16.so" "$root/tests/bench/copy16.cu"
cat "$build"/auto_*/*.ptxas.txt | grep -E "entry function|registers|spill" > "$out/ptxas.txt"
PYTHONUNBUFFERED=1 python3 "$root/tests/bench/bench.py" "$build" "$out"
