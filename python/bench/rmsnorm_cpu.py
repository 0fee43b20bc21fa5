"""Times the CPU path of @kad.differentiable: RMSNorm forward + backward,
1024 x 1024 float32, on kad's C interpreter.  Usage (from the repo root):

    PYTHONPATH=python .venv/bin/python python/bench/rmsnorm_cpu.py

Prints the best of 5 timed runs after one warm-up (which compiles: the
specialized forward and backward are then cached in memory)."""
import time

import torch
import triton
import triton.language as tl

import kad


@kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])
@triton.jit
def rmsnorm(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)


def step(x, w):
    y = torch.empty_like(x)
    rmsnorm[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], 1e-6, BLOCK=triton.next_power_of_2(x.shape[1]))
    y.sum().backward()


def main():
    M = N = 1024
    x = torch.randn(M, N, requires_grad=True)
    w = torch.randn(N, requires_grad=True)
    step(x, w)
    times = []
    for _ in range(5):
        x.grad = w.grad = None
        t = time.perf_counter()
        step(x, w)
        times.append(time.perf_counter() - t)
    print(f"rmsnorm {M}x{N} fp32 forward+backward on kad's interpreter: best {min(times) * 1e3:.1f} ms, "
          f"median {sorted(times)[2] * 1e3:.1f} ms ({torch.get_num_threads()} torch threads, kad {kad.version()})")


if __name__ == "__main__":
    main()
