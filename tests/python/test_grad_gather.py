"""The gather form of a stencil's input gradient (docs/AD.md, "Gather"; src/ad/write/gather.c).

When every site reading an input is a function of the programs' positions pid * BLOCK +
tl.arange(0, BLOCK) shifted by a constant, kad writes its gradient with a kernel of its own that
sums, for each element, the sites' gradients in a fixed order and stores it once.  Each case runs
the emitted launcher (Triton's CPU interpreter; KAD_GRAD_TEST_DEVICE=cuda: a GPU) with the gradient
buffers filled with NaN (what the launcher does not write shows), and compares against PyTorch
autograd of the same math in float64; the package's CPU path (kad's interpreter) and `kad check`
(float64 finite differences) run some too.  The negative cases must keep today's form (no gather
kernel in the module) and stay right.
"""
import os

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import kad  # noqa: E402
import triton_cpu  # noqa: E402
from test_grad_cover import _close as _cover_close, _nan_view  # noqa: E402
from test_grad_fold_partials import _randn, _ref_grads  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
HERE = __file__


@pytest.fixture(scope="module")
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


# the 3x3 box filter of the goldens (tests/grad/gather.py), one kernel for both
GOLDEN = os.path.join(triton_cpu.TESTS, "grad", "gather.py")
box3x3 = triton_cpu.load_module(GOLDEN, "kad_gather_golden").box3x3


@triton.jit
def taps_nl(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a nonlinear tap: the site of x[i+1] needs x[i-1] at its own position
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0).to(tl.float32)
    mid = tl.load(x_ptr + i, mask=i < n, other=0.0).to(tl.float32)
    right = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0).to(tl.float32)
    y = left * tl.sin(right) + 0.5 * mid * mid
    tl.store(y_ptr + i, y.to(y_ptr.dtype.element_ty), mask=i < n)


@triton.jit
def taps_w(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # three weights every program reads (folded) times three shifted taps (gathered)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    taps = tl.arange(0, 4)
    w = tl.load(w_ptr + taps, mask=taps < 3, other=0.0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(3):
        wk = tl.sum(tl.where(taps == k, w, 0.0), axis=0)
        xk = tl.load(x_ptr + i + k - 1, mask=(i + k >= 1) & (i + k - 1 < n), other=0.0)
        acc += wk * xk
    tl.store(y_ptr + i, tl.sin(acc), mask=i < n)


@triton.jit
def taps_rowsum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a tap scaled by its block's sum: not position-pointwise
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0)
    mid = tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(y_ptr + i, left * tl.sum(mid, axis=0) + mid, mask=i < n)


@triton.jit
def taps_indexed(x_ptr, idx_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # one site's offset is data-dependent (an index loaded from memory)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    j = tl.load(idx_ptr + i, mask=m, other=0)
    a = tl.load(x_ptr + i + 1, mask=m, other=0.0)
    b = tl.load(x_ptr + j, mask=m, other=0.0)
    tl.store(y_ptr + i, a * b, mask=m)


@triton.jit
def taps_transposed(x_ptr, y_ptr, N, stride, B: tl.constexpr):
    # two sites with swapped strides: x[r, c] and x[c, r]
    r = tl.program_id(0) * B + tl.arange(0, B)
    c = tl.program_id(1) * B + tl.arange(0, B)
    m = (r[:, None] < N) & (c[None, :] < N)
    a = tl.load(x_ptr + r[:, None] * stride + c[None, :], mask=m, other=0.0)
    t = tl.load(x_ptr + c[None, :] * stride + r[:, None], mask=m, other=0.0)
    tl.store(y_ptr + r[:, None] * N + c[None, :], a * t, mask=m)


@triton.jit
def taps_pid(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # the program id used outside its position: a value scaled by it
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0)
    right = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0)
    tl.store(y_ptr + i, left + right * (pid + 1).to(tl.float32), mask=i < n)


@triton.jit
def taps_scaled(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SAME: tl.constexpr):
    # two taps scaled by literals: one factor (SAME) or two
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0)
    b = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0)
    if SAME:
        y = 0.3 * (a + b)
    else:
        y = a * 0.25 + b / 3.0
    tl.store(y_ptr + i, y, mask=i < n)


@triton.jit
def cross5(x_ptr, y_ptr, H, W, BH: tl.constexpr, BW: tl.constexpr):
    # a 5-point cross: its taps are not every (row, column) combination
    r = (tl.program_id(0) * BH + tl.arange(0, BH))[:, None]
    c = (tl.program_id(1) * BW + tl.arange(0, BW))[None, :]
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for t in tl.static_range(5):
        dr = (t == 2) - (t == 1)
        dc = (t == 4) - (t == 3)
        rr, cc = r + dr, c + dc
        acc += tl.load(x_ptr + rr * W + cc, mask=(rr >= 0) & (rr < H) & (cc >= 0) & (cc < W), other=0.0)
    tl.store(y_ptr + r * W + c, acc * 0.2, mask=(r < H) & (c < W))


def _module(kernel, sig, wrt, out, tmp_path, file=HERE):
    return triton_cpu.grad_module(file, kernel, sig, wrt, out, tmp_path, "gather")


def _close(got, want, what, src, tol=1e-4):
    _cover_close(got, want, what, src, rtol=tol, atol=tol)


def _box_ref(src, H, W, rows, cols):
    """3x3 mean with zero padding, for the output elements [0, rows) x [0, cols) (the launched
    ones inside the image); the others are not written: 0."""
    p = torch.nn.functional.pad(src[:H, :W], (1, 1, 1, 1))
    y = sum(p[1 + dr:1 + dr + H, 1 + dc:1 + dc + W] for dr in (-1, 0, 1) for dc in (-1, 0, 1)) / 9.0
    keep = torch.zeros(H, W, dtype=torch.float64)
    keep[:rows, :cols] = 1
    return y * keep


@pytest.mark.parametrize("dt,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("case", ["full", "grid_smaller", "strided"])
def test_box_filter_gathered(tmp_path, _triton_interpreter, dt, tol, case):
    """H, W not multiples of the 16 x 32 tiles; a grid smaller than the image (rows and columns past
    it get no gradient); a strided src view (row stride W + 7)."""
    H, W, BH, BW = 37, 61, 16, 32
    name = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dt]
    mod, src = _module("box3x3", f"src=*{name},dst=*{name},H=i32,W=i32,stride_src=i32,stride_dst=i32,BH={BH},BW={BW}",
                       "src", "dst", tmp_path, GOLDEN)
    assert "def box3x3_bwd_gather_src(" in src and "d_src is gathered when" in src, src
    gather = src.split("def box3x3_bwd_gather_src(")[1].split("\n\n\n")[0]
    assert gather.count("/ 9.0") == 1, gather  # the nine taps' dy / 9: summed, then divided once
    assert "tl.where(" not in gather, gather  # each tap's dy loaded under its mask, no select
    grid = (triton.cdiv(H, BH), triton.cdiv(W, BW)) if case != "grid_smaller" else (2, 1)
    sstride = W + 7 if case == "strided" else W
    x64, dy64 = _randn(H, sstride), _randn(H, W, seed=2)
    x = x64.to(dt).to(DEVICE)
    d_x = _nan_view((H, W), (sstride, 1), dt)
    dy = dy64.to(dt).to(DEVICE)
    mod.launch_box3x3_bwd(grid, x, torch.empty(H, W, dtype=dt, device=DEVICE), H, W, sstride, W, dy, d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    rows, cols = min(H, grid[0] * BH), min(W, grid[1] * BW)
    want = _ref_grads(lambda s: _box_ref(s, H, W, rows, cols), [x.cpu().double()[:, :W]], dy.cpu().double())[0]
    _close(d_x, want, "d_src", src, tol)
    # the zero-fill: skipped when the centre tap reaches every element of the view (the gather
    # kernel stores at least that); a grid smaller than the image leaves rows to zero-fill
    (zero,) = {tuple(plan[1]) for plan in mod._kad_plans.values()}
    assert bool(zero) == (case == "grid_smaller"), (case, zero)
    if case == "grid_smaller":  # rows past the grid's reach get nothing
        assert (d_x[rows + 1:].cpu() == 0).all()


def test_box_filter_overlapping_rows_take_atomics(tmp_path, _triton_interpreter):
    """A row stride below the row length (rows overlap in memory): the gather's stores are not
    distinct elements, so the flag is false and the backward's atomics add the sites, still right."""
    H, W, S = 9, 20, 12
    mod, src = _module("box3x3", "src=*fp32,dst=*fp32,H=i32,W=i32,stride_src=i32,stride_dst=i32,BH=16,BW=32",
                       "src", "dst", tmp_path, GOLDEN)
    span = (H - 1) * S + W
    x = _randn(span).float().to(DEVICE)
    d = torch.zeros(span, dtype=torch.float32, device=DEVICE)
    dy = _randn(H, W, seed=2).float().to(DEVICE)
    mod.launch_box3x3_bwd((1, 1), x, torch.empty(H, W, device=DEVICE), H, W, S, W, dy, d)
    xs = x.cpu().double().requires_grad_()
    view = xs.as_strided((H, W), (S, 1))
    (_box_ref(view, H, W, H, W) * dy.cpu().double()).sum().backward()
    _close(d, xs.grad, "d_src (overlapping rows)", src)


@pytest.mark.parametrize("dt,tol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
def test_nonlinear_1d_stencil(tmp_path, _triton_interpreter, dt, tol):
    n, B = 150, 64
    name = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dt]
    mod, src = _module("taps_nl", f"x_ptr=*{name},y_ptr=*{name},n=i32,BLOCK={B}", "x_ptr", "y_ptr", tmp_path)
    assert "def taps_nl_bwd_gather_x_ptr(" in src, src
    x, dy = _randn(n).to(dt).to(DEVICE), _randn(n, seed=2).to(dt).to(DEVICE)
    d_x = _nan_view((n,), None, dt)
    mod.launch_taps_nl_bwd((triton.cdiv(n, B),), x, torch.empty(n, dtype=dt, device=DEVICE), n, dy, d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x):
        p = torch.nn.functional.pad(x, (1, 1))
        return p[:-2] * torch.sin(p[2:]) + 0.5 * x * x
    want = _ref_grads(ref, [x.cpu().double()], dy.cpu().double())[0]
    _close(d_x, want, "d_x", src, tol)


@pytest.mark.parametrize("same", [1, 0])
def test_common_factor_of_the_sites(tmp_path, _triton_interpreter, same):
    """Sites whose gradients all end with one literal factor (0.3 * (a + b): dy * 0.3 at both) are
    summed, then multiplied once; different literals (a * 0.25 + b / 3) stay per site."""
    n, B = 150, 64
    mod, src = _module("taps_scaled", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={B},SAME={same}", "x_ptr", "y_ptr",
                       tmp_path)
    gather = src.split("def taps_scaled_bwd_gather_x_ptr(")[1].split("\n\n\n")[0]
    scaled = [ln for ln in gather.splitlines() if "0.3" in ln or "0.25" in ln or "3.0" in ln]
    if same:  # one product, of the two sites' sum
        assert len(scaled) == 1 and "* 0.3" in scaled[0], gather
        assert "tl.where(" not in gather, gather  # each site's dy: a load under the site's mask
    else:  # each site's own
        assert len(scaled) == 2 and not any("tl.where(" in ln for ln in scaled), gather
    x, dy = _randn(n).float().to(DEVICE), _randn(n, seed=2).float().to(DEVICE)
    d_x = _nan_view((n,), None, torch.float32)
    mod.launch_taps_scaled_bwd((triton.cdiv(n, B),), x, torch.empty(n, device=DEVICE), n, dy, d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x):
        p = torch.nn.functional.pad(x, (1, 1))
        return 0.3 * (p[:-2] + p[2:]) if same else p[:-2] * 0.25 + p[2:] / 3.0
    want = _ref_grads(ref, [x.cpu().double()], dy.cpu().double())[0]
    _close(d_x, want, "d_x", src, 1e-5)


def test_cross_stencil(tmp_path, _triton_interpreter):
    """A 5-point cross (its taps are not every combination of rows and columns), with the grid
    covering the image and smaller than it (the masks matter)."""
    H, W, BH, BW = 21, 37, 8, 16
    mod, src = _module("cross5", f"x_ptr=*fp32,y_ptr=*fp32,H=i32,W=i32,BH={BH},BW={BW}", "x_ptr", "y_ptr",
                       tmp_path)
    assert "def cross5_bwd_gather_x_ptr(" in src, src
    for grid in ((triton.cdiv(H, BH), triton.cdiv(W, BW)), (2, 1)):
        x, dy = _randn(H, W).float().to(DEVICE), _randn(H, W, seed=2).float().to(DEVICE)
        d_x = _nan_view((H, W), None, torch.float32)
        mod.launch_cross5_bwd(grid, x, torch.empty(H, W, device=DEVICE), H, W, dy, d_x)
        if DEVICE != "cpu":
            torch.cuda.synchronize()
        rows, cols = min(H, grid[0] * BH), min(W, grid[1] * BW)

        def ref(x):
            p = torch.nn.functional.pad(x, (1, 1, 1, 1))
            y = (x + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) * 0.2
            keep = torch.zeros(H, W, dtype=torch.float64)
            keep[:rows, :cols] = 1
            return y * keep
        want = _ref_grads(ref, [x.cpu().double()], dy.cpu().double())[0]
        _close(d_x, want, f"d_x (grid {grid})", src, 1e-5)


def test_weight_folded_next_to_the_gather(tmp_path, _triton_interpreter):
    n, B = 100, 16
    mod, src = _module("taps_w", f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={B}", "x_ptr,w_ptr", "y_ptr",
                       tmp_path)
    assert "def taps_w_bwd_gather_x_ptr(" in src and "d_w_ptr is summed deterministically" in src, src
    x, w, dy = _randn(n), _randn(3, seed=1), _randn(n, seed=2)
    d_x, d_w = _nan_view((n,)), _nan_view((3,))
    mod.launch_taps_w_bwd((triton.cdiv(n, B),), x.float().to(DEVICE), w.float().to(DEVICE),
                          torch.empty(n, device=DEVICE), n, dy.float().to(DEVICE), d_x, d_w)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x, w):
        p = torch.nn.functional.pad(x, (1, 1))
        return torch.sin(w[0] * p[:-2] + w[1] * p[1:-1] + w[2] * p[2:])
    want = _ref_grads(ref, [x.float().double(), w.float().double()], dy.float().double())
    _close(d_x, want[0], "d_x", src)
    _close(d_w, want[1], "d_w", src)


def _rowsum_ref(n, B):
    def ref(x):
        p = torch.nn.functional.pad(x, (1, 0))[:n]
        s = torch.nn.functional.pad(x, (0, (-n) % B)).reshape(-1, B).sum(1).repeat_interleave(B)[:n]
        return p * s + x
    return ref


def test_negative_block_sum(tmp_path, _triton_interpreter):
    n, B = 40, 16
    mod, src = _module("taps_rowsum", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={B}", "x_ptr", "y_ptr", tmp_path)
    assert "_gather_" not in src and "def taps_rowsum_bwd_sum(" in src, src
    x, dy = _randn(n), _randn(n, seed=2)
    d_x = _nan_view((n,))
    mod.launch_taps_rowsum_bwd((triton.cdiv(n, B),), x.float().to(DEVICE), torch.empty(n, device=DEVICE), n,
                               dy.float().to(DEVICE), d_x)
    want = _ref_grads(_rowsum_ref(n, B), [x.float().double()], dy.float().double())[0]
    _close(d_x, want, "d_x", src)


def test_negative_data_dependent_offset(tmp_path, _triton_interpreter):
    n, B = 40, 16
    mod, src = _module("taps_indexed", f"x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,n=i32,BLOCK={B}", "x_ptr", "y_ptr",
                       tmp_path)
    assert "_gather_" not in src, src
    x, dy = _randn(n + 1), _randn(n, seed=2)
    idx = torch.randperm(n + 1, generator=torch.Generator().manual_seed(3))[:n].to(torch.int32)
    d_x = torch.zeros(n + 1, device=DEVICE)
    mod.launch_taps_indexed_bwd((triton.cdiv(n, B),), x.float().to(DEVICE), idx.to(DEVICE),
                                   torch.empty(n, device=DEVICE), n, dy.float().to(DEVICE), d_x)
    want = _ref_grads(lambda x: x[1:] * x[idx.long()], [x.float().double()], dy.float().double())[0]
    _close(d_x, want, "d_x", src)


def test_negative_transposed_tap(tmp_path, _triton_interpreter):
    N, B = 20, 8
    mod, src = _module("taps_transposed", f"x_ptr=*fp32,y_ptr=*fp32,N=i32,stride=i32,B={B}", "x_ptr", "y_ptr",
                       tmp_path)
    assert "_gather_" not in src, src
    x, dy = _randn(N, N), _randn(N, N, seed=2)
    d_x = torch.zeros(N, N, device=DEVICE)
    g = triton.cdiv(N, B)
    mod.launch_taps_transposed_bwd((g, g), x.float().to(DEVICE), torch.empty(N, N, device=DEVICE), N, N,
                                   dy.float().to(DEVICE), d_x)
    want = _ref_grads(lambda x: x * x.t(), [x.float().double()], dy.float().double())[0]
    _close(d_x, want, "d_x", src)


def test_negative_pid_outside_position(tmp_path, _triton_interpreter):
    n, B = 40, 16
    mod, src = _module("taps_pid", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={B}", "x_ptr", "y_ptr", tmp_path)
    assert "_gather_" not in src, src
    x, dy = _randn(n), _randn(n, seed=2)
    d_x = torch.zeros(n, device=DEVICE)
    mod.launch_taps_pid_bwd((triton.cdiv(n, B),), x.float().to(DEVICE), torch.empty(n, device=DEVICE), n,
                            dy.float().to(DEVICE), d_x)
    scale = (torch.arange(n) // B + 1).double()

    def ref(x):
        p = torch.nn.functional.pad(x, (1, 1))
        return p[:-2] + p[2:] * scale
    want = _ref_grads(ref, [x.float().double()], dy.float().double())[0]
    _close(d_x, want, "d_x", src)


def test_kad_check_box_grid_smaller_strided():
    """kad check (float64 finite differences on kad's interpreter, which runs the gather)."""
    p = triton_cpu.run_kad(["check", f"{GOLDEN}:box3x3", "--sig",
                            "src=*fp32,dst=*fp32,H=i32,W=i32,stride_src=i32,stride_dst=i32,BH=16,BW=32",
                            "--wrt", "src", "--out", "dst", "--grid", "2,1", "--shape", "src=37x70",
                            "--shape", "dst=37x61", "--arg", "H=37", "--arg", "W=61", "--arg", "stride_src=70",
                            "--arg", "stride_dst=61"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("dt,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_package_cpu_box(dt, tol):
    """The package's CPU path: kad's interpreter runs the plan (the gather kernel after the
    backward)."""
    k = kad.differentiable(inputs=["src"], outputs=["dst"])(box3x3)
    H, W = 21, 45
    x64, dy64 = _randn(H, W), _randn(H, W, seed=2)
    x = x64.to(dt).requires_grad_()
    y = torch.empty(H, W, dtype=dt)
    k[(triton.cdiv(H, 16), triton.cdiv(W, 32))](x, y, H, W, W, W, BH=16, BW=32)
    got = torch.autograd.grad(y, (x,), dy64.to(dt))[0]
    want = _ref_grads(lambda s: _box_ref(s, H, W, H, W), [x.detach().double()], dy64.to(dt).double())[0]
    assert torch.allclose(got.double(), want, rtol=tol, atol=tol), (got, want)
