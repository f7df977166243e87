#!/usr/bin/env bash
# Generates the GPU suite's CUDA sources on the build machine (fslc does not run on the
# GPU machine): every example normalization at every hidden size, into gpu-build/.
# A size whose example schedule the checker refuses is listed in gpu-build/refused.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/gpu-build"
rm -rf "$out" && mkdir -p "$out"
: > "$out/refused.txt"
for fusion in rms_norm_add layer_norm softmax; do
  dim=H
  [ "$fusion" = softmax ] && dim=S
  for size in 1024 4096 8192 16384; do
    dir="$out/${fusion}_${size}"
    if ! "$fslc" --diagnostics-color=never -D "$dim=$size" --emit=cuda -o "$dir" \
        "$root/examples/$fusion.fsl" 2> "$out/err.txt"; then
      echo "$fusion $dim=$size: $(grep -o 'error: .*' "$out/err.txt" | head -1)" >> "$out/refused.txt"
      rm -rf "$dir"
    fi
  done
done
# argmax (greedy decoding) at vocabulary sizes: a (value, index) pair reduction.
for size in 32000 128256; do
  "$fslc" --diagnostics-color=never -D "V=$size" --emit=cuda -o "$out/greedy_token_$size" \
    "$root/examples/greedy_token.fsl"
done
# The stdlib normalizations with the hidden size left runtime: the heuristics' guarded
# variants (`when H % 8 == 0 && H <= ...`) and the loop for any other row, one kernel
# file a fusion; check.py runs them at sizes that pick each variant.
# (The forward fusions and softmax's backward: the other backward ones' inner_outer
# schedules need a static H.)
sed -e '/^fusion \(rms_norm\|rms_norm_add\|layer_norm\|softmax\|softmax_backward\)</s/<[HS] = 4096>//' "$root/stdlib/std/norms.fsl" > "$out/runtime_norms.fsl"
"$fslc" --diagnostics-color=never -o "$out/runtime" "$out/runtime_norms.fsl"
# Variants of the example schedules that exercise other lowering paths.
variant() { # name fusion dim size sed-expression
  local dir="$out/${2}_${4}.$1"
  sed "$5" "$root/examples/$2.fsl" > "$out/$2.$1.fsl"
  "$fslc" --diagnostics-color=never -D "$3=$4" --emit=cuda -o "$dir" "$out/$2.$1.fsl"
  rm "$out/$2.$1.fsl"
}
variant shared rms_norm_add H 16384 's/persistent h in registers/persistent h in shared/'
variant unswitch softmax S 4096 's/    unroll Sp;/    unroll Sp;\n    unswitch Sp;/'
# One pass (issue 17): online softmax and Welford's LayerNorm, `reduce one_pass;` added to
# the example schedules (check.py runs them as softmax and layer_norm).
for size in 1024 4096 16384; do
  variant onepass softmax S $size 's/^    compute_with xf;$/    compute_with xf;\n    reduce one_pass;/'
  variant onepass layer_norm H $size 's/^    compute_with xf;$/    compute_with xf;\n    reduce one_pass;/'
  # fast_exp (issue 17): __expf, two-pass and one-pass.
  variant fastexp softmax S $size 's/^    compute_with xf;$/    compute_with xf;\n    fast_exp;/'
  variant onepassfast softmax S $size 's/^    compute_with xf;$/    compute_with xf;\n    reduce one_pass;\n    fast_exp;/'
done
# Grid reductions (issue 17): greedy_token with each row in 4 pieces on blockIdx.y, and
# the heuristics' schedule (grid variants below 16 rows, and for V = 128256 below 132).
for size in 32000 128256; do
  variant grid greedy_token V $size 's/^    split Vo by 256 -> (Vp, Vx);$/    split Vo by 256 -> (Vq, Vx);\n    split Vq into 4 -> (Vg, Vp);/; s/parallelize T -> BIDx, Vx -> TIDx;/parallelize T -> BIDx, Vg -> BIDy, Vx -> TIDx;/'
  variant auto greedy_token V $size '/^schedule/,$ { /^schedule/!d; s/.*/schedule greedy_token = auto;/ }'
done
rm -f "$out/err.txt"
# The matrix products: every tiling strategy, epilogue and layout of the lowering, as
# variants of the examples (tests/gpu/matmul.py checks and times them; variants.txt lists
# each with the layout of w).
mkdir -p "$out/matmul"
: > "$out/matmul/variants.txt"
# The variants of examples/linear_bias_gelu.fsl edit its schedule with the output tile whole
# (3 stages beside it, `epilogue via shared tma_store;`); the example as written ("full")
# stores it in pieces of 32 columns with 4 stages.
whole='s|pipeline 4 stages via tma;.*|pipeline 3 stages via tma;|; s|epilogue via shared tma_store, tile (128, 32);|epilogue via shared tma_store;|'
mm_variant() { # name layout example sed-expression [M,N,K: static sizes, that shape only]
  if [ "$3" = linear_bias_gelu ] && [ -n "$4" ]; then
    sed -e "$whole" "$root/examples/$3.fsl" | sed -e "$4" > "$out/matmul/$1.fsl"
  else
    sed -e "$4" "$root/examples/$3.fsl" > "$out/matmul/$1.fsl"
  fi
  "$fslc" --diagnostics-color=never -o "$out/matmul/$1" "$out/matmul/$1.fsl"
  local kind=gelu
  [ "$3" = matmul ] && kind=plain
  [ "$3" = swiglu ] && kind=swiglu
  echo "$1 $2 $kind ${5:-}" >> "$out/matmul/variants.txt"
}
t128='s/tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/tile (128, 128, 64), warp (64, 128), instruction wgmma(64, 128, 16)/'
mm_variant simple_t256 nk linear_bias_gelu_simple ''
mm_variant simple_t128 nk linear_bias_gelu_simple "$t128; s/pipeline 4 stages/pipeline 3 stages/"
mm_variant full nk linear_bias_gelu ''
mm_variant full_whole nk linear_bias_gelu 's/^schedule linear_bias_gelu {/schedule linear_bias_gelu {/'
# The output tile in pieces: 256 x 128 tiles of two 128 x 128 warp tiles in pieces of 32
# columns (4 stages), and two consumer groups each with its own two pieces.
mm_variant pieces_t256x128 nk linear_bias_gelu 's/tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/tile (256, 128, 64), warp (128, 128), instruction wgmma(64, 128, 16)/; s/pipeline 3 stages/pipeline 4 stages/; s/epilogue via shared tma_store;/epilogue via shared tma_store, tile (256, 32);/'
# The exact tanhf, without the example's fast_tanh (tanh.approx.f32).
mm_variant exact_tanh nk linear_bias_gelu '/fast_tanh;/d'
cluster='s/    epilogue via shared tma_store;/    cluster (2, 1) multicast;\n    epilogue via shared tma_store;/'
mm_variant cluster2 nk linear_bias_gelu "$cluster"
mm_variant cluster2_one_per_cta nk linear_bias_gelu "$cluster; s/tiles persistent swizzle 8/tiles one_per_cta/"
mm_variant cluster4 nk linear_bias_gelu "$cluster; s/cluster (2, 1)/cluster (4, 1)/"
mm_variant kn_cluster kn linear_bias_gelu "$cluster; s/w: bf16\\[N, K\\]/w: bf16[K, N]/"
mm_variant split_k3 nk linear_bias_gelu 's/tiles persistent swizzle 8/tiles split_k 3/; s/epilogue via shared tma_store/epilogue via registers/'
# The CTA whose part arrives last runs the epilogue as for a whole tile: through shared
# memory and TMA stores in pieces too.
mm_variant split_k3_tma nk linear_bias_gelu 's/tiles persistent swizzle 8/tiles split_k 3/'
mm_variant ws_registers nk linear_bias_gelu 's/epilogue via shared tma_store/epilogue via registers/; s/pipeline 3 stages/pipeline 4 stages/'
mm_variant ws_shared nk linear_bias_gelu 's/epilogue via shared tma_store/epilogue via shared/'
mm_variant ws_one_per_cta nk linear_bias_gelu 's/tiles persistent swizzle 8/tiles one_per_cta/'
mm_variant ws_t128 nk linear_bias_gelu "$t128; s/pipeline 3 stages/pipeline 5 stages/"
mm_variant single_persistent nk linear_bias_gelu_simple 's/tiles one_per_cta/tiles persistent swizzle 8/'
mm_variant kn kn linear_bias_gelu 's/w: bf16\[N, K\]/w: bf16[K, N]/'
mm_variant kn_simple kn linear_bias_gelu_simple 's/w: bf16\[N, K\]/w: bf16[K, N]/'
# Stream-K: whole tiles, then even runs of k tiles, and the fix-up kernel.
mm_variant sk_full nk linear_bias_gelu 's/tiles persistent swizzle 8/tiles stream_k swizzle 8/'
mm_variant sk_t128 nk linear_bias_gelu "$t128; s/pipeline 3 stages/pipeline 5 stages/; s/tiles persistent swizzle 8/tiles stream_k swizzle 8/"
mm_variant sk_registers nk linear_bias_gelu 's/epilogue via shared tma_store/epilogue via registers/; s/pipeline 3 stages/pipeline 4 stages/; s/tiles persistent swizzle 8/tiles stream_k swizzle 8/'
mm_variant sk_single nk linear_bias_gelu_simple 's/tiles one_per_cta/tiles stream_k/'
mm_variant sk_kn kn linear_bias_gelu 's/w: bf16\[N, K\]/w: bf16[K, N]/; s/tiles persistent swizzle 8/tiles stream_k swizzle 8/'
# Two consumer groups taking alternate tiles (ping-pong).
pp='s/tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/tile (64, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/; s/pipeline 3 stages/pipeline 4 stages/'
pp128='s/tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/tile (128, 128, 64), warp (128, 128), instruction wgmma(64, 128, 16)/; s/pipeline 3 stages/pipeline 5 stages/'
mm_variant pp_full nk linear_bias_gelu "$pp"
mm_variant pp_t128 nk linear_bias_gelu "$pp128"
mm_variant pp_sk nk linear_bias_gelu "$pp; s/tiles persistent swizzle 8/tiles stream_k swizzle 8/"
mm_variant pp_registers nk linear_bias_gelu "$pp; s/epilogue via shared tma_store/epilogue via registers/"
mm_variant pp_pieces nk linear_bias_gelu "$pp; s/epilogue via shared tma_store;/epilogue via shared tma_store, tile (64, 128);/"
mm_variant pp_kn kn linear_bias_gelu "$pp; s/w: bf16\\[N, K\\]/w: bf16[K, N]/"
# The heuristics' schedules (= auto(matmul), a `when` variant for each range of M), with
# the bias + GELU epilogue and for the plain product (examples/matmul.fsl).
mm_variant auto nk linear_bias_gelu '/^schedule/,$c schedule linear_bias_gelu = auto(matmul);'
mm_variant plain_auto nk matmul ''
# SwiGLU: two products of one a in one kernel (examples/swiglu.fsl), and its auto(matmul).
mm_variant swiglu nk swiglu ''
mm_variant swiglu_auto nk swiglu '/^schedule swiglu {/,$c schedule swiglu = auto(matmul);'
# ... and for static sizes, at each shape of the benchmark (docs/performance.md).
for shape in 4096,14336,5120 4096,5120,14336 8192,8192,8192 4096,4096,4096 2048,2048,2048 \
    8192,28672,8192 1024,14336,5120 256,14336,5120 128,14336,5120 64,14336,5120 16,14336,5120 \
    1,14336,5120 4000,14000,5000 1000,5000,3000 \
    3000,7000,2000 4096,7424,5120; do
  IFS=, read -r m n k <<< "$shape"
  sizes="<M = $m, N = $n, K = $k>"
  mm_variant "auto_${m}_${n}_${k}" nk linear_bias_gelu \
    "/^schedule/,\$c schedule linear_bias_gelu = auto(matmul);
s/fusion linear_bias_gelu(/fusion linear_bias_gelu$sizes(/" "$shape"
  mm_variant "plain_auto_${m}_${n}_${k}" nk matmul "s/fusion matmul(/fusion matmul$sizes(/" "$shape"
done
mm_variant plain_full nk matmul 's/^schedule matmul = auto(matmul);/schedule matmul {\n    mma over K: tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16);\n    pipeline 3 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles persistent swizzle 8;\n    epilogue via shared tma_store;\n}/'
mm_variant plain_pp nk matmul 's/^schedule matmul = auto(matmul);/schedule matmul {\n    mma over K: tile (64, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16);\n    pipeline 4 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles persistent swizzle 8;\n    epilogue via shared tma_store;\n}/'
mm_variant plain_pp128 nk matmul 's/^schedule matmul = auto(matmul);/schedule matmul {\n    mma over K: tile (128, 128, 64), warp (128, 128), instruction wgmma(64, 128, 16);\n    pipeline 5 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles persistent swizzle 8;\n    epilogue via shared tma_store;\n}/'
mm_variant plain_sk nk matmul 's/^schedule matmul = auto(matmul);/schedule matmul {\n    mma over K: tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16);\n    pipeline 3 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles stream_k swizzle 8;\n    epilogue via shared tma_store;\n}/'
# cuBLAS's few-row form in fslc's words: two M tiles of the swapped product (a's rows on
# wgmma's N side) by 64 columns of N, two consumer warpgroups each taking half the tile's
# rows, one tile a CTA; alone, in clusters of two (multicast a), and with the bias + GELU
# epilogue at tails in M, N and K.
swap2='mma over K: tile (80, 64, 64), warp (40, 64), instruction wgmma(64, 40, 16), swap_ab;\n    pipeline 11 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles one_per_cta;'
mm_variant swap2_160 nk matmul "s/^schedule matmul = auto(matmul);/schedule matmul {\n    $swap2\n    epilogue via registers;\n}/; s/fusion matmul(/fusion matmul<M = 160, N = 4096, K = 4096>(/" 160,4096,4096
mm_variant swap2_cluster_160 nk matmul "s/^schedule matmul = auto(matmul);/schedule matmul {\n    $swap2\n    cluster (2, 1) multicast;\n    epilogue via registers;\n}/; s/fusion matmul(/fusion matmul<M = 160, N = 4096, K = 4096>(/" 160,4096,4096
# cuBLAS's tiles at 256-320 rows: 80 rows of a by 128 columns of w, a consumer on each 64.
mm_variant swapn_320 nk matmul "s/^schedule matmul = auto(matmul);/schedule matmul {\n    mma over K: tile (80, 128, 64), warp (80, 64), instruction wgmma(64, 80, 16), swap_ab;\n    pipeline 8 stages via tma;\n    warp_specialize producer(regs 40), consumers(2, regs 232);\n    tiles one_per_cta;\n    epilogue via registers;\n}/; s/fusion matmul(/fusion matmul<M = 320, N = 4096, K = 4096>(/" 320,4096,4096
mm_variant swap2_gelu_150 nk linear_bias_gelu "/^schedule/,\$c schedule linear_bias_gelu {\n    $swap2\n    epilogue via registers;\n    fast_tanh;\n}
s/fusion linear_bias_gelu(/fusion linear_bias_gelu<M = 150, N = 4000, K = 4040>(/" 150,4000,4040
# The JIT test on the GPU machine builds runtime/src/jit.cpp, which includes the device
# header's text as CMake generated it here.
mkdir -p "$out/jit" && cp "$root/build/runtime/generated/fsl_device_header.inc" "$out/jit/"
# The specializing JIT (tests/gpu/specialize_gpu_test.cu): norms.fsl with H runtime,
# rms_norm_add specialized at H = 4096 and 7168 by libfslc (fsl_specialize writes the
# signature, the sources and the launch metadata), and the static kernels to compare with.
spec="$out/specialize"
mkdir -p "$spec"
for H in 4096 7168; do
  "$root/build/bin/fsl_specialize" --runtime-dims=H "$root/stdlib/std/norms.fsl" rms_norm_add \
    "$spec" "H=$H" > /dev/null
  "$fslc" -D "H=$H" --prefix="h${H}_" -o "$spec" "$root/stdlib/std/norms.fsl"
done

# Programs whose every name is hostile to C++ (tests/tools/hostile_names.py), into hostile/:
# the printed text must compute what the IR does (tests/gpu/hostile_names_gpu.py).
python3 "$root/tests/tools/hostile_names.py" --generate "$fslc" "$out/hostile"

echo "generated: $(ls -d "$out"/*_* | wc -l) variants; refused: $(wc -l < "$out/refused.txt")"
