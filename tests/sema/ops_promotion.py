# Triton's type promotion: weakly typed Python numbers, fp16/bf16 mixing,
# true division of ints, C-style // and % on ints, comparisons converting
# numbers to fp32 tensors first (so an fp64 tile meets fp32(0.1)).
# RUN: ir %s:promo_kernel --sig 'h_ptr=*fp16,b_ptr=*bf16,i_ptr=*i32,u_ptr=*u32,d_ptr=*fp64,out_ptr=*fp32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def promo_kernel(h_ptr, b_ptr, i_ptr, u_ptr, d_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    b = tl.load(b_ptr + offs)
    i = tl.load(i_ptr + offs)
    u = tl.load(u_ptr + offs)
    ih = i + h          # i32 + fp16 -> fp16
    h2 = h * 2.0        # the number does not promote: fp16
    hb = h + b          # fp16 wins over bf16 (Triton's rule order)
    bb = b + b          # bf16
    hd = h / 2.0        # / on halves computes in fp32
    q = i / i           # int / int -> fp32
    fd = i // 3         # C-style truncating division
    md = i % 3          # C remainder
    i2 = i * 2.0        # a float number with an int tile -> fp32
    u1 = u + 1          # stays u32
    lt = h < 0.1        # compares in fp32 (0.1 is an fp32 tensor first)
    d = tl.load(d_ptr + offs)
    dl = d < 0.1        # compares in fp64 with the fp32 value of 0.1
    dw = d * 0.1        # weak: the fp64 value of 0.1
    tl.store(d_ptr + offs, tl.where(dl, dw, d))
    tl.store(out_ptr + offs, ih + h2 + hb + bb + hd + q + fd + md + i2 + u1 + lt)
