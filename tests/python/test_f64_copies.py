"""kad.f64_mode() with float32 tensors: the interpreter runs on float64 copies of their storage.

The copies of the tensors a launch only reads (x, the output gradient) must live until the kernel has
run: the interpreter gets raw addresses.  They were freed before it ran, so the backward read freed
memory (gradients inf or garbage).  CPU only (f64_mode is the interpreter's)."""
import torch
import triton
import triton.language as tl

import kad


@triton.jit
def _square(x_ptr, w_ptr, y_ptr, D: tl.constexpr):
    offs = tl.program_id(0) * D + tl.arange(0, D)
    x = tl.load(x_ptr + offs)
    w = tl.load(w_ptr + tl.arange(0, D))
    tl.store(y_ptr + offs, x * x * w)


def test_float32_tensors_in_f64_mode():
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(_square)
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        x = torch.randn(64, 8, generator=g).requires_grad_()
        w = torch.randn(8, generator=g).requires_grad_()
        y = torch.empty(64, 8)
        dy = torch.randn(64, 8, generator=g)
        with kad.f64_mode():
            k[(64,)](x, w, y, D=8)
        torch.testing.assert_close(y, (x * x * w).detach())
        gx, gw = torch.autograd.grad(y, (x, w), dy)
        torch.testing.assert_close(gx, (2 * x * w * dy).detach())
        torch.testing.assert_close(gw, (x * x * dy).sum(0).detach())
