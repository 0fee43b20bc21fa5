"""The package's contract beyond the math: which backward is specialized,
caching, strided tensors, several launches in one graph, check_backward,
backward_source (also run under Triton's interpreter), and errors.  CPU
tensors (kad's interpreter)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/ -> `import kernels`


@kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr", "rstd_ptr"])
@triton.jit
def rmsnorm(x_ptr, w_ptr, y_ptr, rstd_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, w, y=None, rstd=None):
    M, N = x.shape
    y = torch.empty_like(x) if y is None else y
    rstd = torch.empty(M) if rstd is None else rstd
    rmsnorm[(M,)](x, w, y, rstd, x.stride(0), y.stride(0), N, 1e-6, BLOCK=triton.next_power_of_2(N))
    return y, rstd


def ref(x, w):
    r = torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6)
    return x * r * w, r[:, 0]


def leaves(M=8, N=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, N, generator=g).requires_grad_(), (1 + 0.1 * torch.randn(N, generator=g)).requires_grad_()


def check_grads(loss_fn, xs):
    """Gradients of loss_fn(kad) vs loss_fn(ref) for leaves xs."""
    got = torch.autograd.grad(loss_fn(launch), xs, allow_unused=True)
    exp = torch.autograd.grad(loss_fn(lambda x, w: ref(x, w)), xs, allow_unused=True)
    for a, b in zip(got, exp):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- specialization and caching


def test_only_inputs_that_require_grad_are_differentiated():
    x, w = leaves()
    x.requires_grad_(False)
    y, _ = launch(x, w)
    y.sum().backward()
    assert x.grad is None and w.grad is not None
    assert [k[1:3] for k in rmsnorm.program.bwd if k[2] == ("y_ptr",)][-1] == (("w_ptr",), ("y_ptr",))


def test_outputs_without_gradient_are_skipped_and_several_outputs_work():
    x, w = leaves()
    y, rstd = launch(x, w)
    (y * 2).sum().backward()  # rstd unused: its gradient is None
    assert any(k[2] == ("y_ptr",) for k in rmsnorm.program.bwd)
    x2, w2 = leaves()
    check_grads(lambda f: (lambda y, r: (y ** 2).sum() + (3 * r).sum())(*f(x2, w2)), [x2, w2])


def test_no_grad_launch_runs_the_forward_only():
    x, w = leaves()
    with torch.no_grad():
        y, _ = launch(x, w)
    assert y.grad_fn is None
    torch.testing.assert_close(y, ref(x, w)[0].detach(), rtol=1e-5, atol=1e-6)


def test_second_launch_compiles_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path))
    x, w = leaves(seed=3)
    launch(x, w)[0].sum().backward()
    n = len(rmsnorm.program.bwd), len(rmsnorm.program.fwd)
    x, w = leaves(seed=4)
    launch(x, w)[0].sum().backward()
    assert (len(rmsnorm.program.bwd), len(rmsnorm.program.fwd)) == n


def test_backward_source_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path))
    x, w = leaves(M=4, N=40)
    y, r = torch.empty_like(x), torch.empty(4)
    src = kad.backward_source(rmsnorm, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64)
    assert "def rmsnorm_bwd(" in src and "def launch_rmsnorm_bwd(" in src
    files = list(tmp_path.iterdir())
    # the file is the text plus its seal line (python/kad/autograd.py: seal)
    assert len(files) == 1 and files[0].read_text() == kad.autograd.seal(src)[1]
    # a fresh decorated object (a new process, as far as kad knows) reads the file ...
    again = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr", "rstd_ptr"])(rmsnorm.fn)
    files[0].write_text(kad.autograd.seal(src + "# from the cache\n")[1])
    assert kad.backward_source(again, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64).endswith("# from the cache\n")
    # ... only when it is sealed: an edited or truncated file is generated again and replaced
    third = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr", "rstd_ptr"])(rmsnorm.fn)
    files[0].write_text(src + "# edited\n")
    assert kad.backward_source(third, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64) == src
    assert files[0].read_text() == kad.autograd.seal(src)[1]


# ---------------------------------------------------------------- layouts and graphs


def test_strided_inputs_get_gradients_with_their_strides():
    xs = torch.randn(8, 100)[:, :48].requires_grad_()  # row stride 100: not contiguous
    w = torch.ones(48, requires_grad=True)
    strides = []
    y = torch.empty(8, 50)[:, :48]  # the output is strided too
    xs.register_hook(lambda g: strides.append(g.stride()))
    launch(xs, w, y=y)
    y.sum().backward()
    assert strides == [xs.stride()]
    exp = torch.autograd.grad(ref(xs, w)[0].sum(), [xs, w])
    torch.testing.assert_close(xs.grad, exp[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad, exp[1], rtol=1e-4, atol=1e-5)


def test_kernel_launched_several_times_in_one_graph():
    x, w = leaves()
    check_grads(lambda f: f(f(x, w)[0], w)[0].pow(2).sum(), [x, w])


def test_one_output_buffer_written_by_two_launches():
    x, w = leaves(M=8)

    def two_halves(f):
        if f is launch:
            y = torch.empty(8, 48)
            launch(x[:4], w, y=y[:4])
            launch(x[4:], w, y=y[4:])
            return (y * torch.arange(48.0)).sum()
        return (ref(x, w)[0] * torch.arange(48.0)).sum()
    got = torch.autograd.grad(two_halves(launch), [x, w])
    exp = torch.autograd.grad(two_halves(None), [x, w])
    for a, b in zip(got, exp):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_overwritten_output_passes_no_gradient_to_the_first_launch():
    x1, w = leaves(seed=1)
    x2, _ = leaves(seed=2)
    y = torch.empty(8, 48)
    launch(x1, w, y=y)
    launch(x2, w, y=y)  # overwrites every element
    y.sum().backward()
    assert x1.grad is not None and x1.grad.abs().max() == 0
    assert x2.grad.abs().max() > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_buffers(dtype):
    x, w = leaves()
    xh, wh = x.detach().to(dtype).requires_grad_(), w.detach().to(dtype).requires_grad_()
    y, _ = launch(xh, wh)
    assert y.dtype == dtype
    y.float().sum().backward()
    xr, wr = xh.detach().float().requires_grad_(), wh.detach().float().requires_grad_()
    exp = torch.autograd.grad(ref(xr, wr)[0].sum(), [xr, wr])
    assert xh.grad.dtype == dtype and wh.grad.dtype == dtype
    # 8 ulps of the storage type at 1.0 (measured: fp16 5e-4, bf16 4e-3 on dx); dw sums 8 rows
    # of magnitude up to ~10, so its absolute bound is 10 times larger.
    tol = {torch.float16: 2.0**-8, torch.bfloat16: 2.0**-5}[dtype]
    torch.testing.assert_close(xh.grad.float(), exp[0], rtol=tol, atol=tol)
    torch.testing.assert_close(wh.grad.float(), exp[1], rtol=tol, atol=10 * tol)


# ---------------------------------------------------------------- check_backward


def my_rmsnorm_backward(x, w, y, rstd, stride_x, stride_y, n_cols, eps, dy, drstd, BLOCK, bug=False):
    """A hand-written backward of rmsnorm w.r.t. y (drstd ignored: rstd is a statistic)."""
    xf = x.detach()
    r = torch.rsqrt((xf * xf).mean(1, keepdim=True) + eps)
    xhat = xf * r
    dxhat = dy * w.detach()
    dw = (dy * xhat).sum(0)
    if bug:  # the planted bug: forgets the term through the row's mean square
        dx = r * dxhat
    else:
        dx = r * (dxhat - xhat * (dxhat * xhat).mean(1, keepdim=True))
    return dx, dw


@pytest.fixture
def rms_only_y():
    return kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(rmsnorm.fn)


def test_check_backward_passes_a_correct_backward(rms_only_y):
    x, w = leaves(M=6, N=40)
    args = (x.detach(), w.detach(), torch.empty(6, 40), torch.empty(6), 40, 40, 40, 1e-6)
    rep = kad.check_backward(rms_only_y, (6,), args, lambda *a, **k: my_rmsnorm_backward(*a[:9], None, **k),
                             kwargs=dict(BLOCK=64))
    assert rep.ok, str(rep)
    assert rep["x_ptr"].rel_vs_f64 < 1e-5 and rep["w_ptr"].rel_vs_f64 < 1e-5
    assert rep["x_ptr"].rel_vs_kad < 1e-5 and rep["w_ptr"].rel_vs_kad < 1e-5


def test_check_backward_catches_a_planted_bug(rms_only_y):
    x, w = leaves(M=6, N=40)
    args = (x.detach(), w.detach(), torch.empty(6, 40), torch.empty(6), 40, 40, 40, 1e-6)
    rep = kad.check_backward(rms_only_y, (6,), args,
                             lambda *a, **k: my_rmsnorm_backward(*a[:9], None, bug=True, **k), kwargs=dict(BLOCK=64))
    assert not rep.ok
    assert not rep["x_ptr"].ok and rep["w_ptr"].ok  # the bug is in dx only
    assert rep["x_ptr"].rel_vs_f64 > 1e-2
    assert len(rep["x_ptr"].worst_vs_f64) == 2  # an index into the [6, 40] gradient
    text = str(rep)
    assert "FAIL" in text and "WRONG" in text and "x_ptr" in text


# ---------------------------------------------------------------- the generated source under Triton's interpreter


def test_generated_backward_runs_under_triton_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path / "cache"))
    x, w = leaves(M=4, N=40)
    y, r = torch.empty(4, 40), torch.empty(4)
    src = kad.backward_source(rmsnorm, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64)
    y2, _ = launch(x, w)
    dy = torch.randn(4, 40, generator=torch.Generator().manual_seed(5))
    gx, gw = torch.autograd.grad(y2, [x, w], dy)
    (tmp_path / "bwd.py").write_text(src)
    torch.save(dict(x=x.detach(), w=w.detach(), dy=dy, gx=gx, gw=gw), tmp_path / "data.pt")
    script = textwrap.dedent("""
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        import bwd
        d = torch.load(sys.argv[1] + "/data.pt")
        dx, dw = torch.zeros_like(d["x"]), torch.zeros_like(d["w"])
        bwd.launch_rmsnorm_bwd((4,), d["x"], d["w"], torch.empty(4, 40), torch.empty(4), 40, 40, 40, 1e-6,
                               d["dy"], torch.zeros(4), dx, dw)
        torch.testing.assert_close(dx, d["gx"], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(dw, d["gw"], rtol=1e-4, atol=1e-5)
        print("ok")
    """)
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr


def test_backward_source_puts_the_kernels_first(tmp_path, monkeypatch):
    """The module's kernels, then a `# ---- the launcher` line, then the host code; kernels_only=True gives
    the part before that line alone (a module that still compiles), the launcher left out."""
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path / "cache"))
    x, w = leaves(M=4, N=40)
    y, r = torch.empty(4, 40), torch.empty(4)
    src = kad.backward_source(rmsnorm, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64)
    kernels, mark, host = src.partition("\n# ---- the launcher ")
    assert mark and "launch_rmsnorm_bwd(grid, *args)" in host.split("\n\n")[0], host[:400]
    assert kernels.count("@triton.jit") == src.count("@triton.jit") == 2  # the backward and its sum kernel
    assert "def launch_rmsnorm_bwd(" in host and "def launch_" not in kernels
    only = kad.backward_source(rmsnorm, (4,), x, w, y, r, 40, 40, 40, 1e-6, BLOCK=64, kernels_only=True)
    assert only.startswith(kernels.rstrip("\n") + "\n") and "launch_rmsnorm_bwd(" not in only.split("\n")[-2]
    assert "def launch_" not in only and len(only.splitlines()) * 3 < len(src.splitlines())
    compile(only, "kernels.py", "exec")


_MISSING_TORCH = """
import sys
sys.modules["torch"] = None  # as if torch were not installed
import kad
try:
    kad.differentiable
except ModuleNotFoundError as e:
    print(e.name)
    print(e)
"""


def test_missing_torch_says_what_to_install():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    p = subprocess.run([sys.executable, "-c", _MISSING_TORCH], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    name, msg = p.stdout.split("\n", 1)
    assert name == "torch"
    assert "kad.differentiable needs torch and triton" in msg
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in msg
    assert "pip install triton==3.6.0" in msg


def test_float64_into_a_float32_kernel_warns_outside_f64_mode():
    """rmsnorm casts its loads to fp32: float64 tensors outside kad.f64_mode() compute in fp32, and gradcheck
    fails with a bare Jacobian mismatch; kad says why and what to do, once per signature.  Inside f64_mode, and
    for float32 tensors, nothing is said."""
    import warnings
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr", "rstd_ptr"])(rmsnorm.fn)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 10, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(10, dtype=torch.float64, generator=g, requires_grad=True)

    def f(x, w):
        y, r = torch.empty_like(x), torch.empty(x.shape[0], dtype=x.dtype)
        k[(x.shape[0],)](x, w, y, r, x.stride(0), y.stride(0), x.shape[1], 1e-6, BLOCK=16)
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning in f64 mode, none for float32 tensors
        with kad.f64_mode():
            assert torch.autograd.gradcheck(f, (x, w))
        f(x.detach().float(), w.detach().float())
    with pytest.warns(UserWarning, match=r"rmsnorm is launched with float64 tensors \(x_ptr, w_ptr\).*casts "
                                         r"float64 values to fp32.*`with kad.f64_mode\(\):`") as rec:
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            torch.autograd.gradcheck(f, (x, w))
    assert len([r for r in rec if "kad.f64_mode" in str(r.message)]) == 1  # once, not per launch
    assert rec[0].filename == __file__  # pointing at the launch


# ---------------------------------------------------------------- errors


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])
@triton.jit
def inplace_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs, mask=offs < n)  # reads its own output: differentiated as in place
    tl.store(y_ptr + offs, y * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])
@triton.jit
def shifted_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs + 1, mask=offs + 1 < n)  # another lane writes y[i + 1]: kad refuses
    tl.store(y_ptr + offs, y * tl.load(x_ptr + offs, mask=offs + 1 < n), mask=offs + 1 < n)


def test_non_differentiable_kernel_raises_the_c_diagnostic_before_launching():
    x = torch.randn(16, requires_grad=True)
    y = torch.full((16,), 7.0)
    with pytest.raises(kad.KadError) as e:
        shifted_scale[(1,)](x, y, 16, BLOCK=16)
    msg = str(e.value)
    assert "test_package_api.py:" in msg and "cannot prove that it reads the value before the launch" in msg
    assert "tl.load(y_ptr + offs + 1" in msg and "^" in msg
    assert (y == 7.0).all()  # nothing ran


def test_output_read_by_the_kernel_is_differentiated_in_place():
    x = torch.randn(16, requires_grad=True)
    y = torch.full((16,), 7.0)
    inplace_scale[(1,)](x, y, 16, BLOCK=16)
    assert torch.allclose(y, 7.0 * x.detach())
    y.sum().backward()
    assert torch.allclose(x.grad, torch.full((16,), 7.0))  # y's value before the launch


def test_without_grad_the_same_kernel_just_runs():
    x, y = torch.full((16,), 2.0), torch.full((16,), 3.0)
    inplace_scale[(1,)](x, y, 16, BLOCK=16)
    assert (y == 6.0).all()


@pytest.mark.parametrize("grid,args,kwargs,exc,match", [
    ((2, 1, 1, 1), None, {}, ValueError, "1 to 3 dimensions"),
    ("x", None, {}, TypeError, "grid"),
    ((-1,), None, {}, ValueError, "non-negative"),
    ((4,), "short", {}, TypeError, "missing argument"),
    ((4,), None, dict(BLOK=64), TypeError, "unexpected keyword argument 'BLOK'"),
    ((4,), "notensor", {}, TypeError, "'w_ptr' must be a torch.Tensor"),
    ((4,), "u64", {}, ValueError, "unsigned 64-bit"),
])
def test_launch_mistakes_raise_before_anything_runs(grid, args, kwargs, exc, match):
    x, w = leaves(M=4, N=40)
    y, r = torch.full((4, 40), 7.0), torch.empty(4)
    full = [x, w, y, r, 40, 40, 40, 1e-6]
    if args == "short":
        full = full[:-1]
    elif args == "notensor":
        full[1] = 1.0
    elif args == "u64":
        full[4] = 2 ** 63
    kwargs = dict(dict(BLOCK=64), **kwargs) if "BLOK" not in kwargs else kwargs
    with pytest.raises(exc, match=match):
        rmsnorm[grid](*full, **kwargs)
    assert (y == 7.0).all()


def test_aliasing_and_leaf_outputs_are_refused():
    x, w = leaves(M=4, N=40)
    with pytest.raises(ValueError, match="share memory"):
        rmsnorm[(4,)](x, w, x.detach(), torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        rmsnorm[(4,)](x, w, torch.empty(4, 40, requires_grad=True), torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    # rows of one buffer: the output overlapping the input by its last element is refused, the
    # output starting right after the input's last element is not (and w's gradient is right; x's
    # history is the buffer's after the launch writes the buffer, as PyTorch has it)
    buf = torch.randn(9, 40)
    xb = buf[:4]
    out = buf.view(-1)[159:319].view(4, 40)
    with pytest.raises(ValueError, match="'y_ptr' and 'x_ptr' share memory"):
        rmsnorm[(4,)](xb, w, out, torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    xr = xb.clone()
    y = buf[4:8]
    rmsnorm[(4,)](xb, w, y, torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    got, = torch.autograd.grad(y.sum(), (w,))
    exp, = torch.autograd.grad(ref(xr, w)[0].sum(), (w,))
    torch.testing.assert_close(y.detach(), ref(xr, w)[0].detach())
    torch.testing.assert_close(got, exp)
    # strided views (rows of 80, 40 columns used): the span runs from the first element to the last,
    # so an output starting one element before x's last one is refused, one starting right after it is not
    buf = torch.randn(5, 80)
    xs = buf[:3, :40]
    with pytest.raises(ValueError, match="'y_ptr' and 'x_ptr' share memory"):
        rmsnorm[(3,)](xs, w, buf[2:5, 39:79], torch.empty(3), 80, 80, 40, 1e-6, BLOCK=64)
    xr = xs.clone()
    y = buf[2:5, 40:]
    rmsnorm[(3,)](xs, w, y, torch.empty(3), 80, 80, 40, 1e-6, BLOCK=64)
    torch.testing.assert_close(y, ref(xr, w)[0].detach())


def test_passing_an_autotuned_meta_parameter_is_refused():
    from kernels import matmul
    k = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(matmul.matmul_kernel)
    a, b, c = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8), torch.empty(8, 8)
    with pytest.raises(ValueError, match="BLOCK_M are set by the autotuner"):
        k[(1,)](a, b, c, 8, 8, 8, 8, 1, 8, 1, 8, 1, BLOCK_M=32, ACTIVATION="")


def test_decorator_mistakes():
    with pytest.raises(ValueError, match="not a parameter"):
        kad.differentiable(inputs=["z_ptr"], outputs=["y_ptr"])(rmsnorm.fn)
    with pytest.raises(ValueError, match="constexpr"):
        kad.differentiable(inputs=["BLOCK"], outputs=["y_ptr"])(rmsnorm.fn)
    with pytest.raises(TypeError, match="above @triton.jit"):
        kad.differentiable(inputs=["x"], outputs=["y"])(lambda x, y: None)


def test_tensor_requiring_grad_passed_to_an_undeclared_parameter_is_refused():
    # w_ptr is not declared: kad would read w as a constant and its gradient
    # would silently be missing.  Refused before anything runs, whether or
    # not a declared input requires grad; rstd_ptr (undeclared scratch that
    # does not require grad) and a detached w pass through.
    x_only = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(rmsnorm.fn)
    for x_grad in (True, False):
        x, w = leaves(M=4, N=40)
        x.requires_grad_(x_grad)
        y = torch.full((4, 40), 7.0)
        with pytest.raises(ValueError) as e:
            x_only[(4,)](x, w, y, torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
        msg = str(e.value)
        assert "'w_ptr'" in msg and "add 'w_ptr' to inputs=[...]" in msg and ".detach()" in msg, msg
        assert (y == 7.0).all()  # nothing ran
    # a view of a tensor that requires grad is refused too
    with pytest.raises(ValueError, match="'rstd_ptr'"):
        x_only[(4,)](x, w.detach(), y, torch.zeros(8, requires_grad=True)[:4], 40, 40, 40, 1e-6, BLOCK=64)
    # the ways out: detach it (a constant on purpose) or grad mode off
    x, w = leaves(M=4, N=40)
    y = torch.empty(4, 40)
    x_only[(4,)](x, w.detach(), y, torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    y.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    ref(x2, w.detach())[0].sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-4, atol=1e-5)
    assert w.grad is None
    with torch.no_grad():
        x_only[(4,)](x, w, y, torch.empty(4), 40, 40, 40, 1e-6, BLOCK=64)
    torch.testing.assert_close(y, ref(x, w)[0].detach(), rtol=1e-5, atol=1e-6)
