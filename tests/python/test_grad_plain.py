"""Plain stores for input gradients (docs/AD.md, "Deterministic input gradients").

The backward writes d_x with tl.store instead of tl.atomic_add only where the access analysis
proves that the forward reads each element of x at most once in the whole launch (one load site,
injective over programs, iterations and lanes), directly or under a runtime condition the
backward checks at its start.  A wrong proof would show as a wrong gradient wherever two reads
of one element meet, so the kernels below are the ones where they do: overlapping windows, a
weight read by every program, `lanes % 4`, an indirect gather, and row-strided rows with a stride
below the row length (the runtime condition fails).  Several load sites that programs share (two
sites one block apart, a stencil's taps) get a row of partials per site instead ("site rows").  Each must keep the atomic (the module's header and
body say so) and match float64 finite differences (`kad check`) on a grid where the reads
collide; the injective kernels must switch to plain stores and match too.  CPU tensors run on
kad's interpreter; KAD_TEST_DEVICE=cuda runs the PyTorch comparisons with Triton.
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
KAD = os.path.join(REPO, "build", "kad")


@triton.jit
def elementwise(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=m)


@triton.jit
def rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(y_ptr + row * n_cols + cols, x * s, mask=m)


@triton.jit
def windows(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * (BLOCK // 2) + lanes)
    tl.store(y_ptr + pid * BLOCK + lanes, x * x)


@triton.jit
def broadcast_weight(x_ptr, w_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr + tl.arange(0, BLOCK))
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * tl.exp(w))


@triton.jit
def lanes_mod(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * 4 + lanes % 4)
    tl.store(y_ptr + pid * BLOCK + lanes, tl.sin(x) * (lanes + 1))


@triton.jit
def gather(x_ptr, idx_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs)
    x = tl.load(x_ptr + i)
    tl.store(y_ptr + offs, x * x * x)


@triton.jit
def shifted_sites(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    b = tl.load(x_ptr + offs + BLOCK)
    tl.store(y_ptr + offs, a * tl.exp(b))


@triton.jit
def grid3(x_ptr, y_ptr, BLOCK: tl.constexpr):
    a = tl.program_id(0)
    b = tl.program_id(1)
    c = tl.program_id(2)
    offs = ((c * tl.num_programs(1) + b) * tl.num_programs(0) + a) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * tl.exp(x))


@triton.jit
def tiles(x_ptr, y_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rows < M)[:, None] & (cols < N)[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m, other=0.0)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], tl.sin(x) * x, mask=m)


def _module(kernel, sig, wrt, out):
    r = subprocess.run([KAD, "grad", f"{HERE}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out],
                       cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _check(kernel, sig, wrt, out, grid, shapes, args=(), ranges=()):
    cmd = [KAD, "check", f"{HERE}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out, "--grid", grid]
    for s in shapes:
        cmd += ["--shape", s]
    for a in args:
        cmd += ["--arg", a]
    for g in ranges:
        cmd += ["--range", g]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr


# (kernel, sig, wrt, out, grid, shapes, args, ranges, the atomic's reason in the header)
ATOMIC = [
    ("windows", "x_ptr=*fp32,y_ptr=*fp32,BLOCK=8", "x_ptr", "y_ptr", "4", ["x_ptr=20", "y_ptr=32"], [], [],
     "not injective"),
    ("lanes_mod", "x_ptr=*fp32,y_ptr=*fp32,BLOCK=8", "x_ptr", "y_ptr", "3", ["x_ptr=12", "y_ptr=24"], [], [],
     "not injective"),
    ("gather", "x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,BLOCK=8", "x_ptr", "y_ptr", "2",
     ["x_ptr=5", "idx_ptr=16", "y_ptr=16"], [], ["idx_ptr=0:4"], "not an affine form"),
]


@pytest.mark.parametrize("kernel,sig,wrt,out,grid,shapes,args,ranges,why", ATOMIC, ids=[c[0] for c in ATOMIC])
def test_colliding_reads_keep_the_atomic(kernel, sig, wrt, out, grid, shapes, args, ranges, why):
    text = _module(kernel, sig, wrt, out)
    d = "d_" + wrt
    header = text.split("import triton")[0]
    assert f"{d} is accumulated with tl.atomic_add, because" in header and why in header, header
    sweep = text.split("# reverse sweep")[1].split("def launch_")[0]
    assert "tl.store(" not in sweep and "plain_" not in text
    assert "tl.atomic_add(" in sweep
    _check(kernel, sig, wrt, out, grid, shapes, args, ranges)


def _against_torch(run, ref, leaves):
    """run(*leaves) launches the decorated kernel and returns its output; ref(*copies) is the same
    math in PyTorch: the output and every leaf's gradient must agree."""
    y = run(*leaves)
    g = torch.randn_like(y)
    (y * g).sum().backward()
    copies = [t.detach().clone().requires_grad_() for t in leaves]
    want = ref(*copies)
    torch.testing.assert_close(y, want, **TOL)
    (want * g).sum().backward()
    for t, c in zip(leaves, copies):
        torch.testing.assert_close(t.grad, c.grad, **TOL)


@triton.jit
def ragged_weight(x_ptr, w_ptr, y_ptr, lens_ptr, BLOCK: tl.constexpr):
    # row r uses the first lens[r] weights: the weight load's mask differs from row to row, so
    # the fold stores each program's sum through the union of its rows' masks ("touched")
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    n = tl.load(lens_ptr + row)
    m = cols < n
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    x = tl.load(x_ptr + row * BLOCK + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * BLOCK + cols, x * tl.sin(w), mask=m)


def test_folded_weight_with_varying_masks():
    sig = "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,lens_ptr=*i32,BLOCK=8"
    text = _module("ragged_weight", sig, "w_ptr,x_ptr", "y_ptr")
    assert "touched = touched | " in text and "d_w_ptr is summed deterministically" in text
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(ragged_weight)
    lens = torch.tensor([3, 8, 0, 5, 1, 7, 2], dtype=torch.int32, device=DEVICE)
    m = (torch.arange(8, device=DEVICE)[None, :] < lens[:, None].long()).float()

    def run(x, w):
        y = torch.zeros_like(x)
        k[(7,)](x, w, y, lens, BLOCK=8)
        return y
    leaves = [torch.randn(7 * 8, device=DEVICE, requires_grad=True),
              torch.randn(8, device=DEVICE, requires_grad=True)]
    _against_torch(run, lambda x, w: (x.view(7, 8) * torch.sin(w)[None, :] * m).reshape(-1), leaves)


def test_shared_weight_is_folded():
    # w is read by every program: its gradient is summed per program (the grid
    # folded along axis 0) into partials, then by a sum kernel: no atomics;
    # deterministic=False (kad grad --atomics) keeps the atomic_add
    sig = "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=8"
    text = _module("broadcast_weight", sig, "w_ptr,x_ptr", "y_ptr")
    header = text.split("import triton")[0]
    assert "d_w_ptr is summed deterministically, without atomics: every program along grid axis 0" in header
    assert "d_x_ptr is written with plain tl.store" in header, header
    assert "def broadcast_weight_bwd_sum(part, d, span, nfold, dense):" in text
    assert not [ln for ln in text.splitlines() if "atomic_add(" in ln and "d_w" in ln]
    # the fold loop, pipelined (it loads only x and w, stores only d_x and the partials)
    assert "for pid0 in tl.range(q, kad_programs_0, nfold, num_stages=3):" in text
    _check("broadcast_weight", sig, "w_ptr,x_ptr", "y_ptr", "5", ["x_ptr=40", "w_ptr=8", "y_ptr=40"])
    r = subprocess.run([KAD, "grad", f"{HERE}:broadcast_weight", "--sig", sig, "--wrt", "w_ptr", "--out", "y_ptr",
                        "--atomics"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0 and "d_w_ptr is accumulated with tl.atomic_add, because atomics were asked" in r.stdout
    assert "tl.atomic_add(" in r.stdout and "_bwd_sum" not in r.stdout
    # through the package, both ways, against PyTorch
    for det in (True, False):
        k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"], deterministic=det)(broadcast_weight)

        def run(x, w):
            y = torch.empty_like(x)
            k[(7,)](x, w, y, BLOCK=8)
            return y
        leaves = [torch.randn(7 * 8, device=DEVICE, requires_grad=True),
                  torch.randn(8, device=DEVICE, requires_grad=True)]
        _against_torch(run, lambda x, w: x * torch.exp(w).repeat(7), leaves)


def test_elementwise_plain_store():
    sig = "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8"
    text = _module("elementwise", sig, "x_ptr", "y_ptr")
    header = text.split("import triton")[0]
    assert "d_x_ptr is written with plain tl.store (deterministic) when" in header, header
    sweep = text.split("# reverse sweep")[1].split("def launch_")[0]
    assert "if plain_d_x_ptr:" in sweep and "tl.store(" in sweep
    _check("elementwise", sig, "x_ptr", "y_ptr", "3", ["x_ptr=21", "y_ptr=21"], ["n=21"])
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(elementwise)

    def run(x):
        y = torch.empty_like(x)
        k[(3,)](x, y, 21, BLOCK=8)
        return y
    _against_torch(run, lambda x: x * torch.sigmoid(x), [torch.randn(21, device=DEVICE, requires_grad=True)])


@pytest.mark.parametrize("stride,n_cols", [(12, 10), (10, 10), (6, 10), (3, 10)])
def test_row_stride_condition(stride, n_cols):
    """x's rows overlap when stride < n_cols: the backward's runtime check picks the atomic."""
    sig = "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16"
    text = _module("rows", sig, "x_ptr", "y_ptr")
    assert "stride >= n_cols" in text.split("import triton")[0]
    n_rows = 4
    size = (n_rows - 1) * stride + n_cols
    _check("rows", sig, "x_ptr", "y_ptr", str(n_rows), [f"x_ptr={size}", f"y_ptr={n_rows * n_cols}"],
           [f"n_cols={n_cols}", f"stride={stride}"])
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(rows)
    x = torch.randn(size, device=DEVICE, requires_grad=True)
    y = torch.empty(n_rows * n_cols, device=DEVICE)
    k[(n_rows,)](x, y, n_cols, stride, BLOCK=16)
    w = torch.randn_like(y)
    (y * w).sum().backward()
    xr = x.detach().clone().requires_grad_()
    xs = torch.stack([xr[r * stride:r * stride + n_cols] for r in range(n_rows)])
    ref = (xs * (xs * xs).sum(1, keepdim=True)).reshape(-1)
    torch.testing.assert_close(y, ref, **TOL)
    (ref * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, **TOL)


def test_three_axes_unconditional_plain_store():
    """Every grid axis used: injective for every launch (PROVEN), no runtime check."""
    sig = "x_ptr=*fp32,y_ptr=*fp32,BLOCK=4"
    text = _module("grid3", sig, "x_ptr", "y_ptr")
    header = text.split("import triton")[0]
    assert "d_x_ptr is written with plain tl.store (deterministic): the forward reads each" in header, header
    sweep = text.split("# reverse sweep")[1].split("def launch_")[0]
    assert "tl.store(" in sweep and "atomic" not in sweep and "plain_" not in text
    _check("grid3", sig, "x_ptr", "y_ptr", "2,3,2", ["x_ptr=48", "y_ptr=48"])


@pytest.mark.parametrize("stride", [9, 6, 2])
def test_tile_stride_condition(stride):
    """A 2-D grid of tiles: the runtime condition has products of parameters and
    tl.num_programs (evaluated in int64 with guarded ranges); stride < N overlaps rows."""
    M, N = 7, 9
    sig = "x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride=i32,BM=4,BN=4"
    text = _module("tiles", sig, "x_ptr", "y_ptr")
    assert "d_x_ptr is written with plain tl.store (deterministic) when" in text.split("import triton")[0]
    size = (M - 1) * stride + N
    _check("tiles", sig, "x_ptr", "y_ptr", "2,3", [f"x_ptr={size}", f"y_ptr={M * N}"],
           [f"M={M}", f"N={N}", f"stride={stride}"])
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(tiles)
    x = torch.randn(size, device=DEVICE, requires_grad=True)
    y = torch.empty(M * N, device=DEVICE)
    k[(2, 3)](x, y, M, N, stride, BM=4, BN=4)
    w = torch.randn_like(y)
    (y * w).sum().backward()
    xr = x.detach().clone().requires_grad_()
    xs = torch.stack([xr[r * stride:r * stride + N] for r in range(M)])
    ref = (torch.sin(xs) * xs).reshape(-1)
    torch.testing.assert_close(y, ref, **TOL)
    (ref * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, **TOL)


@triton.jit
def cross5(x_ptr, y_ptr, H, W, stride, BH: tl.constexpr, BW: tl.constexpr):
    # a five-point stencil over a row-strided image: neighbouring tiles read each other's edges
    r = tl.program_id(0) * BH + tl.arange(0, BH)[:, None]
    c = tl.program_id(1) * BW + tl.arange(0, BW)[None, :]
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for d in tl.static_range(5):
        rr = r + (d == 1) * -1 + (d == 2) * 1
        cc = c + (d == 3) * -1 + (d == 4) * 1
        m = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        v = tl.load(x_ptr + rr * stride + cc, mask=m, other=0.0)
        acc += tl.sin(v) if d == 0 else v * (d + 1)
    tl.store(y_ptr + r * W + c, acc, mask=(r < H) & (c < W))


def _cross5_ref(x, H, W, stride):
    rows = torch.stack([x[i * stride:i * stride + W] for i in range(H)])
    p = torch.nn.functional.pad(rows, (1, 1, 1, 1))
    return (torch.sin(rows) + 2 * p[:-2, 1:-1] + 3 * p[2:, 1:-1] + 4 * p[1:-1, :-2] + 5 * p[1:-1, 2:]).reshape(-1)


@pytest.mark.parametrize("stride", [13, 11, 7])
def test_site_rows_stencil(stride):
    """Each tap reads distinct elements over the launch, but neighbouring tiles' taps meet; every
    tap is a function of the programs' positions, so the gradient is gathered (docs/AD.md,
    "Gather": each element summed in order, no atomics) while rows do not overlap (stride >= W);
    stride 7 < W = 11 overlaps rows: the launcher's flag falls back to atomics, still right."""
    H, W = 9, 11
    sig = "x_ptr=*fp32,y_ptr=*fp32,H=i32,W=i32,stride=i32,BH=4,BW=8"
    text = _module("cross5", sig, "x_ptr", "y_ptr")
    header = " ".join(ln.lstrip("# ") for ln in text.split("import triton")[0].splitlines())
    assert "d_x_ptr is gathered when" in header, header
    assert "reads x_ptr at 5 sites" in header and "stride >= W" in header, header
    assert "def cross5_bwd_gather_x_ptr(" in text and "_bwd_sum(" not in text
    size = (H - 1) * stride + W
    _check("cross5", sig, "x_ptr", "y_ptr", "3,2", [f"x_ptr={size}", f"y_ptr={H * W}"],
           [f"H={H}", f"W={W}", f"stride={stride}"])
    for det in (True, False):
        k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"], deterministic=det)(cross5)

        def run(x):
            y = torch.empty(H * W, device=DEVICE)
            k[(3, 2)](x, y, H, W, stride, BH=4, BW=8)
            return y
        _against_torch(run, lambda x: _cross5_ref(x, H, W, stride),
                       [torch.randn(size, device=DEVICE, requires_grad=True)])


def test_site_rows_two_shifted_sites():
    """Two sites one block apart: disjoint within a program, not across programs."""
    sig = "x_ptr=*fp32,y_ptr=*fp32,BLOCK=8"
    text = _module("shifted_sites", sig, "x_ptr", "y_ptr")
    assert "reads x_ptr at 2 sites" in text.split("import triton")[0]
    _check("shifted_sites", sig, "x_ptr", "y_ptr", "3", ["x_ptr=32", "y_ptr=24"])
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(shifted_sites)

    def run(x):
        y = torch.empty(24, device=DEVICE)
        k[(3,)](x, y, BLOCK=8)
        return y
    _against_torch(run, lambda x: x[:24] * torch.exp(x[8:32]), [torch.randn(32, device=DEVICE, requires_grad=True)])
