# RUN: ast %s
# A real module: host code may use any Python syntax; only the imports,
# constants and @triton.jit functions are kept.
"""Fused softmax (kernel plus its torch wrapper)."""
from __future__ import annotations

import dataclasses
from typing import Optional

import torch
import triton
import triton.language as tl

_cache: dict[str, int] = {}


@dataclasses.dataclass
class Cfg:
    block: int = 1024
    warps: int = 4

    def grid(self, n: int) -> tuple[int, ...]:
        return (triton.cdiv(n, self.block),)


async def fetch(x):
    async with x as y:
        return [i async for i in y]


def softmax(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    n_rows, n_cols = x.shape
    out = torch.empty_like(x) if out is None else out
    BLOCK = triton.next_power_of_2(n_cols)
    match BLOCK:
        case 1024:
            warps = 4
        case _:
            warps = 8
    try:
        _softmax_kernel[(n_rows,)](out, x, x.stride(0), n_cols, BLOCK=BLOCK, num_warps=warps)
    except Exception as e:
        raise RuntimeError(f"launch failed: {e!r:>10} {'nested' + "quotes"}") from e
    finally:
        pass
    global _cache
    del warps
    squares = {i: i * i for i in range(4)}
    data = b"\x00\x01" + rb"\d"
    return out if (m := 1) else (lambda: out)()


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


if __name__ == "__main__":
    x = torch.randn(4, 8)
    print(softmax(x))
