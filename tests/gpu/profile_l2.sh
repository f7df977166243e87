#!/usr/bin/env bash
# Runs on the H200 machine: where a matmul variant's L2 traffic comes from (Nsight Compute
# metrics by source unit), after tests/gpu/generate.sh here, for telling a cluster kernel's
# multicast traffic apart from its CTAs' own reads.
# Usage: OUT=... [BUILD=dir holding matmul/VARIANT] bash tests/gpu/profile_l2.sh "VARIANT M N K" ...  (writes l2_VARIANT_M.csv)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD:-$root/gpu-build}"
out="${OUT:-$build}"
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,lts__t_sectors.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum
metrics+=,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum
metrics+=,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcnode_gpc.sum
metrics+=,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio
metrics+=,smsp__average_warp_latency_per_inst_issued.ratio
for spec in "$@"; do
  set -- $spec
  dir="$build/matmul/$1"
  [ -f "$dir/libfusion.so" ] || nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
    -shared -Xcompiler -fPIC -I "$root/runtime/include" -I "$dir" -o "$dir/libfusion.so" "$dir"/*.cu
  ncu --clock-control none --kernel-name regex:"linear|matmul" --launch-skip 2 --launch-count 1 \
    --metrics "$metrics" --csv --page raw \
    python3 "$root/tests/gpu/profile_matmul.py" "$build" "$1" "$2" "$3" "$4" 4 \
    > "$out/l2_$1_$2.csv" 2> "$out/l2_$1_$2.err"
  echo "== $spec"
  python3 - "$out/l2_$1_$2.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r)
names, units, values = rows[head], rows[head + 1], rows[head + 2]
for n, u, v in zip(names, units, values):
    if "__" in n:
        print(f"  {n:70s} {v:>18s} {u}")
PY
done
