"""Per-thread CUDA C kernels written by others, read as their package ships them: nerfacc's
sources (nerfacc/cuda/csrc/*.cu and their include/*.cuh, which nerfacc compiles at run time), in
the installed, pinned wheel (tests/real/requirements.txt, installed with --no-deps by
tests/setup.sh), located through importlib without importing nerfacc.  Nothing is copied.

Each case runs `kad check` (float64 finite differences of kad's backward on kad's interpreter)
or `kad ir` and compares the outcome with the one recorded in CASES: `correct` (the check
passes), `refused` (a located error whose text is recorded: the reason), never `wrong`.  The
one-line summary in the report (`kernels tried, correct, refused`) comes from this table.
test_lens_undistortion_package also runs one kernel through kad.cuda.differentiable on CPU
tensors: its forward against the distortion model it inverts, written here, and
torch.autograd.gradcheck of its backward in float64.
"""
import importlib.util
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(ROOT, "build", "kad"))


def csrc():
    """nerfacc's CUDA source directory in the installed package (the wheel pinned in
    tests/real/requirements.txt), or skip when it is not installed."""
    spec = importlib.util.find_spec("nerfacc")  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("nerfacc is not installed (tests/setup.sh installs tests/real/requirements.txt)")
    d = os.path.join(list(spec.submodule_search_locations)[0], "cuda", "csrc")
    if not os.path.isdir(d):
        pytest.fail(f"nerfacc is installed without its CUDA sources ({d}): not the pinned wheel")
    return d


LENS = ["--block", "64", "--grid", "2", "--shape", "uv=200", "--shape", "uv_out=200", "--arg", "N=100",
        "--range", "uv=-0.5:0.5", "--range", "params=-0.05:0.05"]

# (case, file in csrc, kernel, command, arguments, expected status, text the refusal holds)
CASES = [
    ("opencv_radial_tangential_5", "camera.cu", "opencv_lens_undistortion", "check",
     ["--wrt", "uv,params", "--out", "uv_out", "--shape", "params=500", "--arg", "n_params=5",
      "--arg", "eps=1e-9", "--arg", "max_iterations=10"] + LENS, "correct", None),
    ("opencv_radial_tangential_8", "camera.cu", "opencv_lens_undistortion", "check",
     ["--wrt", "uv,params", "--out", "uv_out", "--shape", "params=800", "--arg", "n_params=8",
      "--arg", "eps=1e-9", "--arg", "max_iterations=10"] + LENS, "correct", None),
    # u_out, v_out are references to output elements that the callee writes only when Newton's
    # iteration converged: the copy-in reads the output where it is not written
    ("opencv_fisheye", "camera.cu", "opencv_lens_undistortion_fisheye", "check",
     ["--wrt", "uv,params", "--out", "uv_out", "--shape", "params=400", "--shape", "success=100",
      "--arg", "criteria_iters=10", "--arg", "criteria_eps=1e-9"] + LENS, "refused",
     "load from output 'uv_out'"),
    # the sampling kernels of pdf.cu: importance_sampling_kernel takes an at::PhiloxCudaState (a
    # PyTorch type), which kad cannot parse; since a function kad cannot parse refuses only itself
    # (and its callers), compute_ray_ids_kernel (integers only: lowered, no gradient) is read, and
    # the other two stop at the struct with methods they take
    ("compute_ray_ids", "pdf.cu", "compute_ray_ids_kernel", "ir", [], "correct", None),
    ("importance_sampling", "pdf.cu", "importance_sampling_kernel", "ir", [], "refused",
     "expected a type, got 'at'"),
    ("compute_intervals", "pdf.cu", "compute_intervels_kernel", "ir", [], "refused",
     "struct 'PackedRaySegmentsSpec' has a member that is not a number"),
    ("searchsorted", "pdf.cu", "searchsorted_kernel", "ir", [], "refused",
     "struct 'PackedRaySegmentsSpec' has a member that is not a number"),
    # grid.cu's kernels take structs with methods (PackedRaySegmentsSpec, SingleRaySpec): host types
    ("traverse_grids", "grid.cu", "traverse_grids_kernel", "ir", [], "refused",
     "struct 'PackedRaySegmentsSpec' has a member that is not a number"),
    ("ray_aabb_intersect", "grid.cu", "ray_aabb_intersect_kernel", "ir", [], "refused",
     "struct 'SingleRaySpec' has a member that is not a number"),
    # the segmented scans: a device function's default argument (`bool normalize = false`)
    ("inclusive_scan", "include/utils_scan.cuh", "inclusive_scan_kernel", "ir", [], "refused",
     "expected ')', got '='"),
    ("exclusive_scan", "include/utils_scan.cuh", "exclusive_scan_kernel", "ir", [], "refused",
     "expected ')', got '='"),
]


def run_case(d, file, kernel, cmd, args):
    r = subprocess.run([KAD, cmd, f"{os.path.join(d, file)}:{kernel}", *(args or ["--block", "256"])],
                       capture_output=True, text=True, timeout=300)
    if r.returncode == 0 and (cmd != "check" or r.stdout.rstrip().endswith(("PASS", "PASS (rtol 1e-06)"))):
        return "correct", r.stdout
    if "FAIL" in r.stdout:
        return "wrong", r.stdout + r.stderr
    return "refused", r.stderr


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nerfacc_kernel(case):
    name, file, kernel, cmd, args, want, reason = case
    status, text = run_case(csrc(), file, kernel, cmd, args)
    assert status != "wrong", f"{name}: kad's gradient disagrees with finite differences:\n{text}"
    assert status == want, f"{name}: expected {want}, got {status}:\n{text}"
    if status == "refused":
        first = next((ln for ln in text.splitlines() if ": error: " in ln), "")
        # located: file:line:col of nerfacc's source, then the recorded reason
        assert re.match(r"^/.*nerfacc/cuda/csrc/.*:\d+:\d+: error: ", first), text
        assert reason in first, f"{name}: the refusal changed:\n{text}"


def distort(x, y, k1, k2, k3, p1, p2):
    """OpenCV's radial-tangential distortion (k4..k6 = 0), the model the kernel inverts."""
    r2 = x * x + y * y
    radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
    return (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
            y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)


def test_lens_undistortion_package():
    torch = pytest.importorskip("torch")
    import kad
    k = kad.cuda.differentiable(os.path.join(csrc(), "camera.cu"), "opencv_lens_undistortion",
                                inputs=["uv", "params"], outputs=["uv_out"])
    g = torch.Generator().manual_seed(3)
    n = 50
    uv = (torch.rand(n, 2, generator=g, dtype=torch.float64) - 0.5).requires_grad_()
    params = ((torch.rand(n, 5, generator=g, dtype=torch.float64) - 0.5) * 0.1).requires_grad_()

    def undistort(uv, params):
        out = torch.zeros(n, 2, dtype=torch.float64)
        return k[1, 64](n, 5, uv, params, 1e-12, 20, out)

    with kad.f64_mode():
        out = undistort(uv, params).detach()
        p = params.detach()
        xd, yd = distort(out[:, 0], out[:, 1], p[:, 0], p[:, 1], p[:, 4], p[:, 2], p[:, 3])
        assert torch.allclose(torch.stack([xd, yd], 1), uv.detach(), atol=1e-10)
        assert (out - uv.detach()).abs().max() > 1e-4  # the distortion is not the identity
        assert torch.autograd.gradcheck(undistort, (uv, params), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_bev_pool_package_and_its_hand_written_backward():
    """conch_cuda_ext's pillar pooling (bev_pool_kernel.cu, from bevfusion; in the pinned
    conch-triton-kernels wheel): points gathered at data-dependent intervals and stored at
    data-dependent cells. kad's forward and backward on CPU tensors against a reference written
    here, and the library's hand-written bev_pool_grad_kernel checked by kad.cuda.check_backward."""
    torch = pytest.importorskip("torch")
    import kad
    spec = importlib.util.find_spec("conch_cuda_ext")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("conch-triton-kernels is not installed (tests/real/requirements.txt)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "ops", "vision", "bev_pool", "bev_pool_kernel.cu")
    g = torch.Generator().manual_seed(0)
    B, D, H, W, C, n_int = 1, 2, 3, 4, 5, 7
    lens = torch.randint(1, 4, (n_int,), generator=g, dtype=torch.int32)
    starts = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.int32), lens[:-1]]), 0).to(torch.int32)
    n = int(lens.sum())
    geom = torch.zeros(n, 4, dtype=torch.int32)  # (h, w, d, b) of each point's cell, one cell per interval
    for k, cid in enumerate(torch.randperm(B * D * H * W, generator=g)[:n_int].tolist()):
        geom[starts[k]:starts[k] + lens[k]] = torch.tensor([(cid // W) % H, cid % W, (cid // (W * H)) % D,
                                                            cid // (W * H * D)], dtype=torch.int32)

    def ref(x):
        o = torch.zeros(B * D * H * W * C, dtype=torch.float64)
        for k in range(n_int):
            s, ln = int(starts[k]), int(lens[k])
            h, w, d, b = geom[s].tolist()
            base = ((b * D + d) * H + h) * W * C + w * C
            o = o.index_add(0, torch.arange(base, base + C), x[s:s + ln].sum(0))
        return o.view(B, D, H, W, C)

    fwd = kad.cuda.differentiable(path, "bev_pool_kernel", inputs=["x"], outputs=["out"])
    grid = (n_int * C + 255) // 256
    x = torch.randn(n, C, generator=g, dtype=torch.float64).requires_grad_()
    out = torch.zeros(B, D, H, W, C, dtype=torch.float64)
    with kad.f64_mode():
        fwd[grid, 256](B, D, H, W, n, C, n_int, x, geom, starts, lens, out)
    want = ref(x)
    assert torch.equal(out, want.detach())
    dy = torch.randn(out.shape, generator=g, dtype=torch.float64)
    got, = torch.autograd.grad(out, x, dy)
    assert torch.equal(got, torch.autograd.grad(want, x, dy)[0])
    hand = kad.cuda.kernel(path, "bev_pool_grad_kernel")

    def my_backward(b, d, h, w, n_, c, ni, x_, geom_, st, ln, out_, d_out):
        xg = torch.zeros_like(x_)
        hand[grid, 256](b, d, h, w, n_, c, ni, d_out.contiguous(), geom_, st, ln, xg)
        return xg
    with kad.f64_mode():
        rep = kad.cuda.check_backward(fwd, grid, 256, [B, D, H, W, n, C, n_int, x.detach(), geom, starts, lens,
                                                       torch.zeros_like(out)], my_backward)
    assert "PASS" in str(rep), rep
