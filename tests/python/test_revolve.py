"""Binomial checkpointing (revolve) of taped `for` loops under a tape budget (issue 9).

With `--tape-budget` / `tape_budget=`, a taped `for` loop whose trip count does not depend on the
program id is reversed by a revolve plan: s checkpoint slots (the most that fit the budget), t the
smallest with C(s + t, s) >= trips.  The kernels: the gated recurrence of tests/kernels/tape_loops.py
(a tile per program) and the chunk-state recurrence of tests/grad/tape_loops.py (a 16x16 state per
program, through tl.dot).  Checks, each independent of kad's own plan:
  - `kad check` (float64 finite differences) under budgets that force t = 2 and t = 3, and that a
    broken restore (KAD_TEST_MUTATE=tape) fails it;
  - the package's gradients under a budget equal those without one (KAD_TEST_DEVICE: cpu runs
    kad's interpreter, cuda Triton) and PyTorch autograd of the same math;
  - the emitted module (Triton's CPU interpreter, or the GPU) allocates no more than the budget,
    reports the s and t chosen, and returns the unbudgeted module's gradients;
  - the launcher's Python plans are the C library's (`kad revolve --plan`), and every plan reverses
    each iteration once, last first, advancing none more than t times with at most s slots.
"""
import math
import os
import re

import pytest
import torch

import triton_cpu

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
KREC = "tests/kernels/tape_loops.py"
KCHUNK = "tests/grad/tape_loops.py"
REC_SIG = "x_ptr=*fp32,a_ptr=*fp32,h0_ptr=*fp32,y_ptr=*fp32,T=i32,D=i32,BLOCK_D=16"
CHUNK_SIG = "k_ptr=*fp32,v_ptr=*fp32,g_ptr=*fp32,s_ptr=*fp32,NC=i32,BT=16,K=16,V=16"


def _kad(args, mutate=None):
    import subprocess
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    if mutate:
        env["KAD_TEST_MUTATE"] = mutate
    return subprocess.run([triton_cpu.KAD, *args], capture_output=True, text=True, cwd=triton_cpu.REPO, env=env)


def _schedule(trips, **kw):
    """`kad revolve`'s line as a dict (trips, slots, t, rows, recomputed[, bytes])."""
    args = ["revolve", str(trips)]
    if "s" in kw:
        args.append(str(kw["s"]))
    for k in ("programs", "slot_bytes", "budget"):
        if k in kw:
            args += ["--" + k.replace("_", "-"), str(kw[k])]
    p = triton_cpu.run_kad(args)
    assert p.returncode == 0, p.stderr
    w = p.stdout.split("\n")[0].split()
    return {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}


def _budget(trips, s, programs, slot_bytes):
    # independent of revolve_fit: the head (1 + 5 * rows fp32) and s slots per program
    rows = _schedule(trips, s=s)["rows"]
    return (1 + 5 * rows) * 4 + s * programs * slot_bytes


def _slots_for(trips, t):
    # the fewest slots whose C(s + t, s) covers trips (math.comb, not kad's)
    s = 1
    while math.comb(s + t, s) < trips:
        s += 1
    return s


# (kernel file:name, sig, wrt, out, trips, programs, slot bytes, check options)
CASES = {
    "gated_recurrence": (f"{KREC}:gated_recurrence", REC_SIG, "x_ptr,a_ptr,h0_ptr", "y_ptr", 20, 2, 16 * 4,
                         ["--grid", "2", "--shape", "x_ptr=20x20", "--shape", "a_ptr=20x20", "--shape", "h0_ptr=20",
                          "--shape", "y_ptr=20x20", "--arg", "T=20", "--arg", "D=20", "--range", "a_ptr=0.5:1"]),
    "chunk_states": (f"{KCHUNK}:chunk_states", CHUNK_SIG, "k_ptr,v_ptr,g_ptr", "s_ptr", 10, 2, 16 * 16 * 4,
                     ["--grid", "2", "--shape", "k_ptr=2x160x16", "--shape", "v_ptr=2x160x16", "--shape", "g_ptr=2x10",
                      "--shape", "s_ptr=2x10x16x16", "--arg", "NC=10", "--range", "g_ptr=-0.5:0"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("t", [2, 3])
def test_revolve_kad_check(name, t):
    kern, sig, wrt, out, trips, programs, slot_bytes, opts = CASES[name]
    s = _slots_for(trips, t)
    budget = _budget(trips, s, programs, slot_bytes)
    assert budget < trips * programs * slot_bytes  # below the full tape
    got = _schedule(trips, programs=programs, slot_bytes=slot_bytes, budget=budget)
    assert (got["slots"], got["t"], got["bytes"]) == (s, t, budget), got
    assert got["recomputed"] <= t * trips
    p = _kad(["check", kern, "--sig", sig, "--wrt", wrt, "--out", out, "--tape-budget", str(budget), *opts])
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr
    p = _kad(["check", kern, "--sig", sig, "--wrt", wrt, "--out", out, "--tape-budget", str(budget), *opts], "tape")
    assert p.returncode == 1 and "FAIL" in p.stdout, p.stdout + p.stderr


def test_revolve_report():
    p = triton_cpu.run_kad(["grad", CASES["chunk_states"][0], "--sig", CHUNK_SIG, "--wrt", "k_ptr,v_ptr,g_ptr",
                            "--out", "s_ptr", "--report", "--tape-budget", "30000"])
    assert p.returncode == 0, p.stderr
    assert "by binomial checkpointing (revolve)" in p.stdout and "C(s + t, s) >= trips" in p.stdout
    assert "--slot-bytes 1024" in p.stdout


def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _ref_chunks(k, v, g):
    # S_0 = 0, S_{c+1} = exp(g_c) S_c + k_c^T v_c; the stored states S_0 .. S_{NC-1}
    B, NC = g.shape
    out = []
    for b in range(B):
        S, row = torch.zeros(16, 16, dtype=k.dtype), []
        for c in range(NC):
            row.append(S)
            S = S * torch.exp(g[b, c]) + k[b, c * 16:(c + 1) * 16].T @ v[b, c * 16:(c + 1) * 16]
        out.append(torch.stack(row))
    return torch.stack(out)


def _chunk_inputs(NC=10):
    k, v = _rand(2, NC * 16, 16, seed=1) * 0.3, _rand(2, NC * 16, 16, seed=2) * 0.3
    g = -torch.rand(2, NC, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 0.5
    return k, v, g


def _chunk_grads(fn, budget, k, v, g, dS):
    import kad
    dec = kad.differentiable(inputs=["k_ptr", "v_ptr", "g_ptr"], outputs=["s_ptr"],
                             **({"tape_budget": budget} if budget else {}))(fn)
    t = [u.to(torch.float32).to(DEVICE).requires_grad_(True) for u in (k, v, g)]
    S = torch.zeros(2, g.shape[1], 16, 16, device=DEVICE)
    dec[(2,)](*t, S, g.shape[1], BT=16, K=16, V=16)
    (S * dS.to(torch.float32).to(DEVICE)).sum().backward()
    return [u.grad.cpu().double() for u in t]


@pytest.mark.parametrize("t", [2, 3])
def test_revolve_package_equals_unbudgeted(t):
    fn = triton_cpu.load_module(os.path.join(triton_cpu.REPO, KCHUNK), "kad_revolve_chunks").chunk_states
    k, v, g = _chunk_inputs()
    dS = _rand(2, 10, 16, 16, seed=4)
    ref = [u.clone().requires_grad_(True) for u in (k, v, g)]
    (_ref_chunks(*ref) * dS).sum().backward()
    budget = _budget(10, _slots_for(10, t), 2, 1024)
    full = _chunk_grads(fn, 0, k, v, g, dS)
    rv = _chunk_grads(fn, budget, k, v, g, dS)
    for a, b, r in zip(rv, full, ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)  # the same gradient, recomputed
        torch.testing.assert_close(a, r.grad, rtol=1e-3, atol=1e-3)


def _module(tmp_path, budget, tag):
    args = ["grad", CASES["chunk_states"][0], "--sig", CHUNK_SIG, "--wrt", "k_ptr,v_ptr,g_ptr", "--out", "s_ptr"]
    p = triton_cpu.run_kad(args + (["--tape-budget", str(budget)] if budget else []))
    assert p.returncode == 0, p.stderr
    path = tmp_path / f"chunks_{tag}_bwd.py"
    path.write_text(p.stdout)
    return path


def test_revolve_module_under_the_budget(tmp_path):
    t = 3
    s = _slots_for(10, t)
    budget = _budget(10, s, 2, 1024)
    k, v, g = _chunk_inputs()
    dS = _rand(2, 10, 16, 16, seed=4)
    grads = {}
    for tag, b in (("full", 0), ("revolve", budget)):
        path = _module(tmp_path, b, tag)
        ins = [u.to(torch.float32).to(DEVICE) for u in (k, v, g)]
        d_ins = [torch.full_like(u, float("nan")) for u in ins]
        sizes = []

        class _Torch:  # the module's torch, recording the scratch it allocates
            def __getattr__(self, name):
                return getattr(torch, name)

            def empty(self, n, **kw):
                x = torch.empty(n, **kw)
                sizes.append(x.numel() * x.element_size())
                return x

        with triton_cpu.interpreter(DEVICE):
            bwd = triton_cpu.load_module(str(path), f"kad_revolve_{tag}")
            bwd.torch = _Torch()
            bwd.launch_chunk_states_bwd((2,), *ins, torch.zeros(2, 10, 16, 16, device=DEVICE), 10,
                                        dS.to(torch.float32).to(DEVICE), *d_ins, BT=16, K=16, V=16)
        grads[tag] = [d.cpu().double() for d in d_ins]
        if b:
            assert sum(sizes) <= budget and sizes == [budget], sizes
            rv = bwd.launch_chunk_states_bwd.revolve
            assert [(r["slots"], r["t"], r["trips"]) for r in rv] == [(s, t, 10)], rv
            assert rv[0]["recomputed"] == _schedule(10, s=s)["recomputed"]
        else:
            assert sizes == [10 * 2 * 1024], sizes
    for a, b in zip(grads["revolve"], grads["full"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def _python_plans(tmp_path):
    """The launcher's _kad_revolve_plan, taken from an emitted module."""
    src = _module(tmp_path, 30000, "helpers").read_text()
    body = src[src.index("    # revolve (binomial checkpointing)"):src.index("    _kad_rv = []")]
    body = "\n".join(line[4:] for line in body.split("\n"))
    ns = {"math": math}
    exec(body, ns)
    return ns


def _c_plan(trips, s):
    # `kad revolve --plan`: a line per row, its actions in order ("restore 2 7; advance 1; reverse")
    p = triton_cpu.run_kad(["revolve", str(trips), str(s), "--plan"])
    assert p.returncode == 0, p.stderr
    rows = []
    for line in p.stdout.strip().split("\n")[1:]:
        row = [-1, 0, 0, -1, 0]
        for act in line.split("; "):
            w = act.split()
            if w[0] == "restore":
                row[0], row[1] = int(w[1]), int(w[2])
            elif w[0] == "advance":
                row[2] = int(w[1])
            elif w[0] == "store":
                row[3] = int(w[1])
            else:
                assert w == ["reverse"], line
                row[4] = 1
        rows.append(tuple(row))
    return rows


def _simulate(rows, trips, s, t):
    # registers as an iteration number: each reversed once, last first, from its own start
    slot, times, cur, nxt = {}, [0] * trips, 0, trips - 1
    for restore, at, adv, store, rev in rows:
        assert -1 <= restore < s and -1 <= store < s and adv >= 0 and rev in (0, 1)
        if restore >= 0:
            assert slot.get(restore) == at
            cur = at
        for i in range(cur, cur + adv):
            times[i] += 1
        cur += adv
        if store >= 0:
            slot[store] = cur
        if rev:
            assert cur == nxt
            nxt -= 1
    assert nxt == -1 and max(times, default=0) <= t


@pytest.mark.parametrize("trips,s", [(1, 1), (2, 1), (7, 1), (10, 3), (20, 5), (64, 10), (64, 6), (100, 4), (33, 40)])
def test_revolve_python_plan_is_the_c_plan(tmp_path, trips, s):
    ns = _python_plans(tmp_path)
    py = ns["_kad_revolve_plan"](trips, s)
    assert py == _c_plan(trips, s)
    t = _schedule(trips, s=s)["t"]
    assert math.comb(s + t, s) >= trips and (t == 0 or math.comb(s + t - 1, s) < trips)
    _simulate(py, trips, s, t)
    # the fit: what kad revolve picks for a budget is what the launcher picks
    budget = _budget(trips, s, 3, 100) + 50
    got = _schedule(trips, programs=3, slot_bytes=100, budget=budget)
    fit = ns["_kad_revolve_fit"](trips, 3, 100, 4, budget)
    assert fit is not None and (fit[0], len(fit[1])) == (got["slots"], got["rows"]) and got["bytes"] <= budget


def test_revolve_two_level_when_trips_depend_on_the_program():
    # causal_attention's trip count depends on tl.program_id: no single plan, so two-level
    p = triton_cpu.run_kad(["grad", f"{KREC}:causal_attention", "--sig",
                            "q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,sm_scale=fp32,BLOCK_M=16,"
                            "BLOCK_N=16,D=16", "--wrt", "q_ptr,k_ptr,v_ptr", "--out", "o_ptr", "--report",
                            "--tape-budget", "100000"])
    assert p.returncode == 0, p.stderr
    assert "with k = ceil(sqrt(trips))" in p.stdout and "revolve)" not in p.stdout
    assert re.search(r"two-level checkpointing: the trip count\s+depends on the program id", p.stdout)
