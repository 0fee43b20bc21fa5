"""RMSNorm forward: y = x / sqrt(mean(x^2) + eps) * w, saving rstd.

Row offsets are computed in int64: n_rows * row_stride overflows int32 for
large activations (e.g. 32k tokens x 128k hidden).  Statistics are in fp32
whatever the storage type.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_fwd_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rstd_ptr,
    x_row_stride,
    y_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    x_row = x_ptr + pid.to(tl.int64) * x_row_stride
    y_row = y_ptr + pid.to(tl.int64) * y_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols

    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    rstd = tl.rsqrt(mean_square + eps)
    tl.store(rstd_ptr + pid, rstd)

    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    x2d = x.reshape(-1, x.shape[-1])
    n_rows, n_cols = x2d.shape
    y = torch.empty_like(x2d)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    rms_norm_fwd_kernel[(n_rows,)](
        x2d, weight, y, rstd, x2d.stride(0), y.stride(0), n_cols, eps, BLOCK_SIZE=BLOCK_SIZE
    )
    return y.view_as(x), rstd
