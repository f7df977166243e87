#!/usr/bin/env bash
# On the H200 machine, after run_reductions.sh built bench-build/red: whether a kernel's
# time goes to waiting for its slowest SM (one wave, rows assigned statically) or to the
# memory system. Nsight Compute's per-SM active cycles (min / mean / max), DRAM throughput,
# waves and the register limit, for the profile drivers' kernels at one shape:
#   profile_balance.sh argmax V T [VARIANT...]
#   profile_balance.sh softmax H T [VARIANT...]
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build/red"
out="${OUT:-$build}"
kind=$1 size=$2 T=$3; shift 3
metrics=gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,launch__waves_per_multiprocessor,launch__registers_per_thread,launch__occupancy_limit_registers
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size
ncu --clock-control none --profile-from-start off --metrics "$metrics" \
  python3 "$root/tests/bench/profile_$kind.py" "$build" "$size" "$T" "$@" \
  > "$out/balance_${kind}_${size}_$T.txt" 2>&1
grep -E "^  [A-Za-z_].*\(|gpu__time|sm__cycles|dram__|launch__|warps_active" \
  "$out/balance_${kind}_${size}_$T.txt"
