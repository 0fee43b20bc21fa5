"""Every libdevice function kad differentiates (src/ad/ad_libm.c), through the float64 checkers.

One kernel per function, `y = libdevice.NAME(a[, b[, c]])` on inputs inside the function's
domain (and an int32 tile `offs % 4 - 1` or `offs % 4` where the function takes an int):
- reverse mode: kad's gradient checker (check_gradients, float64 central finite differences,
  per element and along random directions, 1e-6 relative);
- forward mode: the jvp kernel's tangents against float64 central finite differences and the
  dot-product test <J v, w> = <v, J^T w> against the backward (test_jvp's Problem);
- the emitted forward, backward and jvp modules run on Triton's CPU interpreter, with numpy
  stand-ins for the libdevice functions numpy or math has (Triton's interpreter has no
  libdevice), against kad's interpreter;
- a broken rule fails: KAD_TEST_MUTATE=libm doubles every libdevice partial derivative in
  reverse mode, and the checker then FAILs (test_checker_fails_on_a_wrong_rule); a scaled
  tangent fails the forward checks (test_checks_can_fail);
- lgamma's digamma on both sides of the reflection and the series switch; the refusals.
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


@pytest.mark.parametrize("name", ["lgamma", "hypot", "add_rz", "jn"])
def test_checker_fails_on_a_wrong_rule(name, monkeypatch):
    """KAD_TEST_MUTATE=libm (docs/AD.md, "Proving the checker can fail") doubles every libdevice
    partial derivative in reverse mode: the checker must then FAIL these kernels."""
    monkeypatch.setenv("KAD_TEST_MUTATE", "libm")
    k, wrt = kernel(name)
    lo, hi = FUNCS[name][2]
    ok, rep = k.check_gradients(1, wrt, ["y_ptr"], {p: N for p in wrt + ["y_ptr"]},
                                ranges={p: (lo, hi) for p in wrt}, seed=1)
    assert not ok and "FAIL" in rep, rep


# ---------------------------------------------------------------- Triton's CPU interpreter

def _np(fn):
    return np.vectorize(fn, otypes=[np.float64])


# libdevice stand-ins for Triton's interpreter (it has no libdevice): numpy or math in float64
STAND_INS = {
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x), "exp10": lambda x: 10.0 ** x, "log10": np.log10,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "erfc": _np(math.erfc), "erf": _np(math.erf), "lgamma": _np(math.lgamma), "tgamma": _np(math.gamma),
    "normcdf": _np(lambda x: 0.5 * math.erfc(-x / math.sqrt(2))),
    "exp": np.exp, "log": np.log, "cos": np.cos, "sin": np.sin, "tan": np.tan, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sqrt": np.sqrt, "rsqrt_rn": lambda x: 1 / np.sqrt(x), "sqrt_rn": np.sqrt, "rcp_rn": lambda x: 1 / x,
    "saturatef": lambda x: np.clip(np.nan_to_num(x, nan=0.0), 0, 1),
    "hypot": np.hypot, "rhypot": lambda a, b: 1 / np.hypot(a, b), "fdim": lambda a, b: np.maximum(a - b, 0),
    "copysign": np.copysign, "remainder": lambda a, b: a - np.rint(a / b) * b,
    "norm3d": lambda a, b, c: np.sqrt(a * a + b * b + c * c),
    "rnorm3d": lambda a, b, c: 1 / np.sqrt(a * a + b * b + c * c),
    "add_rn": np.add, "sub_rn": np.subtract, "mul_rn": np.multiply, "div_rn": np.divide,
    "fma_rn": lambda a, b, c: a * b + c, "ldexp": lambda x, n: np.ldexp(x, n.astype(np.int32)),
    "pow": lambda x, n: np.power(x, n), "rint": np.rint,
    "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan, "fast_log2f": np.log2,
    "fast_log10f": np.log10, "fast_exp10f": lambda x: 10.0 ** x, "fast_powf": np.power,
    "fast_dividef": np.divide,
}
# KAD_GRAD_TEST_DEVICE=cuda: the modules compiled by Triton with CUDA's libdevice, every function
# (tests/gpu/run_all.sh); else Triton's interpreter with the numpy stand-ins, where there is one
GRAD_DEVICE = os.environ.get("KAD_GRAD_TEST_DEVICE", "cpu")
TRITON_NAMES = [n for n in NAMES
                if GRAD_DEVICE != "cpu" or n in STAND_INS or n in ("scalbn", "fast_expf", "fast_logf")]


def _stand_in(np_fn):
    import triton.language as tl
    from triton.runtime import interpreter

    def fn(*args, _semantic=None, **_):
        ts = [a for a in args if isinstance(a, tl.tensor)]
        dt, ty = ts[0].handle.data.dtype, ts[0].type
        for a in ts:
            if a.handle.data.dtype.kind == "f":
                dt, ty = a.handle.data.dtype, a.type
        data = [a.handle.data.astype(np.float64) if isinstance(a, tl.tensor) and a.handle.data.dtype.kind == "f"
                else (a.handle.data if isinstance(a, tl.tensor) else np.float64(a)) for a in args]
        out = np.asarray(np_fn(*data)).astype(dt)
        shape = max((a.handle.data.shape for a in ts), key=len)
        out = np.broadcast_to(out, shape).copy()
        return tl.tensor(interpreter.TensorHandle(out, ty.scalar), ty if ty.shape else ts[0].type)

    fn.__triton_builtin__ = True
    return fn


@pytest.fixture
def libdevice_stand_ins(monkeypatch):
    if GRAD_DEVICE != "cpu":  # compiled: CUDA's own libdevice
        return
    from triton.language.extra import libdevice
    for name, f in STAND_INS.items():
        monkeypatch.setattr(libdevice, name, _stand_in(f))
    monkeypatch.setattr(libdevice, "scalbn", _stand_in(STAND_INS["ldexp"]))
    monkeypatch.setattr(libdevice, "fast_expf", _stand_in(np.exp))
    monkeypatch.setattr(libdevice, "fast_logf", _stand_in(np.log))


@pytest.mark.parametrize("name", TRITON_NAMES)
def test_emitted_modules_run_on_triton(name, tmp_path, libdevice_stand_ins):
    """The backward and jvp modules kad emits for the kernel run under Triton's interpreter and give
    kad's interpreter's gradients and tangents (fp32, with the stand-ins above)."""
    torch = pytest.importorskip("torch")
    import triton_cpu
    k, wrt = kernel(name)
    xs = {n: v.astype(np.float32) for n, v in inputs(name).items()}
    rng = np.random.default_rng(9)
    dy = rng.standard_normal(N).astype(np.float32)
    v = {n: rng.standard_normal(N).astype(np.float32) for n in wrt}
    # kad's interpreter, as written (fp32)
    bwd = k.grad(wrt, ["y_ptr"], deterministic=False)
    b = dict(xs, y_ptr=np.zeros(N, np.float32), d_y_ptr=dy.copy(), **{f"d_{n}": np.zeros(N, np.float32) for n in wrt})
    bwd.run((1,), {n: b[n] for n, _ in bwd.params})
    jv = k.jvp(wrt, ["y_ptr"])
    j = dict(xs, y_ptr=np.zeros(N, np.float32), t_y_ptr=np.zeros(N, np.float32), **{f"t_{n}": v[n].copy() for n in wrt})
    jv.run((1,), {n: j[n] for n, _ in jv.params})
    dev = GRAD_DEVICE
    t = {n: torch.from_numpy(x.copy()).to(dev) for n, x in xs.items()}
    with triton_cpu.interpreter(dev):
        (tmp_path / "bwd.py").write_text(k.grad_module(wrt, ["y_ptr"]))
        mb = triton_cpu.load_module(str(tmp_path / "bwd.py"), f"kad_ld_bwd_{name}")
        d_ins = [torch.zeros(N, device=dev) for _ in wrt]
        getattr(mb, f"launch_k_{name}_bwd")((1,), *[t[n] for n in wrt], torch.zeros(N, device=dev),
                                            torch.from_numpy(dy.copy()).to(dev), *d_ins, N=N)
        (tmp_path / "jvp.py").write_text(k.jvp_module(wrt, ["y_ptr"]))
        mj = triton_cpu.load_module(str(tmp_path / "jvp.py"), f"kad_ld_jvp_{name}")
        y, ty = torch.zeros(N, device=dev), torch.zeros(N, device=dev)
        getattr(mj, f"launch_k_{name}_jvp")((1,), *[t[n] for n in wrt], y,
                                            *[torch.from_numpy(v[n].copy()).to(dev) for n in wrt], ty, N=N)
    # on a GPU, CUDA's libdevice against C's libm: within their ulps (fast_* approximate more)
    rt = 2e-4 if dev == "cpu" else 2e-3 if name.startswith("fast_") else 5e-4
    for n, d in zip(wrt, d_ins):
        np.testing.assert_allclose(d.cpu().numpy(), b[f"d_{n}"], rtol=rt, atol=2e-5)
    np.testing.assert_allclose(y.cpu().numpy(), j["y_ptr"], rtol=rt / 10, atol=1e-6)
    np.testing.assert_allclose(ty.cpu().numpy(), j["t_y_ptr"], rtol=rt, atol=2e-5)
