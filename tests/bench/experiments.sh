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
variant 4096 64 1; variant 4096 256 1
variant 5120 64 1; variant 5120 320 1
variant 8192 256 1; variant 8192 512 1
variant 16384 512 1; variant 16384 1024 1
# Small T (the heuristics' `when T < 132` variant is compared): fewer threads a row.
variant 4096 256 1 s; variant 4096 128 1 s
variant 8192 512 1 s; variant 8192 256 1 s
variant 16384 512 1 s; variant 16384 256 1 s
# Variants of the auto kernels: streaming (evict-first) loads and stores (cs), streaming
# stores only (stcs), at most 64 registers a thread (reg64).
for cu in "$out"/auto_*/{rms_norm,rms_norm_add,layer_norm,softmax}.cu; do
  python3 - "$cu" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
load = """template <int Bytes, typename T> __device__ __forceinline__ void fsl_load_vector(T *to, const T *from) {
  *reinterpret_cast<typename FslVector<Bytes>::type *>(to) =
      *reinterpret_cast<const typename FslVector<Bytes>::type *>(from);"""
store = """template <int Bytes, typename T> __device__ __forceinline__ void fsl_store_vector(T *to, const T *from) {
  *reinterpret_cast<typename FslVector<Bytes>::type *>(to) =
      *reinterpret_cast<const typename FslVector<Bytes>::type *>(from);"""
assert load in text and store in text
cs_load = load.replace("=\n      *reinterpret_cast<const", "=\n      __ldcs(reinterpret_cast<const").replace("(from);", "(from));")
cs_store = store.replace("""  *reinterpret_cast<typename FslVector<Bytes>::type *>(to) =
      *reinterpret_cast<const typename FslVector<Bytes>::type *>(from);""",
    """  __stcs(reinterpret_cast<typename FslVector<Bytes>::type *>(to),
         *reinterpret_cast<const typename FslVector<Bytes>::type *>(from));""")
open(path[:-3] + "_cs.cu", "w").write(text.replace(load, cs_load).replace(store, cs_store))
open(path[:-3] + "_stcs.cu", "w").write(text.replace(store, cs_store))
# A register cap of 64 a thread: as many blocks an SM as that allows (run F).
import re
capped = re.sub(r"__launch_bounds__\((\d+)\)",
                lambda m: f"__launch_bounds__({m.group(1)}, {max(1, 65536 // (64 * int(m.group(1))))})", text)
open(path[:-3] + "_reg64.cu", "w").write(capped)
PY
done
echo "generated $(ls -d "$out"/exp_* | wc -l) experiment folders"
