"""Element-wise vector addition, the "hello world" of Triton.

Each program owns one BLOCK_SIZE-wide slice of the flat input; the last slice
is usually partial, so every access is masked against n_elements.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(
    x_ptr,  # first input
    y_ptr,  # second input
    out_ptr,  # output, may alias neither input
    n_elements,  # number of valid elements
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Lanes past the end neither read nor write.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    assert x.shape == y.shape, "shapes differ"
    assert x.is_contiguous() and y.is_contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block_size)
    return out
