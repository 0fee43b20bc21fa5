"""Nsight Compute profile of kad's generated backward kernels (issue 11: what limits each one).

    python3 bench/ncu_bwd.py [--only NAME,...] [--dtype fp32|bf16] [--write-doc]
                                                      (on the GPU machine, after `make`)

For each benchmark of bench/gpu.py at 4096 x 4096 in --dtype (fp32 by default; its own shape for
cross-entropy, the mean, matmul and linear attention), one backward through the package runs under
`ncu --clock-control none` (the clocks are left alone, as the device tool's METHOD.md asks) with the
profiled range limited to that call (cudaProfilerStart/Stop), after a first step as bench/gpu.py
takes (an autotuned forward's first launch runs as written) and a backward on each graph (compiled,
and tuned where kad_tune applies).  Per kernel it
reports the duration, the DRAM bytes read and written, the achieved DRAM bandwidth (also as a share of
the copy bandwidth measured by this script before profiling), the SM's and the L2's throughput as a
share of their peak (ncu's "Compute (SM) Throughput" and "L2 Cache Throughput": which of compute,
L2 and DRAM bounds the kernel), achieved occupancy, registers per thread, and the spills Triton's
compiler reported for that kernel (CompiledKernel.n_spills).

--write-doc replaces the section of docs/BENCHMARKS.md between `<!-- ncu begin -->` and
`<!-- ncu end -->` (fp32; `<!-- ncu bf16 begin -->` and `<!-- ncu bf16 end -->` for bf16).  The
workload half (--workload) is what ncu runs.
"""
import argparse
import csv
import datetime
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
MARKS = {"fp32": ("<!-- ncu begin -->", "<!-- ncu end -->"),
         "bf16": ("<!-- ncu bf16 begin -->", "<!-- ncu bf16 end -->")}
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
           "launch__grid_size", "launch__block_size"]


def workload(only, meta_path, dtype):
    sys.path[:0] = [HERE, os.path.join(REPO, "python"), os.path.join(REPO, "tests")]
    import torch
    import triton
    import gpu as B
    import kad
    torch.backends.cuda.matmul.allow_tf32 = True
    timer = B.Timer("cuda", False)
    bw = B.copy_bandwidth(timer, "cuda", B.COPY_BYTES)
    meta = {"bw": bw, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "triton": triton.__version__, "kad": kad.version(), "rows": [], "spills": {}}
    cudart = torch.cuda.cudart()
    for b in B.BENCHES:
        if only and b.name.lower() not in only and b.name.lower().split()[0] not in only:
            continue
        d = b.dims(4096, 4096)
        k = kad.differentiable(inputs=b.kad[1], outputs=b.kad[2])(b.kad[0])
        dt = getattr(torch, DTYPES[dtype])
        # a first step, as bench/gpu.py takes: an autotuned forward's first launch runs as written,
        # later ones run the saving forward, whose backward is the one to profile
        B.graphs(B.kad_forward(k, b, d), b.make, d, dt, "cuda", 99)
        gs = B.graphs(B.kad_forward(k, b, d), b.make, d, dt, "cuda", 0)
        call = B.backward_fn(gs)
        for _ in gs:  # compiles the backward (and tunes it, kad_tune) on every graph before profiling
            call()
        torch.cuda.synchronize()
        cudart.cudaProfilerStart()
        call()
        torch.cuda.synchronize()
        cudart.cudaProfilerStop()
        meta["rows"].append(b.name)
        for mod in k.program.modules.values():
            for v in vars(mod).values():
                for entry in (getattr(v, "device_caches", None) or {}).values():
                    for ck in entry[0].values():
                        name = ck.name if hasattr(ck, "name") else v.fn.__name__
                        meta["spills"][name] = [getattr(ck, "n_regs", None), getattr(ck, "n_spills", None)]
    with open(meta_path, "w") as f:
        json.dump(meta, f)


def profile(only, dtype):
    meta_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kad_ncu_{os.getpid()}.json")
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
           "--metrics", ",".join(METRICS), sys.executable, os.path.abspath(__file__), "--workload",
           "--meta", meta_path, "--dtype", dtype] + (["--only", ",".join(sorted(only))] if only else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(meta_path):
        sys.exit(f"ncu failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    with open(meta_path) as f:
        meta = json.load(f)
    text = p.stdout[p.stdout.find('"ID"'):]
    rows = list(csv.DictReader(io.StringIO(text)))
    return meta, [r for r in rows if r.get("ID", "").isdigit()]


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


def table(meta, rows, dtype):
    bw = meta["bw"]
    out = [f"Copy bandwidth measured by the same script: {bw / 1e9:.0f} GB/s. One backward per benchmark "
           f"({dtype}, 4096 x 4096 or the benchmark's own shape), every kernel it launched; SM % and L2 % "
           "are the SM's and the L2's throughput as a share of their peak; spills and registers as "
           "Triton's compiler reported them (n_spills, n_regs).",
           "",
           "| kernel | grid x block | time µs | DRAM read MB | DRAM write MB | achieved GB/s | % of copy BW | "
           "SM % | L2 % | achieved occupancy % | regs/thread | spills |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t = num(r.get("gpu__time_duration.sum"))  # ns
        rd, wr = num(r.get("dram__bytes_read.sum")), num(r.get("dram__bytes_write.sum"))
        name = r.get("Kernel Name", "?")
        regs, spills = (meta["spills"].get(name) or [None, None])
        gbs = (rd + wr) / t if t and rd is not None and wr is not None else None
        out.append(f"| `{name}` | {r.get('launch__grid_size', '?')} x {r.get('launch__block_size', '?')} | "
                   f"{t / 1e3:.1f} | {rd / 1e6:.1f} | {wr / 1e6:.1f} | {gbs:.0f} | {100 * gbs * 1e9 / bw:.0f} | "
                   f"{num(r.get('sm__throughput.avg.pct_of_peak_sustained_elapsed')) or 0:.0f} | "
                   f"{num(r.get('lts__throughput.avg.pct_of_peak_sustained_elapsed')) or 0:.0f} | "
                   f"{num(r.get('sm__warps_active.avg.pct_of_peak_sustained_active')) or 0:.0f} | "
                   f"{r.get('launch__registers_per_thread', regs)} | {spills if spills is not None else '?'} |"
                   if t and gbs is not None else f"| `{name}` | ? | ? | ? | ? | ? | ? | ? | ? | ? | ? | ? |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default="")
    p.add_argument("--write-doc", action="store_true")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    p.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--meta", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    only = {w.strip().lower() for w in a.only.split(",") if w.strip()}
    if a.workload:
        workload(only, a.meta, a.dtype)
        return
    meta, rows = profile(only, a.dtype)
    cmd = ("python3 bench/ncu_bwd.py" + (f" --only {a.only}" if a.only else "")
           + (f" --dtype {a.dtype}" if a.dtype != "fp32" else "") + (" --write-doc" if a.write_doc else ""))
    begin, end = MARKS[a.dtype]
    text = "\n".join([begin, f"Measured {datetime.date.today().isoformat()} on {meta['device']}, torch {meta['torch']}, "
                      f"triton {meta['triton']}, kad {meta['kad']}. Command: `PYTHONPATH=python {cmd}` (after "
                      f"`make`).", "", table(meta, rows, a.dtype), end])
    print(text)
    if a.write_doc:
        with open(DOC, encoding="utf-8") as f:
            doc = f.read()
        i, j = doc.find(begin), doc.find(end)
        doc = doc[:i] + text + doc[j + len(end):] if i >= 0 and j > i else doc.rstrip("\n") + "\n\n" + text + "\n"
        with open(DOC, "w", encoding="utf-8") as f:
            f.write(doc)


if __name__ == "__main__":
    main()
