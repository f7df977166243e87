#!/usr/bin/env bash
# Sources for reductions.py (issue 17), into bench-build/red/:
#   softmax_<H>/, layer_norm_<H>/   the heuristics' kernels (std/norms.fsl), two passes
#   onepass_<H>/                    the same with one_pass = true
#   x<variant>_<H>/                 hand schedules of softmax around the heuristics' choice
#   argmax_<V>/                     tests/bench/argmax.fsl
# The schedules are printed beside them (schedules.fsl), as each kernel's record.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/bench-build/red"
rm -rf "$out"
mkdir -p "$out"
norms="$root/stdlib/std/norms.fsl"
for H in 2048 4096 5120 8192 16384; do
  "$fslc" -D H=$H -D S=$H -o "$out/auto_$H" "$norms"
  "$fslc" -D H=$H -D S=$H --emit=schedule "$norms" > "$out/auto_$H/schedules.fsl"
  sed -n '/^\/\/ LayerNorm/,$p' "$norms" > "$out/onepass.fsl"
  printf '\nschedule softmax = auto(inner_persistent) {\n    one_pass = true;\n}\n' >> "$out/onepass.fsl"
  printf '\nschedule layer_norm = auto(inner_persistent) {\n    one_pass = true;\n}\n' >> "$out/onepass.fsl"
  "$fslc" -D H=$H -D S=$H -o "$out/onepass_$H" "$out/onepass.fsl"
done

# Softmax hand schedules (experiments for T ~ 1024): THREADS threads a row, ROWS rows a
# block, KEEP the values kept in registers ("xf e": both; "xf": e recomputed).
softmax_variant() {
  local H=$1 name=$2 threads=$3 rows=$4 keep=$5 extra=${6:-}
  local dir="$out/x${name}_$H"
  mkdir -p "$dir"
  {
    sed -n '/^\/\/ Softmax/,$p' "$norms" | sed '/^schedule/,$d'
    echo "schedule softmax {"
    echo "    split S by 8 -> (So, Sv);"
    echo "    split So by $threads -> (Sp, Sx);"
    if [ "$rows" -gt 1 ]; then
      echo "    split T by $rows -> (Tb, Ty);"
      echo "    parallelize Tb -> BIDx, Ty -> TIDy, Sx -> TIDx;"
    else
      echo "    parallelize T -> BIDx, Sx -> TIDx;"
    fi
    echo "    vectorize Sv;"
    echo "    unroll Sp;"
    for v in $keep; do echo "    persistent $v in registers;"; echo "    compute_with $v;"; done
    [ -n "$extra" ] && echo "    $extra"
    echo "}"
  } > "$dir/softmax.fsl"
  "$fslc" -D S=$H -o "$dir" "$dir/softmax.fsl"
}
for H in 2048 4096 8192 16384; do
  vectors=$((H / 8))
  for batch in 1 2 4 8; do
    threads=$((vectors / batch))
    [ $threads -lt 32 ] || [ $threads -gt 1024 ] && continue
    softmax_variant $H "b$batch" $threads 1 "xf e"
    softmax_variant $H "b${batch}xf" $threads 1 "xf"
    [ $threads -le 512 ] && softmax_variant $H "b${batch}r2" $threads 2 "xf e"
  done
  softmax_variant $H "b4one" $((vectors / 4)) 1 "xf" "reduce one_pass;" || true
done

# The heuristics' softmax with expf in place of the fast_exp it chose (__expf), edited
# into the source (xexact_<H>/): what fast_exp is worth.
for H in 2048 4096 5120 8192 16384; do
  mkdir -p "$out/xexact_$H"
  sed 's/__expf(/expf(/' "$out/auto_$H/softmax.cu" > "$out/xexact_$H/softmax.cu"
  cp "$out/auto_$H/softmax.h" "$out/xexact_$H/"
done

# Argmax hand schedules (am<THREADS>u<UNROLL>[s]_<V>/): THREADS threads a row, a serial
# loop of 16-byte vectors unrolled by UNROLL, `unswitch` of it with s.
argmax_variant() {
  local V=$1 threads=$2 unroll=$3 unswitch=${4:-}
  local dir="$out/am${threads}u${unroll}${unswitch:+s}_$V"
  mkdir -p "$dir"
  {
    sed '/^schedule/,$d' "$root/tests/bench/argmax.fsl"
    echo "schedule argmax_row {"
    echo "    split V by 8 -> (Vo, Vv);"
    echo "    split Vo by $threads -> (Vp, Vx);"
    echo "    parallelize T -> BIDx, Vx -> TIDx;"
    echo "    vectorize Vv;"
    echo "    unroll Vp by $unroll;"
    [ -n "$unswitch" ] && echo "    unswitch Vp;"
    echo "}"
  } > "$dir/argmax.fsl"
  "$fslc" -D V=$V -o "$dir" "$dir/argmax.fsl"
}
# Argmax as a grid reduction (am<THREADS>g<G>_<V>/): the row's vectors in G pieces on
# blockIdx.y, each THREADS threads x a serial loop (unrolled by at most 4), then the
# second kernel that combines the G partial results a row.
argmax_grid_variant() {
  local V=$1 threads=$2 pieces=$3
  local dir="$out/am${threads}g${pieces}_$V"
  mkdir -p "$dir"
  {
    sed '/^schedule/,$d' "$root/tests/bench/argmax.fsl"
    echo "schedule argmax_row {"
    echo "    split V by 8 -> (Vo, Vv);"
    echo "    split Vo by $threads -> (Vq, Vx);"
    echo "    split Vq into $pieces -> (Vg, Vp);"
    echo "    parallelize T -> BIDx, Vg -> BIDy, Vx -> TIDx;"
    echo "    vectorize Vv;"
    echo "    unroll Vp by 4;"
    echo "}"
  } > "$dir/argmax.fsl"
  "$fslc" -D V=$V -o "$dir" "$dir/argmax.fsl"
}
# LayerNorm and RMSNorm hand schedules (ln<name>_<H>/, rn<name>_<H>/): THREADS threads a
# row, xf kept.
norm_variant() {
  local fusion=$1 prefix=$2 H=$3 name=$4 threads=$5
  local dir="$out/${prefix}${name}_$H"
  mkdir -p "$dir"
  {
    sed -n '/^fusion '$fusion'</,/^}/p' "$norms"
    echo "schedule $fusion {"
    echo "    split H by 8 -> (Ho, Hv);"
    echo "    split Ho by $threads -> (Hp, Hx);"
    echo "    parallelize T -> BIDx, Hx -> TIDx;"
    echo "    vectorize Hv;"
    echo "    unroll Hp;"
    echo "    persistent xf in registers;"
    echo "    compute_with xf;"
    echo "}"
  } > "$dir/$fusion.fsl"
  "$fslc" -D H=$H -o "$dir" "$dir/$fusion.fsl"
}
for H in 8192 16384; do
  for batch in 2 4 8; do
    norm_variant layer_norm ln $H "b$batch" $((H / 8 / batch))
    norm_variant rms_norm rn $H "b$batch" $((H / 8 / batch))
  done
done

for V in 32000 50304 128256; do
  for tu in "128 4" "128 8" "256 2" "256 4" "256 8" "256 16" "512 2" "512 4" "1024 4"; do
    argmax_variant $V $tu
  done
  argmax_variant $V 256 4 s
  for g in 2 4 8 16 32; do argmax_grid_variant $V 256 $g; done
  argmax_grid_variant $V 512 8
  "$fslc" -D V=$V -o "$out/argmax_$V" "$root/tests/bench/argmax.fsl"
  "$fslc" -D V=$V --emit=schedule "$root/tests/bench/argmax.fsl" > "$out/argmax_$V/schedules.fsl"
done
