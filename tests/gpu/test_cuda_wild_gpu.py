"""tests/cuda_wild's kernels (the table of tests/python/test_cuda_wild.py) through
kad.cuda.differentiable on CUDA tensors: the source's forward and kad's CUDA C backward compiled
by nvcc, outputs and gradients against PyTorch's float64 autograd of the same math (float32
tensors: rtol 1e-4 of the largest value), and the backward 20 times bitwise equal to the first.
A backward the CUDA C emitter refuses (KadError naming "CUDA C emitter") is an xfail with its
message: the table says which, and a refusal that disappears shows as XPASS.

    make && python3 -m pytest -q tests/gpu/test_cuda_wild_gpu.py [-k NAME]
Skipped without torch, CUDA or nvcc.
"""
import os
import shutil
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not (os.environ.get("KAD_NVCC") or shutil.which("nvcc") or os.path.isfile("/usr/local/cuda/bin/nvcc")):
    pytest.skip("no nvcc", allow_module_level=True)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

import kad  # noqa: E402
import test_cuda_wild as w  # noqa: E402

F64 = torch.float64
# the CUDA C emitter's refusals today (src/emit/emit_cuda*.c): a shared array longer than the block
# and than a row a thread holds (tree_reduce: sdata[256] with 64 threads)
REFUSED = {"tree_reduce_l2norm": "has shape"}
# backwards that add with atomicAdd (right, not bitwise; each header says so): the matmul's gradients
# sum over a grid axis; the embedding's rows gather at indices loaded from memory (a scatter at data
# positions); the bias of a 2-D block is read by the block's rows at once (lanes that share an
# element: no fold)
ATOMIC = {"tiled_matmul_smem", "embedding_gather", "bias_residual_2d"}
# HIP sources whose kernels use the warp: kad reads them with 64-lane wavefronts, refused on CUDA
WAVE64 = {"hip_wave_softmax"}


@pytest.mark.parametrize("name", sorted(w.CASES))
def test_wild_kernel_on_gpu(name):
    c = w.CASES[name]
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    args, ref = c.make(g)
    low = c.dtype if c.dtype != F64 else torch.float32
    dev = [a.to(low).cuda() if isinstance(a, torch.Tensor) and a.is_floating_point() else
           a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
    # a pointer the C signature types otherwise (double *, a float * next to bf16 data) gets its own dtype
    params = w.prepare(c, dev)[0].specialization(c.block, dev, c.template or None, shared_mem=c.smem)[1].params
    want_dt = {"fp32": torch.float32, "fp64": F64, "fp16": torch.float16, "bf16": torch.bfloat16}
    dev = [a.to(want_dt[ty[1:].split("[")[0]]) if isinstance(a, torch.Tensor) and a.is_floating_point()
           and ty.startswith("*") and ty[1:].split("[")[0] in want_dt else a for a, (_, ty) in zip(dev, params)]
    k, run, xs, outs = w.prepare(c, dev)
    if name in WAVE64:
        with pytest.raises(NotImplementedError, match="64-lane wavefront"):
            k[c.grid, c.block](*run, shared_mem=c.smem)
        return
    try:
        k[c.grid, c.block](*run, shared_mem=c.smem)
    except kad.KadError as e:
        if name in REFUSED and "CUDA C emitter" in str(e) and REFUSED[name] in str(e):
            pytest.xfail("kad refuses its CUDA C backward: " + str(e).splitlines()[0])
        raise
    assert name not in REFUSED, "the CUDA C emitter no longer refuses %s: take it out of REFUSED" % name
    torch.cuda.synchronize()
    xr = [x.detach().cpu().to(F64).requires_grad_() for x in xs]
    want = ref(*xr)
    tol = max(c.tol, 1e-4)
    for n, o, wv in zip(c.outputs, outs, want):
        w.close(o.cpu(), wv, tol, "%s: output %s" % (name, n))
    dys = [torch.randn(o.shape, generator=g, dtype=F64).to(o.dtype) for o in outs]
    got = torch.autograd.grad(outs, xs, [d.cuda() for d in dys], allow_unused=True, retain_graph=True)
    wgrad = torch.autograd.grad(want, xr, [d.to(F64) for d in dys], allow_unused=True)
    for n, a, b in zip(c.inputs, got, wgrad):
        a = torch.zeros_like(b) if a is None else a.cpu()
        b = torch.zeros_like(a) if b is None else b
        w.close(a, b, tol, "%s: gradient of %s" % (name, n))
    for _ in range(19 if name not in ATOMIC else 0):  # deterministic: the same bits every run
        again = torch.autograd.grad(outs, xs, [d.cuda() for d in dys], allow_unused=True, retain_graph=True)
        for a, b in zip(got, again):
            if a is not None:
                assert torch.equal(a, b), "%s: the backward's bits differ between runs" % name
