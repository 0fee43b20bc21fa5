"""Scale and convert: y = (x * scale).to(OUT_DTYPE).

The output element type is a compile-time parameter (tl.float16,
tl.bfloat16, ...), as in quantization and mixed-precision casting kernels.
"""
import torch
import triton
import triton.language as tl

_TORCH_TO_TL = {
    torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16,
    torch.float32: tl.float32,
}


@triton.jit
def scale_cast_kernel(x_ptr, y_ptr, n, scale, OUT_DTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = (x.to(tl.float32) * scale).to(OUT_DTYPE)
    tl.store(y_ptr + offs, y, mask=mask)


def scale_cast(x: torch.Tensor, scale: float, dtype: torch.dtype) -> torch.Tensor:
    y = torch.empty(x.shape, dtype=dtype, device=x.device)
    n = x.numel()
    scale_cast_kernel[(triton.cdiv(n, 1024),)](x, y, n, scale, OUT_DTYPE=_TORCH_TO_TL[dtype], BLOCK_SIZE=1024)
    return y
