"""Proofs that do not depend on how a kernel spells its grid (issue 33, item 4).

A rotary embedding stores the two halves of every head (x[t, h, 0:4] and x[t, h, 4:8]) by two
tl.store calls; the backward is right only when no two programs write one element, which kad
proves under a launch condition on the strides.  The condition must hold for either nesting of
the strides, whichever grid axis the tokens are on: grid (tokens, heads) and (heads, tokens)
are both accepted for a contiguous [T, H, 8] tensor, and strides that make heads of
neighbouring tokens overlap are refused at launch, on both grid orders, with the store's line.

A persistent tile loop whose tile ids come from the grouped GEMM order (quotient and remainder
by the group width, a remainder by the group size `min(num_pid_m - first_pid_m, GROUP_M)`) maps
the tile index one-to-one onto the tile grid: its stores are proven distinct (under `stride_cm >=
N`, checked at launch), as are those of the plain `tile // num_pid_n`, `tile % num_pid_n` split.
Tiles twice as tall as their step are refused at launch; tile ids that run past the tile grid
(where the map is no longer one-to-one) are refused at compile time, with the store's location.

Gradients are compared with PyTorch autograd of the same math, in float64 (kad.f64_mode: the
interpreter computes in double).  CPU tensors run on kad's interpreter.
"""
import os
import sys

import pytest
import torch

import kad

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from tests.kernels.grid_order import (persistent_tiles, rotary_ht, rotary_th, swizzled_past_the_tiles,  # noqa: E402
                                      swizzled_tall_tiles, swizzled_tiles, swizzled_tiles_tutorial)

T, H, D = 5, 3, 8
KERNELS = {"tokens_heads": (rotary_th, lambda t, h: (t, h)), "heads_tokens": (rotary_ht, lambda t, h: (h, t))}


def _ref(x, c, s):
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    c, s = c[:, None, :], s[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


@pytest.mark.parametrize("order", sorted(KERNELS))
def test_rotary_either_grid_order(order):
    """Accepted and exact on both grid orders (stride_t = 24, stride_h = 8)."""
    kern, grid = KERNELS[order]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(kern)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, H, D, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(T, D // 2, generator=g, dtype=torch.float64)
    s = torch.randn(T, D // 2, generator=g, dtype=torch.float64)
    dy = torch.randn(T, H, D, generator=g, dtype=torch.float64)
    y = torch.empty_like(x)
    with kad.f64_mode():
        k[grid(T, H)](x, c, s, y, H * D, D, HALF=D // 2)
    (got,) = torch.autograd.grad(y, (x,), dy)
    xr = x.detach().clone().requires_grad_()
    ref = _ref(xr, c, s)
    assert torch.allclose(y.detach(), ref.detach(), rtol=1e-12, atol=1e-12)
    (want,) = torch.autograd.grad(ref, (xr,), dy)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", sorted(KERNELS))
def test_rotary_gradcheck(order):
    kern, grid = KERNELS[order]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(kern)
    g = torch.Generator().manual_seed(1)
    c = torch.randn(2, D // 2, generator=g, dtype=torch.float64)
    s = torch.randn(2, D // 2, generator=g, dtype=torch.float64)

    def f(x):
        y = torch.empty_like(x)
        k[grid(2, 2)](x, c, s, y, 2 * D, D, HALF=D // 2)
        return y
    x = torch.randn(2, 2, D, generator=g, dtype=torch.float64, requires_grad=True)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, (x,))


@pytest.mark.parametrize("order", sorted(KERNELS))
@pytest.mark.parametrize("st,sh", [(8, 8), (16, 8), (8, 16), (4, 24)])
def test_rotary_overlapping_strides_refused(order, st, sh):
    """Strides under which two programs write one element: refused before the forward runs, on
    both grid orders, with the second store's location (y is untouched)."""
    kern, grid = KERNELS[order]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(kern)
    x = torch.randn(T * H * D, requires_grad=True)
    c, s = torch.randn(T, D // 2), torch.randn(T, D // 2)
    y = torch.zeros(T * H * D)
    with pytest.raises(kad.KadError, match=r"grid_order\.py:\d+:\d+: .*never write one element.*this launch breaks it"):
        k[grid(T, H)](x, c, s, y, st, sh, HALF=D // 2)
    assert not y.any()


@pytest.mark.parametrize("order", sorted(KERNELS))
def test_rotary_heads_outer(order):
    """The other nesting: a [H, T, 8] layout (stride_h = T*8 > stride_t = 8) passes on both orders."""
    kern, grid = KERNELS[order]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(kern)
    g = torch.Generator().manual_seed(2)
    xh = torch.randn(H, T, D, generator=g, requires_grad=True)
    c, s = torch.randn(T, D // 2, generator=g), torch.randn(T, D // 2, generator=g)
    y = torch.empty_like(xh)
    k[grid(T, H)](xh, c, s, y, D, T * D, HALF=D // 2)
    dy = torch.randn_like(y)
    (got,) = torch.autograd.grad(y, (xh,), dy)
    xr = xh.detach().clone().requires_grad_()
    ref = _ref(xr.transpose(0, 1), c, s).transpose(0, 1)
    torch.testing.assert_close(y.detach(), ref.detach())
    (want,) = torch.autograd.grad(ref, (xr,), dy)
    torch.testing.assert_close(got, want)


TILES = {"plain": (persistent_tiles, {}), "grouped": (swizzled_tiles, {"GROUP_M": 2}),
         "grouped3": (swizzled_tiles, {"GROUP_M": 3}), "tutorial": (swizzled_tiles_tutorial, {"GROUP_M": 3})}


@pytest.mark.parametrize("kind", sorted(TILES))
@pytest.mark.parametrize("M,N,nprog", [(11, 13, 3), (16, 8, 5), (5, 17, 1)])
def test_persistent_tiles(kind, M, N, nprog):
    """Every tile written once (the last group shorter than GROUP_M included): exact gradients."""
    kern, kw = TILES[kind]
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(kern)
    g = torch.Generator().manual_seed(M * N)
    a = torch.randn(M, N, generator=g, dtype=torch.float64, requires_grad=True)
    dc = torch.randn(M, N, generator=g, dtype=torch.float64)
    c = torch.empty_like(a)
    with kad.f64_mode():
        k[(nprog,)](a, c, M, N, N, N, BM=4, BN=4, **kw)
    (got,) = torch.autograd.grad(c, (a,), dc)
    ar = a.detach().clone().requires_grad_()
    ref = torch.sin(ar) * ar
    assert torch.allclose(c.detach(), ref.detach(), rtol=1e-12, atol=1e-12)
    (want,) = torch.autograd.grad(ref, (ar,), dc)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_swizzled_tiles_gradcheck():
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(swizzled_tiles)

    def f(a):
        c = torch.empty_like(a)
        k[(2,)](a, c, 7, 6, 6, 6, BM=2, BN=4, GROUP_M=3)
        return c
    a = torch.randn(7, 6, dtype=torch.float64, requires_grad=True)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, (a,))


def test_swizzled_rows_overlapping_refused():
    """Rows 8 apart with 13 columns: the tiles' rows overlap; refused before the forward runs."""
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(swizzled_tiles)
    a = torch.randn(11 * 13, requires_grad=True)
    c = torch.zeros(11 * 13)
    with pytest.raises(kad.KadError, match=r"grid_order\.py:\d+:\d+: .*write distinct elements.*this launch breaks it"):
        k[(3,)](a, c, 11, 13, 8, 8, BM=4, BN=4, GROUP_M=2)
    assert not c.any()


def test_swizzled_tall_tiles_refused():
    """Tiles of 2*BM rows one BM apart overlap: accepted only where there is one row of tiles,
    so this launch (M = 11) is refused before the forward runs."""
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(swizzled_tall_tiles)
    a = torch.randn(11, 13, requires_grad=True)
    c = torch.zeros(11, 13)
    with pytest.raises(kad.KadError, match=r"grid_order\.py:\d+:\d+: .*write distinct elements.*this launch breaks it"):
        k[(3,)](a, c, 11, 13, 13, 13, BM=4, BN=4, GROUP_M=2)
    assert not c.any()


def test_swizzled_past_the_tiles_refused():
    """Tile ids past num_pid_m * num_pid_n: not the grouped order's bijection, so one program may write
    a tile twice; the last write would win, but the loop's step (num_programs) is not a constant, so
    its reverse sweep is not supported: refused, located."""
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(swizzled_past_the_tiles)
    a = torch.randn(11, 13, requires_grad=True)
    c = torch.zeros(11, 13)
    with pytest.raises(kad.KadError, match=r"grid_order\.py:\d+:\d+: error: the store at line \d+ may write one element of "
                                           r"its output in several iterations .*a loop whose step is a constant"):
        k[(3,)](a, c, 11, 13, 13, 13, BM=4, BN=4, GROUP_M=2)
