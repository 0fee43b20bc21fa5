"""The decorated launch's hot path (docs/PYTHON.md, "Caches"): a repeated call with the same
types reuses the signature cached by its fast key and the launch's prepared entry (_Prep); a
call whose specialization changes (an int becoming 1, a None pointer, a dtype, a bool for an
int, an int outside i32, f64_mode's typing) is re-keyed and gets the signature Triton would give
it.  Each case also runs forward and backward and compares with PyTorch autograd of the same
math, so a stale cache entry (a signature of another specialization) fails twice: by its text
and by its numbers.

KAD_TEST_DEVICE=cuda runs them with CUDA tensors.
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


@triton.jit
def _scaled_rows(x_ptr, w_ptr, b_ptr, y_ptr, stride, n, scale, BLOCK: tl.constexpr, SQUARE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    y = x * w * scale
    if SQUARE:
        y = y * x
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


def _kernel():
    """A fresh decorated kernel: empty caches."""
    return kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(_scaled_rows)


class Counting:
    """Counts the binder's slow path (typing a call) of a decorated kernel."""

    def __init__(self, dk):
        self.n = 0
        slow = dk._binder._signature

        def counted(*a):
            self.n += 1
            return slow(*a)
        dk._binder._signature = counted


def _launch(dk, rows, cols, bias=False, dtype=torch.float32, scale=0.5, square=False, stride=None):
    """Runs dk forward and backward; checks y and the gradients against PyTorch; returns the sig."""
    g = torch.Generator().manual_seed(rows * 100 + cols)
    stride = cols if stride is None else stride
    xs = torch.randn(rows, stride, generator=g, dtype=torch.float64).to(DEVICE, dtype)
    x = xs[:, :cols].requires_grad_() if stride != cols else xs.requires_grad_()
    w = torch.randn(cols, generator=g, dtype=torch.float64).to(DEVICE, dtype).requires_grad_()
    b = torch.randn(cols, generator=g, dtype=torch.float64).to(DEVICE, dtype) if bias else None
    y = torch.zeros(rows, stride, device=DEVICE, dtype=dtype)[:, :cols]
    args = (x, w, b, y, stride, cols, scale)
    sig = dk.bind((rows,), args, dict(BLOCK=16, SQUARE=square)).sig
    dk[(rows,)](*args, BLOCK=16, SQUARE=square)
    dy = torch.randn(rows, cols, generator=g, dtype=torch.float64).to(DEVICE, dtype)
    (y * dy).sum().backward()
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    yr = xr * wr * scale
    if square:
        yr = yr * xr
    if bias:
        yr = yr + b
    (yr * dy).sum().backward()
    tol = dict(rtol=1e-5, atol=1e-5) if dtype != torch.float16 else dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(y.detach(), yr.detach(), **tol)
    torch.testing.assert_close(x.grad, xr.grad, **tol)
    torch.testing.assert_close(w.grad, wr.grad, **tol)
    return sig


def test_repeated_calls_take_the_fast_path():
    dk = _kernel()
    c = Counting(dk)
    sigs = {_launch(dk, 4, 7) for _ in range(3)}
    assert sigs == {"x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=i32,n=i32,scale=fp32,BLOCK=16,"
                    "SQUARE=False"}
    assert c.n == 1, "the second and third calls must reuse the signature cached by their key"
    assert len(dk._preps) == 1
    prep = next(iter(dk._preps.values()))
    assert len(prep.bwd) >= 1 and len(prep.plans) == 1  # one backward plan, reused
    # other sizes and values of the same types: still no new typing
    _launch(dk, 5, 9, scale=2.0)
    _launch(dk, 3, 12, stride=16)
    assert c.n == 1 and len(dk._preps) == 1


@pytest.mark.parametrize("change,want", [
    (dict(cols=1), ",stride=1,n=1,"),                   # ints becoming 1: Triton's constants
    (dict(bias=True), ",b_ptr=*fp32,"),                 # None -> a tensor
    (dict(dtype=torch.float64), "x_ptr=*fp64,w_ptr=*fp64,b_ptr=None,y_ptr=*fp64,"),
    (dict(square=True), ",SQUARE=True"),                # a constexpr's value
    (dict(stride=2**31 + 16), ",stride=i64,"),          # an int outside i32 (a view, no memory)
], ids=["int_1", "none_to_tensor", "dtype", "constexpr", "i64"])
def test_a_changed_specialization_is_rekeyed(change, want):
    dk = _kernel()
    c = Counting(dk)
    first = _launch(dk, 3, 5)
    assert ",b_ptr=None," in first and ",stride=i32,n=i32," in first
    if change.get("stride", 0) > 2**31:
        # binding only: the signature, not a launch over 2**31-element rows
        x = torch.zeros(3, 5, device=DEVICE)
        sig = dk.bind((3,), (x, x[0], None, torch.zeros(3, 5, device=DEVICE), change["stride"], 5, 0.5),
                      dict(BLOCK=16, SQUARE=False)).sig
    else:
        sig = _launch(dk, change.pop("rows", 3), change.pop("cols", 5), **change)
    assert want in sig, sig
    assert c.n == 2
    # and back: the first key is still cached
    assert _launch(dk, 3, 5) == first and c.n == 2


def test_bool_and_int_constexprs_and_runtime_values_are_keyed_apart():
    dk = _kernel()
    x = torch.zeros(2, 4, device=DEVICE)

    def sig(scale, square):
        return dk.bind((2,), (x, x[0], None, x, 4, 4, scale), dict(BLOCK=16, SQUARE=square)).sig
    assert sig(1.0, 1).endswith(",scale=fp32,BLOCK=16,SQUARE=1")
    assert sig(1.0, True).endswith(",scale=fp32,BLOCK=16,SQUARE=True")  # True == 1, but not the same constant
    assert sig(1, 1).endswith(",scale=1,BLOCK=16,SQUARE=1")  # an int 1 where a float was: Triton's constant
    assert sig(True, 1).endswith(",scale=i1,BLOCK=16,SQUARE=1")
    assert sig(3, 1).endswith(",scale=i32,BLOCK=16,SQUARE=1")


@pytest.mark.skipif(DEVICE != "cpu", reason="f64_mode is the interpreter's")
def test_f64_mode_typing_is_part_of_the_key():
    dk = _kernel()
    x = torch.zeros(2, 4, dtype=torch.float64)
    args = (x, x[0], None, torch.zeros(2, 4, dtype=torch.float64), 4, 4, 0.5)
    kw = dict(BLOCK=16, SQUARE=False)
    assert dk.bind((2,), args, kw).sig.startswith("x_ptr=*fp64,")
    with kad.f64_mode(typed_as=torch.float32):
        assert dk.bind((2,), args, kw).sig.startswith("x_ptr=*fp32,")
    assert dk.bind((2,), args, kw).sig.startswith("x_ptr=*fp64,")


def test_errors_are_raised_after_a_cached_call():
    dk = _kernel()
    _launch(dk, 3, 5)
    x = torch.randn(3, 5, device=DEVICE, requires_grad=True)
    w = torch.randn(5, device=DEVICE, requires_grad=True)
    y = torch.empty(3, 5, device=DEVICE)
    kw = dict(BLOCK=16, SQUARE=False)
    # a declared input passed None is absent (Triton's constant None): using it is kad's located error
    with pytest.raises(kad.KadError, match="'[+]' expects a tensor or a number, got None"):
        dk[(3,)](x, None, None, y, 5, 5, 0.5, **kw)
    with pytest.raises(TypeError, match=r"every declared output \(y_ptr\) is None"):
        dk[(3,)](x, w, None, None, 5, 5, 0.5, **kw)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        dk[(3,)](x, 1.0, None, y, 5, 5, 0.5, **kw)
    with pytest.raises(TypeError, match="argument 'n' has type str"):
        dk[(3,)](x, w, None, y, 5, "5", 0.5, **kw)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        dk[(3,)](x, w, None, y, 5, 2**63, 0.5, **kw)
    with pytest.raises(TypeError, match="missing argument"):
        dk[(3,)](x, w, None, y, 5, 5, 0.5, BLOCK=16)
    with pytest.raises(TypeError, match="unexpected keyword"):
        dk[(3,)](x, w, None, y, 5, 5, 0.5, BLOCKS=16, SQUARE=False)
    with pytest.raises(ValueError, match="share memory"):
        dk[(3,)](x, w, None, x.detach(), 5, 5, 0.5, **kw)
    with pytest.raises(ValueError, match="non-negative"):
        dk[(3, -1)](x, w, None, y, 5, 5, 0.5, **kw)
    with pytest.raises(TypeError, match="the grid must hold ints"):
        dk[(3, 1.0)](x, w, None, y, 5, 5, 0.5, **kw)
    with pytest.raises(ValueError, match="requires grad, but 'b_ptr' is not in"):
        dk[(3,)](x, w, torch.zeros(5, device=DEVICE, requires_grad=True), y, 5, 5, 0.5, **kw)
    # and the cached path still works
    _launch(dk, 3, 5)


def test_grid_callable_gets_the_bound_values():
    dk = _kernel()
    x = torch.randn(6, 5, device=DEVICE, requires_grad=True)
    w = torch.randn(5, device=DEVICE, requires_grad=True)
    seen = []

    def grid(meta):
        seen.append((meta["n"], meta["BLOCK"]))
        return (x.shape[0],)
    for _ in range(2):
        y = torch.empty(6, 5, device=DEVICE)
        dk[grid](x, w, None, y, 5, 5, 0.5, BLOCK=16, SQUARE=False)
    # kad binds the grid once per launch; on CUDA, Triton calls it again when it launches
    assert seen and all(s == (5, 16) for s in seen), seen
    if DEVICE == "cpu":
        assert len(seen) == 2
    torch.testing.assert_close(y, (x * w * 0.5).detach(), rtol=1e-6, atol=1e-6)


def test_kernel_params_are_read_once_and_forgotten_by_a_pass():
    ctx = kad.Context()
    ctx.add_source("k.py", "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                   "def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
                   "    offs = tl.arange(0, BLOCK)\n"
                   "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n")
    k = ctx.specialize("k", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16")
    p = k.params
    assert p == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32")]
    p.append(("junk", "i32"))  # a copy: the cache is not the caller's list
    assert k.params == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32")]
    k.run_pass("dce")
    assert k._params is None
    assert k.params == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32")]


class _FakeCuda(torch.Tensor):
    """A CPU tensor that says it is a CUDA one: what _direct looks at (no GPU needed)."""

    @property
    def is_cuda(self):
        return True


class _Recorder:
    """Stands in for the Triton kernel of a decorated kernel: records kernel[grid](...) calls."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *a, **k: self.calls.append((grid, a, k))


def _direct_case(grad, requires_grad, y_on_cpu=False, w_kw=False, drop_y=False):
    """(went straight to Triton, the binder was used) for one no-autograd CUDA-like call."""
    dk = _kernel()
    rec = dk.fn = _Recorder()
    bound = []
    bind = dk._binder.bind
    dk._binder.bind = lambda *a, **k: bound.append(1) or bind(*a, **k)
    x = torch.randn(4, 8).as_subclass(_FakeCuda).requires_grad_(requires_grad)
    w = torch.randn(8).as_subclass(_FakeCuda)
    y = torch.empty(4, 8)
    if not y_on_cpu:
        y = y.as_subclass(_FakeCuda)
    args = [x, w, None, y, 8, 8, 0.5]
    kw = dict(BLOCK=8, SQUARE=False)
    if w_kw:
        args[1:2] = []
        args, kw = args[:1], dict(kw, w_ptr=w, b_ptr=None, y_ptr=y, stride=8, n=8, scale=0.5)
    if drop_y:
        kw.pop("y_ptr", None)
    with torch.set_grad_enabled(grad):
        try:
            dk[(4,)](*args, **kw)
        except Exception:
            pass  # a bound call of these fake tensors may fail later: only the decision matters here
    return bool(rec.calls) and not bound, bool(bound)


def test_a_cuda_launch_without_autograd_goes_straight_to_triton():
    """CUDA tensors with nothing for autograd to do (grad mode off, or nothing requires grad):
    kernel[grid](...) as the caller wrote it, without binding; anything else is bound as before."""
    assert _direct_case(grad=False, requires_grad=True) == (True, False)
    assert _direct_case(grad=True, requires_grad=False) == (True, False)
    assert _direct_case(grad=True, requires_grad=False, w_kw=True) == (True, False)
    # autograd has work: bound
    assert _direct_case(grad=True, requires_grad=True)[1]
    # a CPU tensor among the arguments (kad's interpreter), or a declared output missing: bound
    assert _direct_case(grad=False, requires_grad=False, y_on_cpu=True)[1]
    assert _direct_case(grad=False, requires_grad=False, w_kw=True, drop_y=True)[1]


def test_a_launch_makes_no_reference_cycle():
    """A forward with grad and its backward leave nothing for Python's cyclic collector: the
    output tensor (whose grad_fn is kad's node) is freed by reference counting as soon as the
    caller drops it.  A Run that kept the caller's arguments (the output among them) made a cycle
    output -> grad_fn -> Run -> arguments -> output, holding the launch's tensors until a
    collection."""
    import gc
    import weakref
    dk = _kernel()
    _launch(dk, 4, 7)  # compiled, caches filled
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        x = torch.randn(4, 7, device=DEVICE, requires_grad=True)
        w = torch.randn(7, device=DEVICE, requires_grad=True)
        y = torch.empty(4, 7, device=DEVICE)
        dk[(4,)](x, w, None, y, 7, 7, 0.5, BLOCK=16, SQUARE=False)
        gx, gw = torch.autograd.grad(y.sum(), (x, w))
        torch.testing.assert_close(gx, (w.detach() * 0.5).expand(4, 7))
        ref = weakref.ref(y)
        del y
        assert ref() is None, "the output is kept alive by a reference cycle through kad's Run"
        # forward only (no backward): the graph is dropped with its output
        y = torch.empty(4, 7, device=DEVICE)
        dk[(4,)](x, w, None, y, 7, 7, 0.5, BLOCK=16, SQUARE=False)
        ref = weakref.ref(y)
        del y
        assert ref() is None, "an output whose graph is never run back is kept alive by a cycle"
        # the input and the output are views of one buffer (rows 0-3 and 4-7): after mark_dirty of
        # the buffer the input view's history is this Function's too, so kad must not keep it
        leaf = torch.randn(8, 7, device=DEVICE, requires_grad=True)
        base = leaf * 1.0
        xv, yv = base[:4], base[4:]
        dk[(4,)](xv, w, None, yv, 7, 7, 0.5, BLOCK=16, SQUARE=False)
        gl, = torch.autograd.grad(yv.sum(), (leaf,))
        want = torch.zeros(8, 7, device=DEVICE)
        want[:4] = w.detach() * 0.5  # the rows 4-7 were overwritten: no gradient to their old values
        torch.testing.assert_close(gl, want)
        ref = weakref.ref(base)
        del base, xv, yv
        assert ref() is None, "a view input of the output's buffer is kept alive by a cycle"
    finally:
        if was:
            gc.enable()


# ---------------------------------------------------------------- launch plans (autograd._Plan)


class CountingBinds:
    """Counts the bound launches (the binder's bind) of a decorated kernel: a launch that its _Plan
    serves binds nothing."""

    def __init__(self, dk):
        self.n = 0
        bind = dk._binder.bind

        def counted(*a, **k):
            self.n += 1
            return bind(*a, **k)
        dk._binder.bind = counted


def test_a_repeat_launch_takes_its_plan_and_a_changed_layout_gets_another():
    dk = _kernel()
    c = CountingBinds(dk)
    _launch(dk, 4, 7)
    assert len(dk._plans) == 1
    n = c.n
    for _ in range(3):  # same key: the plan, no binding, the same gradients (checked by _launch)
        _launch(dk, 4, 7)
    assert c.n == n + 3 and len(dk._plans) == 1  # _launch's own dk.bind (for the signature) only
    # a changed shape, stride (a view: another base layout), dtype or scalar: another key, bound once
    for kw in (dict(rows=5, cols=7), dict(rows=4, cols=7, stride=9), dict(rows=4, cols=7, dtype=torch.float64),
               dict(rows=4, cols=7, scale=0.25)):
        before, plans = c.n, len(dk._plans)
        kw = dict(kw)
        _launch(dk, kw.pop("rows"), kw.pop("cols"), **kw)
        assert c.n == before + 2 and len(dk._plans) == plans + 1, kw  # _launch's dk.bind, then the launch's
        _launch(dk, 4, 7)  # the first key's plan is still there
        assert len(dk._plans) == plans + 1


def test_a_plan_keys_requires_grad_and_checks_addresses():
    dk = _kernel()
    kw = dict(BLOCK=16, SQUARE=False)
    x = torch.randn(3, 5, device=DEVICE, requires_grad=True)
    w = torch.randn(5, device=DEVICE, requires_grad=True)
    for _ in range(2):
        dk[(3,)](x, w, None, torch.empty(3, 5, device=DEVICE), 5, 5, 0.5, **kw)
    assert len(dk._plans) == 1
    # the same key (a fresh-looking output) whose storage is x's: refused on the plan's path too
    with pytest.raises(ValueError, match="share memory"):
        dk[(3,)](x, w, None, x.detach(), 5, 5, 0.5, **kw)
    # w not requiring grad: another plan, no gradient for w
    w2 = w.detach()
    y = torch.empty(3, 5, device=DEVICE)
    for _ in range(2):
        y = torch.empty(3, 5, device=DEVICE)
        dk[(3,)](x, w2, None, y, 5, 5, 0.5, **kw)
    assert len(dk._plans) == 2
    gx, = torch.autograd.grad(y.sum(), [x])
    torch.testing.assert_close(gx, (w2 * 0.5).expand(3, 5), rtol=1e-6, atol=1e-6)


def test_an_input_modified_after_a_planned_forward_is_detected():
    dk = _kernel()
    kw = dict(BLOCK=16, SQUARE=False)
    for i in range(3):  # the second and third launches take the plan
        x = torch.randn(3, 5, device=DEVICE).requires_grad_()
        w = torch.randn(5, device=DEVICE, requires_grad=True)
        xi = x * 1.0  # not a leaf: it can be modified in place
        y = torch.empty(3, 5, device=DEVICE)
        dk[(3,)](xi, w, None, y, 5, 5, 0.5, **kw)
        xi.mul_(2.0)  # the saved input's version changes
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    assert len(dk._plans) == 1


def test_a_planned_launch_runs_the_cpu_checks_each_time():
    if DEVICE != "cpu":
        pytest.skip("the interpreter's checks")
    dk = _kernel()
    calls = []
    races = dk._check_races
    dk._check_races = lambda *a: (calls.append(1), races(*a))
    for _ in range(3):
        _launch(dk, 4, 7)
    assert len(dk._plans) == 1 and len(calls) == 3
