"""What a kad.cuda launch costs the host: the grid-stride Swish (tests/cuda/swish_hip.hip) on a
tiny tensor (n = 4096: the kernels take about 2 µs, so the time is the host's), µs per call,
medians of 5 rounds of 300 calls after a warm-up, each round synchronized at its end:

  raw     the compiled forward launcher called through ctypes with prepared arguments
  fwd     k[grid, block](x, y, n) under torch.no_grad()
  fwd+ag  the same with autograd recording (x requires grad)
  f+b     forward and torch.autograd.grad (kad's generated backward)
  eager   x * torch.sigmoid(x) and its torch.autograd.grad

    PYTHONPATH=python python3 bench/cuda_host.py        (a CUDA device and nvcc)
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import kad  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def per_call(f, n=300, rounds=5):
    for _ in range(20):
        f()
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(out)


def main():
    k = kad.cuda.differentiable(os.path.join(REPO, "tests", "cuda", "swish_hip.hip"), "swish", inputs=["x"],
                                outputs=["y"])
    n = 4096
    x = torch.randn(n, device="cuda", requires_grad=True)
    dy = torch.ones(n, device="cuda")
    y = torch.empty(n, device="cuda")
    k[8, 128](x, y, n)
    template, spec = k.specialization((128, 1, 1), [x, y, n])
    _, fn, sig = k._forward_so(spec, template, x.device)
    vals = {"x": x.data_ptr(), "y": y.data_ptr(), "n": n, "grid_x": 8, "grid_y": 1, "grid_z": 1, "block_x": 128,
            "block_y": 1, "block_z": 1, "stream": torch.cuda.current_stream().cuda_stream, "kad_shared_mem": 0}
    cargs = [ct(vals[name]) for name, ct, _ in sig]

    def fwd_nograd():
        with torch.no_grad():
            k[8, 128](x, y, n)

    def fwd():
        yy = torch.empty(n, device="cuda")
        k[8, 128](x, yy, n)
        return yy

    def step():
        torch.autograd.grad(fwd(), x, dy)

    def eager():
        torch.autograd.grad(x * torch.sigmoid(x), x, dy)

    rows = [("raw", lambda: fn(*cargs)), ("fwd", fwd_nograd), ("fwd+ag", fwd), ("f+b", step), ("eager", eager)]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; µs per call, medians of 5 x 300")
    for name, f in rows:
        print(f"{name:8s} {per_call(f):8.1f}")


if __name__ == "__main__":
    main()
