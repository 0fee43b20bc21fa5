"""Five kernels written the way popular kernel libraries write them (Liger,
Unsloth, the Triton tutorials), made differentiable with one decorator each,
checked against PyTorch autograd, gradcheck'ed in float64, and trained.

The kernels and their host wrappers below are ordinary Triton code: remove
the @kad.differentiable lines and they run as before.  They run on CPU
tensors here (kad's interpreter); test_package_gpu.py runs them on a GPU.
"""
import os

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


# ---------------------------------------------------------------- kernels


@kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])
@triton.jit
def swiglu_fwd_kernel(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    # sigmoid needs fp32; the product is rounded back to the storage type
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = (a_row * tl.sigmoid(a_row)).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


def swiglu(a, b):
    shape = a.shape
    a, b = a.reshape(-1, shape[-1]), b.reshape(-1, shape[-1])
    c = torch.empty_like(a)
    n_rows, n_cols = a.shape
    swiglu_fwd_kernel[(n_rows,)](a, b, c, c.stride(-2), n_cols=n_cols,
                                 BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return c.view(*shape)


@kad.differentiable(inputs=["X_ptr", "W_ptr"], outputs=["Y_ptr"])
@triton.jit
def rms_norm_fwd_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, RSTD_ptr, n_cols, eps,
                        BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    X_row = tl.load(X_ptr + row_idx * X_row_stride + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)
    X_row = X_row.to(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = tl.rsqrt(mean_square + eps)
    tl.store(RSTD_ptr + row_idx, rstd)  # cached for a hand-written backward
    Y_row = (X_row * rstd).to(X_row_dtype) * W_row
    tl.store(Y_ptr + row_idx * Y_row_stride + col_offsets, Y_row, mask=mask)


def rms_norm(x, w, eps=1e-6):
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rms_norm_fwd_kernel[(n_rows,)](y, y.stride(0), x, x.stride(0), w, rstd, n_cols, eps,
                                   BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y.view(*shape)


@kad.differentiable(inputs=["X", "W", "B"], outputs=["Y"])
@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["N"])
@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # mean and variance in two passes over the row, as in the Triton tutorial
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps=1e-5):
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    y = torch.empty_like(x_arg)
    mean = torch.empty((M,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    BLOCK_SIZE = min(65536 // x.element_size(), triton.next_power_of_2(N), 64)
    _layer_norm_fwd_fused[(M,)](x_arg, y, weight, bias, mean, rstd, x_arg.stride(0), N, eps,
                                BLOCK_SIZE=BLOCK_SIZE)
    return y.view_as(x)


@kad.differentiable(inputs=["input_ptr"], outputs=["output_ptr"])
@triton.heuristics({"BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # one program per row (the persistent grid-stride version of the tutorial
    # stores inside a loop over rows, which kad refuses for now)
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols)
    return y


@kad.differentiable(inputs=["X_ptr"], outputs=["loss_ptr"])
@triton.jit
def cross_entropy_kernel(X_ptr, X_stride, Y_ptr, loss_ptr, n_cols, ignore_index, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    X_ptr += program_id * X_stride
    y = tl.load(Y_ptr + program_id)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    X_block = tl.load(X_ptr + offsets, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(X_block, axis=0)
    d = tl.sum(tl.exp(X_block - m), axis=0)
    lse = m + tl.log(d)
    X_y = tl.sum(tl.where(offsets == y, X_block, 0.0), axis=0)
    loss = tl.where(y == ignore_index, 0.0, lse - X_y)
    tl.store(loss_ptr + program_id, loss)


def cross_entropy(logits, labels, ignore_index=-100):
    n_rows, n_cols = logits.shape
    loss = torch.empty(n_rows, dtype=torch.promote_types(logits.dtype, torch.float32), device=logits.device)
    cross_entropy_kernel[(n_rows,)](logits, logits.stride(0), labels, loss, n_cols, ignore_index,
                                    BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return loss.sum() / (labels != ignore_index).sum().clamp(min=1)


# ---------------------------------------------------------------- references


def ref_rms_norm(x, w, eps=1e-6):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def ref_swiglu(a, b):
    return F.silu(a.float()).to(b.dtype) * b


def ref_layer_norm(x, w, b, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def ref_cross_entropy(logits, labels, ignore_index=-100):
    return F.cross_entropy(logits.float(), labels, ignore_index=ignore_index)


def t(*shape, dtype=torch.float32, scale=1.0, shift=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = shift + scale * torch.randn(*shape, generator=g, dtype=torch.float64)
    return x.to(device=DEVICE, dtype=dtype).requires_grad_()


def grads(fn, *xs):
    """Forward value and gradients of sum(fn(*xs) * cotangent)."""
    xs = [x.detach().clone().requires_grad_() for x in xs]
    y = fn(*xs)
    cot = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(y)
    (y.float() * cot.float()).sum().backward()
    return y.detach(), [x.grad for x in xs]


def assert_close(a, b, rtol, what=""):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    err, scale = (a - b).abs().max().item(), b.abs().max().item()
    assert err <= rtol * scale + 1e-6, f"{what}: max err {err:.3g} vs max |ref| {scale:.3g}"


CASES = {
    "swiglu": (swiglu, ref_swiglu, lambda dt: (t(6, 300, dtype=dt, scale=2), t(6, 300, dtype=dt, seed=1))),
    "rms_norm": (rms_norm, ref_rms_norm,
                 lambda dt: (t(4, 3, 200, dtype=dt), t(200, dtype=dt, scale=0.2, shift=1, seed=1))),
    "layer_norm": (layer_norm, ref_layer_norm,
                   lambda dt: (t(5, 150, dtype=dt, scale=2, shift=1), t(150, dtype=dt, scale=0.1, shift=1, seed=1),
                               t(150, dtype=dt, scale=0.1, seed=2))),
    "softmax": (softmax, lambda x: torch.softmax(x.float(), -1).to(x.dtype), lambda dt: (t(7, 100, dtype=dt, scale=3),)),
}
# Relative to max|ref|.  Both sides round to the storage type, so they differ by a few ulps of
# it (measured on CPU: fp32 2e-7, fp16 8e-4 = 1.5 ulp, bf16 1e-2 = 2.5 ulp); the bounds allow
# about 10 ulps (fp32: 1e-5, where only summation order differs; 1e-4 on a GPU, whose fp32
# exp/rsqrt are approximations).
RTOL = {torch.float32: 1e-5 if DEVICE == "cpu" else 1e-4, torch.float16: 5e-3, torch.bfloat16: 4e-2, torch.float64: 1e-10}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_library_kernel_gradients_match_torch(name, dtype):
    fn, ref, make = CASES[name]
    xs = make(dtype)
    y, g = grads(fn, *xs)
    y_ref, g_ref = grads(ref, *xs)
    assert_close(y, y_ref, RTOL[dtype], f"{name} forward")
    for i, (a, b) in enumerate(zip(g, g_ref)):
        assert a.dtype == xs[i].dtype and a.shape == xs[i].shape
        assert_close(a, b, RTOL[dtype], f"{name} d(input {i})")


def test_cross_entropy_with_labels_and_ignore_index():
    logits = t(8, 50, scale=2)
    labels = torch.randint(0, 50, (8,), generator=torch.Generator().manual_seed(3)).to(DEVICE)
    labels[2] = -100
    loss = cross_entropy(logits, labels)
    loss.backward()
    g = logits.grad.clone()
    logits.grad = None
    ref = ref_cross_entropy(logits, labels)
    ref.backward()
    assert_close(loss, ref, 1e-5, "loss")
    assert_close(g, logits.grad, 1e-4, "dlogits")
    assert g[2].abs().max() == 0  # the ignored row gets no gradient


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_float64(name):
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    fn, _, make = CASES[name]
    xs = [x.detach().double()[..., :12].contiguous().requires_grad_() if x.dim() > 1 else
          x.detach().double()[:12].clone().requires_grad_() for x in make(torch.float32)]
    with kad.f64_mode():
        assert torch.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_gradcheck_cross_entropy_float64():
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    logits = t(4, 10, dtype=torch.float64)
    labels = torch.tensor([1, 9, -100, 0])
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda x: cross_entropy(x, labels), (logits,), eps=1e-6, atol=1e-7)


def test_training_a_small_model_decreases_the_loss():
    """x -> swiglu(x W1) -> layer_norm -> rms_norm -> W2 -> cross-entropy, plus a softmax
    term, trained by plain SGD: every kernel is on the gradient path."""
    torch.manual_seed(0)
    B, D, H, C = 32, 16, 32, 10
    x = torch.randn(B, D, device=DEVICE)
    labels = torch.randint(0, C, (B,), device=DEVICE)
    W1 = (torch.randn(D, 2 * H, device=DEVICE) / D ** 0.5).requires_grad_()
    ln_w = torch.ones(H, device=DEVICE, requires_grad=True)
    ln_b = torch.zeros(H, device=DEVICE, requires_grad=True)
    rms_w = torch.ones(H, device=DEVICE, requires_grad=True)
    W2 = (torch.randn(H, C, device=DEVICE) / H ** 0.5).requires_grad_()
    params = [W1, ln_w, ln_b, rms_w, W2]
    opt = torch.optim.SGD(params, lr=0.5)
    losses = []
    for _ in range(8):
        h = x @ W1
        h = swiglu(h[:, :H].contiguous(), h[:, H:].contiguous())
        h = rms_norm(layer_norm(h, ln_w, ln_b), rms_w)
        logits = h @ W2
        p = softmax(logits)
        loss = cross_entropy(logits, labels) + (p - F.one_hot(labels, C).float()).pow(2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        assert all(q.grad is not None and torch.isfinite(q.grad).all() for q in params)
        opt.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.7 * losses[0], losses
