"""Direct launches of a generated backward's kernels (docs/GRAD.md, "Direct launches"), on a GPU.

A generated launcher keeps, per launch plan, the CompiledKernel Triton's JIT returned for the first
launch of a key (device, launch options, tensor dtypes, every tensor 16-byte aligned) and launches
it again through Triton's own launcher.  Checked here, with the kernels' JIT entry points replaced
by counting proxies:

- a repeated launch goes through the JIT once per kernel, then directly, and gives the same bits
  as launches that all go through the JIT (the module's `_kad_ck` patched to give no cache);
- a tensor that is not 16-byte aligned sends every launch through the JIT (Triton would compile
  another specialization), and the gradients stay right (against PyTorch autograd);
- another dtype of the same shapes does not reuse the first dtype's kernel;
- with a Triton launch hook set (a profiler's), every launch goes through the JIT and the hook
  sees it;
- the GEMM form's three kernels (a tiled matmul's backward) likewise: the JIT once each, then
  directly, the same bits as all-JIT launches, and right against PyTorch autograd.

Skipped without CUDA.
"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import kad  # noqa: E402
from kernels import matmul, rms_norm, swiglu, vector_add  # noqa: E402


class _Counting:
    """Stands in for a module's @triton.jit kernel: counts the JIT launches (k[grid](...))."""

    def __init__(self, k):
        self.k, self.jit = k, 0

    def __getitem__(self, grid):
        self.jit += 1
        return self.k[grid]


def _rms_module(dtype, rows=64, cols=512):
    dk = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(rms_norm.rms_norm_fwd_kernel)
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w = torch.randn(cols, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    rstd = torch.empty(rows, device="cuda", dtype=torch.float32)
    args = [x, w, y, rstd, x.stride(0), y.stride(0), cols, 1e-6]
    block = triton.next_power_of_2(cols)
    rms_norm.rms_norm_fwd_kernel[(rows,)](*args, BLOCK_SIZE=block)
    launch = dk.bind((rows,), args, {"BLOCK_SIZE": block})
    mod = dk.program.module(launch.sig, ["x_ptr", "w_ptr"], ["y_ptr"], True)
    return mod, args, block


def _rms_grads(mod, args, block, dy, x=None):
    if x is not None:
        args = [x] + args[1:]
    dx, dw = torch.empty_like(args[0]), torch.empty_like(args[1])
    mod.launch_rms_norm_fwd_kernel_bwd((args[0].shape[0],), *args, dy, dx, dw, BLOCK_SIZE=block)
    return dx, dw


def _proxies(mod):
    main = _Counting(mod.rms_norm_fwd_kernel_bwd)
    summ = _Counting(mod.rms_norm_fwd_kernel_bwd_sum)
    mod.rms_norm_fwd_kernel_bwd, mod.rms_norm_fwd_kernel_bwd_sum = main, summ
    return main, summ


def _bits(t):
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def _through_the_jit(mod, plans, run, runs):
    """run() with every launch through the JIT (the module's _kad_ck giving no cache, its plans
    cleared before and after); asserts that each of runs has its bits; returns its gradients."""
    ck = mod._kad_ck
    mod._kad_ck = lambda dev: None
    plans.clear()
    try:
        ref = run()
    finally:
        mod._kad_ck = ck
        plans.clear()
    for got in runs:
        for g, r in zip(got, ref):
            assert torch.equal(_bits(g), _bits(r))
    return ref


def test_repeated_launches_go_direct_and_match_the_jit():
    mod, args, block = _rms_module(torch.float32)
    dy = torch.randn_like(args[0])
    main, summ = _proxies(mod)
    mod._kad_plans.clear()
    runs = [_rms_grads(mod, args, block, dy) for _ in range(4)]
    torch.cuda.synchronize()
    assert (main.jit, summ.jit) == (1, 1), "the second and later launches must not go through the JIT"
    # every launch through the JIT: the same bits
    ref = _through_the_jit(mod, mod._kad_plans, lambda: _rms_grads(mod, args, block, dy), runs)
    assert (main.jit, summ.jit) == (2, 2)


def test_unaligned_tensor_goes_through_the_jit():
    mod, args, block = _rms_module(torch.float32)
    rows, cols = args[0].shape
    main, summ = _proxies(mod)
    mod._kad_plans.clear()
    buf = torch.randn(rows * cols + 1, device="cuda")
    x = buf[1:].view(rows, cols)  # 4 bytes past an aligned address
    assert x.data_ptr() % 16
    w = args[1].detach().requires_grad_()
    xr = x.detach().double().requires_grad_()
    ref = torch.autograd.grad(xr * torch.rsqrt((xr * xr).mean(1, keepdim=True) + 1e-6) * w.double(),
                              [xr, w], torch.ones(rows, cols, device="cuda", dtype=torch.float64))
    y = torch.empty_like(x)
    a2 = [x, args[1], y, args[3], x.stride(0), y.stride(0), cols, 1e-6]
    rms_norm.rms_norm_fwd_kernel[(rows,)](*a2, BLOCK_SIZE=block)
    dy = torch.ones(rows, cols, device="cuda")
    for _ in range(3):
        dx, dw = _rms_grads(mod, a2, block, dy)
    assert main.jit == 3, "a launch with an unaligned tensor must take the JIT (another specialization)"
    assert summ.jit == 1  # the sum kernel's tensors are aligned: direct after the first launch
    for g, r in zip((dx, dw), ref):
        assert ((g.double() - r).abs().max() / r.abs().max()).item() < 1e-5


def test_another_dtype_does_not_reuse_the_kernel():
    # vector_add's backward (d_x = d_y = d_out) reads and writes whatever dtype it is given: the
    # module generated for fp32, launched again with fp16 tensors of the same shapes (same plan)
    dk = kad.differentiable(inputs=["x_ptr", "y_ptr"], outputs=["out_ptr"])(vector_add.add_kernel)
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    launch = dk.bind(grid, [x, y, out, n], {"BLOCK_SIZE": 1024})
    mod = dk.program.module(launch.sig, ["x_ptr", "y_ptr"], ["out_ptr"], True)
    k = _Counting(mod.add_kernel_bwd)
    mod.add_kernel_bwd = k
    mod._kad_plans.clear()
    for dtype in (torch.float32, torch.float32, torch.float16, torch.float16):
        xs, ys, outs = x.to(dtype), y.to(dtype), out.to(dtype)
        d_out = torch.randn(n, device="cuda").to(dtype)
        dx, dy = torch.empty_like(xs), torch.empty_like(ys)
        mod.launch_add_kernel_bwd(grid, xs, ys, outs, n, d_out, dx, dy, BLOCK_SIZE=1024)
        assert torch.equal(dx, d_out) and torch.equal(dy, d_out)
    assert k.jit == 2, "the fp16 launch must not reuse the fp32 kernel, and each must be reused"


def test_launch_hook_sends_every_launch_through_the_jit():
    mod, args, block = _rms_module(torch.float32)
    dy = torch.randn_like(args[0])
    main, summ = _proxies(mod)
    mod._kad_plans.clear()
    _rms_grads(mod, args, block, dy)
    seen = []
    hook = lambda metadata: seen.append(metadata)  # noqa: E731
    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        _rms_grads(mod, args, block, dy)
        _rms_grads(mod, args, block, dy)
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    assert (main.jit, summ.jit) == (3, 3)
    assert len(seen) == 4, "the hook must see every launch"
    _rms_grads(mod, args, block, dy)
    assert (main.jit, summ.jit) == (3, 3), "without the hook the launches go direct again"


def test_package_backward_matches_torch_after_direct_launches():
    dk = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(swiglu.swiglu_fwd_kernel)
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
        a = torch.randn(96, 1000, device="cuda", dtype=dtype, requires_grad=True)
        b = torch.randn(96, 1000, device="cuda", dtype=dtype, requires_grad=True)
        for _ in range(3):  # the first backward compiles, the later ones launch directly
            c = torch.empty_like(a)
            dk[(96, 1)](a, b, c, a.stride(0), 1000, BLOCK_SIZE=1024)
            dc = torch.randn_like(c)
            ga, gb = torch.autograd.grad(c, [a, b], dc)
            a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
            ra, rb = torch.autograd.grad(torch.nn.functional.silu(a64) * b64, [a64, b64], dc.double())
            for g, r in ((ga, ra), (gb, rb)):
                assert ((g.double() - r).abs().max() / r.abs().max()).item() < tol


def test_gemm_form_launches_go_direct_and_match_the_jit():
    m, n, k = 256, 192, 320
    cfg = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_SIZE_M=4, ACTIVATION="leaky_relu")
    dk = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(matmul.matmul_kernel.fn)
    a, b = torch.randn(m, k, device="cuda") * k ** -0.5, torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
    args = [a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]
    matmul.matmul_kernel.fn[grid](*args, **cfg, num_warps=4, num_stages=3)
    launch = dk.bind(grid, args, cfg)
    mod = dk.program.module(launch.sig, ["a_ptr", "b_ptr"], ["c_ptr"], True)
    names = ("matmul_kernel_bwd_dacc", "matmul_kernel_bwd_d_a_ptr", "matmul_kernel_bwd_d_b_ptr")
    mod._kad_fills = lambda dev, programs: True  # the grouped operand kernels, whatever the SM count
    ks = {nm: _Counting(getattr(mod, nm)) for nm in names}
    for nm, kk in ks.items():
        setattr(mod, nm, kk)
    dc = torch.randn(m, n, device="cuda")

    def grads():
        da, db = torch.empty_like(a), torch.empty_like(b)
        mod.launch_matmul_kernel_bwd(grid, *args, dc, da, db, num_warps=4, num_stages=3)
        return da, db

    mod._kad_gemm_plans.clear()
    runs = [grads() for _ in range(3)]
    torch.cuda.synchronize()
    assert all(kk.jit == 1 for kk in ks.values()), {nm: kk.jit for nm, kk in ks.items()}
    ref = _through_the_jit(mod, mod._kad_gemm_plans, grads, runs)
    assert all(kk.jit == 2 for kk in ks.values())
    # against autograd of the same math (TF32 dots: 2e-2), the slope from the kernel's own output
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    slope = torch.where(c >= 0, 1.0, 0.01).double()
    ra, rb = torch.autograd.grad(a64 @ b64, [a64, b64], dc.double() * slope)
    for g, r in zip(ref, (ra, rb)):
        assert ((g.double() - r).abs().max() / r.abs().max()).item() < 2e-2
