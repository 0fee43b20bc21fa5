"""kad_tune: the backward's num_warps/num_stages timed on its first launch (docs/GRAD.md, "Tuning").

The package passes kad_tune=True to a backward's launcher when the forward was autotuned.  Each
kernel's trials run on the real arguments, so what matters here is that they leave no trace: the
tensors a kernel writes are restored before each trial and after the last, a kernel that adds into
its gradient (the scattered sites' atomics, read-modify-writes) must add once, and a candidate whose
bits differ from the default's is never chosen.  Each case compares a tuned launch with an untuned
one bitwise, on Triton's CPU interpreter (KAD_GRAD_TEST_DEVICE=cuda: a GPU, where the candidates
really differ in warps and stages).
"""
import os

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton_cpu  # noqa: E402
from test_grad_cover import _dev, _nan_view  # noqa: E402
from test_grad_fold_partials import _randn  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
FOLD = os.path.join(triton_cpu.TESTS, "python", "test_grad_fold_partials.py")
SCATTER = os.path.join(triton_cpu.TESTS, "grad", "scatter_site.py")
MATMUL = os.path.join(triton_cpu.TESTS, "kernels", "matmul.py")


@pytest.fixture(scope="module")
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


def _sync():
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def _three_launches(mod, launch, make):
    """The gradients of an untuned launch, of the first tuned one (trials, then the launch) and of
    a second tuned one (the remembered choice): make() gives fresh (args, grads) each time.
    Returns the three lists of gradients and the number of trials each launch timed."""
    timed = []
    orig = mod._kad_time
    mod._kad_time = lambda f, cuda: timed.append(1) or orig(f, cuda)
    outs, counts = [], []
    try:
        for tune in (False, True, True):
            args, grads = make()
            before = len(timed)
            launch(*args, *grads, kad_tune=tune)
            _sync()
            outs.append([g.detach().cpu().clone() for g in grads])
            counts.append(len(timed) - before)
    finally:
        mod._kad_time = orig
    return outs, counts


def _same(a, b, what, src):
    for x, y, n in zip(a, b, what):
        assert torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num()), \
            f"{n}: a tuned launch differs from the untuned one\n{src}"


def test_folded_backward_tuned_bitwise(tmp_path, _triton_interpreter):
    """rms_like's folded backward (partials, then their sum kernel): both kernels tuned (stages
    only: their sums' order follows the warps), results bitwise those of the untuned launch, the
    choice remembered per kernel (no trial at the second launch)."""
    R, C = 9, 20
    mod, src = triton_cpu.grad_module(FOLD, "rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,"
                                      "stride=i32,eps=fp32,BLOCK=32,WS=1", "x_ptr,w_ptr", "y_ptr", tmp_path, "tune")
    assert "if kad_tune:" in src and "def _kad_tune(" in src, src
    x, w, dy = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)

    def make():
        return ([(R,), _dev(x), _dev(w), torch.empty(R, C, device=DEVICE), C, C, 1e-5, _dev(dy)],
                [_nan_view((R, C)), _nan_view((C,))])
    outs, counts = _three_launches(mod, lambda g, *a, **k: mod.launch_rms_like_bwd(g, *a, nfold=3, **k), make)
    _same(outs[0], outs[1], ("d_x", "d_w"), src)
    _same(outs[0], outs[2], ("d_x", "d_w"), src)
    assert counts[0] == 0 and counts[1] >= 2 and counts[2] == 0, counts
    slots = sorted(k[-1] for k in mod._kad_tuned)
    assert slots == [0, 1], mod._kad_tuned


def test_scatter_kernel_adds_once(tmp_path, _triton_interpreter):
    """The scattered sites' kernel adds the label's -dloss into d_x with atomic_add after the dense
    part is stored: each trial must start from the stored part (restored), or the label's element
    would hold several additions."""
    R, V, S, ignore = 6, 37, 40, -100
    mod, src = triton_cpu.grad_module(SCATTER, "ce_rows", "x_ptr=*fp32,lab_ptr=*i64,loss_ptr=*fp32,stride=i32,"
                                      "V=i32,ignore=i32,BLOCK=16", "x_ptr", "loss_ptr", tmp_path, "tune")
    assert "def ce_rows_bwd_scatter_x_ptr(" in src, src
    x = _randn(R, S).float()
    labels = torch.tensor([3, 36, ignore, 0, 17, 36], dtype=torch.int64)
    dy = _randn(R, seed=2).float()

    def make():
        return ([(R,), x.to(DEVICE), labels.to(DEVICE), torch.empty(R, device=DEVICE), S, V, ignore,
                 dy.to(DEVICE)], [_nan_view((R, V), (S, 1))])
    outs, counts = _three_launches(mod, mod.launch_ce_rows_bwd, make)
    _same(outs[0], outs[1], ("d_x",), src)
    _same(outs[0], outs[2], ("d_x",), src)
    assert counts[0] == 0 and counts[1] >= 2 and counts[2] == 0, counts


def test_gemm_form_tuned_bitwise(tmp_path, _triton_interpreter):
    """The matmul's GEMM form: the dacc kernel and both operand kernels tuned through _kad_fit."""
    sig = ("a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_ak=i32,stride_bk=i32,"
           "stride_bn=i32,stride_cm=i32,stride_cn=i32,BLOCK_M=16,BLOCK_N=16,BLOCK_K=16,GROUP_SIZE_M=2,"
           "ACTIVATION=\"leaky_relu\"")
    mod, src = triton_cpu.grad_module(MATMUL, "matmul_kernel", sig, "a_ptr,b_ptr", "c_ptr", tmp_path, "tune")
    m, n, k = 40, 36, 50
    g = torch.Generator().manual_seed(5)
    a, b, dc = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g), torch.randn(m, n, generator=g)
    grid = (-(-m // 16) * -(-n // 16),)

    def make():
        A, B = a.to(DEVICE), b.to(DEVICE)
        return ([grid, A, B, torch.empty(m, n, device=DEVICE), m, n, k, A.stride(0), A.stride(1), B.stride(0),
                 B.stride(1), n, 1, dc.to(DEVICE)], [torch.full_like(A, float("nan")), torch.full_like(B, float("nan"))])
    outs, counts = _three_launches(mod, mod.launch_matmul_kernel_bwd, make)
    assert list(mod._kad_gemm_plans.values())[0] is not None, "the GEMM form did not run"
    _same(outs[0], outs[1], ("d_a", "d_b"), src)
    _same(outs[0], outs[2], ("d_a", "d_b"), src)
    assert counts[0] == 0 and counts[1] >= 3 and counts[2] == 0, counts
    # the dacc kernel (0), each operand's grouped kernel (1, 2) or, on a GPU whose SMs its grid does not
    # fill, its one-iteration kernel (3, 4)
    tuned = sorted(k[-1] for k in mod._kad_tuned)
    assert len(tuned) == 3 and tuned[0] == 0 and len({1, 3} & set(tuned)) == len({2, 4} & set(tuned)) == 1, tuned


class _Kernel:
    """A stand-in for a Triton kernel: k[grid](out, num_warps=w, num_stages=s) adds 1 to out (num_warps
    8: also 1 more to its last element, other bits), taking delay[w] seconds (default 100 ms: far apart, so that a loaded machine keeps the order)."""

    def __init__(self, delay, fail=()):
        self.delay, self.calls, self.fail = delay, [], fail

    def __getitem__(self, grid):
        def run(out, num_warps, num_stages=None):
            import time
            self.calls.append((num_warps, num_stages))
            if num_warps in self.fail:
                raise RuntimeError("this candidate does not build")
            out += 1.0
            if num_warps == 8:
                out[-1] += 1.0
            time.sleep(self.delay.get(num_warps, 0.1))
        return run


def test_a_candidate_with_other_bits_is_never_chosen(tmp_path, _triton_interpreter):
    """exact: the fastest candidate (8 warps) gives other bits than the default (4): not chosen; the
    next fastest that gives the default's bits (2 warps) is, which it does only if each trial
    starts from the restored tensors (the kernel adds into out).  Without exact (a kernel adding
    with atomics: its bits vary anyway) the fastest is.  Every trial's writes are undone."""
    mod, _ = triton_cpu.grad_module(FOLD, "rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,"
                                    "stride=i32,eps=fp32,BLOCK=32,WS=1", "x_ptr,w_ptr", "y_ptr", tmp_path, "tune")
    out = torch.zeros(4)
    k = _Kernel({8: 0.0, 2: 0.02})
    assert mod._kad_tune(k, (1, 1, 1), (out,), ("exact",), 4, None, (0,), True, False, -1, ()) == (2, None)
    assert set(k.calls) == {(2, None), (4, None), (8, None)}, k.calls
    assert torch.equal(out, torch.zeros(4)), "the trials' writes were not undone"
    log = {(w, s): why for w, s, why in mod._kad_trials[(k, "exact")]}
    assert log[8, None] == "other bits" and isinstance(log[2, None], float), log
    k = _Kernel({8: 0.0, 2: 0.02})
    assert mod._kad_tune(k, (1, 1, 1), (out,), ("inexact",), 4, None, (0,), False, False, -1, ()) == (8, None)
    assert torch.equal(out, torch.zeros(4)), "the trials' writes were not undone"
    k2 = _Kernel({8: 0.0}, fail=(8,))  # a candidate that fails to build is skipped
    assert mod._kad_tune(k2, (1, 1, 1), (out,), ("fails",), 4, None, (0,), True, False, -1, ()) in ((2, None), (4, None))
    assert ("failed: RuntimeError") in [why for w, s, why in mod._kad_trials[(k2, "fails")] if w == 8]
    assert torch.equal(out, torch.zeros(4))
    with pytest.raises(RuntimeError):  # the default's own failure is the launch's
        mod._kad_tune(_Kernel({}, fail=(4,)), (1, 1, 1), (out,), ("fails",), 4, None, (0,), True, False, -1, ())
    n = len(k.calls)  # remembered: no trial the second time
    assert mod._kad_tune(k, (1, 1, 1), (out,), ("inexact",), 4, None, (0,), False, False, -1, ()) == (8, None)
    assert len(k.calls) == n


def test_candidates(tmp_path, _triton_interpreter):
    """The candidates: a tl.dot's kernels try 4 and 8 warps and the stages around the default, a
    sum's keep the default's warps, an elementwise kernel's try half, the same and twice; num_stages
    only with a loop (the emitted facts: test_facts)."""
    mod, src = triton_cpu.grad_module(FOLD, "rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,"
                                      "stride=i32,eps=fp32,BLOCK=32,WS=1", "x_ptr,w_ptr", "y_ptr", tmp_path, "tune")
    k = _Kernel({})
    mod._kad_tune(k, (1, 1, 1), (torch.zeros(2),), ("c1",), 4, None, (0,), True, True, (), ())
    assert k.calls == [], "one candidate: nothing to time"
    k = _Kernel({})
    mod._kad_tune(k, (1, 1, 1), (torch.zeros(2),), ("c2",), 4, None, (0,), True, True, (), (2, 3, 4))
    assert set(k.calls) == {(4, 2), (4, 4), (4, None)}, k.calls  # 3 is None's
    k = _Kernel({})
    mod._kad_tune(k, (1, 1, 1), (torch.zeros(2),), ("c3",), 2, 1, (0,), True, True, (4, 8), -1)
    assert set(k.calls) == {(2, 1), (4, 1), (4, 2), (8, 1), (8, 2)}, k.calls  # a dot's: stages around 1


def test_facts(tmp_path):
    """What the emitter prints for each launch: the written tensors' positions, exact, again, the
    candidates (rms_like: the partials kernel sums (default warps), loops over its share of the
    forward's programs, stores d_x under a flag or adds it with atomics (not exact); its sum kernel
    loops over the partials; the matmul's kernels have dots)."""
    _, src = triton_cpu.grad_module(FOLD, "rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,"
                                    "stride=i32,eps=fp32,BLOCK=32,WS=1", "x_ptr,w_ptr", "y_ptr", tmp_path, "facts")
    flat = " ".join(src.split())
    assert "_kad_tune(rms_like_bwd, grid, _c, (key, 0), _w, _s, (9, 10), False, False, (), (2, 3, 4))" in flat, src
    assert "_kad_tune(rms_like_bwd_sum, sgrid, _c, (key, 1), _w, _s, (1,), True, False, (), (2, 3, 4))" in flat
    sig = ("a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_ak=i32,stride_bk=i32,"
           "stride_bn=i32,stride_cm=i32,stride_cn=i32,BLOCK_M=16,BLOCK_N=16,BLOCK_K=16,GROUP_SIZE_M=2,"
           "ACTIVATION=\"leaky_relu\"")
    _, src = triton_cpu.grad_module(MATMUL, "matmul_kernel", sig, "a_ptr,b_ptr", "c_ptr", tmp_path, "facts")
    flat = " ".join(src.split())
    for slot, pos in ((0, 20), (1, 19), (2, 18)):  # dacc, then d_b, d_a (after the 5 constexprs)
        assert f"kad_tune and ((_key, _dev, {slot}), ({pos},), True, True, (4, 8), -1))" in flat, src
