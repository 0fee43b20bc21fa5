"""GPU memory a training-like loop of decorated launches holds: peak allocation over steps.

    PYTHONPATH=python python3 bench/memory_held.py [--steps N] [--rows R] [--cols C]

Each step: a fresh output tensor, the decorated SwiGLU launch (tests/kernels/swiglu.py) on inputs
that require grad, torch.autograd.grad of the output, then the step's tensors dropped, as a loop
over layers or steps drops them.  Printed: the allocator's peak (torch.cuda.max_memory_allocated)
beyond what the inputs hold, in MiB and in steps' worth of tensors (one step: the output and the
two input gradients), with Python's cyclic collector enabled at its default thresholds (what a
user runs) and with it disabled (then only reference counting frees anything).  A launch that
leaves a reference cycle (e.g. kad's Run keeping the caller's arguments, output included) holds
its step's tensors until a collection: the peak grows with the steps between collections, and
without the collector with every step.
"""
import argparse
import gc
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(os.path.dirname(HERE), "python"), os.path.join(os.path.dirname(HERE), "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import kad  # noqa: E402
from kernels import swiglu  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--cols", type=int, default=4096)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench/memory_held.py: needs CUDA (the CUDA caching allocator's peak is what it measures)")
        return
    dev = "cuda"
    dk = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(swiglu.swiglu_fwd_kernel)
    R, C = a.rows, a.cols
    x = torch.randn(R, C, device=dev, requires_grad=True)
    w = torch.randn(R, C, device=dev, requires_grad=True)
    block = min(1024, triton_npo2(C))
    grid = (R, -(-C // block))
    step_mib = 3 * R * C * 4 / 2**20

    def step():
        c = torch.empty(R, C, device=dev)
        dk[grid](x, w, c, x.stride(0), C, BLOCK_SIZE=block)
        torch.autograd.grad(c, (x, w), torch.ones_like(c))

    step()  # compiles
    print(f"kad memory held, {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"SwiGLU {R} x {C} fp32, {a.steps} steps; one step's tensors: {step_mib:.0f} MiB")
    for collector in (True, False):
        gc.collect()
        (gc.enable if collector else gc.disable)()
        try:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            for _ in range(a.steps):
                step()
            torch.cuda.synchronize()
            peak = (torch.cuda.max_memory_allocated() - base) / 2**20
            print(f"  cyclic collector {'on ' if collector else 'off'}: peak {peak:8.0f} MiB above the inputs "
                  f"= {peak / step_mib:5.1f} steps' tensors")
        finally:
            gc.enable()


def triton_npo2(n):
    return 1 << (n - 1).bit_length()


if __name__ == "__main__":
    main()
