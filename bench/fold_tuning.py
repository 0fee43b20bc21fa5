"""Kernel time of the generated RMSNorm and LayerNorm backwards (tests/kernels/) at 4096 x 4096,
folded (deterministic) for several nfold values against the atomic version (kad grad --atomics),
at 4, 8 and 16 warps: the durations of the kernels one launch runs (torch.profiler, mean of 30
launches), the generated launcher called directly with preallocated buffers.  Used to pick the
default nfold (docs/BENCHMARKS.md).  GPU only: `make && python3 bench/fold_tuning.py`.
"""
import importlib.util, os, subprocess, sys, torch, triton
from torch.profiler import ProfilerActivity, profile
KAD = "build/kad"
def module(target, sig, wrt, out, atom):
    cmd = [KAD, "grad", target, "--sig", sig, "--wrt", wrt, "--out", out] + (["--atomics"] if atom else [])
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    path = f"/tmp/m_{abs(hash((target, sig, atom)))}.py"
    open(path, "w").write(text)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)
    return m
def ktime(fn, n=30):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n): fn()
        torch.cuda.synchronize()
    return sum((getattr(e, "self_device_time_total", 0) or 0) for e in prof.key_averages()) / n
M = N = 4096
for dt, ts in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
    x = torch.randn(M, N, device="cuda", dtype=dt); w = torch.randn(N, device="cuda", dtype=dt)
    b = torch.randn(N, device="cuda", dtype=dt); dy = torch.randn(M, N, device="cuda", dtype=dt)
    y = torch.empty_like(x); r = torch.empty(M, device="cuda"); mu = torch.empty(M, device="cuda")
    sig = f"x_ptr=*{ts},w_ptr=*{ts},y_ptr=*{ts},rstd_ptr=*fp32,x_row_stride=i32,y_row_stride=i32,n_cols=i32,eps=fp32,BLOCK_SIZE=4096"
    for atom in (False, True):
        m = module("tests/kernels/rms_norm.py:rms_norm_fwd_kernel", sig, "x_ptr,w_ptr", "y_ptr", atom)
        for nw in (4, 8, 16):
            for nf in ((264, 528, 1056) if not atom else (0,)):
                dx = torch.zeros_like(x); dw = torch.zeros_like(w)
                kw = dict(BLOCK_SIZE=4096, num_warps=nw)
                if not atom: kw["nfold"] = nf
                f = lambda: m.launch_rms_norm_fwd_kernel_bwd((M,), x, w, y, r, N, N, N, 1e-6, dy, dx, dw, **kw)
                print(f"rms {ts} {'atomic' if atom else 'fold'} warps={nw} nfold={nf}: {ktime(f):.1f} us", flush=True)
    sig = f"X=*{ts},Y=*{ts},W=*{ts},B=*{ts},Mean=*fp32,Rstd=*fp32,stride_x=i32,stride_y=i32,N=i32,eps=fp32,BLOCK_N=4096"
    for atom in (False, True):
        m = module("tests/kernels/layer_norm.py:layer_norm_fwd_kernel", sig, "X,W,B", "Y", atom)
        for nw in (4, 8, 16):
            for nf in ((264, 528, 1056) if not atom else (0,)):
                dx = torch.zeros_like(x); dw = torch.zeros_like(w); db = torch.zeros_like(b)
                kw = dict(BLOCK_N=4096, num_warps=nw)
                if not atom: kw["nfold"] = nf
                f = lambda: m.launch_layer_norm_fwd_kernel_bwd((M,), x, y, w, b, mu, r, N, N, N, 1e-5, dy, dx, dw, db, **kw)
                print(f"ln {ts} {'atomic' if atom else 'fold'} warps={nw} nfold={nf}: {ktime(f):.1f} us", flush=True)
