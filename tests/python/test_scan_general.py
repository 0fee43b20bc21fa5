"""tl.associative_scan with combine functions no special case recognizes, differentiated by the
general rule (docs/AD.md, "Scans": the reverse sweep through the combine's Jacobians, an affine
scan over k x k matrices run the other way).

The kernels are tests/kernels/scan_general.py's: scalar mixes (x + y + x*y, a log-sum-exp), pairs
(sum, product), a running mean with an int count, Welford's (count, mean, M2), an online softmax's
(max, sum), a segmented sum (an int flag choosing with tl.where) and a complex linear recurrence
(a 4-slot state), on a [4, 16] tile along each axis, forward and reverse, and one row
per program (1-D).  Each is checked three ways:
- kad's float64 finite-difference checker (kad_check), and that the checker fails when the rule
  uses its Jacobians untransposed (KAD_TEST_MUTATE=scan_jac) wherever the state's slots couple;
- the package on kad's interpreter against PyTorch autograd of the same math written as a
  sequential loop in torch;
- the emitted backward module (kad grad) on Triton's interpreter against the same reference;
plus second derivatives (reverse over forward) with gradgradcheck.
"""
import os
import sys
from typing import NamedTuple

import pytest
import torch

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/ -> `import kernels`
from kernels import scan_general  # noqa: E402

FILE = "tests/kernels/scan_general.py"
M, N = 4, 16


# ---------------------------------------------------------------- the math, written plainly


def seq_scan(xs, f, axis, reverse):
    """The inclusive scan of the tuple xs (tensors of one shape) along axis with combine f, as a
    sequential loop: y[t] = f(y[t-1], x[t]) (reverse: y[t+1]), y at the first lane x."""
    T = xs[0].shape[axis]
    order = list(reversed(range(T))) if reverse else list(range(T))
    acc, out = None, [[None] * T for _ in xs]
    for t in order:
        cur = tuple(x.select(axis, t) for x in xs)
        acc = cur if acc is None else tuple(f(*acc, *cur))
        for k, a in enumerate(acc):
            out[k][t] = a
    return [torch.stack(o, axis) for o in out]


def soft_or(x, y):
    return (x + y + x * y,)


def logaddexp(x, y):
    return (torch.maximum(x, y) + torch.log(1.0 + torch.exp(-torch.abs(x - y))),)


def sum_prod(s1, p1, s2, p2):
    return s1 + s2, p1 * p2


def mean_count(m1, n1, m2, n2):
    n = n1 + n2
    return (m1 * n1 + m2 * n2) / n, n


def welford(n1, mean1, m2_1, n2, mean2, m2_2):
    n = n1 + n2
    delta = mean2 - mean1
    frac = n2 / n
    return n, mean1 + delta * frac, m2_1 + m2_2 + delta * delta * n1 * frac


def online_softmax(m1, s1, m2, s2):
    m = torch.maximum(m1, m2)
    return m, s1 * torch.exp(m1 - m) + s2 * torch.exp(m2 - m)


def segmented(f1, v1, f2, v2):
    return f1 | f2, torch.where(f2, v2, v1 + v2)


def flags(x):
    return torch.arange(x.numel()).reshape(x.shape) % 5 == 0


def complex_affine(ar1, ai1, br1, bi1, ar2, ai2, br2, bi2):
    return (ar1 * ar2 - ai1 * ai2, ar1 * ai2 + ai1 * ar2,
            ar2 * br1 - ai2 * bi1 + br2, ar2 * bi1 + ai2 * br1 + bi2)


def ones(x):
    return torch.ones_like(x)


class Case(NamedTuple):
    kernel: str
    ins: tuple        # the differentiated inputs, in the kernel's parameter order
    outs: tuple       # the float outputs, after the inputs
    ranges: dict      # input -> (lo, hi)
    ref: object       # (inputs..., axis, reverse) -> the outputs' tensors
    couples: bool     # the state's float slots couple (the scan_jac mutation must fail)


CASES = {
    "soft_or": Case("soft_or_kernel", ("x_ptr",), ("y_ptr",), {"x_ptr": (0.1, 0.6)},
                    lambda x, a, r: seq_scan((x,), soft_or, a, r), False),
    "logaddexp": Case("logaddexp_kernel", ("x_ptr",), ("y_ptr",), {"x_ptr": (-1.0, 1.0)},
                      lambda x, a, r: seq_scan((x,), logaddexp, a, r), False),
    "sum_prod": Case("sum_prod_kernel", ("x_ptr", "w_ptr"), ("s_ptr", "p_ptr"),
                     {"x_ptr": (-1.0, 1.0), "w_ptr": (0.6, 1.4)},
                     lambda x, w, a, r: seq_scan((x, w), sum_prod, a, r), False),
    "mean_count": Case("mean_count_kernel", ("x_ptr",), ("y_ptr",), {"x_ptr": (-1.0, 1.0)},
                       lambda x, a, r: seq_scan((x, ones(x)), mean_count, a, r)[:1], False),
    "welford": Case("welford_kernel", ("x_ptr",), ("mean_ptr", "m2_ptr"), {"x_ptr": (-1.0, 1.0)},
                    lambda x, a, r: seq_scan((ones(x), x, 0 * x), welford, a, r)[1:], True),
    "online_softmax": Case("online_softmax_kernel", ("x_ptr",), ("m_ptr", "s_ptr"), {"x_ptr": (-2.0, 2.0)},
                           lambda x, a, r: seq_scan((x, ones(x)), online_softmax, a, r), True),
    "segmented_sum": Case("segmented_sum_kernel", ("x_ptr",), ("y_ptr",), {"x_ptr": (-1.0, 1.0)},
                          lambda x, a, r: seq_scan((flags(x), x), segmented, a, r)[1:], False),
    "complex_linrec": Case("complex_linrec_kernel", ("ar_ptr", "ai_ptr", "br_ptr", "bi_ptr"),
                           ("hr_ptr", "hi_ptr"),
                           {"ar_ptr": (0.2, 0.6), "ai_ptr": (-0.5, 0.5), "br_ptr": (-1.0, 1.0),
                            "bi_ptr": (-1.0, 1.0)},
                           lambda ar, ai, br, bi, a, r: seq_scan((ar, ai, br, bi), complex_affine, a, r)[2:],
                           True),
}

# (case, axis, reverse, 1-D): every 2-D case along both axes both ways, the 1-D kernel both ways
CONFIGS = [(c, a, r, False) for c in CASES for a in (0, 1) for r in (False, True)]
CONFIGS += [("logaddexp", 1, r, True) for r in (False, True)]
IDS = [f"{c}-{'1d' if d else f'axis{a}'}-{'rev' if r else 'fwd'}" for c, a, r, d in CONFIGS]


def launch_of(case, axis, reverse, one_d):
    """(kernel name, grid, constexprs) of a configuration."""
    if one_d:
        return "row_" + case.kernel, (M,), dict(N=N, REVERSE=reverse)
    return case.kernel, (1,), dict(M=M, N=N, AXIS=axis, REVERSE=reverse)


def sig_of(case, consts, dtypes=None):
    ptrs = ",".join(f"{p}=*{(dtypes or {}).get(p, 'fp32')}" for p in case.ins + case.outs)
    return ptrs + "," + ",".join(f"{k}={v}" for k, v in consts.items())


def inputs(case, seed):
    g = torch.Generator().manual_seed(seed)
    return [lo + (hi - lo) * torch.rand(M, N, generator=g, dtype=torch.float64)
            for lo, hi in (case.ranges[n] for n in case.ins)]


# ---------------------------------------------------------------- kad's float64 checker


def check(case, axis, reverse, one_d, dtypes=None):
    name, grid, consts = launch_of(case, axis, reverse, one_d)
    ctx = kad.Context()
    with open(os.path.join(REPO, FILE), encoding="utf-8") as f:
        ctx.add_source(FILE, f.read())
    k = ctx.specialize(name, sig_of(case, consts, dtypes))
    shapes = {p: M * N for p in case.ins + case.outs}
    return k.check_gradients(grid, list(case.ins), list(case.outs), shapes, ranges=case.ranges, seed=7)


@pytest.mark.parametrize("cid,axis,reverse,one_d", CONFIGS, ids=IDS)
def test_checker_passes(cid, axis, reverse, one_d):
    passed, report = check(CASES[cid], axis, reverse, one_d)
    assert passed, report
    assert report.rstrip().endswith("PASS (rtol 1e-06)"), report


@pytest.mark.parametrize("cid,dtypes", [
    ("sum_prod", dict(w_ptr="fp64", p_ptr="fp64")),
    ("complex_linrec", dict(ar_ptr="fp64", br_ptr="fp16", hr_ptr="fp16", bi_ptr="bf16")),
])
def test_checker_passes_with_mixed_dtypes(cid, dtypes):
    """Slots of several dtypes: the Jacobians' affine scan runs in the widest adjoint dtype."""
    passed, report = check(CASES[cid], 0, True, False, dtypes)
    assert passed, report


@pytest.mark.parametrize("cid", [c for c in CASES if CASES[c].couples])
@pytest.mark.parametrize("reverse", [False, True])
def test_checker_fails_with_untransposed_jacobians(cid, reverse, monkeypatch):
    monkeypatch.setenv("KAD_TEST_MUTATE", "scan_jac")
    passed, report = check(CASES[cid], 1, reverse, False)
    assert not passed, f"the checker missed the mutated scan rule:\n{report}"
    assert "KAD_TEST_MUTATE=scan_jac" in report and report.rstrip().endswith("FAIL (rtol 1e-06)"), report


# ---------------------------------------------------------------- PyTorch autograd


def reference(case, xs, axis, reverse, seed):
    """The reference outputs on float64 leaves of xs, the seeds dy and the leaves' gradients."""
    leaves = [x.clone().requires_grad_() for x in xs]
    ys = case.ref(*leaves, axis, reverse)
    g = torch.Generator().manual_seed(seed + 1)
    dys = [torch.randn(M, N, generator=g, dtype=torch.float64) for _ in ys]
    grads = torch.autograd.grad(sum((y * d).sum() for y, d in zip(ys, dys)), leaves)
    return [y.detach() for y in ys], dys, grads


@pytest.mark.parametrize("cid,axis,reverse,one_d", CONFIGS, ids=IDS)
def test_package_matches_torch(cid, axis, reverse, one_d):
    case = CASES[cid]
    name, grid, consts = launch_of(case, axis, reverse, one_d)
    xs = inputs(case, 11)
    want, dys, grads = reference(case, xs, axis if not one_d else 1, reverse, 11)
    k = kad.differentiable(inputs=list(case.ins), outputs=list(case.outs))(getattr(scan_general, name))
    leaves = [x.float().requires_grad_() for x in xs]
    outs = [torch.empty(M, N) for _ in case.outs]
    k[grid](*leaves, *outs, **consts)
    for y, w in zip(outs, want):
        torch.testing.assert_close(y.double(), w, rtol=1e-5, atol=1e-5)
    torch.autograd.backward(outs, [d.float() for d in dys])
    for x, gr in zip(leaves, grads):
        torch.testing.assert_close(x.grad.double(), gr, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- Triton's interpreter


@pytest.mark.parametrize("cid,axis,reverse,one_d", CONFIGS, ids=IDS)
def test_backward_module_on_triton_interpreter(cid, axis, reverse, one_d, tmp_path):
    import triton_cpu
    case = CASES[cid]
    name, grid, consts = launch_of(case, axis, reverse, one_d)
    xs = inputs(case, 13)
    _, dys, grads = reference(case, xs, axis if not one_d else 1, reverse, 13)
    with triton_cpu.interpreter():
        mod, _ = triton_cpu.grad_module(FILE, name, sig_of(case, consts), ",".join(case.ins),
                                        ",".join(case.outs), tmp_path, "scan_general")
        d_ins = [torch.full((M, N), float("nan")) for _ in case.ins]
        outs = [torch.empty(M, N) for _ in case.outs]
        getattr(mod, f"launch_{name}_bwd")(grid, *[x.float() for x in xs], *outs,
                                           *[d.float() for d in dys], *d_ins, **consts)
    for d, gr in zip(d_ins, grads):
        torch.testing.assert_close(d.double(), gr, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- second derivatives


@pytest.mark.parametrize("cid", ["soft_or", "sum_prod", "welford", "online_softmax", "segmented_sum", "complex_linrec"])
def test_gradgradcheck_f64(cid):
    """Reverse over forward: the JVP kernel's scan over dual numbers is itself a general scan."""
    case = CASES[cid]
    name, grid, consts = launch_of(case, 1, False, False)
    k = kad.differentiable(inputs=list(case.ins), outputs=list(case.outs))(getattr(scan_general, name))

    def f(*xs):
        outs = [torch.empty(M, N, dtype=torch.float64) for _ in case.outs]
        k[grid](*xs, *outs, **consts)
        return tuple(outs)

    xs = tuple(x.requires_grad_() for x in inputs(case, 17))
    with kad.f64_mode(torch.float32):
        assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-7)
        assert torch.autograd.gradgradcheck(f, xs, eps=1e-6, atol=1e-6)
