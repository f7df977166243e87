#!/usr/bin/env bash
# On the H200 machine, after run_reductions.sh built bench-build/red: Nsight Compute on
# fslc's softmax (the heuristics' kernel and the named hand schedules) and the Triton
# peer at one shape, with each stall reason per issued instruction, and the SASS of ours.
#   profile_softmax.sh H T VARIANT...
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build/red"
out="${OUT:-$build}"
H=$1 T=$2; shift 2
for v in "$@"; do
  cuobjdump -sass "$build/x${v}_$H/libsoftmax.so" > "$out/sass_${v}_$H.txt" 2>&1
done
ncu --profile-from-start off \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  python3 "$root/tests/bench/profile_softmax.py" "$build" "$H" "$T" "$@" > "$out/ncu_softmax_${H}_$T.txt" 2>&1
grep -E "^  [A-Za-z_].*\(|Duration|Executed Instructions  |Achieved Occupancy|issue_stalled.*ratio +[0-9.]*[1-9]" \
  "$out/ncu_softmax_${H}_$T.txt" | awk '!/ratio/ || $NF+0 >= 0.2' | head -120
