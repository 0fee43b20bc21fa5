"""GPU time of kad's backward of row-per-program elementwise kernels, by build (how KAD_LANE_TILE,
the width of split_lanes' parts, was chosen: docs/AD.md "Lanes in parts").

    python3 bench/lanes_sweep.py LABEL=LIBKAD.so [LABEL=LIBKAD.so ...] [--rounds 2]
                                                        (on the GPU machine, after building each lib)

Each LIB is a libkad.so built with its own -DKAD_LANE_TILE (a huge value: no split).  For each
library, in a process of its own (KAD_LIB is read once), rounds alternating between the libraries:
GeGLU (tests/kernels/geglu.py, the whole row in one block, as bench/gpu.py launches it) and SwiGLU
launched as its own wrapper does (tests/kernels/swiglu.py: min(4096, npo2(n)) columns a block), at
4096 x 4096 and 64 x 4096, fp32 and bf16: the device time of the package's backward
(`torch.autograd.grad` through `@kad.differentiable`, bench/gpu.py's gpu_only: every kernel's
duration from torch.profiler, mean of 20 calls), with the launcher's num_warps left to kad's default
and forced to 4 and 8.  Microseconds per backward.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

WARPS = (None, 4, 8)
SHAPES = ((4096, 4096), (64, 4096))


def _worker():
    import torch
    import gpu as B
    import kad
    import kad.autograd as KA

    forced = [None]

    def force(kw):
        if forced[0] is not None:
            kw["num_warps"] = forced[0]
    B.patch_launchers(KA.Program, force)

    def kad_swiglu_row(t, d):  # swiglu_forward's own block: min(4096, npo2(n))
        a, b = t["a"], t["b"]
        c = torch.empty_like(a)
        block = min(4096, B.npo2(d["N"]))
        return (d["M"], B.cdiv(d["N"], block)), [a, b, c, a.stride(0), d["N"]], dict(BLOCK_SIZE=block), c
    benches = {b.name: b for b in B.BENCHES}
    sw = benches["SwiGLU"]
    rows = [("GeGLU", benches["GeGLU"]),
            ("SwiGLU (row block)", B.Bench("SwiGLU", sw.dims, sw.make, sw.kad[:3] + (kad_swiglu_row,),
                                           sw.torch_fn, sw.hand, floor=sw.floor, shape=sw.shape))]
    out = []
    for name, bench in rows:
        for R, C in SHAPES:
            for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
                f = B.kad_backward(bench, dt, R, C)
                cells = []
                for w in WARPS:
                    forced[0] = w
                    f()
                    torch.cuda.synchronize()
                    cells.append(B.gpu_only(f, 20))
                out.append(dict(kernel=name, shape=f"{R} x {C}", dtype=dname, us=cells))
    print(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, kad=kad.version(),
                          rows=out)))


def main(argv):
    if argv and argv[0] == "--worker":
        return _worker()
    rounds = 2
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    libs = [a.split("=", 1) for a in argv]
    if not libs:
        sys.exit(__doc__)
    runs = []  # (label, round, result)
    for r in range(rounds):
        for label, lib in libs:
            env = dict(os.environ, KAD_LIB=os.path.abspath(lib), PYTHONPATH=os.path.join(REPO, "python"))
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"], env=env,
                               capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"{label}: worker failed\n{p.stderr[-4000:]}")
            runs.append((label, r + 1, json.loads(p.stdout.strip().splitlines()[-1])))
            print(f"# {label} round {r + 1} done", file=sys.stderr, flush=True)
    head = runs[0][2]
    print(f"kad backward GPU time, {head['device']}, torch {head['torch']}, kad {head['kad']}; "
          "µs per backward (mean of 20), num_warps: kad's default / 4 / 8")
    print("| kernel | shape | dtype | " + " | ".join(f"{lab} r{r}" for lab, r, _ in runs) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in runs) + " |")
    for i, row in enumerate(head["rows"]):
        cells = [" / ".join(f"{u:.1f}" for u in res["rows"][i]["us"]) for _, _, res in runs]
        print(f"| {row['kernel']} | {row['shape']} | {row['dtype']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
