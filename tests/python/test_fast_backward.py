"""The GPU backward's short path (autograd.py: _fast_backward, _run_fast) against the general one.

On a GPU a repeat launch's backward (a _Plan's) calls the generated launcher with the runtime
arguments, the output gradients and fresh input-gradient buffers, skipping _run_backward's general
handling where the plan's launch key shows it has nothing to do.  The GPU suites check its
gradients; here, on the CPU, kad's CUDA host path runs on CPU tensors (the launch typed as a CUDA
one, as bench/host_overhead.py's --device stub does) with the generated launcher replaced by a
recorder, and the short path must make exactly the call the general path makes: the same grid, the
same tensors in the same places (the saved inputs, the gradients given), buffers of the same
shapes, strides and dtypes, the same options -- and it must step aside for a gradient of another
layout or dtype.
"""
import pytest
import torch

import kad
import kad.autograd as A
import triton_cpu
from kad import _launch


class _Nop:
    def __getitem__(self, grid):
        return lambda *a, **k: None


@pytest.fixture
def cuda_typed(monkeypatch):
    """Launches of CPU tensors typed as CUDA ones; every backward launcher a recorder."""
    sig = _launch.Binder._signature

    def signature(self, values, f64_as):
        s, _, parts = sig(self, values, f64_as)
        return s, "cuda", parts
    monkeypatch.setattr(_launch.Binder, "_signature", signature)
    calls = []
    back = A._Prep._backward

    def _backward(self, *a, **k):
        b = back(self, *a, **k)

        def record(grid, *args, **kw):
            calls.append((tuple(grid), args, kw))
        return (*b[:3], record, *b[4:])
    monkeypatch.setattr(A._Prep, "_backward", _backward)
    saving = A._Prep.saving
    monkeypatch.setattr(A._Prep, "saving", lambda self, dk: saving(self, dk) and (lambda *a, **k: None))
    return calls


def _same_call(c1, c2):
    (g1, a1, k1), (g2, a2, k2) = c1, c2
    assert g1 == g2 and k1 == k2 and len(a1) == len(a2)
    for x, y in zip(a1, a2):
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor)
            assert (x.shape, x.stride(), x.dtype, x.device) == (y.shape, y.stride(), y.dtype, y.device)
        else:
            assert x == y and type(x) is type(y)


def _softmax(dtype):
    m = triton_cpu.corpus_module("softmax.py")
    k = kad.differentiable(inputs=["input_ptr"], outputs=["output_ptr"])(m.softmax_kernel)
    k.fn = _Nop()  # the forward's launch: nothing (a stubbed GPU)

    def f(x):
        y = torch.empty_like(x)
        k[(x.shape[0],)](y, x, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=64)
        return y
    return f


def _layer_norm(dtype):
    m = triton_cpu.corpus_module("layer_norm.py")
    k = kad.differentiable(inputs=["X", "W", "B"], outputs=["Y"])(m.layer_norm_fwd_kernel)
    k.fn = _Nop()

    def f(x, w, b):
        y = torch.empty_like(x)
        mean = torch.empty(x.shape[0])
        rstd = torch.empty(x.shape[0])
        k[(x.shape[0],)](x, y, w, b, mean, rstd, x.stride(0), y.stride(0), x.shape[1], 1e-5, BLOCK_N=16)
        return y
    return f


@pytest.mark.parametrize("which", ["softmax", "layer_norm"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_short_path_makes_the_general_paths_call(cuda_typed, which, dtype):
    calls = cuda_typed
    if which == "softmax":
        f, shapes = _softmax(dtype), [(6, 50)]
    else:
        f, shapes = _layer_norm(dtype), [(5, 40), (40,), (40,)]
    xs = [torch.randn(*s).to(dtype).requires_grad_() for s in shapes]
    runs = []
    for _ in range(3):  # the first launch binds; the next ones go through the key's plan
        y = f(*xs)
        runs.append(y)
    y = runs[-1]
    plan = y.grad_fn.run.plan
    assert plan is not None
    dy = torch.randn(y.shape).to(dtype)
    got = torch.autograd.grad(y, xs, dy, retain_graph=True)
    assert any(v for v in plan.fast.values()), "the short path did not apply"
    fast_call = calls[-1]
    assert fast_call[1][len(fast_call[1]) - len(xs) - 1] is dy  # the output gradient, as given
    # the saved inputs in their places
    for x in xs:
        assert any(a is x or (isinstance(a, torch.Tensor) and a.data_ptr() == x.data_ptr() and a.shape == x.shape)
                   for a in fast_call[1][:-len(xs) - 1])
    assert [g.shape for g in got] == [x.shape for x in xs] and all(g.dtype == dtype for g in got)
    # the general path's call, on the same graph
    for k in plan.fast:
        plan.fast[k] = False
    torch.autograd.grad(y, xs, dy, retain_graph=True)
    _same_call(fast_call, calls[-1])
    # a gradient of another layout: the general path (which makes it contiguous)
    plan.fast.clear()
    n = len(calls)
    dyt = torch.randn(tuple(reversed(y.shape))).to(dtype).t()
    torch.autograd.grad(y, xs, dyt, retain_graph=True)
    assert len(calls) == n + 1 and calls[-1][1][len(calls[-1][1]) - len(xs) - 1] is not dyt
    assert calls[-1][1][len(calls[-1][1]) - len(xs) - 1].is_contiguous()
