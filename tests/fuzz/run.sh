#!/usr/bin/env bash
# Runs the libFuzzer target over every mode for a bounded time (CI), or longer by hand.
#
#   tests/fuzz/run.sh [FUZZER] [SECONDS_PER_MODE] [MODES...]
#
# FUZZER defaults to build-san/bin/fsl_fuzz_driver (scripts/sanitize.sh builds it),
# SECONDS_PER_MODE to 15, MODES to all six. The seeds are every .fsl file of the
# repository plus the committed corpus (tests/fuzz/corpus); what a run adds goes to a
# scratch folder ($FSL_FUZZ_WORK, default build-san/fuzz-work), never into the
# repository. A finding is written there as crash-*/timeout-*/oom-* and fails the run.
# docs/fuzzing.md says how to minimize a finding and grow the committed corpus.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fuzzer="${1:-$root/build-san/bin/fsl_fuzz_driver}"
seconds="${2:-15}"
shift $(($# > 2 ? 2 : $#))
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(check format schedule kernel-ir cuda simulate)
work="${FSL_FUZZ_WORK:-$root/build-san/fuzz-work}"

source "$root/scripts/sanitizer-env.sh"
# Seeds: the repository's .fsl files (outside build and tool folders), then the corpus.
seeds="$work/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
(cd "$root" && git ls-files -z '*.fsl') | while IFS= read -r -d '' file; do
  cp "$root/$file" "$seeds/$(printf '%s' "$file" | tr '/' '_')"
done
cp "$root"/tests/fuzz/corpus/* "$seeds/" 2> /dev/null || true

status=0
for mode in "${modes[@]}"; do
  corpus="$work/corpus-$mode"
  artifacts="$work/findings-$mode"
  mkdir -p "$corpus" "$artifacts"
  # -timeout: an input slower than this is a finding (the issue's "inputs that take
  # minutes"); -max_len keeps inputs the size of the examples.
  if FSL_FUZZ_MODE="$mode" "$fuzzer" "$corpus" "$seeds" -max_total_time="$seconds" \
      -dict="$root/tests/fuzz/fsl.dict" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" > "$work/log-$mode.txt" 2>&1; then
    result="ok"
  else
    result="FAILED"
    status=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log-$mode.txt" | tail -1)
  echo "fuzz $mode: ${runs:-?} executions in ${seconds}s, $result"
  if [ "$result" = FAILED ]; then
    grep -E -m 20 'Seed:|ERROR|runtime error|fsl-fuzz|internal error|Test unit written|SUMMARY' \
      "$work/log-$mode.txt" || tail -30 "$work/log-$mode.txt"
  fi
done
exit $status
