"""The native backward node (python/kad/_native.cpp, _native.py; docs/PYTHON.md, "Native backward
nodes") on the CPU: the C++ node replays a recipe, with a Python stand-in for cuLaunchKernel that
runs the "kernel" on the raw pointers it is given, and calls the Python fallback for what the
recipe does not cover.  The GPU suites run the real launches (tests/gpu)."""
import ctypes
import os
import types

import numpy as np
import pytest
import torch

from kad import _native


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return _native.build(cache=str(tmp_path_factory.mktemp("native")))


def _arr(ptr, n):
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(ptr))


class Kernel:
    """d = scale * g (+ x * 0): the stand-in's kernel, on the pointers the node passes."""

    def __init__(self):
        self.calls = []

    def __call__(self, fn, grid, threads, shared, vals):
        self.calls.append((fn, grid, threads, shared, vals))
        (_, px, _), (_, pg, _), (_, pd, _), (_, n, _), (_, sbits, _) = vals
        scale = np.frombuffer(int(sbits).to_bytes(8, "little")[:4], dtype=np.float32)[0]
        _arr(pd, n)[:] = scale * _arr(pg, n)


def _setup(mod, n=8, trust=False, recipes=(0,), fallback=None, scale=2.0):
    x = torch.randn(n, requires_grad=True)
    y = torch.empty(n)
    with torch.no_grad():
        y.copy_(scale * x)
    k = Kernel()
    sbits = int.from_bytes(np.float32(scale).tobytes().ljust(8, b"\0"), "little")
    steps = [("zero", 3), ("launch", 77, (1, 1, 1), 128, 0,
                           [(0, 0, 0, 8), (2, 0, 0, 8), (3, 0, 0, 8), (-1, 0, n, 4), (-1, 0, sbits, 4)])]
    called = []

    def fb(run, saved, grads):
        called.append((run, saved, grads))
        g = grads[0]
        return (None if g is None else scale * g, None)

    h = mod.Holder(fallback or fb, "test_kernel")
    for t in recipes:
        h.set(bool(t), mod.recipe(1, 1, False, [0], [0], [torch.float32], steps, 0, k))
    run = types.SimpleNamespace()
    mod.attach(h, run, [x], [], [], [y], None, [], trust)
    return x, y, k, called, run


def test_replays_the_recipe(mod):
    x, y, k, called, _ = _setup(mod)
    assert y.grad_fn is not None and "KadBackward<test_kernel>" in y.grad_fn.name()
    gy = torch.randn(8)
    (gx,) = torch.autograd.grad(y, x, gy)
    assert torch.equal(gx, 2.0 * gy)
    assert not called and len(k.calls) == 1
    fn, grid, threads, shared, vals = k.calls[0]
    assert (fn, grid, threads, shared) == (77, (1, 1, 1), 128, 0)
    assert vals[0] == (True, x.data_ptr(), 8) and vals[1] == (True, gy.data_ptr(), 8)
    assert vals[2][0] and vals[2][1] == gx.data_ptr()  # the gradient the node allocated


def test_a_gradient_outside_the_recipe_takes_the_fallback(mod):
    x, y, k, called, run = _setup(mod, n=16)
    gy = torch.randn(4, 4).t().reshape(-1)  # contiguous after reshape: make a strided one instead
    gy = torch.randn(32)[::2]
    (gx,) = torch.autograd.grad(y, x, gy)
    assert torch.equal(gx, 2.0 * gy) and len(called) == 1 and not k.calls
    assert called[0][0] is run and called[0][1][0] is not None


def test_an_input_changed_after_the_forward_is_refused(mod):
    x, y, k, called, _ = _setup(mod)
    with torch.no_grad():
        x.add_(1)  # a leaf changed in place: its version moves
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(y, x, torch.ones(8))


def test_a_second_backward_without_retain_graph_is_refused(mod):
    x, y, k, called, _ = _setup(mod)
    torch.autograd.grad(y, x, torch.ones(8))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        torch.autograd.grad(y, x, torch.ones(8))
    x, y, k, called, _ = _setup(mod)
    torch.autograd.grad(y, x, torch.ones(8), retain_graph=True)
    torch.autograd.grad(y, x, torch.ones(8))
    assert len(k.calls) == 2


def test_trusted_recipe_only_while_the_output_is_unchanged(mod):
    # only a trusted recipe: an output changed in place after the forward takes the fallback
    x, y, k, called, _ = _setup(mod, trust=True, recipes=(1,))
    torch.autograd.grad(y, x, torch.ones(8), retain_graph=True)
    assert len(k.calls) == 1 and not called
    x2, y2, k2, called2, _ = _setup(mod, trust=True, recipes=(1,))
    with torch.no_grad():
        y2.mul_(1.0)
    torch.autograd.grad(y2, x2, torch.ones(8))
    assert not k2.calls and len(called2) == 1


def test_create_graph_takes_the_fallback(mod):
    x, y, k, called, _ = _setup(mod)
    torch.autograd.grad(y, x, torch.ones(8), create_graph=True)
    assert len(called) == 1 and not k.calls


def test_unaligned_pointer_takes_the_fallback(mod):
    n = 8
    base = torch.randn(n + 1, requires_grad=True)
    x = base[1:]  # 4 bytes past a 16-byte aligned start: Triton's specialization differs
    y = torch.empty(n)
    k = Kernel()
    steps = [("launch", 1, (1, 1, 1), 32, 0, [(0, 0, 0, 8), (2, 0, 0, 8), (3, 0, 0, 8), (-1, 0, n, 4),
                                                (-1, 0, int.from_bytes(np.float32(1).tobytes(), "little"), 4)])]
    called = []
    h = mod.Holder(lambda run, s, g: called.append(1) or (g[0], None), "k")
    h.set(False, mod.recipe(1, 1, False, [0], [0], [torch.float32], steps, 0, k))
    mod.attach(h, None, [x], [], [], [y], None, [], False)
    torch.autograd.grad(y, base, torch.ones(n))
    assert called and not k.calls


def test_malformed_recipes_are_refused(mod):
    with pytest.raises(RuntimeError, match="unknown slot"):
        mod.recipe(1, 1, False, [0], [0], [torch.float32], [("zero", 9)], 0, None)
    with pytest.raises(RuntimeError, match="unknown recipe step"):
        mod.recipe(1, 1, False, [0], [0], [torch.float32], [("copy", 1)], 0, None)


# ---- the recorder -------------------------------------------------------------------------------

class _Md:
    num_warps, shared, num_ctas = 4, 1024, 1
    launch_cooperative_grid = launch_pdl = False
    global_scratch_size = profile_scratch_size = 0


class _Compiled:
    def __init__(self, sig):
        self.function = 4242
        self.metadata = _Md()
        self.src = types.SimpleNamespace(signature=sig)


def _launcher(src, ck):
    """A stand-in of a generated launcher module: `launch` defined by src in globals of its own
    holding _kad_go (which records what it is asked to launch), _kad_hooks, torch and ck."""
    hooks = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    launched = []

    def go(k, grid, a, ck, key, num_warps, num_stages):
        launched.append(a)

    g = {"_kad_go": go, "_kad_hooks": hooks, "torch": torch, "ck": ck}
    exec(src, g)
    return g["launch"], launched


def test_record_reads_allocations_zero_fills_and_arguments():
    sig = {"x": "*fp32", "part": "*fp32", "d": "*fp32", "n": "i32", "eps": "fp32", "B": "constexpr"}
    fn, launched = _launcher(
        "def launch(grid, x, d):\n"
        "    part = torch.zeros(2 * 16, dtype=torch.float32)\n"
        "    d.zero_()\n"
        "    _kad_go(None, grid, (x, part[16:], d, 7, 1.5, 64), ck, ('k', 0), 4, None)\n",
        {("k", 0): _Compiled(sig)})
    x, d = torch.randn(8), torch.empty(8)
    steps, dev = _native.record(fn, (3, 1, 1), [x], [], [d], {}, [(x, 0), (d, 1)])
    assert launched and dev == 0
    assert steps[0] == ("alloc", 2, 128, True) and steps[1] == ("zero", 1)
    kind, f, grid, threads, shared, args = steps[2]
    assert (kind, f, grid, threads, shared) == ("launch", 4242, (3, 1, 1), 128, 1024)
    assert args[0] == (0, 0, 0, 8) and args[1] == (2, 64, 0, 8) and args[2] == (1, 0, 0, 8)
    assert args[3] == (-1, 0, 7, 4)
    assert args[4] == (-1, 0, int.from_bytes(np.float32(1.5).tobytes(), "little"), 4)
    assert len(args) == 5  # the constexpr is not passed


def test_record_refuses_what_it_cannot_replay():
    ck = {("k", 0): _Compiled({"x": "*fp32", "d": "*fp32"})}
    x, d = torch.randn(8), torch.empty(8)
    known = [(x, 0), (d, 1)]
    # host work the recipe has no step for
    fn, _ = _launcher("def launch(grid, x, d):\n    d.copy_(x)\n"
                      "    _kad_go(None, grid, (x, d), ck, ('k', 0), 4, None)\n", ck)
    steps, why = _native.record(fn, (1, 1, 1), [x], [], [d], {}, known)
    assert steps is None and "copy_" in why
    # a kernel not compiled yet (Triton's JIT launches it)
    fn, _ = _launcher("def launch(grid, x, d):\n    _kad_go(None, grid, (x, d), {}, ('k', 0), 4, None)\n", ck)
    steps, why = _native.record(fn, (1, 1, 1), [x], [], [d], {}, known)
    assert steps is None and "not compiled" in why
    # a tensor the node would not hold
    fn, _ = _launcher("def launch(grid, x, d):\n"
                      "    _kad_go(None, grid, (x, torch.randn(3)[1:]), ck, ('k', 0), 4, None)\n", ck)
    assert _native.record(fn, (1, 1, 1), [x], [], [d], {}, known)[0] is None
    # a pointer argument that is not a tensor, a scalar type the recipe cannot pack
    fn, _ = _launcher("def launch(grid, x, d):\n    _kad_go(None, grid, (x, 3), ck, ('k', 0), 4, None)\n", ck)
    assert _native.record(fn, (1, 1, 1), [x], [], [d], {}, known)[0] is None


def test_kad_native_0_turns_it_off(monkeypatch):
    monkeypatch.setenv("KAD_NATIVE", "0")
    ld = _native._Loader()
    assert ld.get() is None and ld.error == "KAD_NATIVE=0"


# ---- the C++ forward ----------------------------------------------------------------------------

def test_native_forward_launches_and_attaches_the_node(mod):
    n = 8
    launched = []

    def fwd_kernel(fn, grid, threads, shared, vals):
        launched.append((fn, grid, threads, shared, vals))
        (_, px, _), (_, py_, _), (_, m, _) = vals
        _arr(py_, m)[:] = 2.0 * _arr(px, m)

    k = Kernel()
    sbits = int.from_bytes(np.float32(2.0).tobytes().ljust(8, b"\0"), "little")
    steps = [("launch", 77, (1, 1, 1), 128, 0, [(0, 0, 0, 8), (2, 0, 0, 8), (3, 0, 0, 8), (-1, 0, n, 4),
                                                  (-1, 0, sbits, 4)])]
    made = []

    def fb(run, saved, grads):
        return (2.0 * grads[0], None)

    def make_run(dets, versions):
        made.append((dets, versions))
        return "run"

    h = mod.Holder(fb, "fwd_kernel")
    h.set(False, mod.recipe(1, 1, False, [0], [0], [torch.float32], steps, 0, k))
    # args (x, y, n): x input at 0, y output at 1; the kernel's parameters x, y, n (n = 8 as bits)
    f = mod.forward((55, (2, 1, 1), 64, 16, [(0, 0, 0, 8), (1, 0, 0, 8), (-1, 0, n, 4)]), [0, 1], [0], [], [1], [], [], [],
                    3, 0, False, h, make_run, fwd_kernel)
    x = torch.randn(n, requires_grad=True)
    y = torch.empty(n)
    assert f.launch((x, y, n))
    assert torch.equal(y.detach(), 2.0 * x.detach()) and y.grad_fn.name() == "KadBackward<fwd_kernel>"
    fn, grid, threads, shared, vals = launched[0]
    assert (fn, grid, threads, shared) == (55, (2, 1, 1), 64, 16) and vals[0] == (True, x.data_ptr(), 8)
    gy = torch.randn(n)
    (gx,) = torch.autograd.grad(y, x, gy)
    assert torch.equal(gx, 2.0 * gy) and not made
    # the fallback of a node the forward made builds its Run first (make_run)
    y2 = torch.empty(n)
    assert f.launch((x, y2, n))
    torch.autograd.grad(y2, x, torch.randn(32)[::4])
    assert len(made) == 1 and len(made[0][0]) == 2 and made[0][1] == [y2._version]
    # the Run's tensors come from the node's slots (the input, the output), detached
    dets = made[0][0]
    assert [d.data_ptr() for d in dets] == [x.data_ptr(), y2.data_ptr()]
    assert not any(d.requires_grad for d in dets)
    # what the forward does not cover: nothing done
    assert not f.launch((x, y, n, 1))  # another argument count
    assert not f.launch((x, 3.0, n))  # not a tensor
    yv = torch.empty(2 * n)[n:]
    assert not f.launch((x, yv, n))  # an output that is a view
    assert not f.launch((x, torch.empty(n, requires_grad=True), n))  # an output that requires grad


def test_native_forward_without_a_holder_launches_and_bumps_versions_only(mod):
    """The C++ launch of a call autograd has nothing to do with (kad.autograd._Direct): the kernel
    launched, the versions of the tensors at outs bumped, no node; views are fine there."""
    n = 8
    launched = []

    def fwd_kernel(fn, grid, threads, shared, vals):
        launched.append((fn, grid, threads, shared, vals))
        (_, px, _), (_, py_, _), (_, m, _) = vals
        _arr(py_, m)[:] = 3.0 * _arr(px, m)

    f = mod.forward((55, (1, 1, 1), 32, 0, [(0, 0, 0, 8), (1, 0, 0, 8), (-1, 0, n, 4)]), [0, 1], [], [], [1], [], [],
                    [], 3, 0, False, None, None, fwd_kernel)
    x = torch.randn(n)
    base = torch.empty(2 * n)
    y = base[:n]
    v = y._version
    assert f.launch((x, y, n))
    assert torch.equal(y, 3.0 * x) and y.grad_fn is None and y._version == v + 1 and x._version == 0
    assert len(launched) == 1 and launched[0][4][1] == (True, y.data_ptr(), 8)
    assert not f.launch((x, y))  # another argument count: nothing done
    assert len(launched) == 1


def test_native_forward_keyed_takes_only_calls_of_its_launch_key(mod):
    """Forward.launch_keyed (DifferentiableKernel.run's repeat of the previous native launch): the
    launch key's fields of every argument, the keywords and the grid compared in C++; a call of
    another key launches nothing (the Python path then computes its key)."""
    n = 8
    launched = []

    def fwd_kernel(fn, grid, threads, shared, vals):
        launched.append(vals)
        (_, px, _), (_, py_, _), (_, m, _) = vals
        _arr(py_, m)[:] = 2.0 * _arr(px, m)

    h = mod.Holder(lambda run, saved, grads: (2.0 * grads[0], None), "fwd_kernel")
    steps = [("launch", 77, (1, 1, 1), 128, 0, [(0, 0, 0, 8), (2, 0, 0, 8), (3, 0, 0, 8), (-1, 0, n, 4),
                                                  (-1, 0, 0, 4)])]
    h.set(False, mod.recipe(1, 1, False, [0], [0], [torch.float32], steps, 0, Kernel()))
    f = mod.forward((55, (1, 1, 1), 64, 0, [(0, 0, 0, 8), (1, 0, 0, 8), (-1, 0, n, 4)]), [0, 1], [0], [], [1], [], [],
                    [], 4, 0, False, h, None, fwd_kernel)
    x = torch.randn(n, requires_grad=True)
    kw = dict(BLOCK=16, FLAG=True)
    assert not f.has_key and not f.launch_keyed((1,), (x, torch.empty(n), n, 0.5), kw)  # not keyed yet
    f.keyed((1,), (x, torch.empty(n), n, 0.5), kw)
    assert f.has_key
    y = torch.empty(n)
    assert f.launch_keyed((1,), (x, y, n, 0.5), dict(FLAG=True, BLOCK=16))  # keywords in another order
    assert torch.equal(y.detach(), 2.0 * x.detach()) and y.grad_fn.name() == "KadBackward<fwd_kernel>"
    assert len(launched) == 1
    xh = torch.randn(n, dtype=torch.float64, requires_grad=True)
    other = [
        ((2,), (x, torch.empty(n), n, 0.5), kw),  # the grid
        ([1], (x, torch.empty(n), n, 0.5), kw),  # a grid that is not a tuple
        ((1,), (x, torch.empty(n), n + 1, 0.5), kw),  # an int's value
        ((1,), (x, torch.empty(n), True, 0.5), kw),  # an int's type (True == 1 for ==)
        ((1,), (x, torch.empty(n), n, 0.25), kw),  # a float's value
        ((1,), (x, torch.empty(n), n, 1), kw),  # a float given as an int
        ((1,), (xh, torch.empty(n), n, 0.5), kw),  # a tensor's dtype
        ((1,), (x.detach(), torch.empty(n), n, 0.5), kw),  # requires_grad
        ((1,), (x * 1, torch.empty(n), n, 0.5), kw),  # is_leaf
        ((1,), (torch.randn(2 * n, requires_grad=True)[:n], torch.empty(n), n, 0.5), kw),  # a view
        ((1,), (x, torch.empty(n + 1)[:n], n, 0.5), kw),  # an output that is a view
        ((1,), (x, torch.empty(2 * n)[::2], n, 0.5), kw),  # strides
        ((1,), (x, torch.empty(n), n, 0.5), dict(BLOCK=16, FLAG=1)),  # a keyword's type
        ((1,), (x, torch.empty(n), n, 0.5), dict(BLOCK=32, FLAG=True)),  # a keyword's value
        ((1,), (x, torch.empty(n), n, 0.5), dict(BLOCK=16)),  # a keyword missing
        ((1,), (x, torch.empty(n), n, 0.5), dict(BLOCK=16, FLAG=True, X=1)),  # one more
        ((1,), (x, torch.empty(n), n), kw),  # the argument count
        ((1,), (x, torch.nn.Parameter(torch.empty(n), requires_grad=False), n, 0.5), kw),  # a tensor's type
    ]
    for grid, args, k in other:
        assert not f.launch_keyed(grid, args, k), (grid, args, k)
    assert len(launched) == 1
    f.keyed((1,), (x, torch.empty(n), n, -0.0), kw)
    assert not f.launch_keyed((1,), (x, torch.empty(n), n, 0.0), kw)  # -0.0 and 0.0 are other keys
    assert f.launch_keyed((1,), (x, torch.empty(n), n, -0.0), kw) and len(launched) == 2
