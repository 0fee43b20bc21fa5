"""Kernels written with block pointers (tl.make_block_ptr, tl.advance, boundary_check,
padding_option), made differentiable with one decorator each and compared with PyTorch autograd
of the same math written plainly; gradcheck'ed in float64 on the CPU interpreter.

kad lowers a block pointer's loads and stores to tiles of pointers and masks, so these check the
whole path: sema's lowering, the loop carrying the block pointers' offsets, AD, the launcher.
The device comes from KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton).
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


@kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])
@triton.jit
def bp_scale_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, BM: tl.constexpr, BN: tl.constexpr):
    # y = x * w[None, :] + sigmoid(x) on 2-D tiles, zero padding at the edges
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_xm, 1), offsets=(pm * BM, pn * BN),
                           block_shape=(BM, BN), order=(1, 0))
    wb = tl.make_block_ptr(w_ptr, (N,), (1,), (pn * BN,), (BN,), (0,))
    x = tl.load(xb, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
    w = tl.load(wb, boundary_check=(0,)).to(tl.float32)
    y = x * w[None, :] + tl.sigmoid(x)
    yb = tl.make_block_ptr(y_ptr, (M, N), (stride_ym, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(yb, y.to(y_ptr.dtype.element_ty), boundary_check=(0, 1))


def bp_scale(x, w):
    M, N = x.shape
    y = torch.empty_like(x)
    BM, BN = 16, 16
    bp_scale_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, w, y, M, N, x.stride(0), y.stride(0), BM=BM, BN=BN)
    return y


def ref_scale(x, w):
    x32 = x.float()
    return (x32 * w.float()[None, :] + torch.sigmoid(x32)).to(x.dtype)


@kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])
@triton.jit
def bp_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(K, BK), num_stages=3):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b, input_precision="ieee").to(tl.float32)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def bp_matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    BM, BN, BK = 16, 16, 16
    bp_matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), BM=BM, BN=BN, BK=BK)
    return c


def ref_matmul(a, b):
    return (a.float() @ b.float()).to(a.dtype)


@kad.differentiable(inputs=["q_ptr", "k_ptr", "v_ptr"], outputs=["o_ptr"])
@triton.jit
def bp_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, stride_qm, stride_kn, stride_vn, stride_om, scale,
                   BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    # o = sigmoid(q k^T * scale) v, the q block fixed, K^T and V block pointers advanced per step
    pm = tl.program_id(0)
    q_bp = tl.make_block_ptr(q_ptr, (N, D), (stride_qm, 1), (pm * BM, 0), (BM, D), (1, 0))
    kt_bp = tl.make_block_ptr(k_ptr, (D, N), (1, stride_kn), (0, 0), (D, BN), (0, 1))
    v_bp = tl.make_block_ptr(v_ptr, (N, D), (stride_vn, 1), (0, 0), (BN, D), (1, 0))
    q = tl.load(q_bp, boundary_check=(0,), padding_option="zero")
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, N, BN):
        kt = tl.load(kt_bp, boundary_check=(1,), padding_option="zero")
        v = tl.load(v_bp, boundary_check=(0,), padding_option="zero")
        p = tl.sigmoid(tl.dot(q, kt, input_precision="ieee") * scale).to(v.dtype)
        # padded key columns would add sigmoid(0) * 0: v is zero there
        acc += tl.dot(p, v, input_precision="ieee").to(tl.float32)
        kt_bp = tl.advance(kt_bp, (0, BN))
        v_bp = v_bp.advance((BN, 0))
    o_bp = tl.make_block_ptr(o_ptr, (N, D), (stride_om, 1), (pm * BM, 0), (BM, D), (1, 0))
    tl.store(o_bp, acc.to(o_ptr.dtype.element_ty), boundary_check=(0, 1))


def bp_attn(q, k, v, scale=0.25):
    N, D = q.shape
    o = torch.empty_like(q)
    BM, BN = 16, 16
    bp_attn_kernel[(triton.cdiv(N, BM),)](q, k, v, o, N, q.stride(0), k.stride(0), v.stride(0), o.stride(0), scale,
                                          BM=BM, BN=BN, D=D)
    return o


def ref_attn(q, k, v, scale=0.25):
    return (torch.sigmoid((q.double() @ k.double().T) * scale) @ v.double()).to(q.dtype)


def t(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(device=DEVICE, dtype=dtype).requires_grad_()


def grads(fn, *xs):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    y = fn(*xs)
    cot = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(y)
    (y.double() * cot.double()).sum().backward()
    return y.detach(), [x.grad for x in xs]


def assert_close(a, b, rtol, what):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    err, scale = (a - b).abs().max().item(), b.abs().max().item()
    assert err <= rtol * scale + 1e-6, f"{what}: max err {err:.3g} vs max |ref| {scale:.3g}"


CASES = {
    # odd sizes: every block pointer's boundary_check masks something
    "scale": (bp_scale, ref_scale, lambda dt: (t(37, 21, dtype=dt), t(21, dtype=dt, seed=1))),
    "matmul": (bp_matmul, ref_matmul, lambda dt: (t(21, 35, dtype=dt), t(35, 19, dtype=dt, seed=1))),
    "attn": (bp_attn, ref_attn, lambda dt: (t(37, 16, dtype=dt), t(37, 16, dtype=dt, seed=1), t(37, 16, dtype=dt, seed=2))),
}
RTOL = {torch.float32: 1e-5 if DEVICE == "cpu" else 1e-4, torch.float16: 5e-3}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_block_pointer_kernel_gradients_match_torch(name, dtype):
    fn, ref, make = CASES[name]
    xs = make(dtype)
    y, g = grads(fn, *xs)
    y_ref, g_ref = grads(ref, *xs)
    assert_close(y, y_ref, RTOL[dtype], f"{name} forward")
    for i, (a, b) in enumerate(zip(g, g_ref)):
        assert a.dtype == xs[i].dtype and a.shape == xs[i].shape
        assert_close(a, b, RTOL[dtype], f"{name} d(input {i})")


@pytest.mark.parametrize("name", sorted(CASES))
def test_block_pointer_gradcheck_float64(name):
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    fn, _, make = CASES[name]
    xs = [x.detach().double().requires_grad_() for x in make(torch.float32)]
    with kad.f64_mode():
        assert torch.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-7, rtol=1e-5)
