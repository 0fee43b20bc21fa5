"""Forward mode (kad jvp, src/ad/sweep_fwd.c) against independent references, on kad's interpreter in float64.

For every corpus case that kad grad differentiates (test_grad_check.GRAD, refusals left out) and the
loop kernels of tests/kernels/tape_loops.py:
- finite differences: the jvp kernel's output tangents J v against the central difference
  (f(x + h v) - f(x - h v)) / 2h of the forward kernel, relative to the norm (1e-6);
- the dot-product test: <J v, w> from the jvp kernel equals <v, J^T w> from the backward kernel
  (kad grad) for random v and w, in float64 (1e-9 relative).
A mutated tangent (the jvp's result scaled on one input) must fail both, so the tests can fail.
Also: the emitted jvp module is itself differentiable by `kad grad` (reverse over forward) and
passes `kad check`; forward mode runs `while` loops, which reverse mode refuses.
"""
import os
import subprocess

import numpy as np
import pytest

import harness
import kad
from corpus import CASE_IDS, CASES, parse_sig
from test_grad_check import GRAD, GRAD_CASE, KERNELS, REPO

KAD = os.path.join(REPO, "build", "kad")


def spec(case):
    return GRAD_CASE.get(case.id) or GRAD[f"{case.file}:{case.kernel}"]


GRAD_CASES = [c for c in CASES if spec(c).refuse is None]
JVP_CASES = GRAD_CASES  # forward mode differentiates every kernel reverse mode does


def _kernel(files, kernel, sig, root=KERNELS, prefix="tests/kernels"):
    ctx = kad.Context()
    for name in files:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            ctx.add_source(f"{prefix}/{name}", f.read())
    return ctx.specialize(kernel, sig)


class Problem:
    """A kernel, its differentiated inputs and outputs, and float64 buffers for one launch."""

    def __init__(self, k, grid, args, wrt, out, seed):
        self.k, self.grid, self.wrt, self.out = k, grid, tuple(wrt), tuple(out)
        self.args = args  # name -> numpy buffer (float64 for float data) or scalar
        self.rng = np.random.default_rng(seed + 1000003)  # not the seed the inputs were drawn with
        self.ptrs = [n for n, t in k.params if t.startswith("*")]
        self.jvp = k.jvp(list(wrt), list(out))
        self.bwd = k.grad(list(wrt), list(out), deterministic=False)  # atomics: no folded partials

    def _buffers(self, x=None):
        b = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in self.args.items()}
        for n in self.out:
            b[n] = np.zeros_like(b[n])
        if x:
            b.update({n: v.copy() for n, v in x.items()})
        return b

    def forward(self, x):
        b = self._buffers(x)
        self.k.run(self.grid, {n: b[n] for n, _ in self.k.params}, mode="f64")
        return {n: b[n] for n in self.out}

    def jv(self, v, scale_bug=None):
        b = self._buffers()
        for n, _ in self.jvp.params:
            if n.startswith("t_") and n[2:] in self.wrt:
                b[n] = v[n[2:]].copy()
            elif n.startswith("t_") and n[2:] in self.out:
                b[n] = np.zeros_like(b[n[2:]])
        self.jvp.run(self.grid, {n: b[n] for n, _ in self.jvp.params}, mode="f64")
        return {n: b["t_" + n] for n in self.out}

    def vjp(self, w):
        b = self._buffers()
        for n, _ in self.bwd.params:
            if n.startswith("d_") and n[2:] in self.out:
                b[n] = w[n[2:]].copy()
            elif n.startswith("d_") and n[2:] in self.wrt:
                b[n] = np.zeros_like(b[n[2:]])
        self.bwd.run(self.grid, {n: b[n] for n, _ in self.bwd.params}, mode="f64")
        return {n: b["d_" + n] for n in self.wrt}

    def random_like(self, names):
        return {n: self.rng.standard_normal(np.shape(self.args[n])) for n in names}


# Cases whose data has ties on purpose (for reverse mode's tie convention): at a tie the derivative is
# one-sided, finite differences give neither side and forward mode takes the side the program's own
# choice gives (a selection scan: the element the combine function selects), reverse mode its own
# documented one.  The checks below run them on the same data with the ties broken (test_tie_convention
# checks forward mode at the ties).
TIED = {"cummax_index_forward"}


def corpus_problem(case, break_ties=True):
    g = spec(case)
    prep = harness.prepare(case, "f64")
    if break_ties and case.id in TIED:
        rng = np.random.default_rng(11)
        for n in g.wrt:
            prep.args[n] = prep.args[n] + 1e-3 * rng.standard_normal(np.shape(prep.args[n]))
    k = _kernel((case.file,) + case.extra, case.kernel, case.sig)
    return Problem(k, case.grid, prep.args, g.wrt, g.out, harness.case_seed(case))


def flat(d):
    return np.concatenate([np.ravel(d[n]) for n in sorted(d)])


def check_fd(p, mutate=1.0):
    v = p.random_like(p.wrt)
    x0 = {n: p.args[n] for n in p.wrt}
    scale = max(1.0, max(np.max(np.abs(x0[n])) for n in x0))
    h = 1e-6 * scale
    plus = p.forward({n: x0[n] + h * v[n] for n in p.wrt})
    minus = p.forward({n: x0[n] - h * v[n] for n in p.wrt})
    fd = {n: (plus[n] - minus[n]) / (2 * h) for n in p.out}
    t = p.jv(v)
    t = {n: t[n] * mutate for n in t}
    a, b = flat(t), flat(fd)
    err = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)
    return err, np.linalg.norm(b)


def check_dot(p, mutate=1.0):
    v = p.random_like(p.wrt)
    w = p.random_like(p.out)
    jv = p.jv(v)
    vjp = p.vjp(w)
    lhs = mutate * sum(float(np.sum(jv[n] * w[n])) for n in p.out)
    rhs = sum(float(np.sum(v[n] * vjp[n])) for n in p.wrt)
    scale = sum(float(np.sum(np.abs(jv[n] * w[n]))) for n in p.out) + 1e-300
    return abs(lhs - rhs) / scale


@pytest.mark.parametrize("case", JVP_CASES, ids=[c.id for c in JVP_CASES])
def test_jvp_finite_differences(case):
    err, norm = check_fd(corpus_problem(case))
    assert norm > 0, f"{case.id}: the outputs do not depend on the inputs along v"
    assert err < 1e-6, f"{case.id}: |Jv - FD| / |FD| = {err:.3e}"


@pytest.mark.parametrize("case", JVP_CASES, ids=[c.id for c in JVP_CASES])
def test_jvp_dot_product(case):
    err = check_dot(corpus_problem(case))
    assert err < 1e-9, f"{case.id}: <Jv, w> vs <v, J^T w>: relative error {err:.3e}"


def test_checks_can_fail():
    case = next(c for c in JVP_CASES if c.file == "softmax.py")
    p = corpus_problem(case)
    assert check_fd(p, mutate=1.001)[0] > 1e-6
    assert check_dot(p, mutate=1.001) > 1e-9


# ---- loops: tests/kernels/tape_loops.py (non-linear carried state) and a while loop ----

TAPE = "tape_loops.py"


def loop_problem(name, seed=7):
    """A kernel of tape_loops.py with test_tape.CHECKS's signature, sizes and scalars."""
    import test_tape
    sig, wrt, outs, opts = test_tape.CHECKS[name]
    k = _kernel((TAPE,), name.replace("_one_chunk", ""), sig)
    o = dict(zip(opts[0::2], opts[1::2]))  # the last of each repeated option ...
    pairs = list(zip(opts[0::2], opts[1::2]))  # ... so walk them all
    grid = tuple(int(g) for g in o["--grid"].split(","))
    sizes = {a.split("=")[0]: int(np.prod([int(d) for d in a.split("=")[1].split("x")]))
             for f, a in pairs if f == "--shape"}
    ranges = {a.split("=")[0]: tuple(float(x) for x in a.split("=")[1].split(":")) for f, a in pairs if f == "--range"}
    scalars = {a.split("=")[0]: a.split("=")[1] for f, a in pairs if f == "--arg"}
    rng = np.random.default_rng(seed)
    args = {}
    for pname, kind, t in parse_sig(sig):
        if kind == "ptr" and t.startswith("fp"):
            args[pname] = rng.uniform(*ranges.get(pname, (-1, 1)), sizes[pname])
        elif kind == "ptr":
            lo, hi = ranges.get(pname, (0, 1))
            args[pname] = rng.integers(int(lo), int(hi) + 1, sizes[pname]).astype(np.int32)
        elif kind == "scalar":
            args[pname] = float(scalars[pname]) if t.startswith("fp") else int(scalars[pname])
    return Problem(k, grid, args, wrt.split(","), outs.split(","), seed)


def _loop_names():
    import test_tape
    return sorted(test_tape.CHECKS)


@pytest.mark.parametrize("name", _loop_names())
def test_jvp_loops(name):
    p = loop_problem(name)
    err, norm = check_fd(p)
    assert norm > 0 and err < 1e-6, f"{name}: |Jv - FD| / |FD| = {err:.3e}"
    err = check_dot(p)
    assert err < 1e-9, f"{name}: <Jv, w> vs <v, J^T w>: relative error {err:.3e}"


WHILE_SRC = '''
import triton
import triton.language as tl


@triton.jit
def newton_sqrt(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a data-dependent while loop with non-linear carried state (Newton's iteration for sqrt)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = a
    it = 0
    while it < 30:
        y = 0.5 * (y + a / y)
        it += 1
    tl.store(y_ptr + offs, y * tl.sin(a), mask=m)


@triton.jit
def grid_stride(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a persistent grid-stride while loop whose carried state is a pointer offset and a running product
    start = tl.program_id(0) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32) + 1.0
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        acc = acc * tl.exp(0.3 * x) + x
        tl.store(y_ptr + offs, acc, mask=m)
        start += BLOCK * tl.num_programs(0)
'''


def while_kernel(tmp_path, kernel):
    path = tmp_path / "whiles.py"
    path.write_text(WHILE_SRC)
    ctx = kad.Context()
    ctx.add_source(str(path), WHILE_SRC)
    return ctx.specialize(kernel, "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16")


@pytest.mark.parametrize("kernel", ["newton_sqrt", "grid_stride"])
def test_jvp_while_loop(tmp_path, kernel):
    k = while_kernel(tmp_path, kernel)
    rng = np.random.default_rng(3)
    n = 70
    lo = 0.5 if kernel == "newton_sqrt" else -1.0
    args = {"x_ptr": rng.uniform(lo, 2.0, n), "y_ptr": np.zeros(n), "n": n}
    jv = k.jvp(["x_ptr"], ["y_ptr"])
    p = Problem.__new__(Problem)
    p.k, p.grid, p.wrt, p.out, p.args = k, (5 if kernel == "newton_sqrt" else 2), ("x_ptr",), ("y_ptr",), args
    p.rng, p.jvp = rng, jv
    err, norm = check_fd(p)
    assert norm > 0 and err < 1e-6, f"{kernel}: |Jv - FD| / |FD| = {err:.3e}"
    if kernel == "newton_sqrt":  # the tangent is that of sqrt(a) * sin(a)
        v = np.ones(n)
        t = p.jv({"x_ptr": v})["y_ptr"]
        a = args["x_ptr"]
        ref = 0.5 / np.sqrt(a) * np.sin(a) + np.sqrt(a) * np.cos(a)
        assert np.allclose(t, ref, rtol=1e-9, atol=0), np.max(np.abs(t - ref))


def run_cli(*args):
    return subprocess.run([KAD, *args], capture_output=True, text=True)


def test_reverse_over_forward(tmp_path):
    """kad grad differentiates the emitted jvp module (reverse over forward), checked by kad check."""
    for file, kernel, sig, wrt, out, shape in [
        ("gelu.py", "gelu_kernel", "x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,APPROXIMATE='tanh',BLOCK_SIZE=64",
         "x_ptr", "y_ptr", ["--shape", "x_ptr=150", "--shape", "y_ptr=150", "--shape", "t_x_ptr=150", "--shape",
                            "t_y_ptr=150", "--arg", "n_elements=150", "--grid", "3"]),
        ("softmax.py", "softmax_kernel", "output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,"
         "output_row_stride=i32,n_cols=i32,BLOCK_SIZE=64", "input_ptr", "output_ptr",
         ["--shape", "output_ptr=3x50", "--shape", "input_ptr=3x50", "--shape", "t_input_ptr=3x50", "--shape",
          "t_output_ptr=3x50", "--arg", "input_row_stride=50", "--arg", "output_row_stride=50", "--arg",
          "n_cols=50", "--grid", "3"]),
    ]:
        mod = tmp_path / f"{kernel}_jvp.py"
        r = run_cli("jvp", os.path.join(KERNELS, file) + ":" + kernel, "--sig", sig, "--wrt", wrt, "--out", out,
                    "-o", str(mod))
        assert r.returncode == 0, r.stderr
        text = mod.read_text()
        assert f"def {kernel}_jvp(" in text and f"def launch_{kernel}_jvp(" in text
        jsig = sig + f",t_{wrt}=*fp32,t_{out}=*fp32"
        r = run_cli("grad", f"{mod}:{kernel}_jvp", "--sig", jsig, "--wrt", f"{wrt},t_{wrt}", "--out",
                    f"{out},t_{out}", "-o", str(tmp_path / "hvp.py"))
        assert r.returncode == 0, r.stderr
        r = run_cli("check", f"{mod}:{kernel}_jvp", "--sig", jsig, "--wrt", f"{wrt},t_{wrt}", "--out",
                    f"{out},t_{out}", *shape)
        assert r.returncode == 0 and r.stdout.rstrip().endswith("PASS (rtol 1e-06)"), r.stdout + r.stderr


@pytest.mark.parametrize("cid", ["softmax_fp32", "rms_norm_fp32"])
def test_emitted_jvp_module_runs_on_triton(tmp_path, cid):
    """The generated module's launch_<kernel>_jvp, run by Triton (its CPU interpreter, or the GPU with
    KAD_TEST_DEVICE=cuda), gives the tangents kad's interpreter gives for the jvp kernel (fp32)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    import triton_cpu
    device = os.environ.get("KAD_TEST_DEVICE", "cpu")
    case = next(c for c in JVP_CASES if c.id == cid)
    g = spec(case)
    k = _kernel((case.file,) + case.extra, case.kernel, case.sig)
    path = tmp_path / f"jvp_{cid}.py"
    path.write_text(k.jvp_module(list(g.wrt), list(g.out)))
    prep = harness.prepare(case, "as_written")
    rng = np.random.default_rng(5)
    t_in = {n: rng.standard_normal(np.shape(prep.args[n])).astype(prep.args[n].dtype) for n in g.wrt}
    args = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in prep.args.items()}
    for n in g.out:
        args[n] = np.zeros_like(args[n])
    # kad's interpreter, as written
    jv = k.jvp(list(g.wrt), list(g.out))
    ref = dict(args)
    ref.update({f"t_{n}": t_in[n].copy() for n in g.wrt})
    ref.update({f"t_{n}": np.zeros_like(args[n]) for n in g.out})
    ref = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in ref.items()}
    jv.run(case.grid, {n: ref[n] for n, _ in jv.params})
    # Triton
    tens = {n: (torch.from_numpy(v.copy()).to(device) if isinstance(v, np.ndarray) else v) for n, v in args.items()}
    tt = {f"t_{n}": torch.from_numpy(t_in[n].copy()).to(device) for n in g.wrt}
    tt.update({f"t_{n}": torch.zeros_like(tens[n]) for n in g.out})
    with triton_cpu.interpreter(device):
        mod = triton_cpu.load_module(str(path), f"kad_jvp_{cid}")
        runtime = [n for n, kind, _ in parse_sig(case.sig) if kind != "const"]
        tnames = [n for n, _ in jv.params[len(k.params):]]  # after the forward's (t_ptr is a primal)
        getattr(mod, f"launch_{case.kernel}_jvp")(case.grid, *[tens[n] for n in runtime], *[tt[n] for n in tnames])
    for n in g.out:
        got = tt[f"t_{n}"].cpu().numpy()
        np.testing.assert_allclose(got, ref[f"t_{n}"], rtol=1e-5, atol=1e-6)
        assert np.abs(got).max() > 0


# ---- scans, sort/topk and custom jvp rules beyond the corpus ----

def test_tie_convention_of_a_selection_scan():
    """cummax_index_forward's data has ties (values rounded to 0.1).  At a tie the combine function
    selects the later index; forward mode differentiates that choice: the tangent of y[r, c] is the
    tangent of x at the index the kernel itself returns, i[r, c]."""
    case = next(c for c in JVP_CASES if c.id == "cummax_index_forward")
    p = corpus_problem(case, break_ties=False)
    x = p.args["x_ptr"]
    assert len(np.unique(x)) < x.size  # the data has ties
    b = p._buffers()
    v = p.random_like(["x_ptr"])["x_ptr"]
    b.update(t_x_ptr=v.copy(), t_y_ptr=np.zeros_like(x))
    p.jvp.run(p.grid, {n: b[n] for n, _ in p.jvp.params}, mode="f64")
    n = int(p.args["n_cols"])
    idx = b["i_ptr"][:, :n]
    want = np.take_along_axis(v[:, :n], idx.astype(np.int64), axis=1)
    np.testing.assert_array_equal(b["t_y_ptr"][:, :n], want)


def test_scan_any_combine_both_modes():
    """scan_mul: a combine function (x * y written by hand) no special case recognizes: reverse mode
    differentiates it by the general rule (its backward builds); forward mode differentiates any
    combine function: its tangents match finite differences."""
    k = _kernel(("scan.py",), "scan_mul_kernel", "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=16")
    k.grad(["x_ptr"], ["y_ptr"])
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (3, 12))
    x[1, 4] = 0.0  # a zero: the tangent scan has no division
    jv = k.jvp(["x_ptr"], ["y_ptr"])
    v = rng.standard_normal(x.shape)

    def fwd(xx):
        b = dict(x_ptr=xx.copy(), y_ptr=np.zeros_like(xx), n_cols=12)
        k.run((3,), b, mode="f64")
        return b["y_ptr"]

    b = dict(x_ptr=x.copy(), y_ptr=np.zeros_like(x), n_cols=12, t_x_ptr=v.copy(), t_y_ptr=np.zeros_like(x))
    jv.run((3,), {n: b[n] for n, _ in jv.params}, mode="f64")
    h = 1e-6
    fd = (fwd(x + h * v) - fwd(x - h * v)) / (2 * h)
    np.testing.assert_allclose(b["t_y_ptr"], fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(b["y_ptr"], np.cumprod(x, axis=1), rtol=1e-12)
    assert np.abs(b["t_y_ptr"][1, 5:]).max() > 0  # past the zero, through its own tangent


RULE_KERNELS = os.path.join(REPO, "tests", "jvp")
RULES = os.path.join(REPO, "tests", "rules")


def rules_problem(kernel, rules, wrt, n=37, seed=2):
    """A kernel of tests/jvp/custom_rules.py with the rules file `rules` (tests/rules)."""
    ctx = kad.Context()
    for path in (os.path.join(RULE_KERNELS, "custom_rules.py"), os.path.join(RULES, rules)):
        with open(path, encoding="utf-8") as f:
            ctx.add_source(os.path.relpath(path, REPO), f.read())
    sig = {"softplus_rows": "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16",
           "scale_rows": "x_ptr=*fp32,k_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16",
           "clip_ste": "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16"}[kernel]
    k = ctx.specialize(kernel, sig)
    rng = np.random.default_rng(seed)
    args = dict(x_ptr=3 * rng.standard_normal(n), y_ptr=np.zeros(n), n=n)
    if kernel == "scale_rows":
        args["k_ptr"] = rng.standard_normal(1)
    grid = ((n + 15) // 16,)
    if kernel == "clip_ste":  # reverse mode refuses (a jvp rule only): no Problem (it builds the backward)
        return k, grid, args
    return Problem(k, grid, args, wrt, ["y_ptr"], seed)


def test_jvp_rule_passes_fd_and_dot_product():
    p = rules_problem("softplus_rows", "custom_rules_jvp.py", ["x_ptr"])
    err, norm = check_fd(p)
    assert norm > 0 and err < 1e-6, err
    assert check_dot(p) < 1e-9  # the jvp rule against the vjp rule


def test_jvp_rule_of_two_arguments_passes_fd():
    k = kad.Context()
    for path in (os.path.join(RULE_KERNELS, "custom_rules.py"), os.path.join(RULES, "custom_rules_jvp.py")):
        with open(path, encoding="utf-8") as f:
            k.add_source(os.path.relpath(path, REPO), f.read())
    kk = k.specialize("scale_rows", "x_ptr=*fp32,k_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16")
    rng = np.random.default_rng(9)
    n = 37
    base = dict(x_ptr=rng.standard_normal(n), k_ptr=rng.standard_normal(1), y_ptr=np.zeros(n), n=n)
    v = dict(x_ptr=rng.standard_normal(n), k_ptr=rng.standard_normal(1))
    jv = kk.jvp(["x_ptr", "k_ptr"], ["y_ptr"])
    b = {**{a: (c.copy() if isinstance(c, np.ndarray) else c) for a, c in base.items()},
         "t_x_ptr": v["x_ptr"].copy(), "t_k_ptr": v["k_ptr"].copy(), "t_y_ptr": np.zeros(n)}
    jv.run((3,), {a: b[a] for a, _ in jv.params}, mode="f64")
    np.testing.assert_allclose(b["t_y_ptr"], v["x_ptr"] * base["k_ptr"] + base["x_ptr"] * v["k_ptr"], rtol=1e-12)


def test_straight_through_jvp_rule_is_used():
    k, grid, args = rules_problem("clip_ste", "custom_rules_jvp.py", ["x_ptr"])
    with pytest.raises(kad.KadError, match="reverse mode needs a @kad.vjp_of rule"):
        k.grad(["x_ptr"], ["y_ptr"])
    jv = k.jvp(["x_ptr"], ["y_ptr"])
    v = np.random.default_rng(1).standard_normal(args["n"])
    b = {**{a: (c.copy() if isinstance(c, np.ndarray) else c) for a, c in args.items()},
         "t_x_ptr": v.copy(), "t_y_ptr": np.zeros(args["n"])}
    jv.run(grid, {a: b[a] for a, _ in jv.params}, mode="f64")
    np.testing.assert_array_equal(b["t_y_ptr"], v)  # the rule's tangent, though clip01 saturates
    np.testing.assert_allclose(b["y_ptr"], np.clip(args["x_ptr"], 0, 1))


def test_wrong_jvp_rule_is_caught():
    p = rules_problem("softplus_rows", "custom_rules_jvp_wrong.py", ["x_ptr"])
    err, _ = check_fd(p)
    assert err > 1e-3, err
    assert check_dot(p) > 1e-3


@pytest.mark.parametrize("cid", ["linear_recurrence_reverse", "cumprod_zeros_forward", "sort_topk_desc"])
def test_emitted_scan_jvp_module_runs_on_triton(tmp_path, cid):
    test_emitted_jvp_module_runs_on_triton(tmp_path, cid)
