"""One writer per element, several stores of one output, atomics other than atomic_add
(docs/AD.md, "One writer per element" and "Several stores of one output"); kernels in
tests/kernels/writers.py.

- Two programs, or two lanes of one tl.store, writing one element of a differentiated output
  is a race in the forward: no gradient is right, so kad refuses the launch *before the forward
  runs*, with the store's location.  kad's access analysis proves most stores; the rest (an index
  loaded from memory) are decided by a generated check kernel run on the launch's data: on the
  interpreter (CPU tensors, `kad check`), and as Triton (the race module, here on Triton's
  interpreter; on a GPU through the device tool).
- Several stores of one output in one program: the later store wins where they meet, whatever
  the addresses (an `if flag:` store after an unconditional one, a shifted second store).
- tl.atomic_max / atomic_min into a buffer that is not differentiated (an amax): kept in the
  forward, dropped from the backward.

Every gradient is checked against PyTorch autograd of the same math and against float64 central
finite differences (`kad check`).  KAD_TEST_DEVICE=cuda runs the package tests with Triton.
"""
import os
import sys

import numpy as np
import pytest
import torch

import kad
import triton_cpu
from triton_cpu import load_module, run_kad

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/ -> `import kernels`
from kernels import writers  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
FILE = os.path.join(os.path.dirname(HERE), "kernels", "writers.py")

every = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])(writers.every_program_stores)
scatter = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])(writers.scatter_rows)
scatter_always = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"], check_races="always")(writers.scatter_rows)
scatter_unchecked = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"], check_races=False)(writers.scatter_rows)
index_add = kad.differentiable(inputs=["y_ptr", "src_ptr"], outputs=["y_ptr"])(writers.index_add_inplace)
index_add_always = kad.differentiable(inputs=["y_ptr", "src_ptr"], outputs=["y_ptr"],
                                      check_races="always")(writers.index_add_inplace)
rows = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])(writers.strided_rows)
then_if = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(writers.store_then_if)
if_then = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(writers.if_then_store)
shifted = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(writers.shifted_overwrite)
amax = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(writers.scale_with_amax)
amax_out = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr", "amax_ptr"])(writers.scale_with_amax)

RACE_PROGRAMS = r"writers\.py:\d+:\d+: error: this store writes elements of output 'o_ptr' that another program"
RACE_LANES = r"writers\.py:\d+:\d+: error: two lanes of this store"


def _leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, device=DEVICE).requires_grad_()


def _check(kernel, sig, wrt, out, grid, shapes, args=(), extra=()):
    """`kad check`: kad's gradient against float64 central finite differences."""
    cmd = ["check", f"{FILE}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out, "--grid", grid]
    for s in shapes:
        cmd += ["--shape", s]
    for a in args:
        cmd += ["--arg", a]
    return run_kad(cmd + list(extra))


# ---------------------------------------------------------------- races: refused before the forward

def test_every_program_storing_one_element_is_refused_before_the_forward():
    x = _leaf(2)
    o = torch.full((1,), 7.0, device=DEVICE)
    with pytest.raises(kad.KadError, match=RACE_PROGRAMS + r".*does not depend on pid0"):
        every[(2,)](x, o)
    assert o.item() == 7.0  # the forward did not run
    o = torch.zeros(1, device=DEVICE)
    every[(1,)](x, o)  # one program: one writer
    o.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0]


def test_kad_check_refuses_the_race_and_passes_one_program():
    sig = "x_ptr=*fp32,o_ptr=*fp32"
    p = _check("every_program_stores", sig, "x_ptr", "o_ptr", "2", ["x_ptr=2", "o_ptr=1"])
    assert p.returncode == 1 and "another program of the launch also writes" in p.stderr, p.stderr
    p = _check("every_program_stores", sig, "x_ptr", "o_ptr", "1", ["x_ptr=2", "o_ptr=1"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


def _scatter(kernel, x, idx, block=4):
    o = torch.zeros(idx.numel(), device=DEVICE)
    kernel[(triton_cdiv(idx.numel(), block),)](x, idx, o, idx.numel(), BLOCK=block)
    return o


def triton_cdiv(a, b):
    return -(-a // b)


def test_scatter_through_a_permutation_is_right():
    torch.manual_seed(0)
    x = _leaf(10)
    idx = torch.randperm(10, device=DEVICE).to(torch.int32)
    w = torch.randn(10, device=DEVICE)
    (_scatter(scatter, x, idx) * w).sum().backward()
    ref = torch.zeros(10, device=DEVICE)
    xr = x.detach().clone().requires_grad_()
    (ref.index_put((idx.long(),), 2.0 * xr) * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)


@pytest.mark.parametrize("where, pattern", [("lanes", RACE_LANES), ("programs", RACE_PROGRAMS)])
def test_scatter_with_duplicate_indices_is_refused(where, pattern):
    x = _leaf(8)
    # a duplicate inside one program's block of 4, or in two programs' blocks
    dup = [0, 1, 1, 3, 4, 5, 6, 7] if where == "lanes" else [0, 1, 2, 3, 4, 5, 6, 0]
    idx = torch.tensor(dup, dtype=torch.int32, device=DEVICE)
    with pytest.raises(kad.KadError, match=pattern):
        _scatter(scatter, x, idx)
    assert x.grad is None


def test_scatter_check_off_is_the_callers_promise():
    """check_races=False: kad runs no check (the caller promises distinct indices)."""
    x = _leaf(8)
    idx = torch.tensor([0, 1, 1, 3, 4, 5, 6, 7], dtype=torch.int32, device=DEVICE)
    _scatter(scatter_unchecked, x, idx).sum().backward()  # no error: the caller's promise
    assert x.grad is not None


def test_check_races_always_checks_every_launch():
    x = _leaf(8)
    ok = torch.arange(8, dtype=torch.int32, device=DEVICE)
    _scatter(scatter_always, x, ok)
    bad = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0], dtype=torch.int32, device=DEVICE)
    with pytest.raises(kad.KadError, match=RACE_PROGRAMS):
        _scatter(scatter_always, x, bad)


def test_in_place_index_add():
    """y[idx] += alpha * src in place: unique indices give torch's gradients, duplicates are refused."""
    torch.manual_seed(1)
    y0 = torch.randn(12, device=DEVICE)
    src = _leaf(8)
    idx = torch.tensor([3, 0, 7, 11, 2, 9, 5, 1], dtype=torch.int32, device=DEVICE)
    w = torch.randn(12, device=DEVICE)
    y = y0.clone().requires_grad_()
    yk = y * 1.0  # a non-leaf, updated in place
    index_add[(2,)](yk, idx, src, 8, 0.5, BLOCK=4)
    (yk * w).sum().backward()
    yr = y0.clone().requires_grad_()
    sr = src.detach().clone().requires_grad_()
    ((yr * 1.0).index_add(0, idx.long(), 0.5 * sr) * w).sum().backward()
    torch.testing.assert_close(y.grad, yr.grad)
    torch.testing.assert_close(src.grad, sr.grad)
    # duplicates across programs: refused (on a GPU the launch key was seen, and checked, above:
    # check_races="always" checks this launch too; the CPU checks every launch)
    dup = torch.tensor([3, 0, 7, 11, 2, 9, 5, 3], dtype=torch.int32, device=DEVICE)
    with pytest.raises(kad.KadError, match=r"another program of the launch also writes"):
        yk = y * 1.0
        index_add_always[(2,)](yk, dup, src, 8, 0.5, BLOCK=4)


def test_overlapping_rows_refused_and_distinct_rows_proven():
    """Rows `stride` apart: kad proves them distinct when stride >= n_cols (no check kernel runs),
    and refuses the launch when they overlap."""
    x = _leaf(3, 4)
    o = torch.zeros(12, device=DEVICE)
    rows[(3,)](x, o, 4, 4, BLOCK=4)
    o.sum().backward()
    torch.testing.assert_close(x.grad, torch.exp(x.detach()))
    o = torch.zeros(12, device=DEVICE)
    with pytest.raises(kad.KadError, match=RACE_PROGRAMS):
        rows[(3,)](x, o, 2, 4, BLOCK=4)


def _race_module(tmp_path, kernel, sig):
    """`kad grad --race` for kernel, written under tmp_path and imported (inside
    triton_cpu.interpreter(): Triton reads the mode when the kernel is defined)."""
    p = run_kad(["grad", f"{FILE}:{kernel}", "--sig", sig, "--wrt", "x_ptr", "--out", "o_ptr" if "o_ptr" in sig
                 else "y_ptr", "--race"])
    assert p.returncode == 0, p.stderr
    path = tmp_path / f"{kernel}_race.py"
    path.write_text(p.stdout)
    return load_module(str(path), f"kad_race_{kernel}_{abs(hash(str(tmp_path)))}")


def test_race_module_on_triton(tmp_path):
    """The race module as Triton prints it (`kad grad --race`), run on Triton's interpreter (a GPU
    runs it for real: tests/gpu): distinct indices pass, duplicates raise with the location, and
    a launch kad proves for (stride >= n_cols) runs no kernel."""
    if DEVICE != "cpu":
        pytest.skip("Triton's interpreter: the CPU run")
    x = torch.randn(8)
    o = torch.zeros(8)
    with triton_cpu.interpreter():
        mod = _race_module(tmp_path, "scatter_rows", "x_ptr=*fp32,idx_ptr=*i32,o_ptr=*fp32,n=i32,BLOCK=4")
        assert mod.check_scatter_rows_races((2,), x, torch.randperm(8).to(torch.int32), o, 8) is True
        for dup, what in (([0, 1, 1, 3, 4, 5, 6, 7], "two lanes"), ([0, 1, 2, 3, 4, 5, 6, 0], "another program")):
            with pytest.raises(ValueError, match=r"writers\.py:\d+:\d+: error: .*" + what):
                mod.check_scatter_rows_races((2,), x, torch.tensor(dup, dtype=torch.int32), o, 8)
        assert o.abs().sum().item() == 0.0  # the check writes nothing of the caller's
        mod = _race_module(tmp_path, "strided_rows", "x_ptr=*fp32,o_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=4")
        assert mod.check_strided_rows_races((3,), torch.randn(12), torch.zeros(12), 4, 4) is False  # proven
        with pytest.raises(ValueError, match="another program"):
            mod.check_strided_rows_races((3,), torch.randn(12), torch.zeros(12), 2, 4)
        # an elementwise kernel: proven for every 1-D launch, by the host alone
        mod = _race_module(tmp_path, "scale_with_amax", "x_ptr=*fp32,y_ptr=*fp32,amax_ptr=*fp32,s=fp32,n=i32,BLOCK=16")
        assert mod.check_scale_with_amax_races((4,), x, torch.zeros(8), torch.zeros(2), 1.5, 8) is False
        with pytest.raises(ValueError, match="another program"):  # a 2-D grid: axis 1's programs meet
            mod.check_scale_with_amax_races((4, 2), x, torch.zeros(8), torch.zeros(2), 1.5, 8)


def test_race_module_with_floor_division_conditions(tmp_path):
    """A reverse tile walk (test_grad_access.py's reverse_walk_norm): the launch's conditions use
    Triton's truncating // (the module defines _tdiv); proven for this launch, no kernel runs."""
    if DEVICE != "cpu":
        pytest.skip("Triton's interpreter: the CPU run")
    src = os.path.join(HERE, "test_grad_access.py")
    p = run_kad(["grad", f"{src}:reverse_walk_norm", "--sig", "x_ptr=*fp32,y_ptr=*fp32,N=i32,T=16,STEP0=16,STEP=16,"
                 "CDIV=False", "--wrt", "x_ptr", "--out", "y_ptr", "--race"])
    assert p.returncode == 0, p.stderr
    assert "_tdiv(" in p.stdout
    path = tmp_path / "walk_race.py"
    path.write_text(p.stdout)
    with triton_cpu.interpreter():
        mod = load_module(str(path), f"kad_race_walk_{abs(hash(str(tmp_path)))}")
        assert mod.check_reverse_walk_norm_races((3,), torch.randn(3 * 37), torch.zeros(3 * 37), 37) is False


def test_proven_kernels_get_no_check():
    """A kernel whose stores kad proves for every launch: no race module."""
    p = run_kad(["grad", f"{FILE}:every_program_stores", "--sig", "x_ptr=*fp32,o_ptr=*fp32", "--wrt", "x_ptr",
                 "--out", "o_ptr", "--race"])
    assert p.returncode == 0 and "check_every_program_stores_races" in p.stdout  # (a race: the check exists)
    p = run_kad(["grad", f"{FILE}:strided_rows", "--sig", "x_ptr=*fp32,o_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=4",
                 "--wrt", "x_ptr", "--out", "o_ptr", "--race"])
    assert p.returncode == 0 and "_a, _g = dict(zip(names, args)), grid" in p.stdout  # the host's condition first


# ---------------------------------------------------------------- several stores of one output

@pytest.mark.parametrize("flag", [0, 1])
@pytest.mark.parametrize("name", ["store_then_if", "if_then_store"])
def test_store_and_conditional_store(name, flag):
    kernel = then_if if name == "store_then_if" else if_then
    x = _leaf(5, dtype=torch.float64 if DEVICE == "cpu" else torch.float32)
    y = torch.zeros_like(x)
    w = torch.randn_like(x)
    with kad.f64_mode() if DEVICE == "cpu" else _nullcontext():
        kernel[(5,)](x, y, flag)
    (y * w).sum().backward()
    xr = x.detach().clone().requires_grad_()
    if name == "store_then_if":
        yr = xr * xr if flag else xr * 1.0
    else:
        yr = xr * xr
    (yr * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    p = _check(name, "x_ptr=*fp32,y_ptr=*fp32,flag=i32", "x_ptr", "y_ptr", "5", ["x_ptr=5", "y_ptr=5"],
               [f"flag={flag}"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize("shift", [1, 3, 7])
def test_shifted_second_store(shift):
    """The second store partly overlaps the first: its elements get x[j - shift]^2's gradient,
    the first store's keep exp's; both checked against torch and finite differences."""
    torch.manual_seed(shift)
    x = _leaf(3, 13)
    y = torch.zeros_like(x)
    w = torch.randn_like(x)
    shifted[(3,)](x, y, 13, SHIFT=shift, BLOCK=16)
    (y * w).sum().backward()
    xr = x.detach().clone().requires_grad_()
    yr = torch.cat([torch.exp(xr[:, :shift]), xr[:, :13 - shift] ** 2], dim=1)
    (yr * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    p = _check("shifted_overwrite", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,SHIFT={shift},BLOCK=16", "x_ptr", "y_ptr", "3",
               ["x_ptr=39", "y_ptr=39"], ["n=13"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


def test_shifted_store_backward_clears_a_copy(tmp_path):
    """The backward reads and clears the output gradient on a copy: the caller's is unchanged."""
    x = _leaf(2, 13)
    y = torch.zeros_like(x)
    shifted[(2,)](x, y, 13, SHIFT=3, BLOCK=16)
    dy = torch.randn_like(y)
    keep = dy.clone()
    y.backward(dy)
    assert torch.equal(dy, keep)


# ---------------------------------------------------------------- atomic_max / atomic_min

def test_amax_kernel_differentiates_its_output():
    torch.manual_seed(2)
    x = _leaf(50)
    y = torch.empty_like(x)
    am = torch.tensor([0.0, float("inf")], device=DEVICE)
    amax[(4,)](x, y, am, 1.5, 50, BLOCK=16)
    assert am[0].item() == x.detach().abs().max().item()
    assert am[1].item() == x.detach().min().item()
    w = torch.randn(50, device=DEVICE)
    (y * w).sum().backward()
    torch.testing.assert_close(x.grad, 1.5 * w)
    p = _check("scale_with_amax", "x_ptr=*fp32,y_ptr=*fp32,amax_ptr=*fp32,s=fp32,n=i32,BLOCK=16", "x_ptr", "y_ptr",
               "4", ["x_ptr=50", "y_ptr=50", "amax_ptr=2"], ["s=1.5", "n=50"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


def test_amax_as_a_differentiated_output_is_refused_with_its_location():
    x = _leaf(50)
    y = torch.empty_like(x)
    am = torch.zeros(2, device=DEVICE).requires_grad_(False)
    with pytest.raises(kad.KadError, match=r"writers\.py:\d+:\d+: error: atomic_max into differentiated output "
                                           r"'amax_ptr'.*leave 'amax_ptr' out of outputs"):
        amax_out[(4,)](x, y, am, 1.5, 50, BLOCK=16)


def test_amax_kernel_forward_mode():
    """The jvp kernel keeps the forward's atomics (it computes the outputs too): on kad's
    interpreter, t_y = 1.5 t_x and amax as the forward's."""
    ctx = kad._capi.Context()
    ctx.add_source(FILE, open(FILE).read())
    k = ctx.specialize("scale_with_amax", "x_ptr=*fp32,y_ptr=*fp32,amax_ptr=*fp32,s=fp32,n=i32,BLOCK=16")
    j = k.jvp(["x_ptr"], ["y_ptr"])
    x = np.random.default_rng(0).standard_normal(50).astype(np.float32)
    t = np.random.default_rng(1).standard_normal(50).astype(np.float32)
    y, ty, am = np.zeros(50, np.float32), np.zeros(50, np.float32), np.array([0, np.inf], np.float32)
    names = [n for n, _ in j.params]
    vals = {"x_ptr": x, "y_ptr": y, "amax_ptr": am, "s": 1.5, "n": 50, "t_x_ptr": t, "t_y_ptr": ty}
    j.run(4, [vals[n] for n in names])
    np.testing.assert_allclose(ty, 1.5 * t, rtol=1e-6)
    assert am[0] == np.abs(x).max() and am[1] == x.min()


def test_races_refused_under_torch_func():
    """kad's custom operators (torch.func, torch.compile) run the same check before the launch."""
    x = torch.randn(8, device=DEVICE)
    dup = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0], dtype=torch.int32, device=DEVICE)

    def loss(x, idx):
        return _scatter(scatter_always, x, idx).sum()
    g = torch.func.grad(loss)(x, torch.randperm(8, device=DEVICE).to(torch.int32))
    torch.testing.assert_close(g, torch.full_like(x, 2.0))
    with pytest.raises(kad.KadError, match=RACE_PROGRAMS):
        torch.func.grad(loss)(x, dup)


def test_store_through_a_selected_pointer():
    """A store whose pointer is selected among two outputs: two programs, one per output, are
    right; a third writes what the first wrote, and the launch is refused."""
    sel = kad.differentiable(inputs=["x_ptr"], outputs=["y1_ptr", "y2_ptr"])(writers.select_destination)
    x = _leaf(2 * 8)
    y1, y2 = torch.zeros(8, device=DEVICE), torch.zeros(8, device=DEVICE)
    sel[(2,)](x, y1, y2, BLOCK=8)
    (y1.sum() + 2 * y2.sum()).backward()
    e = torch.exp(x.detach())
    torch.testing.assert_close(x.grad, torch.cat([e[:8], 2 * e[8:]]))
    x3 = _leaf(3 * 8)
    with pytest.raises(kad.KadError, match=r"one of the buffers its pointer selects among that another program"):
        sel[(3,)](x3, torch.zeros(8, device=DEVICE), torch.zeros(8, device=DEVICE), BLOCK=8)


@pytest.mark.parametrize("f64", [False, True])
def test_duplicates_masked_off_by_data_are_no_race(f64):
    """The check kernel sees the launch's data as the forward does (also in kad.f64_mode, where the
    interpreter's float buffers hold doubles): a duplicate index that the data mask drops is fine,
    one it keeps is refused."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"], check_races="always")(writers.scatter_positive)
    dt = torch.float64 if f64 else torch.float32
    idx = torch.tensor([0, 1, 1, 3], dtype=torch.int32, device=DEVICE)
    ctx = kad.f64_mode() if f64 and DEVICE == "cpu" else _nullcontext()
    with ctx:
        x = torch.tensor([1.0, 2.0, -1.0, 3.0], dtype=dt, device=DEVICE).requires_grad_()
        o = torch.zeros(4, dtype=dt, device=DEVICE)
        k[(1,)](x, idx, o, BLOCK=4)
        o.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0, 0.0, 1.0]
        x = torch.tensor([1.0, 2.0, 5.0, 3.0], dtype=dt, device=DEVICE).requires_grad_()
        with pytest.raises(kad.KadError, match=RACE_LANES):
            k[(1,)](x, idx, torch.zeros(4, dtype=dt, device=DEVICE), BLOCK=4)


def test_in_place_launch_refused_before_the_forward_overwrites_it():
    """An in-place kernel whose launch its backward cannot differentiate (overlapping rows): refused
    before the forward runs, so the buffer keeps its data (issue 33, item 5)."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["x_ptr"])(writers.exp_rows_inplace)
    base = torch.randn(12, device=DEVICE, requires_grad=True)
    x = base * 1.0
    keep = x.detach().clone()
    with pytest.raises(kad.KadError, match=r"writers\.py:\d+:\d+: error: "):
        k[(3,)](x, 2, 4, BLOCK=4)
    assert torch.equal(x.detach(), keep)
    x = base * 1.0
    k[(3,)](x, 4, 4, BLOCK=4)  # rows apart: right
    x.sum().backward()
    torch.testing.assert_close(base.grad, torch.exp(base.detach()))


def test_backward_module_checks_the_launch_before_the_forward(tmp_path):
    """check_<kernel>_launch of a backward module (what the package calls before a GPU forward):
    the launch conditions on the forward's arguments alone, with a tuple or a callable grid."""
    if DEVICE != "cpu":
        pytest.skip("Triton's interpreter: the CPU run")
    src = os.path.join(os.path.dirname(HERE), "grad", "guard_loop_stores.py")
    p = run_kad(["grad", f"{src}:short_stride_while", "--sig", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64",
                 "--wrt", "x_ptr", "--out", "y_ptr"])
    assert p.returncode == 0, p.stderr
    path = tmp_path / "guard_bwd.py"
    path.write_text(p.stdout)
    with triton_cpu.interpreter():
        mod = load_module(str(path), f"kad_guard_bwd_{abs(hash(str(tmp_path)))}")
        x, y = torch.randn(256), torch.zeros(256)
        mod.check_short_stride_while_launch((2,), x, y, 256)  # 32 * 2 >= 64: holds
        mod.check_short_stride_while_launch(lambda meta: (2,), x, y, 256)
        with pytest.raises(ValueError, match=r"guard_loop_stores\.py:\d+:\d+: error: .*this launch breaks it"):
            mod.check_short_stride_while_launch((1,), x, y, 256)  # 32 < 64 and 32 < n
