"""Tape memory and time of a taped backward on the GPU (issue 9): the gated recurrence
h_t = a_t * h_{t-1} + x_t of tests/kernels/tape_loops.py, through @kad.differentiable, at two
sequence lengths.  Prints per length: the tape's bytes (the generated header's formula:
4 * BLOCK_D bytes per iteration and program), the peak memory the backward allocated beyond
what the forward held, the forward and backward times (median of triton.testing.do_bench), and
the largest relative error of the gradients against PyTorch autograd of the same recurrence.

    python3 bench/tape_recurrence.py      (needs CUDA; build/libkad.so built)
"""
import os
import sys

import torch
import triton

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "python"), os.path.join(REPO, "tests")]

import kad  # noqa: E402
from kernels import tape_loops  # noqa: E402

rec = kad.differentiable(inputs=["x_ptr", "a_ptr", "h0_ptr"], outputs=["y_ptr"])(tape_loops.gated_recurrence)


def ref(x, a, h0):
    hs, h = [], h0
    for t in range(x.shape[0]):
        h = a[t] * h + x[t]
        hs.append(h)
    return torch.stack(hs)


def run(T, D, BLOCK_D=128):
    g = torch.Generator(device="cuda").manual_seed(T)
    x = torch.randn(T, D, device="cuda", generator=g).requires_grad_()
    a = (0.5 + 0.5 * torch.rand(T, D, device="cuda", generator=g)).requires_grad_()
    h0 = torch.randn(D, device="cuda", generator=g).requires_grad_()
    dy = torch.randn(T, D, device="cuda", generator=g)
    grid = (triton.cdiv(D, BLOCK_D),)

    def fwd():
        y = torch.empty(T, D, device="cuda")
        rec[grid](x, a, h0, y, T, D, BLOCK_D=BLOCK_D)
        return y

    y = fwd()
    y.backward(dy)  # compiles
    for t in (x, a, h0):
        t.grad = None
    torch.cuda.synchronize()
    y = fwd()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y.backward(dy)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    got = [t.grad.clone() for t in (x, a, h0)]
    xr, ar, hr = (t.detach().double().requires_grad_() for t in (x, a, h0))
    ref(xr, ar, hr).backward(dy.double())
    err = max(((g - r.grad).abs().max() / r.grad.abs().max()).item() for g, r in zip(got, (xr, ar, hr)))
    t_fwd = triton.testing.do_bench(fwd)

    def fb():
        for t in (x, a, h0):
            t.grad = None
        fwd().backward(dy)
    t_fb = triton.testing.do_bench(fb)
    tape = 4 * BLOCK_D * T * grid[0]
    print(f"T={T} D={D} programs={grid[0]}: tape {tape / 2**20:.1f} MiB, backward peak allocation "
          f"{peak / 2**20:.1f} MiB (gradients {3 * 4 * T * D / 2**20 + 4 * D / 2**20:.1f} MiB + tape + d_y "
          f"copies), forward {t_fwd * 1e3:.0f} us, forward+backward {t_fb * 1e3:.0f} us, "
          f"max rel grad error vs torch (float64) {err:.2e}")
    assert err < 1e-4, err


if __name__ == "__main__":
    for T in (1024, 8192):
        run(T, 4096)
