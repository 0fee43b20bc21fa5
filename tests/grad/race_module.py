# The one-writer check for a GPU (`kad grad --race`, docs/AD.md "One writer per element"): a
# scatter through loaded indices (the check kernel: exchanges of codes into int64 tag buffers
# laid out like the output), and rows `stride` apart (the host's condition first, then the
# kernel only for a launch that breaks it).
# RUN: grad %s:scatter --sig 'x_ptr=*fp32,idx_ptr=*i32,o_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out o_ptr --race
# RUN: grad %s:rows --sig 'x_ptr=*fp32,o_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=16' --wrt x_ptr --out o_ptr --race
import triton
import triton.language as tl


@triton.jit
def scatter(x_ptr, idx_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    tl.store(o_ptr + i, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def rows(x_ptr, o_ptr, stride, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    tl.store(o_ptr + r * stride + c, tl.load(x_ptr + r * n_cols + c, mask=m), mask=m)
