"""3x3 box filter (mean of the 3x3 neighbourhood) on a 2-D image.

A 2-D grid of programs covers the image in BLOCK_H x BLOCK_W tiles.  The nine
taps are unrolled with tl.static_range.  Borders use zero padding: taps that
fall outside the image are masked off (their addresses are never touched),
and the sum is still divided by 9, like a zero-padded convolution.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def box_filter3x3_kernel(
    src_ptr,
    dst_ptr,
    H,
    W,
    stride_src,
    stride_dst,
    BLOCK_H: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    pid_h = tl.program_id(0)
    pid_w = tl.program_id(1)
    rows = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    cols = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)

    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for dy in tl.static_range(-1, 2):
        for dx in tl.static_range(-1, 2):
            r = rows[:, None] + dy
            c = cols[None, :] + dx
            inside = (r >= 0) & (r < H) & (c >= 0) & (c < W)
            acc += tl.load(src_ptr + r * stride_src + c, mask=inside, other=0.0)

    out_mask = (rows[:, None] < H) & (cols[None, :] < W)
    tl.store(dst_ptr + rows[:, None] * stride_dst + cols[None, :], acc / 9.0, mask=out_mask)


def box_filter3x3(img: torch.Tensor) -> torch.Tensor:
    H, W = img.shape
    out = torch.empty_like(img)
    grid = (triton.cdiv(H, 16), triton.cdiv(W, 32))
    box_filter3x3_kernel[grid](img, out, H, W, img.stride(0), out.stride(0), BLOCK_H=16, BLOCK_W=32)
    return out
