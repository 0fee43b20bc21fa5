# Block pointers lower to tiles of pointers and masks: base + sum_d (offset_d + arange(block_d)) *
# stride_d, boundary_check dims masked with 0 <= index < shape (a constant offset >= 0 needs no
# lower bound), padding "zero" -> other=0, "nan" -> other=nan, none -> no other; shapes and
# runtime strides in int64, offsets in int32; a loop carries a block pointer's offsets only, and
# tl.advance / bp.advance add to them; block pointers merge across a runtime `if` and pass
# through helpers.  (ops_block_ptr_loop.py round-trips a loop's IR with its hints.)
# RUN: ir %s:tile2d --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride_m=i32,BM=16,BN=8'
# RUN: ir %s:rows_loop --sig 'x_ptr=*fp16,out_ptr=*fp32,M=i32,N=i32,stride_m=i64,BM=8,BN=16'
# RUN: ir %s:pick --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,flag=i32,B=16'
import triton
import triton.language as tl


@triton.jit
def tile2d(x_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(pm * BM, pn * BN),
                           block_shape=(BM, BN), order=(1, 0))
    a = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
    b = tl.load(xb, boundary_check=(1,), padding_option="nan")
    c = tl.load(xb, boundary_check=0)
    yb = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (0, 1))
    tl.store(yb, a + b * c, boundary_check=(0, 1))


@triton.jit
def rows_loop(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    # the row block is fixed, the column block walks along N
    pm = tl.program_id(0)
    xb = tl.make_block_ptr(x_ptr, (M, N), (stride_m, 1), (pm * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(N, BN), num_stages=2):
        x = tl.load(xb, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        acc += tl.sum(x * x, axis=1)
        xb = tl.advance(xb, (0, BN))
    ob = tl.make_block_ptr(out_ptr, (M,), (1,), (pm * BM,), (BM,), (0,))
    tl.store(ob, acc, boundary_check=(0,))


@triton.jit
def shifted(bp, k: tl.constexpr):
    return bp.advance((k,))


@triton.jit
def pick(x_ptr, y_ptr, n, flag, B: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, (n,), (1,), (tl.program_id(0) * B,), (B,), (0,))
    if flag > 0:
        xb = shifted(xb, B)
    x = tl.load(xb, boundary_check=(0,))
    yb = tl.make_block_ptr(y_ptr, (n,), (1,), (tl.program_id(0) * B,), (B,), (0,))
    tl.store(yb, x * 2.0, boundary_check=(0,))
