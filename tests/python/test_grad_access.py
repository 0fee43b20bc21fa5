"""Stores inside loops that kad accepts since the access analysis (src/access.c)
proves the iterations write distinct elements: the persistent row loop, offsets
carried and advanced each iteration, pointers advanced each iteration, a 2-D tile
swept by rows, nested loops.  Each backward is compared with PyTorch autograd of
the same math written plainly, and with float64 finite differences (`kad check`).
One refusal: a persistent loop over a runtime row stride, which is only injective
under a runtime condition that the message names.
CPU tensors run on kad's interpreter; KAD_TEST_DEVICE=cuda runs them with Triton.
"""
import os
import subprocess

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
TOL = dict(rtol=1e-5, atol=1e-5)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.abspath(__file__)


@triton.jit
def persistent_rows(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    for row in tl.range(pid, n_rows, nprog):
        x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
        s = tl.sum(x * x, axis=0)
        tl.store(y_ptr + row * n_cols + cols, x * s, mask=m)


@triton.jit
def carried_offsets(x_ptr, y_ptr, M, N, TM: tl.constexpr, TN: tl.constexpr):
    pid = tl.program_id(0)
    mo = pid * TM + tl.arange(0, TM)
    no = tl.arange(0, TN)
    offs = mo[:, None] * N + no
    for _ in range(0, N, TN):
        m = (mo[:, None] < M) & (no < N)
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.store(y_ptr + offs, tl.sin(x) * 2.0, mask=m)
        no += TN
        offs += TN


@triton.jit
def advanced_ptrs(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    px = x_ptr + row * N
    py = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    for start in range(0, N, BLOCK):
        m = start + cols < N
        x = tl.load(px + cols, mask=m, other=0.0)
        tl.store(py + cols, x * x, mask=m)
        px += BLOCK
        py += BLOCK


@triton.jit
def column_blocks(v_ptr, g_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # weight_norm over dim 1 (FlagGems' shape): a block of columns per program, rows swept
    cols = tl.program_id(0) * BN + tl.arange(0, BN)[:, None]
    cmask = cols < N
    rows0 = tl.arange(0, BM)[None, :]
    g = tl.load(g_ptr + cols, mask=cmask, other=0.0)
    for base in range(0, M, BM):
        rows = base + rows0
        m = (rows < M) & cmask
        v = tl.load(v_ptr + rows * N + cols, mask=m, other=0.0)
        tl.store(y_ptr + rows * N + cols, v * g, mask=m)


@triton.jit
def nested(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for r in range(0, R):
        for c in range(0, C, BLOCK):
            m = c + cols < C
            x = tl.load(x_ptr + r * C + c + cols, mask=m, other=0.0)
            tl.store(y_ptr + r * C + c + cols, tl.exp(x), mask=m)


@triton.jit
def strided_rows(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    for row in tl.range(pid, n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * stride + cols, x * 3.0, mask=m)


def _leaf(*shape):
    return torch.randn(*shape, dtype=torch.float32, device=DEVICE).requires_grad_()


def _compare(fn, ref, leaves):
    """Forward and gradients of kad's kernel (fn) against PyTorch (ref)."""
    out = fn(*leaves)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    got = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    expect = ref(*leaves)
    torch.testing.assert_close(out, expect, **TOL)
    (expect * w).sum().backward()
    for g, t in zip(got, leaves):
        torch.testing.assert_close(g, t.grad, **TOL)


def test_persistent_rows():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(persistent_rows)
    torch.manual_seed(0)
    x = _leaf(7, 20)

    def fn(x):
        y = torch.empty_like(x)
        k[(3,)](x, y, 7, 20, BLOCK=32)
        return y
    _compare(fn, lambda x: x * (x * x).sum(1, keepdim=True), [x])


def test_carried_offsets():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(carried_offsets)
    torch.manual_seed(1)
    x = _leaf(5, 37)

    def fn(x):
        y = torch.empty_like(x)
        k[(3,)](x, y, 5, 37, TM=2, TN=16)
        return y
    _compare(fn, lambda x: torch.sin(x) * 2.0, [x])


def test_advanced_pointers():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(advanced_ptrs)
    torch.manual_seed(2)
    x = _leaf(3, 45)

    def fn(x):
        y = torch.empty_like(x)
        k[(3,)](x, y, 45, BLOCK=16)
        return y
    _compare(fn, lambda x: x * x, [x])


def test_column_blocks():
    k = kad.differentiable(inputs=["v_ptr", "g_ptr"], outputs=["y_ptr"])(column_blocks)
    torch.manual_seed(3)
    v, g = _leaf(11, 9), _leaf(9)

    def fn(v, g):
        y = torch.empty_like(v)
        k[(3,)](v, g, y, 11, 9, BM=4, BN=4)
        return y
    _compare(fn, lambda v, g: v * g[None, :], [v, g])


def test_nested_loops():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(nested)
    torch.manual_seed(4)
    x = _leaf(3, 21)

    def fn(x):
        y = torch.empty_like(x)
        k[(1,)](x, y, 3, 21, BLOCK=8)
        return y
    _compare(fn, torch.exp, [x])


def test_strided_rows_refused_with_condition():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(strided_rows)
    x = _leaf(4, 10)
    y = torch.empty(4, 16, device=DEVICE)
    with pytest.raises(kad.KadError, match=r"only when .*stride"):
        k[(2,)](x, y, 4, 10, 16, BLOCK=16)
        y.sum().backward()


@pytest.mark.parametrize("kernel,sig,wrt,out,grid,shapes,args", [
    ("persistent_rows", "x_ptr=*fp32,y_ptr=*fp32,n_rows=i32,n_cols=i32,BLOCK=32", "x_ptr", "y_ptr", "3",
     ["x_ptr=140", "y_ptr=140"], ["n_rows=7", "n_cols=20"]),
    ("carried_offsets", "x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,TM=2,TN=16", "x_ptr", "y_ptr", "3",
     ["x_ptr=185", "y_ptr=185"], ["M=5", "N=37"]),
    ("advanced_ptrs", "x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16", "x_ptr", "y_ptr", "3",
     ["x_ptr=135", "y_ptr=135"], ["N=45"]),
    ("column_blocks", "v_ptr=*fp32,g_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BM=4,BN=4", "v_ptr,g_ptr", "y_ptr", "3",
     ["v_ptr=99", "g_ptr=9", "y_ptr=99"], ["M=11", "N=9"]),
    ("nested", "x_ptr=*fp32,y_ptr=*fp32,R=i32,C=i32,BLOCK=8", "x_ptr", "y_ptr", "1",
     ["x_ptr=63", "y_ptr=63"], ["R=3", "C=21"]),
])
def test_kad_check_float64(kernel, sig, wrt, out, grid, shapes, args):
    """The backward against float64 central finite differences (kad check)."""
    cmd = [os.path.join(REPO, "build", "kad"), "check", f"{HERE}:{kernel}", "--sig", sig, "--wrt", wrt,
           "--out", out, "--grid", grid]
    for s in shapes:
        cmd += ["--shape", s]
    for a in args:
        cmd += ["--arg", a]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
