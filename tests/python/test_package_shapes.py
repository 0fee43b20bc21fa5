"""Kernels that reshape data inside a tile -- tl.split / tl.join / tl.interleave, tl.gather,
tl.flip, tl.sort / tl.topk -- made differentiable with one decorator each and compared with
PyTorch autograd of the same math written plainly; gradcheck'ed in float64 on the CPU interpreter.

The device comes from KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton).
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


@kad.differentiable(inputs=["x_ptr", "y_ptr"], outputs=["z_ptr"])
@triton.jit
def cmul_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    # complex numbers stored interleaved (re, im): z = x * y, computed in fp32
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    offs = 2 * o[:, None] + tl.arange(0, 2)[None, :]
    m = offs < 2 * n
    xr, xi = tl.split(tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32))
    yr, yi = tl.split(tl.load(y_ptr + offs, mask=m, other=0.0).to(tl.float32))
    z = tl.interleave(xr * yr - xi * yi, xr * yi + xi * yr)
    zo = 2 * pid * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(z_ptr + zo, z.to(z_ptr.dtype.element_ty), mask=zo < 2 * n)


def cmul(x, y):
    n = x.numel() // 2
    z = torch.empty_like(x)
    cmul_kernel[(triton.cdiv(n, 16),)](x, y, z, n, BLOCK=16)
    return z


def ref_cmul(x, y):
    a, b = x.double().view(-1, 2), y.double().view(-1, 2)
    return torch.stack([a[:, 0] * b[:, 0] - a[:, 1] * b[:, 1], a[:, 0] * b[:, 1] + a[:, 1] * b[:, 0]],
                       dim=1).reshape(-1).to(x.dtype)


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])
@triton.jit
def swap_halves_kernel(x_ptr, y_ptr, rows, D: tl.constexpr, BLOCK: tl.constexpr):
    # rotate-half: y = [-x2, x1] * sigmoid(x), the halves paired by split and put back by join
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    m = (r < rows)[:, None]
    x = tl.load(x_ptr + r[:, None] * D + cols[None, :], mask=m, other=0.0).to(tl.float32)
    x1, x2 = tl.split(tl.permute(tl.reshape(x, (BLOCK, 2, D // 2)), (0, 2, 1)))
    h = tl.reshape(tl.permute(tl.join(-x2, x1), (0, 2, 1)), (BLOCK, D))
    tl.store(y_ptr + r[:, None] * D + cols[None, :], (h * tl.sigmoid(x)).to(y_ptr.dtype.element_ty), mask=m)


def swap_halves(x):
    rows, d = x.shape
    y = torch.empty_like(x)
    swap_halves_kernel[(triton.cdiv(rows, 8),)](x, y, rows, D=d, BLOCK=8)
    return y


def ref_swap_halves(x):
    x64 = x.double()
    h = x64.shape[1] // 2
    return (torch.cat([-x64[:, h:], x64[:, :h]], dim=1) * torch.sigmoid(x64)).to(x.dtype)


@kad.differentiable(inputs=["table_ptr", "x_ptr"], outputs=["out_ptr"])
@triton.jit
def lookup_kernel(table_ptr, ids_ptr, x_ptr, out_ptr, n, V: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
    # out[i] = table[ids[i]] * x[i]: an embedding lookup inside one tile (the table is small)
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    table = tl.load(table_ptr + tl.arange(0, V)[:, None] * D + cols[None, :]).to(tl.float32)
    ids = tl.load(ids_ptr + r, mask=r < n, other=0)
    e = tl.gather(table, tl.broadcast_to(ids[:, None], (BLOCK, D)), axis=0)
    x = tl.load(x_ptr + r[:, None] * D + cols[None, :], mask=(r < n)[:, None], other=0.0).to(tl.float32)
    tl.store(out_ptr + r[:, None] * D + cols[None, :], (e * x).to(out_ptr.dtype.element_ty),
             mask=(r < n)[:, None])


def lookup(table, ids, x):
    n, d = x.shape
    out = torch.empty_like(x)
    lookup_kernel[(triton.cdiv(n, 16),)](table, ids, x, out, n, V=table.shape[0], D=d, BLOCK=16)
    return out


def ref_lookup(table, ids, x):
    return (table.double()[ids.long()] * x.double()).to(x.dtype)


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr", "t_ptr"])
@triton.jit
def sortflip_kernel(x_ptr, y_ptr, t_ptr, N: tl.constexpr, K: tl.constexpr):
    # per row: y = flip(sort(x) * w) with w = 1..N, t = topk(x * x)
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols).to(tl.float32)
    s = tl.sort(x) * (cols + 1).to(tl.float32)
    tl.store(y_ptr + row * N + cols, tl.flip(s, 0).to(y_ptr.dtype.element_ty))
    t = tl.topk(x * x, K)
    tl.store(t_ptr + row * K + tl.arange(0, K), t.to(t_ptr.dtype.element_ty))


def sortflip(x):
    rows, n = x.shape
    y = torch.empty_like(x)
    t = torch.empty((rows, 4), dtype=x.dtype, device=x.device)
    sortflip_kernel[(rows,)](x, y, t, N=n, K=4)
    return y, t


def ref_sortflip(x):
    x64 = x.double()
    n = x.shape[1]
    s = torch.sort(x64, dim=1).values * torch.arange(1, n + 1, dtype=torch.float64, device=x.device)
    return torch.flip(s, [1]).to(x.dtype), torch.topk(x64 * x64, 4, dim=1).values.to(x.dtype)


def t(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(device=DEVICE, dtype=dtype).requires_grad_()


def ids(n, v, seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, v, (n,), generator=g, dtype=torch.int32).to(DEVICE)


def grads(fn, *xs):
    xs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in xs]
    ys = fn(*xs)
    ys = ys if isinstance(ys, tuple) else (ys,)
    g = torch.Generator().manual_seed(1)
    loss = sum((y.double() * torch.randn(y.shape, generator=g, dtype=torch.float64).to(y.device)).sum() for y in ys)
    loss.backward()
    return [y.detach() for y in ys], [x.grad for x in xs if x.is_floating_point()]


def assert_close(a, b, rtol, what):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    err, scale = (a - b).abs().max().item(), b.abs().max().item()
    assert err <= rtol * scale + 1e-6, f"{what}: max err {err:.3g} vs max |ref| {scale:.3g}"


CASES = {
    "cmul": (cmul, ref_cmul, lambda dt: (t(90, dtype=dt), t(90, dtype=dt, seed=1))),
    "swap_halves": (swap_halves, ref_swap_halves, lambda dt: (t(19, 16, dtype=dt),)),
    # ids repeat: the table's gradient adds several rows' contributions
    # (a [8, 4] table made Triton 3.6's own compile of this forward crash on an H100, in
    # TritonGPUOptimizeThreadLocality: 16 x 16 compiles)
    "lookup": (lookup, ref_lookup, lambda dt: (t(16, 16, dtype=dt), ids(37, 16), t(37, 16, dtype=dt, seed=1))),
    "sortflip": (sortflip, ref_sortflip, lambda dt: (t(5, 16, dtype=dt),)),
}
RTOL = {torch.float32: 1e-5 if DEVICE == "cpu" else 1e-4, torch.float16: 5e-3}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_tile_shape_kernel_gradients_match_torch(name, dtype):
    fn, ref, make = CASES[name]
    xs = make(dtype)
    if name == "sortflip" and dtype == torch.float16:
        # fp16 rounding can make two values of a row equal, or two of x * x (x and -x: the H100 run
        # had -1.2256 and 1.2256 in one row), where sort's gradient is a convention: distinct
        # magnitudes 0.0625 + k / 8 (exact in fp16), random signs
        g = torch.Generator().manual_seed(5)
        mag = torch.stack([torch.randperm(16, generator=g) for _ in range(5)]).double() / 8 + 0.0625
        sign = torch.where(torch.rand(5, 16, generator=g) < 0.5, -1.0, 1.0).double()
        xs = ((mag * sign).to(device=DEVICE, dtype=dtype).requires_grad_(),)
    y, g = grads(fn, *xs)
    y_ref, g_ref = grads(ref, *xs)
    for a, b in zip(y, y_ref):
        assert_close(a, b, RTOL[dtype], f"{name} forward")
    floats = [x for x in xs if x.is_floating_point()]
    for i, (a, b) in enumerate(zip(g, g_ref)):
        assert a.dtype == floats[i].dtype and a.shape == floats[i].shape
        assert_close(a, b, RTOL[dtype], f"{name} d(input {i})")


@pytest.mark.parametrize("name", sorted(CASES))
def test_tile_shape_gradcheck_float64(name):
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    fn, _, make = CASES[name]
    xs = [x.detach().double().requires_grad_() if x.is_floating_point() else x for x in make(torch.float32)]
    with kad.f64_mode():
        assert torch.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-7, rtol=1e-5)

