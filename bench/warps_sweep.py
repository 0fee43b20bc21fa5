"""GPU time of kad's backward with num_warps forced (how the launch default was chosen).

    python3 bench/warps_sweep.py [NAME,...] [--stages]      (on the GPU machine, after `make`)

For the row kernels of bench/gpu.py (SwiGLU, GeGLU, RMSNorm, LayerNorm, softmax, log-softmax by
default) at 4096 x 4096 fp32 and bf16: the package's backward (`torch.autograd.grad` through
`@kad.differentiable`) with the generated launcher's `num_warps` left to kad's default ("None")
and forced to 4, 8 and 16; each figure is the device time alone per backward (bench/gpu.py's
gpu_only: every kernel's and memset's duration from torch.profiler, mean of 10 calls), in
microseconds.  Used for the "Launch parameters" default (docs/GRAD.md) and docs/BENCHMARKS.md.
--stages: num_stages forced instead (left to kad's default, 1, 2, 3), num_warps kad's: whether
Triton's pipelining of a loop's loads (a row run in parts, docs/AD.md "Lanes in parts") costs.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402

import gpu as B  # noqa: E402
import kad  # noqa: E402
import kad.autograd as KA  # noqa: E402

FORCED = [None]  # the num_warps (num_stages with --stages) the launchers get (None: kad's default)
OPTION = ["num_warps"]


def _force(kw):
    if FORCED[0] is not None:
        kw[OPTION[0]] = FORCED[0]


def main():
    if not torch.cuda.is_available():
        sys.exit("bench/warps_sweep.py: needs CUDA")
    B.patch_launchers(KA.Program, _force)
    benches = {b.name: b for b in B.BENCHES}
    argv = [a for a in sys.argv[1:] if a != "--stages"]
    values = (None, 4, 8, 16)
    if len(argv) < len(sys.argv) - 1:
        OPTION[0], values = "num_stages", (None, 1, 2, 3)
    names = argv[0].split(",") if argv else [
        "SwiGLU", "GeGLU", "RMSNorm", "LayerNorm", "softmax", "log-softmax"]
    print(f"kad backward GPU time by {OPTION[0]}, 4096 x 4096, {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, kad {kad.version()}, us per backward")
    print("| kernel | dtype | default | " + " | ".join(str(v) for v in values[1:]) + " |\n| --- | --- | --- | --- | --- | --- |")
    for name in names:
        for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            f = B.kad_backward(benches[name], dt)
            cells = []
            for w in values:
                FORCED[0] = w
                f()
                torch.cuda.synchronize()
                cells.append(f"{B.gpu_only(f, 10):.1f}")
            print(f"| {name} | {dname} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
