"""Trusted saved outputs (src/ad/ad_trust.c, docs/AD.md "Trusted saved outputs").

Under autograd the package keeps the outputs and, when their version counters show them unchanged
since the forward, runs the backward that loads what the forward stored (a softmax's or
log-softmax's output, a norm's rstd and mean) instead of recomputing it.  Checked here, on
KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton): gradients against PyTorch float64
autograd, bitwise identical across runs; the trusted backward is the one that ran and it reads the
stored output (a changed output changes its result); an output changed in place between forward
and backward gives the right gradient (the recomputing backward), and so does a changed statistic
or a second launch into the same buffers; the backward's IR holds a load of y and no max, exp or sum recomputation; the generated
module's launcher requires outputs_unmodified=True.
"""
import os
import re

import pytest
import torch

import kad
import triton_cpu

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "kernels")
KAD = os.path.join(HERE, "..", "..", "build", "kad")

SM_SIG = "output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,output_row_stride=i32,n_cols=i32,BLOCK_SIZE=64"
LSM_SIG = "x_ptr=*fp32,y_ptr=*fp32,stride_x=i32,stride_y=i32,n_rows=i32,n_cols=i32,BLOCK_N=64"
RMS_SIG = ("x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,rstd_ptr=*fp32,x_row_stride=i32,y_row_stride=i32,n_cols=i32,"
           "eps=fp32,BLOCK_SIZE=64")
LN_SIG = ("X=*fp32,Y=*fp32,W=*fp32,B=*fp32,Mean=*fp32,Rstd=*fp32,stride_x=i32,stride_y=i32,N=i32,eps=fp32,"
          "BLOCK_N=16")


def _rand(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(DEVICE)


def _softmax_k(trust=True):
    m = triton_cpu.corpus_module("softmax.py")
    return kad.differentiable(inputs=["input_ptr"], outputs=["output_ptr"], trust_outputs=trust)(m.softmax_kernel)


def _softmax(k, x):
    y = torch.empty_like(x)
    k[(x.shape[0],)](y, x, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=64)
    return y


def _log_softmax_k(trust=True):
    m = triton_cpu.corpus_module("log_softmax.py")
    return kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"], trust_outputs=trust)(m.log_softmax_kernel)


def _log_softmax(k, x):
    y = torch.empty_like(x)
    k[(x.shape[0] + 3,)](x, y, x.stride(0), y.stride(0), x.shape[0], x.shape[1], BLOCK_N=64)
    return y


def _rms_k(trust=True):
    m = triton_cpu.corpus_module("rms_norm.py")
    return kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"], trust_outputs=trust)(
        m.rms_norm_fwd_kernel)


def _rms(k, x, w):
    y = torch.empty_like(x)
    rstd = torch.empty(x.shape[0], device=x.device)
    k[(x.shape[0],)](x, w, y, rstd, x.stride(0), y.stride(0), x.shape[1], 1e-6, BLOCK_SIZE=64)
    return y, rstd


def _ln_k(trust=True):
    m = triton_cpu.corpus_module("layer_norm.py")
    return kad.differentiable(inputs=["X", "W", "B"], outputs=["Y"], trust_outputs=trust)(m.layer_norm_fwd_kernel)


def _ln(k, x, w, b):
    y = torch.empty_like(x)
    mean = torch.empty(x.shape[0], device=x.device)
    rstd = torch.empty(x.shape[0], device=x.device)
    k[(x.shape[0],)](x, y, w, b, mean, rstd, x.stride(0), y.stride(0), x.shape[1], 1e-5, BLOCK_N=16)
    return y, mean, rstd


def _trusted_ran(y):
    """Whether the plan the backward of y's launch ran was the trusted one."""
    run = y.grad_fn.run
    return run.trusted()


def _grads(fn, xs, dy):
    xs = [x.clone().requires_grad_() for x in xs]
    y = fn(*xs)
    y = y[0] if isinstance(y, tuple) else y
    return y.detach(), torch.autograd.grad(y, xs, dy)


CASES = {
    "softmax": (lambda t: (lambda x: _softmax(_softmax_k(t), x)), [(6, 50)],
                lambda x: torch.softmax(x, -1)),
    "log_softmax": (lambda t: (lambda x: _log_softmax(_log_softmax_k(t), x)), [(5, 37)],
                    lambda x: torch.log_softmax(x, -1)),
    "rms_norm": (lambda t: (lambda x, w: _rms(_rms_k(t), x, w)), [(4, 40), (40,)],
                 lambda x, w: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w),
    "layer_norm": (lambda t: (lambda x, w, b: _ln(_ln_k(t), x, w, b)), [(3, 40), (40,), (40,)],
                   lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trusted_matches_torch_f64_and_is_bitwise_stable(name):
    make, shapes, ref = CASES[name]
    xs = [_rand(*s, seed=i + 1, scale=2.0) for i, s in enumerate(shapes)]
    dy = _rand(*shapes[0], seed=9)
    y, g = _grads(make(True), xs, dy)
    y2, g2 = _grads(make(True), xs, dy)
    for a, b in zip(g, g2):
        assert torch.equal(a, b)  # bitwise across runs
    xd = [x.double().cpu().requires_grad_() for x in xs]
    want = torch.autograd.grad(ref(*xd), xd, dy.double().cpu())
    for a, w in zip(g, want):
        torch.testing.assert_close(a.double().cpu(), w, rtol=1e-5, atol=1e-5)
    # the recomputing backward agrees (within fp32: the formulas differ)
    _, gr = _grads(make(False), xs, dy)
    for a, b in zip(g, gr):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_trusted_backward_runs_and_reads_y():
    k = _softmax_k()
    x = _rand(4, 30, seed=3).requires_grad_()
    y = _softmax(k, x)
    assert _trusted_ran(y)
    # the backward reads the stored y: a change that leaves the version counter alone (through
    # .data, which PyTorch does not track) changes the gradient, which proves it loaded y
    dy = _rand(4, 30, seed=4)
    g0, = torch.autograd.grad(y, x, dy, retain_graph=True)
    y.data.mul_(2.0)
    assert _trusted_ran(y)
    g1, = torch.autograd.grad(y, x, dy)
    assert not torch.allclose(g0, g1)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_output_modified_in_place_gets_the_right_gradient(name):
    make, shapes, ref = CASES[name]
    x0 = _rand(*shapes[0], seed=5, scale=2.0)
    dy = _rand(*shapes[0], seed=6)
    x = x0.clone().requires_grad_()
    y = make(True)(x)
    with torch.no_grad():
        y.mul_(3.0).add_(1.0)  # the buffer no longer holds softmax(x)
    assert not _trusted_ran(y)
    g, = torch.autograd.grad(y, x, dy)
    xd = x0.double().cpu().requires_grad_()
    want, = torch.autograd.grad(ref(xd), xd, dy.double().cpu())
    torch.testing.assert_close(g.double().cpu(), want, rtol=1e-5, atol=1e-5)


def test_output_modified_through_a_view_is_seen():
    k = _softmax_k()
    x0 = _rand(4, 30, seed=7)
    x = x0.clone().requires_grad_()
    y = _softmax(k, x)
    with torch.no_grad():
        y[1:3].zero_()  # a view shares the base's version counter
    assert not _trusted_ran(y)
    dy = _rand(4, 30, seed=8)
    g, = torch.autograd.grad(y, x, dy)
    xd = x0.double().cpu().requires_grad_()
    want, = torch.autograd.grad(torch.softmax(xd, -1), xd, dy.double().cpu())
    torch.testing.assert_close(g.double().cpu(), want, rtol=1e-5, atol=1e-5)


def _cli(*args):
    import subprocess
    r = subprocess.run([KAD, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_softmax_backward_ir_loads_y_and_recomputes_nothing():
    ir = _cli("grad", os.path.join(KERNELS, "softmax.py") + ":softmax_kernel", "--sig", SM_SIG,
              "--wrt", "input_ptr", "--out", "output_ptr", "--ir", "--trusted")
    assert re.search(r"%y = load %\d+, mask %mask", ir)
    for op in ("max", "exp", "exp2"):
        assert not re.search(rf"= {op} ", ir), op
    assert len(re.findall(r"= load ", ir)) == 2  # y and dy, no x
    plain = _cli("grad", os.path.join(KERNELS, "softmax.py") + ":softmax_kernel", "--sig", SM_SIG,
                 "--wrt", "input_ptr", "--out", "output_ptr", "--ir")
    assert re.search(r"= max ", plain) and re.search(r"= exp ", plain)


def test_log_softmax_and_norm_backward_ir():
    ir = _cli("grad", os.path.join(KERNELS, "log_softmax.py") + ":log_softmax_kernel", "--sig", LSM_SIG,
              "--wrt", "x_ptr", "--out", "y_ptr", "--ir", "--trusted")
    assert not re.search(r"= max ", ir) and not re.search(r"= log ", ir)
    assert len(re.findall(r"= exp ", ir)) == 1  # exp(y) of the loaded y
    ir = _cli("grad", os.path.join(KERNELS, "rms_norm.py") + ":rms_norm_fwd_kernel", "--sig", RMS_SIG,
              "--wrt", "x_ptr,w_ptr", "--out", "y_ptr", "--ir", "--trusted")
    assert re.search(r"%rstd = load ", ir) and not re.search(r"= rsqrt ", ir)
    ir = _cli("grad", os.path.join(KERNELS, "layer_norm.py") + ":layer_norm_fwd_kernel", "--sig", LN_SIG,
              "--wrt", "X,W,B", "--out", "Y", "--ir", "--trusted")
    assert re.search(r"%mean = load ", ir) and re.search(r"%rstd = load ", ir) and not re.search(r"= sqrt ", ir)


def test_module_launcher_requires_the_promise(tmp_path):
    text = _cli("grad", os.path.join(KERNELS, "softmax.py") + ":softmax_kernel", "--sig", SM_SIG,
                "--wrt", "input_ptr", "--out", "output_ptr", "--trusted")
    assert '_kad_trusted = ("output_ptr", )' in text
    kernel = text[text.index("@triton.jit"):text.index("\n\n\n", text.index("@triton.jit"))]
    assert "y = tl.load(out_start + col_offsets, mask=mask, other=0.0)" in kernel
    assert "dx = y * (dy - tl.sum(dy * y, axis=0))" in kernel
    for call in ("tl.max(", "tl.exp(", "tl.exp2(", " input_ptr +"):
        assert call not in kernel, call
    assert "def launch_softmax_kernel_bwd(grid, *args, outputs_unmodified," in text
    assert "outputs_unmodified=True" in text.split("\n\n")[0]  # the header says so
    plain = _cli("grad", os.path.join(KERNELS, "softmax.py") + ":softmax_kernel", "--sig", SM_SIG,
                 "--wrt", "input_ptr", "--out", "output_ptr")
    assert "outputs_unmodified" not in plain and "_kad_trusted" not in plain
    path = tmp_path / "sm_bwd.py"
    path.write_text(text)
    import importlib.util
    spec = importlib.util.spec_from_file_location("sm_bwd_trusted", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # no Triton to import here
        pytest.skip(f"the module does not import here: {e}")
    with pytest.raises(TypeError, match="outputs_unmodified"):
        mod.launch_softmax_kernel_bwd((1,))
    with pytest.raises(ValueError, match="outputs_unmodified=True"):
        mod.launch_softmax_kernel_bwd((1,), outputs_unmodified=False)


def test_trusted_off_recomputes():
    k = _softmax_k(trust=False)
    x = _rand(4, 30, seed=3).requires_grad_()
    y = _softmax(k, x)
    assert not _trusted_ran(y)


def _tk():
    import trusted_kernels
    return trusted_kernels


def _spell(name, trust, x):
    tk = _tk()
    rows, n = x.shape
    if name == "softmax_exp2":
        k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"], trust_outputs=trust)(tk.softmax_exp2)
        y = torch.empty_like(x)
        k[(rows,)](x, y, n, BLOCK=64)
        return y
    if name in ("softmax_rows", "log_softmax_rows"):
        k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"], trust_outputs=trust)(getattr(tk, name))
        y = torch.empty_like(x)
        k[((rows + 3) // 4,)](x, y, rows, n, BM=4, BN=64)
        return y
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"], trust_outputs=trust)(tk.softmax_half_stored)
    y = torch.zeros_like(x)
    k[(rows,)](x, y, n // 2, BLOCK=n)
    return y


SPELLINGS = {
    "softmax_exp2": (lambda x: torch.softmax(x, -1), (5, 45), True),
    "softmax_rows": (lambda x: torch.softmax(x, -1), (7, 45), True),
    "log_softmax_rows": (lambda x: torch.log_softmax(x, -1), (7, 45), True),
    # only the first half of each row is stored: not trusted, recomputed
    "softmax_half_stored": (lambda x: torch.cat([torch.softmax(x, -1)[:, :16], torch.zeros_like(x[:, 16:])], -1),
                            (3, 32), False),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_softmax_spellings(name):
    ref, shape, loads = SPELLINGS[name]
    x0 = _rand(*shape, seed=11, scale=3.0)
    dy = _rand(*shape, seed=12)
    x = x0.clone().requires_grad_()
    y = _spell(name, True, x)
    g, = torch.autograd.grad(y, x, dy)
    xd = x0.double().cpu().requires_grad_()
    want, = torch.autograd.grad(ref(xd), xd, dy.double().cpu())
    torch.testing.assert_close(g.double().cpu(), want, rtol=1e-5, atol=1e-5)
    if DEVICE == "cpu":  # what the backward loads: y for the trusted idioms, nothing for the other
        b = y.grad_fn.run.prep.bwd
        k = next(v[3] for key, v in b.items() if key[-1])
        assert (k.trusted == "y_ptr") == loads
        assert (not re.search(r"= (exp|exp2|max) ", re.sub(r"exp %y", "", k.ir))) == loads


def test_statistic_changed_in_place_recomputes():
    # mean and rstd are kept by the package, not saved for PyTorch: a changed one makes the backward
    # recompute it (it reads nothing else of the buffer)
    make, shapes, ref = CASES["layer_norm"]
    xs = [_rand(*s, seed=i + 1, scale=2.0) for i, s in enumerate(shapes)]
    dy = _rand(*shapes[0], seed=9)
    ins = [x.clone().requires_grad_() for x in xs]
    y, mean, rstd = _ln(_ln_k(), *ins)
    with torch.no_grad():
        rstd.fill_(7.0)
        mean.zero_()
    assert not _trusted_ran(y)
    g = torch.autograd.grad(y, ins, dy)
    xd = [x.double().cpu().requires_grad_() for x in xs]
    want = torch.autograd.grad(ref(*xd), xd, dy.double().cpu())
    for a, w in zip(g, want):
        torch.testing.assert_close(a.double().cpu(), w, rtol=1e-5, atol=1e-5)


def test_a_second_launch_into_the_same_buffers_is_seen():
    # the same output and rstd buffers written again by a launch autograd records, and by one it
    # does not (no_grad): the first launch's backward must not load the second's values
    k = _rms_k()
    x1, x2 = _rand(4, 40, seed=1, scale=2.0), _rand(4, 40, seed=2, scale=0.5)
    w0 = _rand(40, seed=3)
    dy = _rand(4, 40, seed=4)
    for grad_mode in (True, False):
        a = x1.clone().requires_grad_()
        w = w0.clone().requires_grad_()
        y = torch.empty_like(a)
        rstd = torch.empty(4, device=a.device)
        k[(4,)](a, w, y, rstd, a.stride(0), y.stride(0), 40, 1e-6, BLOCK_SIZE=64)
        y1 = y
        with torch.set_grad_enabled(grad_mode):
            b = x2.clone().requires_grad_(grad_mode)
            k[(4,)](b, w0, torch.empty_like(y), rstd, b.stride(0), y.stride(0), 40, 1e-6, BLOCK_SIZE=64)
        assert not _trusted_ran(y1)
        g = torch.autograd.grad(y1, (a, w), dy)
        ad, wd = x1.double().cpu().requires_grad_(), w0.double().cpu().requires_grad_()
        want = torch.autograd.grad(ad * torch.rsqrt((ad * ad).mean(-1, keepdim=True) + 1e-6) * wd, (ad, wd),
                                   dy.double().cpu())
        for u, v in zip(g, want):
            torch.testing.assert_close(u.double().cpu(), v, rtol=1e-5, atol=1e-5)


def test_gradcheck_f64_through_a_loaded_fp32_statistic():
    # float64 inputs, an fp32 rstd buffer: f64 mode computes in float64, so the package does not
    # trust the rounded buffer (it recomputes); the trusted backward itself runs on a float64 copy
    # of a buffer it loads (kept alive while the kernel runs: it was freed before, when only
    # written buffers were kept), checked by running it directly
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    k = _rms_k()
    x = _rand(4, 40, seed=1).double().requires_grad_()
    w = _rand(40, seed=2).double().requires_grad_()
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda a, b: _rms(k, a, b)[0], (x, w), eps=1e-6, atol=1e-7, rtol=1e-5)
        y, rstd = _rms(k, x.detach(), w.detach())
    assert y.grad_fn is None
    prog = k.program
    g = prog.forward(_f64_sig()).grad(["x_ptr", "w_ptr"], ["y_ptr"], deterministic=False, trusted=True)
    assert g.trusted == "rstd_ptr"
    import kad.autograd as A
    outs = []
    for _ in range(2):
        dy, dx, dw = torch.ones_like(y), torch.zeros_like(x), torch.zeros_like(w)
        A.run_cpu(g, (4,), [x.detach(), w.detach(), y, rstd, 40, 40, 40, 1e-6, dy, dx, dw], "f64", written=[dx, dw])
        outs.append(dx)
    assert torch.equal(outs[0], outs[1]) and outs[0].abs().max() > 1e-3


def _f64_sig():
    return RMS_SIG.replace("x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32", "x_ptr=*fp64,w_ptr=*fp64,y_ptr=*fp64")


@pytest.mark.parametrize("kernel_file,kernel,sig,wrt,out", [
    ("softmax.py", "softmax_kernel", SM_SIG, "input_ptr", "output_ptr"),
    ("log_softmax.py", "log_softmax_kernel", LSM_SIG, "x_ptr", "y_ptr"),
])
def test_emitted_trusted_module_on_triton(kernel_file, kernel, sig, wrt, out, tmp_path):
    """The generated Triton module of the trusted backward (the launcher's path), run after the
    original kernel on Triton's interpreter (CPU) or the GPU: against torch float64 autograd."""
    text = _cli("grad", os.path.join(KERNELS, kernel_file) + ":" + kernel, "--sig", sig, "--wrt", wrt,
                "--out", out, "--trusted")
    path = tmp_path / f"{kernel}_trusted_bwd.py"
    path.write_text(text)
    rows, n = 5, 37
    x0 = _rand(rows, n, seed=21, scale=2.0)
    dy = _rand(rows, n, seed=22)
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), f"kad_trusted_{kernel}")
        # the kernel defined afresh in interpreter mode (corpus_module's copy may predate it)
        fwd = getattr(triton_cpu.load_module(os.path.join(KERNELS, kernel_file), f"kad_trusted_fwd_{kernel}"),
                      kernel)
        y = torch.empty_like(x0)
        dx = torch.full_like(x0, float("nan"))
        if kernel == "softmax_kernel":
            grid, args, consts = (rows,), [y, x0, x0.stride(0), y.stride(0), n], dict(BLOCK_SIZE=64)
        else:
            grid, args, consts = (rows + 3,), [x0, y, x0.stride(0), y.stride(0), rows, n], dict(BLOCK_N=64)
        triton_cpu.launch(fwd, grid, dict(zip([p for p in _names(sig)], args)), consts, DEVICE)
        launch = getattr(bwd, f"launch_{kernel}_bwd")
        launch(grid, *args, dy, dx, outputs_unmodified=True, **consts)
    ref = torch.softmax if kernel == "softmax_kernel" else torch.log_softmax
    xd = x0.double().cpu().requires_grad_()
    want, = torch.autograd.grad(ref(xd, -1), xd, dy.double().cpu())
    torch.testing.assert_close(dx.double().cpu(), want, rtol=1e-5, atol=1e-5)


def _names(sig):
    return [p.split("=")[0] for p in sig.split(",") if not p.split("=")[1][:1].isdigit()]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_narrow_output_is_loaded_rounded(name, dtype):
    """A bf16 or fp16 softmax output (stored through a cast from fp32): the trusted backward loads
    the rounded y, as PyTorch's own backward reads its narrow saved output.  Its gradient is within
    the dtype's rounding of float64 autograd and of the recomputing backward's; an output changed in
    place still gets the recomputing backward."""
    make, shapes, ref = CASES[name]
    x0 = _rand(*shapes[0], seed=31, scale=2.0).to(dtype)
    dy = _rand(*shapes[0], seed=32).to(dtype)
    x = x0.clone().requires_grad_()
    y = make(True)(x)
    run = y.grad_fn.run
    assert run.trusted() and run.prep.plan(run, y.grad_fn.needs_input_grad, (False,), True)[3][6]  # loads y
    g, = torch.autograd.grad(y, x, dy)
    _, gr = _grads(make(False), [x0], dy)
    xd = x0.double().cpu().requires_grad_()
    want, = torch.autograd.grad(ref(xd), xd, dy.double().cpu())
    tol = 1e-2 if dtype == torch.bfloat16 else 2e-3  # a few units of the dtype's rounding
    scale = want.abs().max().item()
    torch.testing.assert_close(g.double().cpu(), want, rtol=tol, atol=tol * scale)
    torch.testing.assert_close(g.double().cpu(), gr[0].double().cpu(), rtol=tol, atol=tol * scale)
    x = x0.clone().requires_grad_()
    y = make(True)(x)
    with torch.no_grad():
        y.mul_(3.0).add_(1.0)
    assert not _trusted_ran(y)
    g, = torch.autograd.grad(y, x, dy)
    torch.testing.assert_close(g.double().cpu(), want, rtol=tol, atol=tol * scale)


def test_narrow_softmax_ir_loads_y_and_casts():
    sig = SM_SIG.replace("*fp32", "*bf16")
    ir = _cli("grad", os.path.join(KERNELS, "softmax.py") + ":softmax_kernel", "--sig", sig,
              "--wrt", "input_ptr", "--out", "output_ptr", "--ir", "--trusted")
    assert re.search(r"= load %\d+, mask %mask, other %\d+ : bf16\[64\]", ir), ir
    assert re.search(r"%y = cast %\d+ : fp32\[64\]", ir), ir
    for op in ("max", "exp"):
        assert not re.search(rf"= {op} ", ir), op
