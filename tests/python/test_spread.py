"""A backward's loop spread over more programs (src/ad/write/spread.c, docs/AD.md "Spreading a loop over
programs").

A backward whose work is one loop sharing nothing between iterations takes the parameter
kad_spread (S): its launcher runs each forward program's iterations on S programs when the launch
has fewer programs than twice the GPU's SMs (2 on the CPU).  Checked here: the emitted module
(Triton's CPU interpreter; KAD_GRAD_TEST_DEVICE=cuda: a GPU) gives the same bits for every S and
matches PyTorch autograd in float64; S as the launcher picks it; the backwards the rule leaves
alone (a load of what the loop writes, a loop before it); the package's cross-entropy with saved
results (its backward spread) against the recompute and float64 autograd, on KAD_TEST_DEVICE.
"""
import os
import re

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import kad  # noqa: E402
import triton_cpu  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
PKG_DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
KERNELS = os.path.join(triton_cpu.TESTS, "kernels", "spread_loops.py")
SIG = "x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16"


@pytest.fixture(scope="module")
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _softplus_bwd(mod, rows, n, stride, x, dy):
    d_x = torch.full((rows, stride), float("nan"), device=DEVICE)
    mod.launch_row_softplus_bwd((rows,), x, torch.empty_like(x), n, stride, dy, d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    return d_x


@pytest.mark.parametrize("block,rows,n,stride", [(16, 2, 61, 64), (16, 3, 64, 64), (16, 1, 16, 64),
                                                 (16384, 2, 38000, 40000), (16384, 3, 16384, 16384)])
def test_same_bits_for_every_spread(tmp_path, _triton_interpreter, block, rows, n, stride):
    """Each row's chunks dealt to S programs: S as the launcher picks it, the same bits with S = 1,
    float64 autograd.  A chunk of 16384 lanes is split into two of 8192 (KAD_SPREAD_TILE): twice
    the iterations to deal."""
    sig = SIG.replace("BLOCK=16", f"BLOCK={block}")
    mod, src = triton_cpu.grad_module(KERNELS, "row_softplus", sig, "x_ptr", "y_ptr", tmp_path, "spread")
    parts = max(block // 8192, 1)
    if parts == 1:
        assert "kad_spread," in src and f"range(tl.program_id(0) % kad_spread * {block}" in src, src
    else:
        assert "tl.arange(0, 8192) + " in src and f"% {block} > 0, tl.int32)) * {parts}" in src, src
    x64, dy64 = _randn(rows, stride), _randn(rows, stride, seed=1)
    x, dy = x64.float().to(DEVICE), dy64.float().to(DEVICE)
    got = _softplus_bwd(mod, rows, n, stride, x, dy)
    (plan,) = mod._kad_plans.values()
    deal = -(-n // block) * parts
    if DEVICE == "cpu":
        want_s = min(deal, 2) if deal > 1 else 1
    else:  # the fewest programs per row that reach 2 per SM, iterations shared evenly
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        s = min(deal, -(-2 * sms // rows)) if rows < 2 * sms and deal > 1 else 1
        want_s = -(-deal // -(-deal // s))
    assert plan[0][-1] == want_s  # the flags, then S
    # the launch as before the spread: S = 1 (the plan's compiled kernels dropped: Triton specializes 1)
    plan[0][-1] = 1
    plan[2] and plan[2].clear()
    d_x1 = _softplus_bwd(mod, rows, n, stride, x, dy)
    assert torch.equal(got[:, :n], d_x1[:, :n])
    xr = x.cpu().double().requires_grad_()
    (want,) = torch.autograd.grad(torch.nn.functional.softplus(xr[:, :n]), xr, dy.cpu().double()[:, :n])
    torch.testing.assert_close(got[:, :n].cpu().double(), want[:, :n], rtol=1e-5, atol=1e-6)


def test_rule_leaves_alone(tmp_path):
    def ir(kernel, sig, wrt, out):
        p = triton_cpu.run_kad(["grad", f"{KERNELS}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out, "--ir"])
        assert p.returncode == 0, p.stderr
        return p.stdout
    assert "spread(%kad_spread trips cdiv(max(%n, 0), 16))" in ir("row_softplus", SIG, "x_ptr", "y_ptr")
    # the in-place output's gradient is read (dy) and written (dx) by the loop
    assert "kad_spread" not in ir("row_square_inplace", "x_ptr=*fp32,n=i32,stride=i32,BLOCK=16", "x_ptr", "x_ptr")
    # the row's sum of dy comes first, in a loop of its own
    assert "kad_spread" not in ir("row_center", SIG, "x_ptr", "y_ptr")
    # wide tiles: split into 8192 lanes, but not a descriptor's (its block shape is its own)
    wide = SIG.replace("BLOCK=16", "BLOCK=16384")
    assert "i32[8192]" in ir("row_softplus", wide, "x_ptr", "y_ptr")
    desc = ir("row_softplus_desc", wide, "x_ptr", "y_ptr")
    assert "spread(%kad_spread" in desc and "[8192]" not in desc


def _ce(save):
    ce = triton_cpu.corpus_module("cross_entropy.py")
    return kad.differentiable(inputs=["logits_ptr"], outputs=["loss_ptr", "lse_ptr"], save=save)(
        ce.cross_entropy_fwd_kernel)


@pytest.mark.parametrize("rows,V,block", [(2, 100, 32), (5, 100, 32), (2, 40000, 16384)])
def test_cross_entropy_saved_backward_spread(rows, V, block):
    """The saved backward (its loop spread: 2 programs per row on the CPU; 16384-wide chunks split
    in two) against the recompute (not spread: its loops come first) and float64 autograd; a row
    labelled ignore_index."""
    x0 = _randn(rows, V, seed=4).float().to(PKG_DEVICE)
    labels = torch.randint(0, V, (rows,), generator=torch.Generator().manual_seed(5))
    labels[-1] = -100
    labels = labels.to(PKG_DEVICE)
    grads = {}
    for save in (True, False):
        x = x0.clone().requires_grad_()
        loss = torch.empty(rows, device=PKG_DEVICE)
        lse = torch.empty(rows, device=PKG_DEVICE)
        k = _ce(save)
        k[(rows,)](x, labels, loss, lse, x.stride(0), V, -100, BLOCK_SIZE=block)
        assert (loss.grad_fn.run.saved is not None) == save
        (grads[save],) = torch.autograd.grad((loss, lse), x, (torch.ones_like(loss), torch.ones_like(lse)))
    torch.testing.assert_close(grads[True], grads[False], rtol=1e-6, atol=1e-7)
    xr = x0.cpu().double().requires_grad_()
    loss = torch.nn.functional.cross_entropy(xr, labels.cpu(), reduction="none", ignore_index=-100)
    (want,) = torch.autograd.grad(loss.sum() + torch.logsumexp(xr, 1).sum(), xr)
    torch.testing.assert_close(grads[True].cpu().double(), want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Lanes in parts (split_lanes in src/ad/write/spread.c, docs/AD.md "Lanes in parts"): a loop-free
# backward that is lane by lane on one tile wider than KAD_LANE_TILE lanes runs in parts of that
# many, in kad's loop over `part`, which is then spread like any loop.

LANES = 1024  # KAD_LANE_TILE
WHOLE = "x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16"


@pytest.mark.parametrize("block,rows,n,stride", [(4096, 3, 4000, 4096), (2048, 2, 2048, 2100),
                                                 (4096, 1, 1500, 4100), (2048, 300, 2000, 2048)])
def test_lanes_in_parts(tmp_path, _triton_interpreter, block, rows, n, stride):
    """The whole row in one block: the backward's loop over the row's parts, S as the launcher
    picks it (at least 2: on a GPU 300 rows fill twice its SMs, and the parts still take 2
    programs a row), the same bits with S = 1, float64 autograd (rows shorter than the block:
    masked parts, one of them empty)."""
    sig = WHOLE.replace("BLOCK=16", f"BLOCK={block}")
    mod, src = triton_cpu.grad_module(KERNELS, "row_softplus_whole", sig, "x_ptr", "y_ptr", tmp_path, "lanes")
    parts = block // LANES
    assert f"for part in range(tl.program_id(0) % kad_spread, {parts}, kad_spread):" in src, src
    assert f"tl.arange(0, {LANES}) + part * {LANES}" in src and f"tl.arange(0, {block})" not in src, src
    x64, dy64 = _randn(rows, stride, seed=2), _randn(rows, stride, seed=3)
    x, dy = x64.float().to(DEVICE), dy64.float().to(DEVICE)

    def run():
        d_x = torch.full((rows, stride), float("nan"), device=DEVICE)
        mod.launch_row_softplus_whole_bwd((rows,), x, torch.empty_like(x), n, stride, dy, d_x)
        if DEVICE != "cpu":
            torch.cuda.synchronize()
        return d_x
    got = run()
    (plan,) = mod._kad_plans.values()
    if DEVICE == "cpu":
        want_s = 2
    else:
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        s = min(parts, -(-2 * sms // rows)) if rows < 2 * sms else 1
        want_s = max(-(-parts // -(-parts // s)), 2)  # a row in parts: at least 2 programs
    assert plan[0][-1] == want_s
    plan[0][-1] = 1
    plan[2] and plan[2].clear()
    assert torch.equal(got[:, :n], run()[:, :n])
    xr = x.cpu().double().requires_grad_()
    (want,) = torch.autograd.grad(torch.nn.functional.softplus(xr[:, :n]), xr, dy.cpu().double()[:, :n])
    torch.testing.assert_close(got[:, :n].cpu().double(), want[:, :n], rtol=1e-5, atol=1e-6)


def test_lanes_rule_leaves_alone():
    def ir(kernel, sig, wrt="x_ptr", out="y_ptr"):
        p = triton_cpu.run_kad(["grad", f"{KERNELS}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out, "--ir"])
        assert p.returncode == 0, p.stderr
        return p.stdout
    wide = WHOLE.replace("BLOCK=16", "BLOCK=4096")
    got = ir("row_softplus_whole", wide)
    assert "for %part" in got and "[1024]" in got and "[4096]" not in got
    assert "spread(%kad_spread trips max(4, 0) lanes 4096)" in got
    # a tile of at most KAD_LANE_TILE lanes: as written
    assert "kad_spread" not in ir("row_softplus_whole", WHOLE.replace("BLOCK=16", "BLOCK=1024"))
    # the row's mean first: not lane by lane
    assert "kad_spread" not in ir("row_center_whole", wide)
    # the output's gradient read and written in one tile: a part would read an earlier part's write
    assert "kad_spread" not in ir("row_square_inplace_whole", "x_ptr=*fp32,n=i32,stride=i32,BLOCK=4096",
                                  out="x_ptr")


def _main_warps(kernel_file, kernel, sig, wrt, out):
    """The num_warps default of the backward kernel's launch in kad's module (docs/GRAD.md, "Launch
    parameters"), and the module."""
    p = triton_cpu.run_kad(["grad", f"{kernel_file}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out])
    assert p.returncode == 0, p.stderr
    (w,) = re.findall(r"_w, _s = num_warps or (\d+), num_stages", p.stdout)
    return int(w), p.stdout


def test_launch_warps_lane_rule():
    """Lane by lane without a loop on 1024 lanes or more: 8 warps (4 lanes a thread on 1024), also
    for a row in parts; narrower tiles and other kernels keep the general rule (256 lanes a warp up
    to 2048)."""
    def warps(kernel, block):
        return _main_warps(KERNELS, kernel, WHOLE.replace("BLOCK=16", f"BLOCK={block}"), "x_ptr", "y_ptr")[0]
    assert warps("row_softplus_whole", 1024) == 8  # the general rule: 4
    assert warps("row_softplus_whole", 4096) == 8  # in parts of 1024
    assert warps("row_softplus_whole", 512) == 2
    assert warps("row_softplus_whole", 256) == 1
    assert warps("row_center_whole", 1024) == 4  # a reduction first: not lane by lane
    assert warps("row_center_whole", 4096) == 8
    geglu = os.path.join(triton_cpu.TESTS, "kernels", "geglu.py")
    sig = "a_ptr=*bf16,b_ptr=*bf16,c_ptr=*bf16,stride_in=i32,stride_out=i32,n_cols=i32,BLOCK_SIZE=1024"
    assert _main_warps(geglu, "geglu_fwd_kernel", sig, "a_ptr,b_ptr", "c_ptr")[0] == 8


@pytest.mark.parametrize("dt", ["fp32", "bf16"])
def test_launch_warps_piped_fold(dt):
    """A folded backward with a pipelined fold loop on rows over 2048 elements: 1024 elements a
    warp whatever the dtype (RMSNorm 4096: 4 warps; fp32 took 8 before the H200's sweep)."""
    rms = os.path.join(triton_cpu.TESTS, "kernels", "rms_norm.py")
    sig = (f"x_ptr=*{dt},w_ptr=*{dt},y_ptr=*{dt},rstd_ptr=*fp32,x_row_stride=i32,y_row_stride=i32,n_cols=i32,"
           "eps=fp32,BLOCK_SIZE={}")
    w, src = _main_warps(rms, "rms_norm_fwd_kernel", sig.format(4096), "x_ptr,w_ptr", "y_ptr")
    assert "num_stages=3" in src and w == 4  # the fold loop is pipelined
    assert _main_warps(rms, "rms_norm_fwd_kernel", sig.format(2048), "x_ptr,w_ptr", "y_ptr")[0] == 8  # 256 a warp


@pytest.mark.parametrize("dt", ["fp32", "bf16"])
def test_lanes_geglu_package(dt):
    """GeGLU (tests/kernels/geglu.py, the whole row in one block) through the package on
    KAD_TEST_DEVICE: its backward runs in parts of 1024 lanes; float64 autograd of the same math."""
    geglu = triton_cpu.corpus_module("geglu.py")
    dtype = torch.float32 if dt == "fp32" else torch.bfloat16
    rows, cols = 3, 3900
    a0 = (_randn(rows, cols, seed=6) * 2).to(dtype).to(PKG_DEVICE)
    b0 = _randn(rows, cols, seed=7).to(dtype).to(PKG_DEVICE)
    a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    k = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(geglu.geglu_fwd_kernel)
    c = torch.empty_like(a)
    k[(rows,)](a, b, c, a.stride(0), c.stride(0), cols, BLOCK_SIZE=4096)
    dc = _randn(rows, cols, seed=8).to(dtype).to(PKG_DEVICE)
    da, db = torch.autograd.grad(c, (a, b), dc)
    ar, br = a0.cpu().double().requires_grad_(), b0.cpu().double().requires_grad_()
    gelu = torch.nn.functional.gelu(ar, approximate="tanh")
    # the kernel rounds the gate to b's type before the product (its cast passes the gradient as is)
    rounded = gelu + (gelu.detach().float().to(dtype).double() - gelu.detach())
    want_a, want_b = torch.autograd.grad(rounded * br, (ar, br), dc.cpu().double())
    # bf16: the gradients' own rounding on store (2^-9 relative) and fp32 arithmetic
    tol = dict(rtol=1e-5, atol=1e-5) if dt == "fp32" else dict(rtol=8e-3, atol=1e-3)
    torch.testing.assert_close(da.cpu().double(), want_a, **tol)
    torch.testing.assert_close(db.cpu().double(), want_b, **tol)
