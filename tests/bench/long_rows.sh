#!/usr/bin/env bash
# Generates and builds the kernels long_rows.py times: the four forward norms of
# stdlib/std/norms.fsl at rows too long to keep (H > 32768 bf16), by this build's fslc
# (new_<H>/) and by another fslc (old_<H>/, say the previous commit's), each kernel a
# lib<fusion>.so built with nvcc for sm_90a; and libcopy16.so for the copy ceiling.
#
#   long_rows.sh OUT OLD_FSLC [H ...]        (default H: 49152 65536 131072 128256)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$1"
old="$2"
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(49152 65536 131072 128256)
mkdir -p "$out"
# The four forward fusions alone: the training fusions' backward kernels need schedules
# of their own at these sizes.
awk '/^fusion (rms_norm|rms_norm_add|layer_norm|softmax)</,/^}/' "$root/stdlib/std/norms.fsl" |
  sed 's/ backward softmax_backward//' > "$out/forward.fsl"
for size in "${sizes[@]}"; do
  "$root/build/bin/fslc" -D H=$size -D S=$size -o "$out/new_$size" "$out/forward.fsl"
  "$root/build/bin/fslc" -D H=$size -D S=$size --emit=schedule "$out/forward.fsl" > "$out/new_$size/schedules.fsl"
  "$old" -D H=$size -D S=$size -o "$out/old_$size" "$out/forward.fsl"
  "$old" -D H=$size -D S=$size --emit=schedule "$out/forward.fsl" > "$out/old_$size/schedules.fsl"
done
ls "$out"/*_*/*.cu | xargs -P "$(nproc)" -I{} bash -c 'f={}; d=$(dirname $f); n=$(basename $f .cu);
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I '"$root"'/runtime/include -I $d -o $d/lib$n.so $f > $d/$n.ptxas.txt 2>&1 || echo "BUILD FAILED $f"'
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC -o "$out/libcopy16.so" \
  "$root/tests/bench/copy16.cu"
