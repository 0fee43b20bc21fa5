"""Mean over the middle dimension of a 3-D tensor: out[b, n] = mean_m x[b, m, n].

The input may have any strides (a permuted view works as is).  The grid is
2-D: axis 0 walks the batch, axis 1 the column blocks; each program sweeps M
in BLOCK_M-row tiles and accumulates column sums in fp32.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def mean_dim1_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    stride_xb,
    stride_xm,
    stride_xn,
    stride_ob,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    base = x_ptr + pid_b * stride_xb

    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        offs_m = m0 + tl.arange(0, BLOCK_M)
        ptrs = base + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
        tile_mask = (offs_m[:, None] < M) & n_mask[None, :]
        tile = tl.load(ptrs, mask=tile_mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)

    mean = acc / M
    tl.store(out_ptr + pid_b * stride_ob + offs_n * stride_on, mean, mask=n_mask)


def mean_dim1(x: torch.Tensor) -> torch.Tensor:
    B, M, N = x.shape
    out = torch.empty((B, N), dtype=torch.float32, device=x.device)
    BLOCK_M, BLOCK_N = 16, 64
    grid = (B, triton.cdiv(N, BLOCK_N))
    mean_dim1_kernel[grid](
        x, out, M, N, *x.stride(), *out.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N
    )
    return out
