"""Issue 8's speed criterion as a user pays it: kad's deterministic backward against deterministic=False
(atomics), 4096 x 4096 fp32 and bf16, in one run: do_bench medians (L2 cleared) and CUDA-event loops
(bench/gpu.py's Timer).  GPU only: `make && PYTHONPATH=python python3 bench/det_vs_atomic.py`."""
import sys, os, statistics, torch, triton
sys.path[:0] = [os.path.join(os.path.dirname(__file__), "..", p) for p in ("python", "tests", "bench")]
import gpu as B
import kad
from kernels import bias_add
torch.backends.cuda.matmul.allow_tf32 = True

def _kad_bias(t, d):
    x, b = t["x"], t["b"]
    M, N = x.shape
    y = torch.empty_like(x)
    return (M, triton.cdiv(N, 1024)), [x, b, y, x.stride(0), y.stride(0), N], dict(BLOCK_N=1024), y

def _mk_xb(d, dt, dev, g):
    return dict(x=B._randn(g, dev, d["M"], d["N"]).to(dt), b=B._randn(g, dev, d["N"]).to(dt))

rows = [(b.name, b.kad, b.make) for b in B.BENCHES if b.name in ("SwiGLU", "GeGLU", "RMSNorm", "LayerNorm", "softmax")]
rows.append(("bias-add", (bias_add.bias_add_kernel, ["x_ptr", "b_ptr"], ["y_ptr"], _kad_bias), _mk_xb))
timer = B.Timer("cuda", False)
print("| kernel | dtype | deterministic µs | atomics µs | det / atomics | deterministic µs (loop) | atomics µs (loop) | det / atomics (loop) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, (fn, ins, outs, launch), make in rows:
    d = dict(M=4096, N=4096)
    for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        res = {}
        for det in (True, False):
            k = kad.differentiable(inputs=ins, outputs=outs, deterministic=det)(fn)
            class _Bn: kad = (fn, ins, outs, launch)
            gs = B.graphs(B.kad_forward(k, _Bn, d), make, d, dt, "cuda", 0)
            f = B.backward_fn(gs)
            res[det] = (timer(f, "bench"), timer(f, "loop"))
        a, b = res[True], res[False]
        print(f"| {name} | {dname} | {a[0]*1e3:.1f} | {b[0]*1e3:.1f} | {a[0]/b[0]:.2f} | {a[1]*1e3:.1f} | {b[1]*1e3:.1f} | {a[1]/b[1]:.2f} |", flush=True)
