"""Online-softmax loops reversed by a second pass with the final max (issue 9, src/ad/ad_gauge.c).

kad rewrites, for the backward only, a loop with a running max m and values rescaled by
exp(m - m_new) into a loop computing the max alone (the only taped one) and a loop of linear
accumulators using the final max.  The kernels (tests/kernels/gauge_loops.py and the online ones
of tests/kernels/tape_loops.py) are checked three ways: `kad check` (float64 finite differences,
shown to fail with a broken rule), the report's smaller tape, and the package against PyTorch
autograd of the same math written plainly (ties in the max included), on KAD_TEST_DEVICE.
Look-alikes that do not have the exact form keep the full tape and still check.
"""
import os
import subprocess

import pytest
import torch

import triton_cpu

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
G = "tests/kernels/gauge_loops.py"
T = "tests/kernels/tape_loops.py"

# name: (file, signature, wrt, outs, check options, tape bytes per iteration and program or None
#        when kad keeps the full tape, the full tape's bytes)
CASES = {
    "online_lse_stats": (G, "x_ptr=*fp32,m_ptr=*fp32,lse_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16", "x_ptr",
                         "m_ptr,lse_ptr", ["--grid", "3", "--shape", "x_ptr=3x40", "--shape", "m_ptr=3",
                                           "--shape", "lse_ptr=3", "--arg", "n_cols=37", "--arg", "stride=40"],
                         4, 8),
    "softmax_exp2_rows": (G, "x_ptr=*fp32,y_ptr=*fp32,w_ptr=*fp32,n_cols=i32,scale=fp32,BLOCK_R=4,BLOCK=16",
                          "x_ptr,w_ptr", "y_ptr",
                          ["--grid", "2", "--shape", "x_ptr=8x40", "--shape", "y_ptr=8", "--shape", "w_ptr=40",
                           "--arg", "n_cols=40", "--arg", "scale=1.7"], 16, 48),
    "attention_fwd": (G, "q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,sm_scale=fp32,BLOCK_M=16,"
                         "BLOCK_N=16,D=16", "q_ptr,k_ptr,v_ptr", "o_ptr",
                      ["--grid", "2", "--shape", "q_ptr=32x16", "--shape", "k_ptr=32x16", "--shape",
                       "v_ptr=32x16", "--shape", "o_ptr=32x16", "--arg", "N=32", "--arg", "sm_scale=0.5"], 64, 1152),
    "online_softmax": (T, "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16", "x_ptr", "y_ptr",
                       ["--grid", "3", "--shape", "x_ptr=3x50", "--shape", "y_ptr=3x50", "--arg", "n_cols=50",
                        "--arg", "stride=50"], 4, 8),
    "cross_entropy": (T, "logits_ptr=*fp32,labels_ptr=*i32,loss_ptr=*fp32,V=i32,stride=i32,BLOCK_V=16",
                      "logits_ptr", "loss_ptr",
                      ["--grid", "4", "--shape", "logits_ptr=4x40", "--shape", "labels_ptr=4", "--range",
                       "labels_ptr=0:39", "--shape", "loss_ptr=4", "--arg", "V=40", "--arg", "stride=40"], 4, 8),
    "causal_attention": (T, "q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,sm_scale=fp32,BLOCK_M=16,"
                            "BLOCK_N=16,D=16", "q_ptr,k_ptr,v_ptr", "o_ptr",
                         ["--grid", "2,2", "--shape", "q_ptr=2x32x16", "--shape", "k_ptr=2x32x16", "--shape",
                          "v_ptr=2x32x16", "--shape", "o_ptr=2x32x16", "--arg", "N=32", "--arg", "sm_scale=0.5"],
                         64, 1152),
    # look-alikes: the full tape stays
    "lse_plus_max": (G, "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=16", "x_ptr", "y_ptr",
                     ["--grid", "2", "--shape", "x_ptr=2x40", "--shape", "y_ptr=2", "--arg", "n_cols=40"], None, 8),
    "cross_rows": (G, "x_ptr=*fp32,y_ptr=*fp32,BLOCK=8,N=32", "x_ptr", "y_ptr",
                   ["--grid", "1", "--shape", "x_ptr=8x32", "--shape", "y_ptr=8"], None, 64),
    "lse_from_one": (G, "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=16", "x_ptr", "y_ptr",
                     ["--grid", "2", "--shape", "x_ptr=2x40", "--shape", "y_ptr=2", "--arg", "n_cols=40"], None, 8),
}


def _kad(args, mutate=None):
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    if mutate:
        env["KAD_TEST_MUTATE"] = mutate
    return subprocess.run([triton_cpu.KAD, *args], capture_output=True, text=True, cwd=triton_cpu.REPO, env=env)


def _check(name, mutate=None):
    f, sig, wrt, outs, opts, _, _ = CASES[name]
    return _kad(["check", f"{f}:{name}", "--sig", sig, "--wrt", wrt, "--out", outs, *opts], mutate)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kad_check_finite_differences(name):
    p = _check(name)
    assert p.returncode == 0 and p.stdout.rstrip().endswith("PASS (rtol 1e-06)"), p.stdout + p.stderr


# Broken rules the two-pass backward goes through must make the same check fail: the max loop's
# tape read in the wrong order (online_lse_stats stores the max, so its adjoint matters; in the
# softmax kernels the max's adjoint cancels exactly: their outputs do not change when every
# logit is shifted), exp's rule (the second pass's exponentials), mul's.
MUTANTS = [("online_lse_stats", "tape"), ("online_lse_stats", "exp"), ("online_lse_stats", "max"),
           ("softmax_exp2_rows", "mul"), ("attention_fwd", "exp"), ("attention_fwd", "mul"),
           ("causal_attention", "exp"), ("cross_entropy", "exp")]


@pytest.mark.parametrize("name,mutant", MUTANTS)
def test_kad_check_fails_with_a_broken_rule(name, mutant):
    p = _check(name, mutant)
    assert p.returncode == 1 and "FAIL" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_states_the_smaller_tape(name):
    f, sig, wrt, outs, _, small, full = CASES[name]
    p = _kad(["grad", f"{f}:{name}", "--sig", sig, "--wrt", wrt, "--out", outs, "--report"])
    assert p.returncode == 0, p.stderr
    if small is None:
        assert "online-softmax" not in p.stdout, p.stdout
        assert f": {full} bytes per iteration and program" in p.stdout, p.stdout
        return
    assert "online-softmax rescaling recognized" in p.stdout, p.stdout
    assert f"(tape: at most {small} bytes instead of {full} per iteration and program)" in p.stdout, p.stdout
    # the max loop is taped unless the outputs do not depend on a scalar max (its adjoint dropped:
    # cross-entropy's log-sum-exp, a row softmax); then there is no tape at all
    if "the loop carrying m" in p.stdout:
        assert f": {small} bytes per iteration and program" in p.stdout, p.stdout
    else:
        assert "Tape 0" not in p.stdout and name in ("cross_entropy", "online_softmax"), p.stdout
    # the module's header says it too
    p = _kad(["grad", f"{f}:{name}", "--sig", sig, "--wrt", wrt, "--out", outs])
    assert p.returncode == 0, p.stderr
    header = " ".join(line.lstrip("# ") for line in p.stdout.splitlines() if line.startswith("#"))
    assert "reversed by a second pass with the final max" in header, header


# ---------------------------------------------------------------- against PyTorch (plain math)

def _rand(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _ties(rows, cols, block):
    # every row's max appears several times: in two chunks and twice in one chunk
    x = _rand(rows, cols, seed=11)
    for r in range(rows):
        top = float(x[r].max()) + 1.0
        for c in (1, 3, block + 2, cols - 1):
            x[r, c] = top
    return x


def _torch_cases():
    x = _rand(3, 40)
    xt = _ties(3, 40, 16)
    xr, w = _rand(8, 40, seed=2), _rand(40, seed=3)
    xrt = _ties(8, 40, 16)
    q, k, v = _rand(32, 16, seed=5) * 0.5, _rand(32, 16, seed=6) * 0.5, _rand(32, 16, seed=8)
    kt = k.clone()
    kt[20] = kt[3]  # equal scores of two keys for every query: ties in every row's max
    kt[17] = kt[3]

    def kad_max(row, n, block):
        # kad's tie convention for m_new = maximum(tl.max(x), m): the chunk max gets the whole
        # gradient of a tie with the running max (so the last chunk holding the max does), and
        # tl.max shares it evenly among the chunk's lanes equal to it; the mean of those lanes
        # is the max with exactly that gradient
        top = float(row[:n].max())
        last = max(c for c in range(0, n, block) if float(row[c:min(c + block, n)].max()) == top)
        lanes = [j for j in range(last, min(last + block, n)) if float(row[j]) == top]
        return row[lanes].mean()

    def lse_stats(t):
        x = t["x_ptr"]
        return {"m_ptr": torch.stack([kad_max(x[r], 37, 16) for r in range(x.shape[0])]),
                "lse_ptr": torch.logsumexp(x[:, :37], dim=1)}

    def exp2_rows(t):
        p = torch.softmax(t["x_ptr"] * 1.7 * torch.log(torch.tensor(2.0, dtype=torch.float64)), dim=1)
        return {"y_ptr": p @ t["w_ptr"]}

    def attn(t):
        return {"o_ptr": torch.softmax((t["q_ptr"] @ t["k_ptr"].T) * 0.5, dim=1) @ t["v_ptr"]}

    lse = ("online_lse_stats", (3,), ["x_ptr"], ["m_ptr", "lse_ptr"], dict(BLOCK=16), lse_stats)
    e2 = ("softmax_exp2_rows", (2,), ["x_ptr", "w_ptr"], ["y_ptr"], dict(BLOCK_R=4, BLOCK=16), exp2_rows)
    at = ("attention_fwd", (2,), ["q_ptr", "k_ptr", "v_ptr"], ["o_ptr"], dict(BLOCK_M=16, BLOCK_N=16, D=16), attn)
    return {
        "lse": lse + (dict(x_ptr=x, m_ptr=torch.zeros(3), lse_ptr=torch.zeros(3), n_cols=37, stride=40),),
        "lse_ties": lse + (dict(x_ptr=xt, m_ptr=torch.zeros(3), lse_ptr=torch.zeros(3), n_cols=37, stride=40),),
        "exp2": e2 + (dict(x_ptr=xr, y_ptr=torch.zeros(8), w_ptr=w, n_cols=40, scale=1.7),),
        "exp2_ties": e2 + (dict(x_ptr=xrt, y_ptr=torch.zeros(8), w_ptr=w, n_cols=40, scale=1.7),),
        "attention": at + (dict(q_ptr=q, k_ptr=k, v_ptr=v, o_ptr=torch.zeros(32, 16), N=32, sm_scale=0.5),),
        "attention_ties": at + (dict(q_ptr=q, k_ptr=kt, v_ptr=v, o_ptr=torch.zeros(32, 16), N=32, sm_scale=0.5),),
    }


TORCH = _torch_cases()


@pytest.mark.parametrize("case", sorted(TORCH))
def test_package_matches_torch(case):
    import kad
    name, grid, wrt, outs, consts, ref, args = TORCH[case]
    fn = getattr(triton_cpu.corpus_module("gauge_loops.py"), name)
    k = kad.differentiable(inputs=wrt, outputs=outs)(fn)
    v = {n: (a.detach().clone().requires_grad_(n in wrt) if isinstance(a, torch.Tensor) else a)
         for n, a in args.items()}
    want = ref(v)
    dys = {n: _rand(*args[n].shape, seed=7 + i) for i, n in enumerate(outs)}
    want_grads = torch.autograd.grad(sum((want[n] * dys[n]).sum() for n in outs), [v[n] for n in wrt])
    t = {n: (a.detach().to(torch.float32).to(DEVICE).requires_grad_(n in wrt) if isinstance(a, torch.Tensor) else a)
         for n, a in args.items()}
    k[grid](*t.values(), **consts)
    sum((t[n] * dys[n].to(torch.float32).to(DEVICE)).sum() for n in outs).backward()
    for n in outs:
        torch.testing.assert_close(t[n].detach().cpu().double(), want[n].detach(), rtol=1e-5, atol=1e-5)
    for n, g in zip(wrt, want_grads):
        assert torch.isfinite(t[n].grad).all()
        torch.testing.assert_close(t[n].grad.cpu().double(), g, rtol=1e-4, atol=1e-5)
