"""The package specializes launches as Triton's JIT does (runtime/jit.py, native_specialize_impl):
a None argument and an int equal to 1 become constants of the kernel (`x_ptr=None`, `stride=1`
in kad's signature) unless the parameter is in do_not_specialize or annotated with a type; the
forward and the backward still take them as runtime arguments.  Gradients are compared with
PyTorch autograd of the same math written plainly.

KAD_TEST_DEVICE=cuda runs the same tests with CUDA tensors (Triton forward, emitted backward
module): there the backward module compiles with the parameters Triton specialized.
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


@triton.jit
def _affine_rows(x_ptr, w_ptr, b_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    y = x * w
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


affine = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(_affine_rows)
affine_bias = kad.differentiable(inputs=["x_ptr", "w_ptr", "b_ptr"], outputs=["y_ptr"])(_affine_rows)
affine_dns = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(
    triton.jit(do_not_specialize=["stride", "n"])(_affine_rows.fn))


@triton.jit
def _scale_n(x_ptr, y_ptr, n: tl.int64, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * (n + 1), mask=mask)


scale_n = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(_scale_n)


def _rand(*shape):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    return torch.randn(*shape, generator=g).to(DEVICE)


def _run(kernel, rows, cols, bias, kernel_args=None):
    x = _rand(rows, cols).requires_grad_()
    w = _rand(cols).requires_grad_()
    b = _rand(cols) if bias else None
    y = torch.empty(rows, cols, device=DEVICE)
    kernel[(rows,)](x, w, b, y, x.stride(0), cols, BLOCK=16)
    dy = _rand(rows, cols)
    (y * dy).sum().backward()
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    yr = xr * wr + (b if bias else 0)
    (yr * dy).sum().backward()
    torch.testing.assert_close(y, yr.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad, wr.grad, rtol=1e-5, atol=1e-6)
    return x, w, b, y


def _sig(kernel, rows, cols, bias):
    x, w = _rand(rows, cols), _rand(cols)
    b = _rand(cols) if bias else None
    return kernel.bind((rows,), (x, w, b, torch.empty(rows, cols, device=DEVICE), x.stride(0), cols),
                       {"BLOCK": 16}).sig


def test_signature_follows_triton():
    assert _sig(affine, 3, 5, False) == "x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=i32,n=i32,BLOCK=16"
    assert _sig(affine, 3, 1, True) == "x_ptr=*fp32,w_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,stride=1,n=1,BLOCK=16"
    assert _sig(affine_dns, 3, 1, False) == "x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=i32,n=i32,BLOCK=16"
    x = _rand(4)
    assert scale_n.bind((1,), (x, torch.empty_like(x), 1), {"BLOCK": 16}).sig == \
        "x_ptr=*fp32,y_ptr=*fp32,n=i64,BLOCK=16"
    # a bool stays a runtime i1, not the constant 1
    assert ",stride=i1," in affine.bind((1,), (x, x, None, x, True, 2), {"BLOCK": 16}).sig


@pytest.mark.parametrize("rows,cols", [(4, 7), (5, 1), (1, 1)], ids=["7_cols", "1_col", "1x1"])
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
def test_optional_bias_and_unit_sizes(rows, cols, bias):
    """b_ptr=None (the `is not None` branch folds away) or a tensor not differentiated; a [N,1]
    tensor has row stride 1 and n == 1, both constants for Triton and kad."""
    _run(affine, rows, cols, bias)


@pytest.mark.parametrize("rows,cols", [(5, 1), (3, 6)], ids=["1_col", "6_cols"])
def test_do_not_specialize_equal_to_1(rows, cols):
    _run(affine_dns, rows, cols, False)


def test_bias_differentiated():
    x = _rand(3, 5).requires_grad_()
    w = _rand(5).requires_grad_()
    b = _rand(5).requires_grad_()
    y = torch.empty(3, 5, device=DEVICE)
    affine_bias[(3,)](x, w, b, y, 5, 5, BLOCK=16)
    y.sum().backward()
    torch.testing.assert_close(b.grad, torch.full((5,), 3.0, device=DEVICE))
    torch.testing.assert_close(w.grad, x.detach().sum(0))


def test_declared_input_passed_none_is_absent():
    """b_ptr=None for a declared input: specialized as Triton does, no gradient for it
    (tests/python/test_package_optional.py has more)."""
    _run(affine_bias, 3, 5, False)


@pytest.mark.parametrize("n", [1, 5])
def test_annotated_parameter_keeps_its_type(n):
    x = _rand(8).requires_grad_()
    y = torch.empty(8, device=DEVICE)
    scale_n[(1,)](x, y, n, BLOCK=16)
    y[:n].sum().backward()
    want = torch.zeros(8, device=DEVICE)
    want[:n] = n + 1
    torch.testing.assert_close(x.grad, want)


def test_check_backward_with_specialized_arguments():
    """kad.check_backward lines the runtime arguments up by name with the backward's parameters."""
    x, w = _rand(5, 1), _rand(1)

    def mine(x_ptr, w_ptr, b_ptr, y_ptr, stride, n, d_y, BLOCK):
        return d_y * w_ptr, (d_y * x_ptr).sum(0)

    r = kad.check_backward(affine, (5,), (x, w, None, torch.empty(5, 1, device=DEVICE), 1, 1), mine,
                           kwargs=dict(BLOCK=16))
    assert r.ok, r
