#!/usr/bin/env bash
# On the H200 machine, after run_reductions.sh built bench-build/red: Nsight Compute on
# fslc's argmax (the heuristics' kernel and named hand schedules) and torch.argmax at one
# shape, with each stall reason per issued instruction, and the SASS of ours.
#   profile_argmax.sh V T VARIANT...
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build/red"
out="${OUT:-$build}"
V=$1 T=$2; shift 2
cuobjdump -sass "$build/argmax_$V/libargmax_row.so" > "$out/sass_argmax_$V.txt" 2>&1
ncu --profile-from-start off \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy \
  --section LaunchStats --section MemoryWorkloadAnalysis \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  python3 "$root/tests/bench/profile_argmax.py" "$build" "$V" "$T" "$@" > "$out/ncu_argmax_${V}_$T.txt" 2>&1
grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Executed Instructions  |Registers Per|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|issue_stalled" \
  "$out/ncu_argmax_${V}_$T.txt" | awk '!/issue_stalled/ {print; next} {v=$NF; gsub(",","",v); if (v+0 >= 0.3) print}' \
  | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -150
