#!/usr/bin/env bash
# Hand schedules around the heuristics' choice, to check it on the GPU: every fusion of
# stdlib/std/norms.fsl at each hidden size with other thread counts (and rows per block),
# written to bench-build/exp_<variant>_<H>/. bench.py times them beside the auto kernels:
# variants named t... at T >= 1024 (against the large-T schedule), s... at T < 1024.
#
#   experiments.sh   (after generate.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/bench-build"

# schedule FUSION DIM THREADS ROWS BUFFERS...: the row split into THREADS threads x batch,
# ROWS rows a block (threadIdx.y), the named values kept in registers.
schedule() {
  local fusion=$1 d=$2 threads=$3 rows=$4; shift 4
  echo "schedule $fusion {"
  echo "    split $d by 8 -> (${d}o, ${d}v);"
  echo "    split ${d}o by $threads -> (${d}p, ${d}x);"
  if [ "$rows" -gt 1 ]; then
    echo "    split T by $rows -> (Tb, Ty);"
    echo "    parallelize Tb -> BIDx, Ty -> TIDy, ${d}x -> TIDx;"
  else
    echo "    parallelize T -> BIDx, ${d}x -> TIDx;"
  fi
  echo "    vectorize ${d}v;"
  echo "    unroll ${d}p;"
  for buffer in "$@"; do echo "    persistent $buffer in registers;"; done
  echo "}"
}

variant() {  # variant H THREADS ROWS [PREFIX]: t = timed at T >= 1024, s = at T < 1024
  local H=$1 threads=$2 rows=$3 prefix=${4:-t}
  local name="$prefix$threads"
  [ "$rows" -gt 1 ] && name="$prefix${threads}r$rows"
  local dir="$out/exp_${name}_$H"
  mkdir -p "$dir"
  {
    cat "$root/stdlib/std/norms.fsl"
    schedule rms_norm H "$threads" "$rows" xf
    schedule rms_norm_add H "$threads" "$rows" h
    schedule layer_norm H "$threads" "$rows" xf
    schedule softmax S "$threads" "$rows" xf e
  } > "$dir/norms.fsl"
  "$fslc" -D H=$H -D S=$H -o "$dir" "$dir/norms.fsl"
}

variant 1024 32 4; variant 1024 64 1; variant 1024 64 2
variant 4096 64 1; variant 4096 256 1; variant 4096 512 1
variant 5120 64 1; variant 5120 320 1
variant 8192 256 1; variant 8192 512 1; variant 8192 1024 1
variant 16384 512 1; variant 16384 1024 1
# Small T (the heuristics' `when T < 132` variant is compared): fewer threads a row.
variant 4096 256 1 s; variant 4096 128 1 s
variant 8192 512 1 s; variant 8192 256 1 s
variant 16384 512 1 s; variant 16384 256 1 s
# A variant of the auto kernels: at most 64 registers a thread (reg64, run F). (The
# streaming cache-hint variants of runs B and C, cs and stcs, edited the vector helpers
# in the source; those now live in fsl/device.cuh, and the variants were not adopted.)
for cu in "$out"/auto_*/{rms_norm,rms_norm_add,layer_norm,softmax}.cu; do
  sed -E 's/__launch_bounds__\(([0-9]+)\)/__launch_bounds__(\1, FSL_REG64_BLOCKS(\1))/' "$cu" |
    sed '1i #define FSL_REG64_BLOCKS(t) ((65536 / (64 * (t))) > 1 ? (65536 / (64 * (t))) : 1)' \
    > "${cu%.cu}_reg64.cu"
done
echo "generated $(ls -d "$out"/exp_* | wc -l) experiment folders"
