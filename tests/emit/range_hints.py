# tl.range's scheduling hints stay on the IR loop (`hints {...}`) and are emitted again, in the
# forward and in the backward's copy of the loop (warp_specialize only in the forward: the
# backward's loop body is not the one the user specialized warps for).  tl.static_assert is
# checked, tl.device_assert kept in the backward's recomputation, tl.device_print dropped.
# RUN: emit %s:rowsum --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16'
# RUN: grad %s:rowsum --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def rowsum(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 16, "BLOCK too small")
    row = tl.program_id(0)
    tl.device_assert(n > 0, "n must be positive")
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=2, loop_unroll_factor=2, flatten=False,
                          warp_specialize=True, disallow_acc_multi_buffer=True, disable_licm=None):
        x = tl.load(x_ptr + row * stride + start + cols, mask=start + cols < n, other=0.0)
        tl.device_print("x", x)
        acc += x * x
    tl.store(y_ptr + row, tl.sum(acc, axis=0))
