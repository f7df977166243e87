"""A hand-written Triton softmax over the last dimension (bf16 in and out, f32 inside),
the peer issue 17 measures fslc's softmax against.

Written for this benchmark: one row is one block of BLOCK = next power of two >= H
columns, held in registers between its maximum, its exponentials and its sum. Two launch
forms, both timed by reductions.py, which keeps the faster at each point:
  - rows: one program a row;
  - persistent: as many programs as fit on the GPU at once, each looping over rows with a
    stride, and Triton's software pipelining (`num_stages`) loading the next row while
    the current one is reduced and stored.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    for row in tl.range(first, rows, step, num_stages=STAGES):
        x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row * cols + offsets, y.to(tl.bfloat16), mask=inside)


def _warps(block):
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


_programs = {}


def softmax(x, y, persistent):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = _warps(block)
    if not persistent:
        _softmax_rows[(rows,)](x, y, rows, cols, BLOCK=block, STAGES=1, num_warps=warps)
        return y
    key = (block, warps)
    if key not in _programs:
        # How many programs fit at once: from the compiled kernel's registers and shared memory.
        props = torch.cuda.get_device_properties(x.device)
        threads = warps * 32
        try:
            kernel = _softmax_rows.warmup(x, y, rows, cols, BLOCK=block, STAGES=2,
                                          num_warps=warps, grid=(1,))
            kernel._init_handles()
            by_regs = 65536 // max(1, kernel.n_regs * threads)
            by_smem = (props.shared_memory_per_multiprocessor // kernel.metadata.shared
                       if kernel.metadata.shared else 32)
            per_sm = max(1, min(by_regs, by_smem, 2048 // threads, 32))
        except Exception:  # an older Triton without warmup(grid=...): a full SM of threads
            per_sm = max(1, 2048 // threads)
        _programs[key] = props.multi_processor_count * per_sm
    grid = min(rows, _programs[key])
    _softmax_rows[(grid,)](x, y, rows, cols, BLOCK=block, STAGES=2, num_warps=warps)
    return y
