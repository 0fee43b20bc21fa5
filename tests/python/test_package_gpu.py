"""GPU-only checks of the package (skipped without CUDA; CI has none).

The bulk of the GPU run is the other package tests with CUDA tensors:
    KAD_TEST_DEVICE=cuda python3 -m pytest -q tests/python/test_package_corpus.py \
        tests/python/test_package_models.py tests/python/test_package_gpu.py
(command and result recorded in docs/PYTHON.md).  Here: what only a GPU
shows -- the autotuner's best config reaching the backward, check_backward
on CUDA tensors, bf16 and fp16 through Triton.
"""
import pytest
import torch

import kad

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_autotuned_forward_and_backward_use_the_best_config():
    import test_package_models as m
    x = torch.randn(64, 300, device="cuda", requires_grad=True)
    w = torch.ones(300, device="cuda", requires_grad=True)
    b = torch.zeros(300, device="cuda", requires_grad=True)
    y = m.layer_norm(x, w, b)
    assert m._layer_norm_fwd_fused.fn.best_config is not None
    y.pow(2).sum().backward()
    xr, wr, br = (t.detach().clone().requires_grad_() for t in (x, w, b))
    torch.nn.functional.layer_norm(xr, (300,), wr, br, 1e-5).pow(2).sum().backward()
    for a, r in ((x, xr), (w, wr), (b, br)):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-3, atol=1e-3)


def test_check_backward_on_cuda():
    import test_package_api as a
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(a.rmsnorm.fn)
    x, w = torch.randn(6, 40, device="cuda"), 1 + 0.1 * torch.randn(40, device="cuda")
    args = (x, w, torch.empty(6, 40, device="cuda"), torch.empty(6, device="cuda"), 40, 40, 40, 1e-6)
    good = kad.check_backward(k, (6,), args, lambda *p, **kw: a.my_rmsnorm_backward(*p[:9], None, **kw),
                              kwargs=dict(BLOCK=64))
    bad = kad.check_backward(k, (6,), args, lambda *p, **kw: a.my_rmsnorm_backward(*p[:9], None, bug=True, **kw),
                             kwargs=dict(BLOCK=64))
    print(good, bad, sep="\n")
    assert good.ok and not bad.ok


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_on_cuda(dtype):
    import test_package_models as m
    x = torch.randn(32, 512, device="cuda", dtype=dtype, requires_grad=True)
    w = (1 + 0.1 * torch.randn(512, device="cuda")).to(dtype).requires_grad_()
    y = m.rms_norm(x, w)
    y.float().sum().backward()
    xr, wr = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    m.ref_rms_norm(xr, wr).sum().backward()
    torch.testing.assert_close(x.grad.float(), xr.grad, rtol=5e-2, atol=5e-2)
    torch.testing.assert_close(w.grad.float(), wr.grad, rtol=5e-2, atol=5e-1)


# A grid that depends on the autotuned block size: the config that runs (forced by pruning to
# the second one) gives another grid than the first config, which kad assumes before the launch.
# The backward must be launched on the grid of the config that ran (a stale grid covered a quarter
# of the elements: FlagGems' l2_norm and weight_norm kernels in tests/real).
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _square(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, x * x, mask=m)


_square_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})], key=["n"],
    prune_configs_by={"early_config_prune": lambda configs, named_args, **kw: configs[1:]})(_square)


def test_autotuned_grid_of_the_config_that_ran():
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(_square_tuned)
    x = torch.randn(1000, device="cuda", requires_grad=True)
    y = torch.empty(1000, device="cuda")
    k[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
    assert _square_tuned.best_config.kwargs["BLOCK"] == 32
    g = torch.randn(1000, device="cuda")
    (y * g).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach() * g)


# The config by shape: 128-wide blocks below 500 elements, 32-wide from 500 on.  kad binds a launch
# with the config the previous launch ran (the one a training loop's next launch runs again) and binds
# it again after the launch only when the autotuner ran another: every switch below is one.
# (_square under an autotuner of its own: its configs, cache and best_config are this one's)
_square_by_shape = triton.autotune(
    configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})], key=["n"],
    prune_configs_by={"early_config_prune":
                      lambda configs, named_args, **kw: configs[:1] if named_args["n"] < 500 else configs[1:]})(_square)


def test_autotuned_config_switching_between_launches(monkeypatch):
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(_square_by_shape)
    binds = []
    orig = k._binder.bind
    monkeypatch.setattr(k._binder, "bind", lambda *a, **kw: binds.append(a[3]) or orig(*a, **kw))
    for step, n in enumerate((300, 1000, 1000, 300, 300, 1000)):
        x = torch.randn(n, device="cuda", requires_grad=True)
        y = torch.empty(n, device="cuda")
        del binds[:]
        k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        assert _square_by_shape.best_config.kwargs["BLOCK"] == (128 if n < 500 else 32)
        switched = step > 0 and (n < 500) != ((300, 1000, 1000, 300, 300, 1000)[step - 1] < 500)
        # bound once with the previous launch's config; again after the launch when it switched
        assert binds == ["previous", True] if step == 0 and n >= 500 or switched else binds == ["previous"], \
            (step, n, binds)
        g = torch.randn(n, device="cuda")
        (y * g).sum().backward()
        torch.testing.assert_close(x.grad, 2 * x.detach() * g)
