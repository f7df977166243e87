#!/usr/bin/env python3
"""Experiment (issue 17, run G1): hand-written persistent argmax kernels, one block looping over
rows (r = blockIdx.x; r < T; r += gridDim.x), with (PB*) or without (PA) the next row's first
4 vectors loaded before this row's block reduction, on 1056, 924, 528 or 264 blocks. Written
into bench-build/red/amP<variant>_<V>/ from the generated argmax_<V>/ sources (run
generate_reductions.sh first); reductions.py times them beside the heuristics' kernel."""
import os
import re
root=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'bench-build', 'red')
KERNEL=r'''extern "C" __global__ void __launch_bounds__(256) argmax_row_v3(
    const __nv_bfloat16* __restrict__ x,
    int64_t* __restrict__ token,
    int64_t T) {
  fsl_grid_dependency_wait();
  fsl_grid_launch_dependents();
  const int64_t Vx_i = threadIdx.x;
  int64_t *fsl_scratch_pairs = reinterpret_cast<int64_t *>(fsl_shared);
  constexpr int64_t V = @V@, VP = (V / 8 + 255) / 256;
  uint4 pre[4];
  int64_t row = blockIdx.x;
  int parity = 0;
#if PREFETCH
  #pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int64_t c = k * 2048 + Vx_i * 8;
    if (row < T && c < V) pre[k] = *reinterpret_cast<const uint4 *>(x + row * V + c);
  }
#endif
  for (; row < T; row += gridDim.x) {
    float best = -FSL_INF32;
    int64_t at = 0;
#if !PREFETCH
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t c = k * 2048 + Vx_i * 8;
      if (c < V) pre[k] = *reinterpret_cast<const uint4 *>(x + row * V + c);
    }
#endif
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t c = k * 2048 + Vx_i * 8;
      if (c < V) {
        const __nv_bfloat16 *v = reinterpret_cast<const __nv_bfloat16 *>(&pre[k]);
        #pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float xv = __bfloat162float(v[e]);
          const bool wins = !(xv <= best) && best == best;
          best = wins ? xv : best;
          at = wins ? c + e : at;
        }
      }
    }
    #pragma unroll 4
    for (int64_t Vp_i = 4; Vp_i < VP; ++Vp_i) {
      const int64_t c = Vp_i * 2048 + Vx_i * 8;
      if (c < V) {
        __align__(16) __nv_bfloat16 v[8];
        fsl_load_vector<16>(v, x + (row * V + c));
        #pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float xv = __bfloat162float(v[e]);
          const bool wins = !(xv <= best) && best == best;
          best = wins ? xv : best;
          at = wins ? c + e : at;
        }
      }
    }
#if PREFETCH
    const int64_t next = row + gridDim.x;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t c = k * 2048 + Vx_i * 8;
      if (next < T && c < V) pre[k] = *reinterpret_cast<const uint4 *>(x + next * V + c);
    }
#endif
    fsl_block_argmax_x<256>(best, at, fsl_scratch_pairs, parity);
    parity ^= 1;
    if (Vx_i == 0) token[row] = at;
  }
}
'''
for V in (32000, 50304, 128256):
    src=open(f'{root}/argmax_{V}/argmax_row.cu').read()

    kname=re.findall(r'argmax_row_v\d+(?=\()', src)[-1]
    i=src.index('extern "C" __global__ void __launch_bounds__(256) %s(' % kname)
    j=src.index('\n}\n',i)+3
    for name,pf,blocks in (('PA',0,1056),('PB',1,1056),('PB924',1,924),('PB528',1,528),('PB264',1,264)):
        k=KERNEL.replace('@V@',str(V)).replace('argmax_row_v3(', kname+'(')
        out=src[:i]+('#define PREFETCH %d\n'%pf)+k+src[j:]
        old='''  {  // %s
    const int64_t fsl_grid_x = T;''' % kname
        assert old in out
        out=out.replace(old,'''  {  // %s
    const int64_t fsl_grid_x = T < %d ? T : %d;'''%(kname,blocks,blocks))
        d=f'{root}/am{name}_{V}'; os.makedirs(d,exist_ok=True)
        open(f'{d}/argmax_row.cu','w').write(out)
        os.system(f'cp {root}/argmax_{V}/argmax_row.h {d}/')
