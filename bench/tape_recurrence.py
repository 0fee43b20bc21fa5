"""Tape memory and time of a taped backward on the GPU (issue 9): the gated recurrence
h_t = a_t * h_{t-1} + x_t of tests/kernels/tape_loops.py, through @kad.differentiable, at two
sequence lengths.  Prints per length: the tape's bytes (the generated header's formula:
4 * BLOCK_D bytes per iteration and program), the peak memory the backward allocated beyond
what the forward held, the forward and backward times (median of triton.testing.do_bench), and
the largest relative error of the gradients against PyTorch autograd of the same recurrence.

    python3 bench/tape_recurrence.py      (needs CUDA; build/libkad.so built)
    python3 bench/tape_recurrence.py --budget BYTES
        the same under a tape budget (revolve, docs/AD.md "Bounded memory"): per length also the
        full tape it replaces, the slots s, the repetition number t, the plan's rows and the
        iterations recomputed (`build/kad revolve`), and the memory peak and times with and
        without the budget
"""
import argparse
import os
import subprocess
import sys

import torch
import triton

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "python"), os.path.join(REPO, "tests")]

import kad  # noqa: E402
from kernels import tape_loops  # noqa: E402

rec = kad.differentiable(inputs=["x_ptr", "a_ptr", "h0_ptr"], outputs=["y_ptr"])(tape_loops.gated_recurrence)
KAD = os.environ.get("KAD", os.path.join(REPO, "build", "kad"))


def ref(x, a, h0):
    hs, h = [], h0
    for t in range(x.shape[0]):
        h = a[t] * h + x[t]
        hs.append(h)
    return torch.stack(hs)


def run(T, D, BLOCK_D=128, budget=0):
    fn = rec
    if budget:
        fn = kad.differentiable(inputs=["x_ptr", "a_ptr", "h0_ptr"], outputs=["y_ptr"],
                                tape_budget=budget)(tape_loops.gated_recurrence)
    g = torch.Generator(device="cuda").manual_seed(T)
    x = torch.randn(T, D, device="cuda", generator=g).requires_grad_()
    a = (0.5 + 0.5 * torch.rand(T, D, device="cuda", generator=g)).requires_grad_()
    h0 = torch.randn(D, device="cuda", generator=g).requires_grad_()
    dy = torch.randn(T, D, device="cuda", generator=g)
    grid = (triton.cdiv(D, BLOCK_D),)

    def fwd():
        y = torch.empty(T, D, device="cuda")
        fn[grid](x, a, h0, y, T, D, BLOCK_D=BLOCK_D)
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
    what = "tape"
    if budget:
        p = subprocess.run([KAD, "revolve", str(T), "--programs", str(grid[0]), "--slot-bytes", str(4 * BLOCK_D),
                            "--budget", str(budget)], capture_output=True, text=True, check=True)
        w = p.stdout.split()
        sch = {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}
        print(f"  budget {budget} bytes: revolve s={sch['slots']} t={sch['t']} rows={sch['rows']} "
              f"recomputed {sch['recomputed']} iterations ({sch['recomputed'] / max(T, 1):.2f} per iteration), "
              f"tape {sch['bytes']} bytes instead of {tape}")
        tape, what = sch["bytes"], "revolve tape"
    print(f"T={T} D={D} programs={grid[0]}: {what} {tape / 2**20:.2f} MiB, backward peak allocation "
          f"{peak / 2**20:.1f} MiB (gradients {3 * 4 * T * D / 2**20 + 4 * D / 2**20:.1f} MiB + tape + d_y "
          f"copies), forward {t_fwd * 1e3:.0f} us, forward+backward {t_fb * 1e3:.0f} us, "
          f"max rel grad error vs torch (float64) {err:.2e}")
    assert err < 1e-4, err


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=0, help="tape budget in bytes (0: none, a full tape)")
    ap.add_argument("--lengths", default="1024,8192", help="sequence lengths T, comma-separated")
    ap.add_argument("--dim", type=int, default=4096, help="features D")
    opt = ap.parse_args()
    for T in (int(v) for v in opt.lengths.split(",")):
        if opt.budget:
            run(T, opt.dim)  # the same length without a budget, for comparison
        run(T, opt.dim, budget=opt.budget)
