#!/usr/bin/env bash
# Writes bench-build/post_reduction/{old,new}/greedy_i32.cu: the greedy-decoding idiom
# `i32(argmax(...))` with `schedule = auto`, from an fslc before the heuristics classified
# by the reductions (OLD_FSLC) and from this tree's (build/bin/fslc); the H200 times both
# (tests/bench/post_reduction_auto.py).  usage: generate_post_reduction.sh OLD_FSLC
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/bench-build/post_reduction"
rm -rf "$out" && mkdir -p "$out"
cat > "$out/greedy_i32.fsl" <<'FSL'
fusion greedy_i32<V = 128256>(logits: bf16[T, V]) -> (token: i32[T]) {
    token = i32(argmax(f32(logits), over V));
}
schedule greedy_i32 = auto;
FSL
"$1" -o "$out/old" "$out/greedy_i32.fsl"
"$root/build/bin/fslc" -o "$out/new" "$out/greedy_i32.fsl"
