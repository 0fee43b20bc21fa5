"""What saving loop results costs and saves (docs/AD.md, "Saved loop results"), on a GPU.

For the benchmark kernels of bench/gpu.py with a top-level loop over memory (matmul + leaky ReLU:
its K loop; cross-entropy: its online log-sum-exp over the vocabulary), at 4096 x 4096 in fp32 and
bf16, times with triton.testing.do_bench (median, L2 cleared before each call):

- the forward as written: the kernel's plain Triton launch, no autograd;
- kad's forward under autograd with save=True (the saving forward: the kernel plus a store of the
  loop's results) and with save=False (the kernel as written);
- kad's backward (torch.autograd.grad on the graph of that forward) for both: with save=True the
  backward loads the results instead of running the loop again;
- the saved buffer's size.

    PYTHONPATH=python python3 bench/save_cost.py [--only matmul|cross-entropy]
"""
import argparse
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu  # noqa: E402  (bench/gpu.py: the benchmark definitions)

import kad  # noqa: E402

NAMES = ("matmul + leaky ReLU", "cross-entropy")


def bench(fn):
    return triton.testing.do_bench(fn, warmup=20, rep=100, return_mode="median") * 1e3


def measure(b, dname, dt):
    d = b.dims(4096, 4096)
    g = torch.Generator(device="cuda").manual_seed(0)
    t = b.make(d, dt, "cuda", g)
    grid, args, kwargs, _ = b.kad[3](t, d)
    row = {"kernel": b.name, "dtype": dname}
    row["as written"] = bench(lambda: b.kad[0][grid](*args, **kwargs))  # the first call autotunes
    for save in (True, False):
        k = kad.differentiable(inputs=b.kad[1], outputs=b.kad[2], save=save)(b.kad[0])
        tt = {n: (v.detach().clone().requires_grad_() if v.is_floating_point() else v) for n, v in t.items()}

        def fwd():
            grid, args, kwargs, y = b.kad[3](tt, d)
            k[grid](*args, **kwargs)
            return y
        fwd()
        row[f"fwd save={save}"] = bench(fwd)
        y = fwd()
        saved = y.grad_fn.run.saved
        assert (saved is not None) == save, (b.name, save)
        if save:
            row["saved MiB"] = saved.numel() * saved.element_size() / 2**20
        dy = torch.randn(y.shape, generator=g, device="cuda").to(y.dtype)
        ins = [v for v in tt.values() if v.requires_grad]
        row[f"bwd save={save}"] = bench(lambda: torch.autograd.grad(y, ins, dy, retain_graph=True))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="matmul or cross-entropy")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    cols = ["kernel", "dtype", "as written", "fwd save=True", "fwd save=False", "bwd save=True", "bwd save=False",
            "saved MiB"]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, triton {triton.__version__}; "
          f"microseconds, medians of triton.testing.do_bench")
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for b in gpu.BENCHES:
        if b.name not in NAMES or (a.only and not b.name.startswith(a.only)):
            continue
        for dname, dt in (gpu.F32, gpu.BF16):
            r = measure(b, dname, dt)
            print("| " + " | ".join(r[c] if isinstance(r[c], str) else f"{r[c]:.1f}" for c in cols) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
