# tl.join / split / interleave / flip / gather / sort / topk / histogram and their tensor-method
# forms: join broadcasts its operands; two scalars join into a [2] and a [2] splits into scalars;
# interleave is join then a reshape; topk keeps 2**floor(log2(k)) values (Triton's _log2);
# histogram's mask broadcasts from a scalar.
# RUN: ir %s:shapes --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32,h_ptr=*i32,s=fp32'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def shapes(x_ptr, i_ptr, y_ptr, h_ptr, s):
    r = tl.arange(0, 4)
    c = tl.arange(0, 8)
    x = tl.load(x_ptr + r[:, None] * 8 + c[None, :])
    j = tl.join(x, s)                     # s broadcast to [4, 8]
    a, b = j.split()
    p = tl.join(s, s * 2.0)               # two scalars: [2]
    u, v = tl.split(p)                    # scalars again
    il = tl.interleave(a, b)              # [4, 16]
    f = x.flip(1) + tl.flip(x, -2)
    idx = tl.load(i_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :])
    g = x.gather(idx, axis=1)             # [4, 2]
    srt = tl.sort(x, descending=True)
    tk = tl.topk(x, 7)                    # 4 values per row
    hist = tl.load(i_ptr + c).histogram(8, mask=True)
    tl.store(h_ptr + c, hist)
    out = f + srt + il.reshape(4, 2, 8).sum(1) + (u + v)
    tl.store(y_ptr + r[:, None] * 8 + c[None, :], out)
    tl.store(y_ptr + 32 + r[:, None] * 2 + tl.arange(0, 2)[None, :], g)
    tl.store(y_ptr + 40 + r[:, None] * 4 + tl.arange(0, 4)[None, :], tk)
