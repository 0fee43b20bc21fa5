"""Loops with non-linear loop-carried state: kad records the carried values on a tape (issue 9).

The kernels (tests/kernels/tape_loops.py): an online softmax over column chunks (running max
and rescaled running sum), a running elementwise max, a gated linear recurrence over time steps
(h a tile per program), cross-entropy with an online log-sum-exp over vocabulary chunks and a
label gather, an attention-like forward with a running max over K/V blocks and a causal mask (a
trip count that depends on the program id: the host bounds it over the grid).  Three independent checks:
  - `kad check`: float64 central finite differences on kad's interpreter (each check is shown
    to fail when an adjoint rule is broken on purpose, KAD_TEST_MUTATE);
  - the package (@kad.differentiable) against PyTorch autograd of the same math written plainly,
    on KAD_TEST_DEVICE (default cpu: kad's interpreter; cuda: Triton and the emitted backward);
  - the emitted module's launch_K_bwd on Triton itself (its CPU interpreter, or the GPU with
    KAD_TEST_DEVICE=cuda) against the same references.
"""
import math
import os

import pytest
import torch

import triton_cpu

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
K = "tests/kernels/tape_loops.py"

# (kernel, signature, wrt, outs, check's grid/shape/arg options)
CHECKS = {
    "online_softmax": ("x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16", "x_ptr", "y_ptr",
                       ["--grid", "3", "--shape", "x_ptr=3x50", "--shape", "y_ptr=3x50", "--arg", "n_cols=50",
                        "--arg", "stride=50"]),
    "online_softmax_one_chunk": ("x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16", "x_ptr", "y_ptr",
                                 ["--grid", "2", "--shape", "x_ptr=2x20", "--shape", "y_ptr=2x20", "--arg",
                                  "n_cols=9", "--arg", "stride=20"]),
    "running_max": ("x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=16", "x_ptr", "y_ptr",
                    ["--grid", "3", "--shape", "x_ptr=3x64", "--shape", "y_ptr=3x16", "--arg", "n_cols=64"]),
    "gated_recurrence": ("x_ptr=*fp32,a_ptr=*fp32,h0_ptr=*fp32,y_ptr=*fp32,T=i32,D=i32,BLOCK_D=16",
                         "x_ptr,a_ptr,h0_ptr", "y_ptr",
                         ["--grid", "2", "--shape", "x_ptr=7x20", "--shape", "a_ptr=7x20", "--shape", "h0_ptr=20",
                          "--shape", "y_ptr=7x20", "--arg", "T=7", "--arg", "D=20"]),
    "cross_entropy": ("logits_ptr=*fp32,labels_ptr=*i32,loss_ptr=*fp32,V=i32,stride=i32,BLOCK_V=16",
                      "logits_ptr", "loss_ptr",
                      ["--grid", "4", "--shape", "logits_ptr=4x40", "--shape", "labels_ptr=4", "--range",
                       "labels_ptr=0:39", "--shape", "loss_ptr=4", "--arg", "V=40", "--arg", "stride=40"]),
    "causal_attention": ("q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,sm_scale=fp32,BLOCK_M=16,"
                         "BLOCK_N=16,D=16", "q_ptr,k_ptr,v_ptr", "o_ptr",
                         ["--grid", "2,2", "--shape", "q_ptr=2x32x16", "--shape", "k_ptr=2x32x16", "--shape",
                          "v_ptr=2x32x16", "--shape", "o_ptr=2x32x16", "--arg", "N=32", "--arg", "sm_scale=0.5"]),
    # `while` loops (Newton solves per element): a counter bound (max_it) and no bound (a capacity)
    "newton_cbrt": ("a_ptr=*fp32,y_ptr=*fp32,n=i32,max_it=i32,tol=fp32,BLOCK=8", "a_ptr", "y_ptr",
                    ["--grid", "3", "--shape", "a_ptr=20", "--shape", "y_ptr=20", "--arg", "n=20", "--arg",
                     "max_it=30", "--arg", "tol=1e-12", "--range", "a_ptr=0.5:3"]),
    "newton_lambert": ("y_ptr=*fp32,w_ptr=*fp32,n=i32,tol=fp32,BLOCK=8", "y_ptr", "w_ptr",
                       ["--grid", "3", "--shape", "y_ptr=20", "--shape", "w_ptr=20", "--arg", "n=20", "--arg",
                        "tol=1e-12", "--range", "y_ptr=0.2:5"]),
}


def _check(name, mutate=None, extra=()):
    sig, wrt, outs, opts = CHECKS[name]
    kernel = name.replace("_one_chunk", "")
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    if mutate:
        env["KAD_TEST_MUTATE"] = mutate
    import subprocess
    return subprocess.run([triton_cpu.KAD, "check", f"{K}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", outs,
                           *opts, *extra], capture_output=True, text=True, cwd=triton_cpu.REPO, env=env)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_kad_check_finite_differences(name):
    p = _check(name)
    print(p.stdout, p.stderr)
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr


# a broken rule each kernel's gradient goes through: the same check must fail
# (KAD_TEST_MUTATE=tape: the reverse loop reads the tape's slots in forward order)
MUTANTS = [(n, m) for n in ("online_softmax", "running_max", "gated_recurrence", "cross_entropy", "causal_attention",
                            "newton_cbrt", "newton_lambert")
           for m in ("tape", "exp", "mul")
           if (n, m) not in (("running_max", "exp"), ("running_max", "mul"), ("gated_recurrence", "exp"),
                             ("newton_cbrt", "exp"),
                             # reversed by a second pass (ad_gauge.c): the tape holds only the max,
                             # whose adjoint cancels exactly (outputs invariant under a shift of the
                             # logits); test_gauge.py breaks the tape where the max is stored
                             ("online_softmax", "tape"), ("cross_entropy", "tape"),
                             ("causal_attention", "tape"),
                             # and their backward has no float multiplication left (the rescaling
                             # l * alpha is gone from the second pass)
                             ("online_softmax", "mul"), ("cross_entropy", "mul"))]


@pytest.mark.parametrize("name,mutant", MUTANTS)
def test_kad_check_fails_with_a_broken_rule(name, mutant):
    p = _check(name, mutant)
    print(p.stdout, p.stderr)
    assert p.returncode == 1 and "FAIL" in p.stdout, p.stdout + p.stderr


def test_while_tape_overflow_is_a_located_error():
    # no bound in newton_lambert's condition: a capacity of 3 iterations is too small, and the
    # backward says so instead of returning gradients from a partial tape
    p = _check("newton_lambert", extra=["--while-cap", "3"])
    assert p.returncode == 1 and "PASS" not in p.stdout, p.stdout + p.stderr
    assert "tape_loops.py:135:5: error: this `while` loop ran more than 3 iterations" in p.stderr, p.stderr
    p = _check("newton_lambert", extra=["--while-cap", "40"])
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr


def test_while_tape_in_ir_and_report():
    sig, wrt, outs, _ = CHECKS["newton_cbrt"]
    p = triton_cpu.run_kad(["grad", f"{K}:newton_cbrt", "--sig", sig, "--wrt", wrt, "--out", outs, "--ir"])
    assert p.returncode == 0, p.stderr
    assert "tape(%kad_tape0 trips max(%max_it, 0) slot 8 bounded)" in p.stdout.splitlines()[0]
    sig, wrt, outs, _ = CHECKS["newton_lambert"]
    p = triton_cpu.run_kad(["grad", f"{K}:newton_lambert", "--sig", sig, "--wrt", wrt, "--out", outs, "--report",
                            "--while-cap", "77"])
    assert p.returncode == 0, p.stderr
    assert "capacity = 77 iterations (no bound found in the condition" in p.stdout, p.stdout


def test_tape_in_ir_and_header():
    # a running max the outputs depend on (stored): the loop computing it alone is taped
    f = "tests/kernels/gauge_loops.py:online_lse_stats"
    sig = "x_ptr=*fp32,m_ptr=*fp32,lse_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16"
    p = triton_cpu.run_kad(["grad", f, "--sig", sig, "--wrt", "x_ptr", "--out", "m_ptr,lse_ptr", "--ir"])
    assert p.returncode == 0, p.stderr
    assert "tape(%kad_tape0 trips cdiv(max(%n_cols, 0), 16) slot 1)" in p.stdout.splitlines()[0]
    p = triton_cpu.run_kad(["grad", f, "--sig", sig, "--wrt", "x_ptr", "--out", "m_ptr,lse_ptr"])
    assert p.returncode == 0, p.stderr
    header = " ".join(line.lstrip("# ") for line in p.stdout.splitlines() if line.startswith("#"))
    # the loop is reversed by a second pass with the final max: only m is taped (ad_gauge.c)
    assert "Tape 0 (line 18: the loop carrying m," in header
    assert "4 bytes per iteration and program, trips = triton.cdiv(max(n_cols, 0), 16)" in header
    # the softmax does not depend on its running max: its adjoint is dropped, and with it the tape
    sig, wrt, outs, _ = CHECKS["online_softmax"]
    p = triton_cpu.run_kad(["grad", f"{K}:online_softmax", "--sig", sig, "--wrt", wrt, "--out", outs, "--ir"])
    assert p.returncode == 0, p.stderr
    assert "tape(" not in p.stdout.splitlines()[0] and "kad_tape" not in p.stdout


# ---------------------------------------------------------------- torch references (plain math)


def ref_online_softmax(x):
    return torch.softmax(x, dim=1)


def ref_running_max(x, block):
    return x.reshape(x.shape[0], -1, block).amax(dim=1)


def ref_recurrence(x, a, h0):
    hs, h = [], h0
    for t in range(x.shape[0]):
        h = a[t] * h + x[t]
        hs.append(h)
    return torch.stack(hs)


def ref_cross_entropy(z, labels):
    return torch.logsumexp(z, dim=1) - z.gather(1, labels.long()[:, None])[:, 0]


def ref_causal_attention(q, k, v, scale):
    s = (q @ k.transpose(-1, -2)) * scale
    n = q.shape[-2]
    s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def ref_newton(x, block, max_it, tol, init, newton_step):
    # the kernel's loop written plainly: per block of `block` elements, Newton steps until the
    # block's largest step is at most tol (or max_it steps)
    out = []
    for b in range(0, x.shape[0], block):
        xb = x[b:b + block]
        z, it, err = init(xb), 0, 1.0
        while it < max_it and err > tol:
            step = newton_step(z, xb)
            z = z - step
            err = step.abs().max().item()
            it += 1
        out.append(z)
    return torch.cat(out)


def ref_newton_cbrt(a, max_it, tol):
    return ref_newton(a, 8, max_it, tol, lambda a: a, lambda z, a: (z * z * z - a) / (3.0 * z * z))


def ref_newton_lambert(y, tol):
    return ref_newton(y, 8, 10 ** 9, tol, lambda y: torch.log(1.0 + y),
                      lambda w, y: (w * torch.exp(w) - y) / (torch.exp(w) * (1.0 + w)))


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _cases():
    """(name, kernel, grid, wrt, outs, {arg: value}, consts, reference(inputs) -> {out: tensor})"""
    rows, cols = 3, 50
    x = _rand(rows, cols)
    rm = _rand(3, 64, seed=1)
    T, D = 9, 20
    xr, ar, h0 = _rand(T, D, seed=2), torch.rand(T, D, dtype=torch.float64) * 1.5 - 0.2, _rand(D, seed=3)
    V = 40
    z = _rand(4, V, seed=4) * 3
    labels = torch.tensor([3, 0, 39, 17], dtype=torch.int32)
    BH, N, Dh = 2, 48, 16
    q, k, v = _rand(BH, N, Dh, seed=5), _rand(BH, N, Dh, seed=6), _rand(BH, N, Dh, seed=8)
    return [
        ("causal_attention", (N // 16, BH), ["q_ptr", "k_ptr", "v_ptr"], ["o_ptr"],
         dict(q_ptr=q, k_ptr=k, v_ptr=v, o_ptr=torch.zeros(BH, N, Dh), N=N, sm_scale=0.3),
         dict(BLOCK_M=16, BLOCK_N=16, D=16),
         lambda t: {"o_ptr": ref_causal_attention(t["q_ptr"], t["k_ptr"], t["v_ptr"], 0.3)}),
        ("newton_cbrt", (3,), ["a_ptr"], ["y_ptr"],
         dict(a_ptr=torch.rand(20, dtype=torch.float64) * 2.5 + 0.5, y_ptr=torch.zeros(20), n=20, max_it=30,
              tol=1e-5), dict(BLOCK=8),
         lambda v: {"y_ptr": ref_newton_cbrt(v["a_ptr"], 30, 1e-5)}),
        ("newton_lambert", (3,), ["y_ptr"], ["w_ptr"],
         dict(y_ptr=torch.rand(20, dtype=torch.float64) * 4.8 + 0.2, w_ptr=torch.zeros(20), n=20, tol=1e-5),
         dict(BLOCK=8),
         lambda v: {"w_ptr": ref_newton_lambert(v["y_ptr"], 1e-5)}),
        ("online_softmax", (rows,), ["x_ptr"], ["y_ptr"],
         dict(x_ptr=x, y_ptr=torch.zeros(rows, cols), n_cols=cols, stride=cols), dict(BLOCK=16),
         lambda v: {"y_ptr": ref_online_softmax(v["x_ptr"])}),
        ("running_max", (3,), ["x_ptr"], ["y_ptr"],
         dict(x_ptr=rm, y_ptr=torch.zeros(3, 16), n_cols=64), dict(BLOCK=16),
         lambda v: {"y_ptr": ref_running_max(v["x_ptr"], 16)}),
        ("gated_recurrence", (2,), ["x_ptr", "a_ptr", "h0_ptr"], ["y_ptr"],
         dict(x_ptr=xr, a_ptr=ar, h0_ptr=h0, y_ptr=torch.zeros(T, D), T=T, D=D), dict(BLOCK_D=16),
         lambda v: {"y_ptr": ref_recurrence(v["x_ptr"], v["a_ptr"], v["h0_ptr"])}),
        ("cross_entropy", (4,), ["logits_ptr"], ["loss_ptr"],
         dict(logits_ptr=z, labels_ptr=labels, loss_ptr=torch.zeros(4), V=V, stride=V), dict(BLOCK_V=16),
         lambda v: {"loss_ptr": ref_cross_entropy(v["logits_ptr"], v["labels_ptr"])}),
    ]


CASES = {c[0]: c for c in _cases()}


def _reference(case, dys):
    name, grid, wrt, outs, args, consts, ref = case
    v = {n: (t.detach().clone().requires_grad_(n in wrt) if isinstance(t, torch.Tensor) else t)
         for n, t in args.items()}
    want = ref(v)
    loss = sum((want[n] * dys[n]).sum() for n in outs)
    grads = torch.autograd.grad(loss, [v[n] for n in wrt])
    return {n: want[n].detach() for n in outs}, dict(zip(wrt, grads))


def _dys(case):
    name, grid, wrt, outs, args, consts, ref = case
    return {n: _rand(*args[n].shape, seed=7) for n in outs}


@pytest.mark.parametrize("name", sorted(CASES))
def test_package_matches_torch(name):
    import kad  # here: test_triton_compile imports this module where the package is not importable
    case = CASES[name]
    _, grid, wrt, outs, args, consts, _ = case
    fn = getattr(triton_cpu.corpus_module("tape_loops.py"), name)
    k = kad.differentiable(inputs=wrt, outputs=outs)(fn)
    dys = _dys(case)
    want, want_grads = _reference(case, dys)
    t = {}
    for n, a in args.items():
        if isinstance(a, torch.Tensor):
            a = a.detach().to(torch.float32) if a.dtype == torch.float64 else a.detach().clone()
            t[n] = a.to(DEVICE).requires_grad_(n in wrt)
        else:
            t[n] = a
    k[grid](*t.values(), **consts)
    loss = sum((t[n] * dys[n].to(torch.float32).to(DEVICE)).sum() for n in outs)
    loss.backward()
    for n in outs:
        torch.testing.assert_close(t[n].detach().cpu().double(), want[n], rtol=1e-5, atol=1e-5)
    for n in wrt:
        torch.testing.assert_close(t[n].grad.cpu().double(), want_grads[n], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_module_on_triton(name, tmp_path):
    case = CASES[name]
    _, grid, wrt, outs, args, consts, _ = case
    sig = CHECKS[name][0]
    p = triton_cpu.run_kad(["grad", f"{K}:{name}", "--sig", sig, "--wrt", ",".join(wrt), "--out", ",".join(outs)])
    assert p.returncode == 0, p.stderr
    path = tmp_path / f"{name}_bwd.py"
    path.write_text(p.stdout)
    dys = _dys(case)
    want, want_grads = _reference(case, dys)
    t = {n: (a.detach().to(torch.float32) if a.dtype == torch.float64 else a.detach().clone())
         if isinstance(a, torch.Tensor) else a for n, a in args.items()}
    t = {n: a.to(DEVICE) if isinstance(a, torch.Tensor) else a for n, a in t.items()}
    d_outs = [dys[n].to(torch.float32).to(DEVICE) for n in outs]
    d_ins = [torch.full_like(t[n], float("nan")) for n in wrt]
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), f"kad_tape_bwd_{name}")
        getattr(bwd, f"launch_{name}_bwd")(grid, *t.values(), *d_outs, *d_ins)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    for n, d in zip(wrt, d_ins):
        torch.testing.assert_close(d.cpu().double(), want_grads[n], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- launcher vs interpreter

# Golden kernels of tests/grad/tape_loops.py whose trip counts take the launcher's other forms
# (truncating division, a bound over the program ids with the grid folded, a negative step,
# recomputed pointers): the emitted module on Triton must give kad's interpreter's gradients.
GOLDEN = {
    "welford_mean": ((3,), dict(x_ptr=(3, 21), y_ptr=(3,)), dict(N=21), dict(TILE=8)),
    "causal_running_max": ((5,), dict(x_ptr=(5, 8), y_ptr=(5, 8)), {}, dict(BLOCK=8)),
    "down_loop": ((1,), dict(x_ptr=(40,), y_ptr=(8,)), dict(n=40), dict(BLOCK=8)),
    "advancing_pointers": ((3,), dict(x_ptr=(3, 40), y_ptr=(3, 8)), dict(n=40, stride=40), dict(BLOCK=8)),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_module_matches_interpreter(name, tmp_path):
    import importlib.util

    import kad
    grid, bufs, scalars, consts = GOLDEN[name]
    path = os.path.join(triton_cpu.REPO, "tests", "grad", "tape_loops.py")
    spec = importlib.util.spec_from_file_location("kad_tape_golden", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, name)
    g = torch.Generator().manual_seed(3)
    x0 = torch.randn(*bufs["x_ptr"], generator=g)
    dy = torch.randn(*bufs["y_ptr"], generator=g)

    def args(x):
        return [x, torch.zeros(*bufs["y_ptr"]), *scalars.values()]

    # kad's interpreter, through the package (CPU tensors)
    x = x0.clone().requires_grad_()
    a = args(x)
    kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(fn)[grid](*a, **consts)
    (a[1] * dy).sum().backward()
    want = x.grad.clone()

    # the emitted module's launcher on Triton
    sig = ",".join([f"x_ptr=*fp32,y_ptr=*fp32"] + [f"{n}=i32" for n in scalars] +
                   [f"{n}={v}" for n, v in consts.items()])
    p = triton_cpu.run_kad(["grad", f"tests/grad/tape_loops.py:{name}", "--sig", sig, "--wrt", "x_ptr",
                            "--out", "y_ptr"])
    assert p.returncode == 0, p.stderr
    out = tmp_path / f"{name}_bwd.py"
    out.write_text(p.stdout)
    t = [v.to(DEVICE) if isinstance(v, torch.Tensor) else v for v in args(x0.clone())]
    d_x = torch.full_like(t[0], float("nan"))
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(out), f"kad_tape_golden_bwd_{name}")
        getattr(bwd, f"launch_{name}_bwd")(grid, *t, dy.to(DEVICE), d_x)
    torch.testing.assert_close(d_x.cpu(), want, rtol=1e-4, atol=1e-5)


def test_while_overflow_raises_in_package_and_module(tmp_path):
    import kad
    fn = triton_cpu.corpus_module("tape_loops.py").newton_lambert
    k = kad.differentiable(inputs=["y_ptr"], outputs=["w_ptr"], while_cap=2)(fn)
    y = (torch.rand(20, dtype=torch.float32) * 4.8 + 0.2).to(DEVICE).requires_grad_(True)
    w = torch.zeros(20, device=DEVICE)
    k[(3,)](y, w, 20, 1e-5, BLOCK=8)
    with pytest.raises(Exception, match="ran more than 2 iterations"):
        w.sum().backward()
    sig, wrt, outs, _ = CHECKS["newton_lambert"]
    p = triton_cpu.run_kad(["grad", f"{K}:newton_lambert", "--sig", sig, "--wrt", wrt, "--out", outs,
                            "--while-cap", "2"])
    assert p.returncode == 0, p.stderr
    path = tmp_path / "lambert_bwd.py"
    path.write_text(p.stdout)
    d_y = torch.zeros(20, device=DEVICE)
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), "kad_tape_bwd_lambert_cap")
        with pytest.raises(RuntimeError, match="ran more than 2 iterations"):
            bwd.launch_newton_lambert_bwd((3,), y.detach(), w, 20, 1e-5, torch.ones(20, device=DEVICE), d_y)


# ---------------------------------------------------------------- checkpointing (a tape budget)

REC_SIG = CHECKS["gated_recurrence"][0]


def _rec_check_opts(T, grid=2, D=20):
    return ["--grid", str(grid), "--shape", f"x_ptr={T}x{D}", "--shape", f"a_ptr={T}x{D}", "--shape", f"h0_ptr={D}",
            "--shape", f"y_ptr={T}x{D}", "--arg", f"T={T}", "--arg", f"D={D}", "--range", "a_ptr=0.5:1"]


def _rec_check(T, budget, mutate=None):
    import subprocess
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    if mutate:
        env["KAD_TEST_MUTATE"] = mutate
    return subprocess.run([triton_cpu.KAD, "check", f"{K}:gated_recurrence", "--sig", REC_SIG, "--wrt",
                           "x_ptr,a_ptr,h0_ptr", "--out", "y_ptr", "--tape-budget", str(budget), *_rec_check_opts(T)],
                          capture_output=True, text=True, cwd=triton_cpu.REPO, env=env)


def _rv_bytes(T, s, programs=2, slot_bytes=16 * 4):
    # a revolve tape with s slots: the plan's head (1 + 5 * rows fp32, rows from `kad revolve`) and s
    # slots per program
    p = triton_cpu.run_kad(["revolve", str(T), str(s)])
    assert p.returncode == 0, p.stderr
    rows = int(p.stdout.split()[7])
    return (1 + 5 * rows) * 4 + s * programs * slot_bytes


@pytest.mark.parametrize("T", [1, 2, 5, 9, 10, 64])
def test_checkpointed_recurrence_kad_check(T):
    import math
    p = _rec_check(T, _rv_bytes(T, max(1, math.isqrt(T))))
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr


def test_checkpointed_recurrence_fails_with_a_broken_rule():
    p = _rec_check(10, _rv_bytes(10, 3), "tape")
    assert p.returncode == 1 and "FAIL" in p.stdout, p.stdout + p.stderr


def test_checkpointed_tape_stays_under_the_budget():
    # T = 64: a full tape would take 64 * 2 * 64 = 8192 bytes; with one slot per program revolve
    # needs its plan and 128 bytes.  plan_run refuses a launch whose tape does not fit: exactly
    # that size passes, one byte less is refused.
    one = _rv_bytes(64, 1)
    assert one < 64 * 2 * 64
    p = _rec_check(64, one)
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr
    p = _rec_check(64, one - 1)
    assert p.returncode == 1 and f"needs {one} bytes of tape even with revolve" in p.stderr and \
        f"share of this loop, {one - 1} bytes" in p.stderr, p.stdout + p.stderr


def test_checkpointed_report():
    p = triton_cpu.run_kad(["grad", f"{K}:gated_recurrence", "--sig", REC_SIG, "--wrt", "x_ptr,a_ptr,h0_ptr",
                            "--out", "y_ptr", "--report", "--tape-budget", "4096"])
    assert p.returncode == 0, p.stderr
    assert "checkpointed under the tape budget of 4096 bytes by binomial checkpointing (revolve)" in p.stdout
    assert "Recompute factor at most t + 2" in p.stdout


def _rec_inputs(T, D=20):
    x = _rand(T, D, seed=11)
    a = torch.rand(T, D, dtype=torch.float64, generator=torch.Generator().manual_seed(12)) * 0.5 + 0.5
    h0 = _rand(D, seed=13)
    return x, a, h0


def test_checkpointed_package_matches_torch():
    import kad
    T, D = 64, 20
    x, a, h0 = _rec_inputs(T, D)
    dy = _rand(T, D, seed=14)
    want = {}
    v = [t.clone().requires_grad_(True) for t in (x, a, h0)]
    (ref_recurrence(*v) * dy).sum().backward()
    want = [t.grad for t in v]
    fn = triton_cpu.corpus_module("tape_loops.py").gated_recurrence
    k = kad.differentiable(inputs=["x_ptr", "a_ptr", "h0_ptr"], outputs=["y_ptr"], tape_budget=4096)(fn)
    t = [u.to(torch.float32).to(DEVICE).requires_grad_(True) for u in (x, a, h0)]
    y = torch.zeros(T, D, device=DEVICE)
    k[(2,)](*t, y, T, D, BLOCK_D=16)
    (y * dy.to(torch.float32).to(DEVICE)).sum().backward()
    for got, w in zip(t, want):
        torch.testing.assert_close(got.grad.cpu().double(), w, rtol=1e-4, atol=1e-4)
    # a budget below the checkpointed tape: the backward refuses the launch
    k2 = kad.differentiable(inputs=["x_ptr", "a_ptr", "h0_ptr"], outputs=["y_ptr"], tape_budget=1000)(fn)
    t = [u.to(torch.float32).to(DEVICE).requires_grad_(True) for u in (x, a, h0)]
    y = torch.zeros(T, D, device=DEVICE)
    k2[(2,)](*t, y, T, D, BLOCK_D=16)
    with pytest.raises(Exception, match="above the tape budget's share of (this loop|the loop at line 51), 1000 bytes"):
        y.sum().backward()


def test_checkpointed_module_on_triton(tmp_path):
    T, D = 64, 20
    p = triton_cpu.run_kad(["grad", f"{K}:gated_recurrence", "--sig", REC_SIG, "--wrt", "x_ptr,a_ptr,h0_ptr",
                            "--out", "y_ptr", "--tape-budget", "4096"])
    assert p.returncode == 0, p.stderr
    path = tmp_path / "rec_ckpt_bwd.py"
    path.write_text(p.stdout)
    x, a, h0 = _rec_inputs(T, D)
    dy = _rand(T, D, seed=14)
    v = [t.clone().requires_grad_(True) for t in (x, a, h0)]
    (ref_recurrence(*v) * dy).sum().backward()
    ins = [t.to(torch.float32).to(DEVICE) for t in (x, a, h0)]
    d_ins = [torch.full_like(t, float("nan")) for t in ins]
    sizes = []

    class _Torch:  # the module's torch, recording the scratch it allocates
        def __getattr__(self, name):
            return getattr(torch, name)

        def empty(self, n, **kw):
            t = torch.empty(n, **kw)
            sizes.append(t.numel() * t.element_size())
            return t

    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), "kad_tape_bwd_rec_ckpt")
        bwd.torch = _Torch()
        bwd.launch_gated_recurrence_bwd((2,), *ins, torch.zeros(T, D, device=DEVICE), T, D,
                                        dy.to(torch.float32).to(DEVICE), *d_ins, BLOCK_D=16)
    # the tape revolve_fit picks for 4096 bytes (`kad revolve 64 --programs 2 --slot-bytes 64 --budget 4096`)
    p = triton_cpu.run_kad(["revolve", "64", "--programs", "2", "--slot-bytes", "64", "--budget", "4096"])
    w = p.stdout.split()
    s = int(w[3])
    assert s > 1 and sizes == [_rv_bytes(64, s)] and sizes[0] <= 4096 < 64 * 2 * 64, (p.stdout, sizes)
    t = next(t for t in range(64) if math.comb(s + t, s) >= 64)
    assert [(r["slots"], r["t"], r["bytes"]) for r in bwd.launch_gated_recurrence_bwd.revolve] == [(s, t, sizes[0])]
    for got, w in zip(d_ins, v):
        torch.testing.assert_close(got.cpu().double(), w.grad, rtol=1e-4, atol=1e-4)
