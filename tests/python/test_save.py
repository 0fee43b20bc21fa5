"""Saved loop results (src/ad/ad_save.c, docs/AD.md "Saved loop results").

Under autograd the package runs a kernel's saving forward (the kernel plus a store of its top-level
loops' results) and the backward loads those results instead of running the loops again.  Checked
here, on KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton): the saving forward writes what the
kernel as written writes; the gradients match the recomputing backward's (save=False) and PyTorch
autograd of the same math; the backward really reads the buffer (a changed buffer changes the
gradients); float64 gradcheck through it; the loops it must leave alone (an int result used later,
a buffer larger than the launch's tensors); the CLI's --saved and --save-forward.
"""
import os

import pytest
import torch
import torch.nn.functional as F

import kad
import triton_cpu

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
MM_SIG = ("a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_ak=i32,stride_bk=i32,"
          "stride_bn=i32,stride_cm=i32,stride_cn=i32,BLOCK_M=16,BLOCK_N=16,BLOCK_K=16,GROUP_SIZE_M=2,"
          "ACTIVATION='leaky_relu'")


def _rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype).to(DEVICE)


def _mm_kernel(save=True):
    mm = triton_cpu.corpus_module("matmul.py")
    return kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"], save=save)(mm.matmul_kernel.fn)


def _mm(k, a, b, act="leaky_relu"):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    k[(((M + 15) // 16) * ((N + 15) // 16),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_SIZE_M=2, ACTIVATION=act)
    return c


def _ce_kernel(save=True):
    ce = triton_cpu.corpus_module("cross_entropy.py")
    return kad.differentiable(inputs=["logits_ptr"], outputs=["loss_ptr", "lse_ptr"], save=save)(
        ce.cross_entropy_fwd_kernel)


def _ce(k, x, labels):
    rows, V = x.shape
    loss = torch.empty(rows, device=x.device, dtype=x.dtype)
    lse = torch.empty(rows, device=x.device, dtype=x.dtype)
    k[(rows,)](x, labels, loss, lse, x.stride(0), V, -100, BLOCK_SIZE=32)
    return loss, lse


def _saved(t):
    """The saved-results buffer of the launch that made t (None: the kernel ran as written)."""
    return t.grad_fn.run.saved


def test_matmul_saved_matches_recompute_and_torch():
    a0, b0, dc = _rand(40, 50, seed=1), _rand(50, 36, seed=2), _rand(40, 36, seed=3)
    outs = {}
    for save in (True, False):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        c = _mm(_mm_kernel(save), a, b)
        assert (_saved(c) is not None) == save
        if save:  # one 16 x 16 fp32 accumulator per program
            assert _saved(c).numel() == 9 * 256 and _saved(c).dtype == torch.float32
        outs[save] = (c.detach(), *torch.autograd.grad(c, (a, b), dc))
    for x, y in zip(outs[True], outs[False]):
        assert torch.equal(x, y)  # the saved values are the values the recompute computes
    a, b = a0.double().requires_grad_(), b0.double().requires_grad_()
    want = torch.autograd.grad(F.leaky_relu(a @ b, 0.01), (a, b), dc.double())
    tol = dict(rtol=1e-2, atol=1e-2) if DEVICE == "cuda" else dict(rtol=1e-5, atol=1e-5)  # TF32 dots
    for g, w in zip(outs[True][1:], want):
        torch.testing.assert_close(g.double(), w, **tol)


def test_matmul_backward_reads_the_buffer():
    a, b = _rand(40, 50, seed=1).requires_grad_(), _rand(50, 36, seed=2).requires_grad_()
    dc = _rand(40, 36, seed=3)
    c = _mm(_mm_kernel(), a, b)
    ga, gb = torch.autograd.grad(c, (a, b), dc, retain_graph=True)
    _saved(c).neg_()  # every saved accumulator's sign flipped: the leaky ReLU takes the other branch
    ga2, gb2 = torch.autograd.grad(c, (a, b), dc)
    assert (ga - ga2).abs().max() > 1e-2 and (gb - gb2).abs().max() > 1e-2


def test_cross_entropy_saved_lse_statistics():
    # the online log-sum-exp loop (reversed by a second pass, src/ad/ad_gauge.c): its max and sum saved
    x0, labels = _rand(4, 100, seed=4), torch.randint(0, 100, (4,), generator=torch.Generator().manual_seed(5))
    labels = labels.to(DEVICE)
    res = {}
    for save in (True, False):
        x = x0.clone().requires_grad_()
        loss, lse = _ce(_ce_kernel(save), x, labels)
        assert (_saved(loss) is not None) == save
        if save:  # (s, m) per row
            assert _saved(loss).numel() == 8
        res[save] = (loss.detach(), lse.detach(), *torch.autograd.grad(loss, x, torch.ones_like(loss)))
    for p, q in zip(res[True], res[False]):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    x = x0.double().requires_grad_()
    want, = torch.autograd.grad(F.cross_entropy(x, labels, reduction="none").sum(), x)
    torch.testing.assert_close(res[True][2].double(), want, rtol=1e-5, atol=1e-6)
    # the backward uses the saved sum: doubling it halves the softmax part of the gradient
    x = x0.clone().requires_grad_()
    loss, _ = _ce(_ce_kernel(), x, labels)
    _saved(loss)[0::2].mul_(2)
    g, = torch.autograd.grad(loss, x, torch.ones_like(loss))
    onehot = F.one_hot(labels, 100).to(g.dtype)
    torch.testing.assert_close(g + onehot, (res[True][2] + onehot) / 2, rtol=1e-5, atol=1e-6)


def test_bf16_loop_result_saved_widened():
    sl = triton_cpu.corpus_module("save_loops.py")
    x0, w0 = _rand(3, 40, seed=6, dtype=torch.bfloat16), _rand(40, seed=7, dtype=torch.bfloat16)
    res = {}
    for save in (True, False):
        k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"], save=save)(sl.row_dot_bf16)
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = torch.empty(3, 16, device=DEVICE)
        k[(3,)](x, w, y, 40, 40, BLOCK=16)
        if save:  # acc (16 bf16 lanes, in fp32) and total, per row
            assert _saved(y).numel() == 3 * 17
        res[save] = (y.detach(), *torch.autograd.grad(y, (x, w), torch.ones_like(y)))
    for p, q in zip(res[True], res[False]):
        assert torch.equal(p, q)
    # against float64 autograd of the same math (lane l sums x * w over columns c = l mod 16; the
    # kernel accumulates in bf16, hence the tolerance)
    x, w = x0.double().cpu().requires_grad_(), w0.double().cpu().requires_grad_()
    pad = torch.zeros(3, 8, dtype=torch.float64)
    acc = torch.cat([x * w, pad], 1).view(3, 3, 16).sum(1)
    want = torch.autograd.grad((torch.sigmoid(acc) * x.sum(1, keepdim=True)).sum(), (x, w))
    for g, r in zip(res[True][1:], want):
        torch.testing.assert_close(g.double().cpu(), r, rtol=5e-2, atol=5e-2)


@pytest.mark.skipif(DEVICE != "cpu", reason="float64 gradcheck runs on kad's interpreter")
def test_gradcheck_float64_through_saved_results():
    k = _mm_kernel()

    def f(a, b):
        with kad.f64_mode(typed_as=torch.float32):
            c = _mm(k, a, b)
        assert _saved(c) is not None and _saved(c).dtype == torch.float64
        return c
    a, b = _rand(20, 18, seed=8).double(), _rand(18, 17, seed=9).double()
    assert torch.autograd.gradcheck(f, (a.requires_grad_(), b.requires_grad_()))
    kc = _ce_kernel()

    def g(x):
        with kad.f64_mode(typed_as=torch.float32):
            loss, lse = _ce(kc, x, torch.tensor([3, 0, 69]))
        assert _saved(loss) is not None
        return loss, lse
    assert torch.autograd.gradcheck(g, (_rand(3, 70, seed=10).double().requires_grad_(),))


def test_loops_left_alone():
    # a result the backward does not read (a plain matmul's accumulator, stored as it is): the
    # backward's copy of the loop is dead code, nothing to save
    a, b = _rand(20, 24, seed=13).requires_grad_(), _rand(24, 18, seed=14).requires_grad_()
    c = _mm(_mm_kernel(), a, b, act="")
    assert _saved(c) is None
    ga, gb = torch.autograd.grad(c, (a, b), torch.ones_like(c))
    tol = dict(rtol=1e-2, atol=1e-2) if DEVICE == "cuda" else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ga, torch.ones_like(c) @ b.detach().T, **tol)
    torch.testing.assert_close(gb, a.detach().T @ torch.ones_like(c), **tol)
    sl = triton_cpu.corpus_module("save_loops.py")
    # an int result the rest needs: the loop runs in the backward (nothing saved)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(sl.last_index)
    x = _rand(2, 40, seed=11).requires_grad_()
    y = torch.empty(2, device=DEVICE)
    k[(2,)](x, y, 40, 40, BLOCK=16)
    assert _saved(y) is None
    g, = torch.autograd.grad(y, x, torch.ones_like(y))
    xd = x.detach().double()
    last = torch.tensor([max([c for c in range(40) if xd[r, c] > 0.5] or [0]) for r in range(2)], dtype=torch.float64)
    torch.testing.assert_close(g.double().cpu(), (2 * xd * last[:, None].to(xd.device)).cpu(), rtol=1e-5, atol=1e-5)
    # a saved buffer larger than the launch's tensors: not saved
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(sl.wide_acc)
    x = (_rand(3, seed=12) * 0.01).requires_grad_()
    y = torch.empty(2, device=DEVICE)
    k[(2,)](x, y, 3, WIDE=1024)
    assert _saved(y) is None
    g, = torch.autograd.grad(y, x, torch.ones_like(y))
    xd, ramp = x.detach().double().cpu(), torch.arange(1, 1025, dtype=torch.float64)
    want = 2 * (torch.cos(xd.sum() * ramp) * ramp).sum()
    torch.testing.assert_close(g.double().cpu(), want.expand(3), rtol=1e-4, atol=1e-4)


def test_cli_saved_and_save_forward():
    args = ["grad", "tests/kernels/matmul.py:matmul_kernel", "--sig", MM_SIG, "--wrt", "a_ptr,b_ptr", "--out", "c_ptr"]
    p = triton_cpu.run_kad(args + ["--save-forward"])
    assert p.returncode == 0, p.stderr
    assert "def launch_matmul_kernel_fwd(" in p.stdout and "_kad_slot = 256" in p.stdout
    p = triton_cpu.run_kad(args + ["--saved"])
    assert p.returncode == 0, p.stderr
    # the GEMM form's dacc kernel loads the K loop's accumulator instead of running the loop
    body = p.stdout.split("def matmul_kernel_bwd_dacc(", 1)[1].split("@triton.jit", 1)[0]
    assert "kad_saved" in body and "tl.dot" not in body and "for " not in body, body
    p = triton_cpu.run_kad(args + ["--ir"])
    assert p.returncode == 0 and "kad_saved" not in p.stdout
    p = triton_cpu.run_kad(["grad", "tests/kernels/save_loops.py:last_index", "--sig",
                            "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16", "--wrt", "x_ptr",
                            "--out", "y_ptr", "--saved"])
    assert p.returncode != 0 and "has no loop results to save" in p.stderr


def test_torch_compile_recomputes(monkeypatch):
    # under torch.compile the launch is kad::launch, the kernel as written, and the backward
    # recomputes: a buffer sized when traced could not follow a graph traced with symbolic sizes
    # (dynamic shapes, which torch.compile turns on by itself after a shape changes)
    seen = []
    orig = kad.DifferentiableKernel._run_saving

    def spy(self, *a, **kw):
        seen.append(1)
        return orig(self, *a, **kw)
    monkeypatch.setattr(kad.DifferentiableKernel, "_run_saving", spy)
    k = _mm_kernel()
    for dynamic in (False, True):
        f = torch.compile(lambda a, b: _mm(k, a, b), backend="aot_eager", fullgraph=True, dynamic=dynamic)
        for M, K, N in ((40, 50, 36), (24, 30, 20)):
            a, b, dc = _rand(M, K, seed=M).requires_grad_(), _rand(K, N, seed=K).requires_grad_(), _rand(M, N, seed=N)
            ga, gb = torch.autograd.grad(f(a, b), (a, b), dc)
            a2, b2 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
            want = torch.autograd.grad(F.leaky_relu(a2 @ b2, 0.01), (a2, b2), dc.double())
            tol = dict(rtol=1e-2, atol=1e-2) if DEVICE == "cuda" else dict(rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(ga.double(), want[0], **tol)
            torch.testing.assert_close(gb.double(), want[1], **tol)
    assert not seen
    # eager launches of the same kernel do save
    a, b = _rand(40, 50, seed=1).requires_grad_(), _rand(50, 36, seed=2)
    assert _saved(_mm(k, a, b)) is not None and seen


def test_float64_checker_through_saved_results():
    # kad_check with saved set (Kernel.check_gradients(saved=True), `kad check --saved`)
    from kad import _capi
    ctx = _capi.Context()
    ctx.add_source("matmul.py", open(os.path.join(triton_cpu.KERNELS, "matmul.py")).read())
    k = ctx.specialize("matmul_kernel", MM_SIG)
    shapes = {"a_ptr": 20 * 40, "b_ptr": 40 * 24, "c_ptr": 20 * 24}
    args = dict(M=20, N=24, K=40, stride_am=40, stride_ak=1, stride_bk=24, stride_bn=1, stride_cm=24, stride_cn=1)
    ok, rep = k.check_gradients(4, "a_ptr,b_ptr", "c_ptr", shapes, args, saved=True)
    assert ok and "the backward of the saving forward (256 saved elements per program)" in rep, rep
    ok, rep = k.check_gradients(4, "a_ptr,b_ptr", "c_ptr", shapes, args)
    assert ok and "saving forward" not in rep, rep


def test_saved_with_a_folded_weight_gradient():
    # the backward folds w's gradient over the rows (its programs restructured: src/ad/write/fold.c);
    # the saved sums are still each row's
    sl = triton_cpu.corpus_module("save_loops.py")
    x0, w0, dy = _rand(6, 40, seed=15), _rand(40, seed=16), _rand(6, 40, seed=17)
    res = {}
    for save in (True, False):
        k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"], save=save)(sl.rms_chunked)
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = torch.empty_like(x)
        k[(6,)](x, w, y, 40, 40, 1e-5, BLOCK=16)
        assert (_saved(y) is not None) == save
        res[save] = (y.detach(), *torch.autograd.grad(y, (x, w), dy))
    for p, q in zip(res[True], res[False]):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)
    x, w = x0.double().requires_grad_(), w0.double().requires_grad_()
    want = torch.autograd.grad(x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5) * w, (x, w), dy.double())
    for g, r in zip(res[True][1:], want):
        torch.testing.assert_close(g.double(), r, rtol=1e-4, atol=1e-5)


def test_two_saved_loops_the_second_reading_the_first():
    sl = triton_cpu.corpus_module("save_loops.py")
    x0 = _rand(3, 37, seed=18)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(sl.mean_var)
    x = x0.clone().requires_grad_()
    y = torch.empty(3, device=DEVICE)
    k[(3,)](x, y, 37, 37, BLOCK=16)
    assert _saved(y).numel() == 3 * (16 + 1)  # the sum tile and the centred sum of squares
    g, = torch.autograd.grad(y, x, torch.ones_like(y))
    xd = x0.double().requires_grad_()
    want, = torch.autograd.grad((xd.var(1, unbiased=False) * xd.mean(1)).sum(), xd)
    torch.testing.assert_close(g.double(), want, rtol=1e-5, atol=1e-6)
    if DEVICE == "cpu":
        def f(x):
            y = torch.empty(3, dtype=torch.float64)
            with kad.f64_mode(typed_as=torch.float32):
                k[(3,)](x, y, 37, 37, BLOCK=16)
            assert _saved(y) is not None
            return y
        assert torch.autograd.gradcheck(f, (x0.double().requires_grad_(),))
