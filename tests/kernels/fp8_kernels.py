"""fp8 kernels written for kad's tests (issue 10): quantize/dequantize with a scale, and a
straight-through product. The fp8 type comes from the pointer (q_ptr) or a constexpr dtype."""
import triton
import triton.language as tl


@triton.jit
def fp8_quant(x_ptr, q_ptr, y_ptr, n, scale, FMT: tl.constexpr, STORE_Q: tl.constexpr, BLOCK: tl.constexpr):
    # q = fp8(x * scale) (stored when STORE_Q), y = float32(q) / scale
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    if STORE_Q:
        if q_ptr.dtype.element_ty == tl.float8e5:
            q = (x * scale).to(tl.float8e5)
        else:
            q = (x * scale).to(q_ptr.dtype.element_ty)
        tl.store(q_ptr + offs, q, mask=m)
    else:
        q = (x * scale).to(FMT)
    y = q.to(tl.float32) / scale
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def fp8_dequant(q_ptr, w_ptr, y_ptr, n, inv_scale, BLOCK: tl.constexpr):
    # y = float32(q) * inv_scale * w
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    q = tl.load(q_ptr + offs, mask=m, other=0.0)
    w = tl.load(w_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, q.to(tl.float32) * inv_scale * w, mask=m)


@triton.jit
def fp8_ste(x_ptr, w_ptr, y_ptr, n, FMT: tl.constexpr, BLOCK: tl.constexpr):
    # y = float32(fp8(x)) * w: the cast's adjoint is the identity (straight-through)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    w = tl.load(w_ptr + offs, mask=m, other=0.0)
    xq = x.to(FMT).to(tl.float32)
    tl.store(y_ptr + offs, tl.sigmoid(xq) * w, mask=m)
