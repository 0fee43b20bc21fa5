"""kad_tune on a GPU: the backward of an autotuned forward, its launch options timed or not.

    python3 bench/tune.py [NAME,...]      (on the GPU machine, after `make`; default: the matmul)

For the autotuned benchmarks of bench/gpu.py (matmul + leaky ReLU) at 4096 x 4096 fp32 and bf16:
the package's backward (`torch.autograd.grad` through `@kad.differentiable`) with its launcher's
kad_tune forced off ("untuned": the forward's num_warps/num_stages for the kernels with its tiles,
kad's defaults for the others) and as the package calls it (kad_tune=True: each kernel's options
timed on its first launch, docs/GRAD.md "Tuning").  Per row: the device time alone per backward
(bench/gpu.py's gpu_only: torch.profiler's kernel durations, mean of 10 calls), in microseconds,
both ways; the wall time of the first tuned backward (compiling and timing the candidates); and
each kernel's choice (num_warps, num_stages) and its trials ([warps/stages: µs by do_bench, or
why the candidate was not timed], the default first).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402

import gpu as B  # noqa: E402
import kad  # noqa: E402
import kad.autograd as KA  # noqa: E402

TUNE = [True]  # False: every launch_<kernel>_bwd gets kad_tune=False
SEEN = []  # the generated modules


def _tune(kw):
    if not TUNE[0]:
        kw["kad_tune"] = False


def main():
    if not torch.cuda.is_available():
        sys.exit("bench/tune.py: needs CUDA")
    torch.backends.cuda.matmul.allow_tf32 = True
    B.patch_launchers(KA.Program, _tune, SEEN)
    benches = {b.name: b for b in B.BENCHES}
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ["matmul + leaky ReLU"]
    print(f"kad backward GPU time, kad_tune off and on, 4096 x 4096, {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, kad {kad.version()}, us per backward")
    print("| kernel | dtype | untuned µs | tuned µs | first tuned backward (s) | choices (kernel, slot: num_warps, num_stages chosen [trials]) |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for name in names:
        for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            f = B.kad_backward(benches[name], dt)
            TUNE[0] = False
            f()
            torch.cuda.synchronize()
            untuned = B.gpu_only(f, 10)
            TUNE[0] = True
            before = {id(m): dict(m._kad_tuned) for m in SEEN}
            t = time.perf_counter()
            f()
            torch.cuda.synchronize()
            first = time.perf_counter() - t
            tuned = B.gpu_only(f, 10)
            picks = []
            for m in SEEN:
                for key, c in m._kad_tuned.items():
                    if key not in before.get(id(m), {}):
                        tr = ", ".join(f"{w}/{s}: {ms if isinstance(ms, str) else f'{ms * 1e3:.0f}'}"
                                       for w, s, ms in m._kad_trials.get(key, ()))
                        picks.append(f"{key[0].__name__.rsplit('_bwd', 1)[-1] or 'bwd'} slot {key[-1]}: {c} [{tr}]")
            print(f"| {name} | {dname} | {untuned:.1f} | {tuned:.1f} | {first:.1f} | {'; '.join(picks)} |",
                  flush=True)


if __name__ == "__main__":
    main()
