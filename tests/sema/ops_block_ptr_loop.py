# A block pointer carried through a tl.range loop with scheduling hints: the loop carries its
# offsets (int32), tl.advance adds to the column offset; the hints print as `hints {...}` and
# round-trip through the IR parser.
# RUN: ir %s:rows_loop --sig 'x_ptr=*fp16,out_ptr=*fp32,M=i32,N=i32,stride_m=i64,BM=8,BN=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def rows_loop(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    xb = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (pm * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(N, BN), num_stages=2, loop_unroll_factor=4, flatten=True, disable_licm=False):
        x = tl.load(xb, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        acc += tl.sum(x * x, axis=1)
        xb = tl.advance(xb, (0, BN))
    ob = tl.make_block_ptr(out_ptr, (M,), (1,), (pm * BM,), (BM,), (0,))
    tl.store(ob, acc, boundary_check=(0,))
