"""The GEMM form of a tiled matmul's operand gradients (src/ad/write/gemm.c, docs/AD.md "GEMM operand gradients").

The emitted module of tests/kernels/matmul.py's matmul_kernel holds no atomic for d_a/d_b on the
launches where the programs map one to one onto the tile pairs, runs on Triton (CPU interpreter, or
KAD_GRAD_TEST_DEVICE=cuda) against PyTorch autograd, is bitwise deterministic, and falls back to the
atomic kernel when the launch's grid does not map one to one.  A K loop whose addresses do not
match the pattern keeps atomics.
"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_cpu as tc  # noqa: E402

DEVICE = tc.device_from_env("KAD_GRAD_TEST_DEVICE")
SIG = ("a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_ak=i32,stride_bk=i32,"
       "stride_bn=i32,stride_cm=i32,stride_cn=i32,BLOCK_M=16,BLOCK_N=16,BLOCK_K=16,GROUP_SIZE_M=2,"
       "ACTIVATION=\"leaky_relu\"")


def module(tmp_path, sig=SIG, extra=()):
    r = tc.run_kad(["grad", "tests/kernels/matmul.py:matmul_kernel", "--sig", sig, "--wrt", "a_ptr,b_ptr",
                    "--out", "c_ptr", *extra])
    assert r.returncode == 0, r.stderr
    path = tmp_path / "mm_bwd.py"
    path.write_text(r.stdout)
    return r.stdout, path


def test_module_has_gemm_kernels_and_no_atomics_in_them(tmp_path):
    text, _ = module(tmp_path)
    assert "def matmul_kernel_bwd_dacc(" in text and "def matmul_kernel_bwd_d_a_ptr(" in text
    assert "def matmul_kernel_bwd_d_b_ptr(" in text and "_kad_gemm_plan(" in text
    for name in ("matmul_kernel_bwd_dacc", "matmul_kernel_bwd_d_a_ptr", "matmul_kernel_bwd_d_b_ptr"):
        body = text.split(f"def {name}(")[1].split("\n\n\n")[0]
        assert "atomic" not in body, name
    assert "d_a_ptr is written deterministically, without atomics, by a GEMM" in text
    # --atomics: no GEMM form
    text2, _ = module(tmp_path, extra=["--atomics"])
    assert "_kad_gemm_plan" not in text2


def run_bwd(path, m, n, k, grid, a, b, dc, fills=None):
    # fills: what the launcher's _kad_fills answers (True: the grouped operand kernels, False: their
    # one-iteration forms); None: its own answer (on CUDA, by the grid and the SM count)
    with tc.interpreter(DEVICE):
        mod = tc.load_module(str(path), f"mm_bwd_{m}_{n}_{k}_{grid}")
        if fills is not None:
            mod._kad_fills = lambda dev, programs: fills
        da, db = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
        c = torch.empty(m, n, device=a.device)
        mod.launch_matmul_kernel_bwd((grid,), a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                     b.stride(1), c.stride(0), c.stride(1), dc, da, db)
        return da, db, mod


@pytest.mark.parametrize("m,n,k,extra", [(40, 36, 50, 0), (16, 16, 16, 0), (40, 36, 50, 3)])
def test_matches_torch_and_is_deterministic(tmp_path, m, n, k, extra):
    _, path = module(tmp_path)
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).to(DEVICE)
    b = torch.randn(k, n, generator=g).to(DEVICE)
    dc = torch.randn(m, n, generator=g).to(DEVICE)
    grid = -(-m // 16) * -(-n // 16) + extra  # extra programs: not one to one, the atomic kernel runs
    da, db, mod = run_bwd(path, m, n, k, grid, a, b, dc)
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    tol = 1e-2 if DEVICE != "cpu" else 1e-4
    torch.testing.assert_close(da.double(), a64.grad, rtol=tol, atol=tol)
    torch.testing.assert_close(db.double(), b64.grad, rtol=tol, atol=tol)
    plans = list(mod._kad_gemm_plans.values())
    assert len(plans) == 1 and (plans[0] is None) == (extra != 0)
    if extra == 0:  # the tiles cover both gradients: no zero-fill (the NaN buffers show any element missed)
        assert plans[0][3] == (True, True), plans[0]
        da2, db2, _ = run_bwd(path, m, n, k, grid, a, b, dc)
        assert torch.equal(da, da2) and torch.equal(db, db2)


def test_tiles_short_of_the_view_are_zero_filled(tmp_path):
    # 2 programs: tiles (0, 0) and (1, 0) of the 3 x 3 (one to one: the GEMM form runs), so d_a's rows
    # past 32 and d_b's columns past 16 get no tile: the launcher zero-fills them (NaN buffers)
    _, path = module(tmp_path)
    m, n, k = 40, 36, 50
    g = torch.Generator().manual_seed(7)
    # a, b > 0: c > 0 everywhere, so TF32's rounding on a GPU cannot flip leaky_relu's branch
    a, b = (torch.rand(*s, generator=g).add(0.1).to(DEVICE) for s in ((m, k), (k, n)))
    dc = torch.randn(m, n, generator=g).to(DEVICE)
    da, db, mod = run_bwd(path, m, n, k, 2, a, b, dc)
    plans = list(mod._kad_gemm_plans.values())
    assert len(plans) == 1 and plans[0] is not None and plans[0][3] == (False, False), plans
    keep = torch.zeros(m, n, dtype=torch.float64)
    keep[:32, :16] = 1
    assert not (torch.isnan(da).any() or torch.isnan(db).any()), "an element neither stored nor zero-filled"
    _check_grads(da, db, a, b, dc * keep.to(dc), 1e-2 if DEVICE != "cpu" else 1e-5)


def test_gemm_path_is_taken_and_can_fail(tmp_path):
    # a broken dacc kernel must make the gradients wrong: the GEMM path is really what runs
    text, path = module(tmp_path)
    broken = text.replace("    tl.store(dacc_ptrs, dacc)", "    tl.store(dacc_ptrs, dacc * 2.0)")
    assert broken != text
    path.write_text(broken)
    m, n, k = 20, 20, 20
    g = torch.Generator().manual_seed(1)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    da, db, _ = run_bwd(path, m, n, k, 4, a, b, dc)
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    assert not torch.allclose(da.double(), a64.grad, rtol=1e-3, atol=1e-3)


NEG = '''
import triton
import triton.language as tl


@triton.jit
def k_sum(a_ptr, b_ptr, c_ptr, idx_ptr, K, BM: tl.constexpr, BK: tl.constexpr):
    # a's rows are gathered through loaded indices: its address depends on data, so no GEMM form
    pid = tl.program_id(0)
    rows = tl.load(idx_ptr + pid * BM + tl.arange(0, BM))
    acc = tl.zeros((BM, BM), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :])
        b = tl.load(b_ptr + ks[:, None] * BM + tl.arange(0, BM)[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * BM + tl.arange(0, BM)[None, :], acc)
'''


def test_pattern_mismatch_keeps_atomics(tmp_path):
    src = tmp_path / "neg.py"
    src.write_text(NEG)
    r = tc.run_kad(["grad", f"{src}:k_sum", "--sig", "a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,idx_ptr=*i32,K=i32,BM=16,BK=16",
                    "--wrt", "a_ptr,b_ptr", "--out", "c_ptr"])
    assert r.returncode == 0, r.stderr
    assert "_kad_gemm_plan" not in r.stdout and "tl.atomic_add(d_a_ptr" in r.stdout


# 16-bit operands: dacc is stored in the operands' dtype (rounded once) and the operand kernels' dots
# take the tiles as loaded (tensor cores, fp32 accumulation), on Triton and on kad's interpreter.
SIG16 = SIG.replace("*fp32", "*{dt}")


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_16bit_operands_dot_in_16bit_and_match_torch(tmp_path, dt):
    text, path = module(tmp_path, sig=SIG16.format(dt=dt))
    tname = {"fp16": "float16", "bf16": "bfloat16"}[dt]
    assert f"tl.store(dacc_ptrs, dacc.to(tl.{tname}))" in text
    assert "tl.dot(dacc, tl.trans(b))" in text and "tl.dot(tl.trans(a), dacc)" in text
    assert f"_dacc = torch.empty(_U * _V * 256, dtype=torch.{tname}" in text
    assert f"stored in {dt} (rounded once from fp32" in " ".join(text.replace("\n#", " ").split())
    m, n, k = 40, 36, 50
    g = torch.Generator().manual_seed(7)
    tdt = getattr(torch, tname)
    a, b, dc = (torch.randn(*s, generator=g).to(tdt).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    grid = -(-m // 16) * -(-n // 16)
    if DEVICE == "cpu" and dt == "bf16":  # kad's interpreter runs it below (test_16bit_on_kads_interpreter)
        pytest.skip("Triton 3.6's CPU interpreter computes bf16 tl.dot wrongly (garbage even for a plain 16x16 dot)")
    da, db, mod = run_bwd(path, m, n, k, grid, a, b, dc)
    assert list(mod._kad_gemm_plans.values()) != [None]
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    tol = 3e-2 if dt == "bf16" else 5e-3
    torch.testing.assert_close(da.double(), a64.grad, rtol=tol, atol=tol * a64.grad.abs().max().item())
    torch.testing.assert_close(db.double(), b64.grad, rtol=tol, atol=tol * b64.grad.abs().max().item())
    da2, db2, _ = run_bwd(path, m, n, k, grid, a, b, dc)
    assert torch.equal(da, da2) and torch.equal(db, db2)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_16bit_on_kads_interpreter(dt):
    # CPU tensors: kad's interpreter runs the plan (plan_run's run_gemm) with the dacc tiles in dt
    import kad
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: `import kernels`
    from kernels import matmul
    k = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(matmul.matmul_kernel)
    m, n, kk = 40, 36, 50
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(*s, generator=g).to(dt).requires_grad_() for s in ((m, kk), (kk, n)))
    dc = torch.randn(m, n, generator=g).to(dt)
    grads = []
    for _ in range(2):
        c = torch.empty(m, n, dtype=dt)
        grid = lambda META: (-(-m // META["BLOCK_M"]) * -(-n // META["BLOCK_N"]),)  # noqa: E731
        k[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                ACTIVATION="leaky_relu")
        da, db = torch.autograd.grad(c, (a, b), dc)
        grads.append((da, db))
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    tol = 3e-2 if dt == torch.bfloat16 else 5e-3
    da, db = grads[0]
    torch.testing.assert_close(da.double(), a64.grad, rtol=tol, atol=tol * a64.grad.abs().max().item())
    torch.testing.assert_close(db.double(), b64.grad, rtol=tol, atol=tol * b64.grad.abs().max().item())
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


# Grouped K iterations (src/ad/write/gemm.c operand_kernel): each operand program owns R consecutive K iterations and
# loads each dacc tile once for them: d_b (a 64-row gradient tile) as R = 4 loop bodies, whose iterations past
# the trip count (the last group's) recompute the group's first iteration with their stores masked off; d_a as
# one tile twice as wide along K (R = 2, "Widening"), its elements past the trip count masked off.  Trip counts
# below one group, not a multiple of R, and a multiple of R; non-square shapes.
SIGR = SIG.replace("BLOCK_M=16,BLOCK_N=16,BLOCK_K=16", "BLOCK_M=64,BLOCK_N=16,BLOCK_K=64")


def test_grouped_module_text(tmp_path):
    text, _ = module(tmp_path, sig=SIGR)
    # d_a: the K iterations side by side, one dot on tiles twice as wide (along the tile's columns); d_b, whose
    # K axis is its tile's rows: 4 loop bodies, 4 dots (src/ad/write/gemm.c, "Widening")
    assert "the GEMM form: d_a_ptr, 2 K iterations per program as one tile 2 times as wide" in text
    assert "the GEMM form: d_b_ptr, 4 tiles per program" in text
    body = text.split("def matmul_kernel_bwd_d_a_ptr(")[1].split("\n\n\n")[0]
    assert "acc = tl.zeros([64, 128], dtype=tl.float32)" in body and body.count("tl.dot(") == 1
    body = text.split("def matmul_kernel_bwd_d_b_ptr(")[1].split("\n\n\n")[0]
    assert body.count("tl.dot(") == 4
    # each operand's grid, and each operand's test of it against the SM count (_kad_fills)
    assert text.count("triton.cdiv(_T, 2)") == 2 and text.count("triton.cdiv(_T, 4)") == 2
    assert text.count("_kad_fills(_dev, _") == 2
    # the operand kernels launch with their own defaults, the dacc kernel with the caller's (the forward's) options
    launch = text.split("def launch_matmul_kernel_bwd(")[1]
    assert '_kad_fit(matmul_kernel_bwd_dacc, _tg, ' in launch and '"num_warps": num_warps or' in launch
    for x in ("d_a_ptr", "d_b_ptr"):
        line = next(ln for ln in launch.splitlines() if f"_kad_fit(matmul_kernel_bwd_{x}," in ln)
        assert "num_warps or" not in line and "num_stages or" not in line


def test_operand_kernels_take_every_tile_in_blocks(tmp_path):
    # 11 x 10 tiles of 16 x 16: the operand kernels' programs take the tile ids in a block of 8 and a partial
    # block (GEMM_ORDER), every (tile, K group) once. Compared with the atomic backward on the same device, whose
    # recomputed accumulator is the same (on a GPU a TF32 accumulator near 0 can take the other side of the
    # activation's kink than a float64 reference: a comparison with torch would fail on that, not on the order)
    m, n, k = 173, 146, 83
    (tmp_path / "gemm").mkdir()
    (tmp_path / "atomic").mkdir()
    text, path = module(tmp_path / "gemm")
    body = text.split("def matmul_kernel_bwd_d_b_ptr(")[1].split("\n\n\n")[0]
    assert "tl.program_id(1)" not in body and "tl.cast(kad_tiles_v, tl.int64)" in body and "tl.minimum(" in body
    _, apath = module(tmp_path / "atomic", extra=["--atomics"])
    g = torch.Generator().manual_seed(11)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    grid = -(-m // 16) * -(-n // 16)
    da, db, mod = run_bwd(path, m, n, k, grid, a, b, dc)
    plans = list(mod._kad_gemm_plans.values())
    assert len(plans) == 1 and plans[0] is not None and plans[0][:2] == (11, 10) and plans[0][3] == (True, True)
    da2, db2, _ = run_bwd(apath, m, n, k, grid, a, b, dc)
    for x, y in ((da, da2), (db, db2)):  # NaN-filled buffers: an element no program stored stays NaN
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4 * y.abs().max().item())


def _check_grads(da, db, a, b, dc, tol):
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    torch.testing.assert_close(da.double(), a64.grad, rtol=tol, atol=tol * a64.grad.abs().max().item())
    torch.testing.assert_close(db.double(), b64.grad, rtol=tol, atol=tol * b64.grad.abs().max().item())


@pytest.mark.parametrize("m,n,k", [(70, 40, 330), (70, 40, 50), (64, 16, 256), (30, 50, 200)])
def test_grouped_matches_torch_on_triton(tmp_path, m, n, k):
    _, path = module(tmp_path, sig=SIGR)
    g = torch.Generator().manual_seed(m * n + k)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    grid = -(-m // 64) * -(-n // 16)
    da, db, mod = run_bwd(path, m, n, k, grid, a, b, dc)
    assert list(mod._kad_gemm_plans.values()) != [None]
    _check_grads(da, db, a, b, dc, 1e-2 if DEVICE != "cpu" else 1e-5)
    da2, db2, _ = run_bwd(path, m, n, k, grid, a, b, dc)
    assert torch.equal(da, da2) and torch.equal(db, db2)


def test_wide_tiles_are_what_runs(tmp_path):
    # the K iterations of a group read their own columns of the wide tile: making the loop's offsets repeat the
    # group's first iteration (its stores untouched) must make d_a wrong, so the wide kernel is what runs
    text, path = module(tmp_path, sig=SIGR)
    body = text.split("def matmul_kernel_bwd_d_a_ptr(")[1].split("\n\n\n")[0]
    loop = body.split("for tile_v in range(kad_tiles_v):")[1]
    line = next(ln for ln in loop.splitlines() if ln.strip().startswith("offs_k = "))
    assert "% 64" not in line and "tl.zeros([64, 128]" in body
    path.write_text(text.replace(body, body.replace(line, line + " % 64", 1)))
    m, n, k = 70, 40, 330
    g = torch.Generator().manual_seed(5)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    da, db, _ = run_bwd(path, m, n, k, -(-m // 64) * -(-n // 16), a, b, dc, fills=True)
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    assert not torch.allclose(da.double(), a64.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(db.double(), b64.grad, rtol=1e-2, atol=1e-2)


# A K loop over tile indices (offs_k = kt * BK + arange: the wide tile's offsets scale with BK) that sums the
# first KT tiles of K only: the last group's iterations past the loop's end would add columns KT * BK .. of the
# operands, inside the masks. Their elements are masked off in the wide kernel's loads and store, so those
# columns of d_a keep the launcher's zero-fill (d_b: one iteration a program). 5 iterations, R = 8 (BK = 16).
MASK_MK = "(offs_m[:, None] < M) & (offs_k[None, :] < K)"
MASK_KN = "(offs_k[:, None] < K) & (offs_n[None, :] < N)"
MASK_MN = "(offs_m[:, None] < M) & (offs_n[None, :] < N)"


def variant(tmp_path, name, sizes, loop, offs_k, masks=(None, None, None), tiles=(16, 16, 16), scaled=False):
    """The backward module of a tiled matmul C = A @ B written for these tests, as (text, path): BM x BN
    tiles on a 2-D grid, a K loop (`loop`, `offs_k`) over BK-wide steps, `sizes` its size parameters,
    masks for A's, B's and C's accesses (None: unmasked); scaled: A's K block times a scalar loaded per
    block (`s_ptr[k0 // BK]`)."""
    def m(x):
        return f", mask={x}, other=0.0" if x else ""
    scale = "        s = tl.load(s_ptr + k0 // BK)\n" if scaled else ""
    src = f"""
import triton
import triton.language as tl


@triton.jit
def {name}(a_ptr, b_ptr, {"s_ptr, " if scaled else ""}c_ptr, {", ".join(sizes)}, stride_am, stride_bk, stride_cm,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for {loop}:
        offs_k = {offs_k}
{scale}        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]{m(masks[0])})
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]{m(masks[1])})
        acc = tl.dot({"a * s" if scaled else "a"}, b, acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc{", mask=" + masks[2] if masks[2] else ""})
"""
    (tmp_path / f"{name}.py").write_text(src)
    sig = ",".join(["a_ptr=*fp32", "b_ptr=*fp32"] + ["s_ptr=*fp32"] * scaled + ["c_ptr=*fp32"] +
                   [f"{x}=i32" for x in sizes] + ["stride_am=i32", "stride_bk=i32", "stride_cm=i32"] +
                   [f"{x}={t}" for x, t in zip(("BM", "BN", "BK"), tiles)])
    r = tc.run_kad(["grad", f"{tmp_path / name}.py:{name}", "--sig", sig, "--wrt", "a_ptr,b_ptr", "--out", "c_ptr"])
    assert r.returncode == 0, r.stderr
    path = tmp_path / f"{name}_bwd.py"
    path.write_text(r.stdout)
    return r.stdout, path


def run_variant(path, name, grid, args, tiles=(16, 16, 16), fills=None):
    """Launches a variant's backward (launch_<name>_bwd) on DEVICE; fills: what _kad_fills answers
    (True: the grouped operand kernels whatever the SM count), None: its own answer."""
    with tc.interpreter(DEVICE):
        mod = tc.load_module(str(path), path.stem)
        if fills is not None:
            mod._kad_fills = lambda dev, programs: fills
        getattr(mod, f"launch_{name}_bwd")(grid, *args, BM=tiles[0], BN=tiles[1], BK=tiles[2])
    return mod


def test_wide_tiles_mask_the_iterations_past_the_loop(tmp_path):
    text, path = variant(tmp_path, "mm_trunc", ("M", "N", "K", "KT"), "kt in range(0, KT)", "kt * BK + tl.arange(0, BK)",
                         (MASK_MK, MASK_KN, MASK_MN))
    assert "the GEMM form: d_a_ptr, 8 K iterations per program as one tile 8 times as wide" in text
    m, n, k, kt = 40, 48, 128, 5
    g = torch.Generator().manual_seed(3)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    da, db = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
    mod = run_variant(path, "mm_trunc", (-(-m // 16), n // 16), (a, b, torch.empty(m, n, device=DEVICE), m, n, k, kt,
                      a.stride(0), b.stride(0), n, dc, da, db), fills=True)
    plans = list(mod._kad_gemm_plans.values())
    assert len(plans) == 1 and plans[0] is not None and plans[0][3] == (False, False), plans
    used = kt * 16
    assert not torch.isnan(da).any() and not torch.isnan(db).any()
    assert not da[:, used:].any() and not db[used:].any(), "iterations past the loop's end were added"
    tol = 1e-2 if DEVICE != "cpu" else 1e-5
    torch.testing.assert_close(da[:, :used].double(), dc.double() @ b[:used].double().T, rtol=tol, atol=tol)
    torch.testing.assert_close(db[:used].double(), a[:, :used].double().T @ dc.double(), rtol=tol, atol=tol)


# Without any mask (K a multiple of BK, the grid the tiles): the access analysis proves the operand kernels'
# stores disjoint for stride >= 16 * tiles (an order of the terms other than its first guess, whose condition
# could never hold), so the GEMM form runs. Operands and gradients are views into wider NaN buffers: the wide
# d_a kernel's last group (5 iterations, R = 8) must neither read past K into the result nor write there.
def test_unmasked_tiles_run_the_gemm_form(tmp_path):
    text, path = variant(tmp_path, "mm_plain", ("K",), "kt in range(0, tl.cdiv(K, BK))", "kt * BK + tl.arange(0, BK)")
    assert "the GEMM form: d_a_ptr, 8 K iterations per program as one tile 8 times as wide" in text
    assert '_tb["stride_am"] >= 16*_tk[1]' in text and '_tb["stride_bk"] >= 16*_tk[0]' in text
    m, n, k, pad = 32, 48, 80, 48
    g = torch.Generator().manual_seed(3)
    abuf = torch.randn(m, k + pad, generator=g).to(DEVICE)
    bbuf = torch.randn(k + pad, n, generator=g).to(DEVICE)
    a, b = abuf[:, :k], bbuf[:k]
    dc = torch.randn(m, n, generator=g).to(DEVICE)
    dabuf = torch.full((m, k + pad), float("nan"), device=DEVICE)
    dbbuf = torch.full((k + pad, n), float("nan"), device=DEVICE)
    mod = run_variant(path, "mm_plain", (m // 16, n // 16), (a, b, torch.empty(m, n, device=DEVICE), k, abuf.stride(0),
                      bbuf.stride(0), n, dc, dabuf[:, :k], dbbuf[:k]), fills=True)
    assert list(mod._kad_gemm_plans.values()) != [None], "the atomic backward ran"
    assert torch.isnan(dabuf[:, k:]).all() and torch.isnan(dbbuf[k:]).all(), "written past K"
    tol = 1e-2 if DEVICE != "cpu" else 1e-5
    torch.testing.assert_close(dabuf[:, :k].double(), dc.double() @ b.double().T, rtol=tol, atol=tol)
    torch.testing.assert_close(dbbuf[:k].double(), a.double().T @ dc.double(), rtol=tol, atol=tol)


# Masks on M and N only (K a multiple of BK, as under an EVEN_K flag): the first order the access analysis
# tries for d_a's stores gives `stride_am >= 16*tiles*stride_am or stride_am >= M*stride_am`, false on any
# real launch; the order chosen instead proves them for stride_am >= 16 * trips, so the GEMM form runs.
def test_even_k_tiles_run_the_gemm_form(tmp_path):
    text, path = variant(tmp_path, "mm_even_k", ("M", "N", "K"), "k0 in range(0, K, BK)", "k0 + tl.arange(0, BK)",
                         ("offs_m[:, None] < M", "offs_n[None, :] < N", MASK_MN))
    assert '_tb["stride_am"] >= 16*_tk[1]' in text
    m, n, k = 40, 36, 80
    g = torch.Generator().manual_seed(4)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    da, db = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
    mod = run_variant(path, "mm_even_k", (-(-m // 16), -(-n // 16)), (a, b, torch.empty(m, n, device=DEVICE), m, n, k,
                      a.stride(0), b.stride(0), n, dc, da, db))
    assert list(mod._kad_gemm_plans.values()) != [None], "the atomic backward ran"
    tol = 1e-2 if DEVICE != "cpu" else 1e-5
    torch.testing.assert_close(da.double(), dc.double() @ b.double().T, rtol=tol, atol=tol)
    torch.testing.assert_close(db.double(), a.double().T @ dc.double(), rtol=tol, atol=tol)


# A K loop whose body uses k otherwise than as offsets (a scale loaded per K block: a scalar of the iteration)
# cannot be widened: its operand kernels run the R loop bodies, each on the one dacc tile.
def test_grouped_bodies_are_what_runs(tmp_path):
    # a broken second body of the group (its contribution doubled) must make d_a wrong: the grouped kernel runs
    text, _ = variant(tmp_path, "mm_scaled", ("M", "N", "K"), "k0 in range(0, K, BK)", "k0 + tl.arange(0, BK)",
                      (MASK_MK, MASK_KN, MASK_MN), tiles=(64, 16, 64), scaled=True)
    assert "the GEMM form: d_a_ptr, 4 tiles per program" in text
    body = text.split("def mm_scaled_bwd_d_a_ptr(")[1].split("\n\n\n")[0]
    add = next(ln.strip() for ln in body.splitlines() if ln.strip().startswith("acc_1 = acc_1 + "))
    m, n, k = 70, 40, 330
    g = torch.Generator().manual_seed(5)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    sc = torch.rand(-(-k // 64), generator=g).add(0.5).to(DEVICE)
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    ((a64 * sc.double().repeat_interleave(64)[:k]) @ b64).backward(dc.double())
    for broken in (False, True):
        path = tmp_path / f"mm_scaled_bwd_{broken}.py"
        path.write_text(text.replace(body, body.replace(add, add.replace(" + ", " + 2.0 * ", 1))) if broken else text)
        da, db = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
        mod = run_variant(path, "mm_scaled", (-(-m // 64), -(-n // 16)), (a, b, sc, torch.empty(m, n, device=DEVICE), m,
                          n, k, a.stride(0), b.stride(0), n, dc, da, db), tiles=(64, 16, 64), fills=True)
        assert list(mod._kad_gemm_plans.values()) != [None]
        torch.testing.assert_close(db.double(), b64.grad, rtol=1e-2, atol=1e-2)
        if broken:
            assert not torch.allclose(da.double(), a64.grad, rtol=1e-3, atol=1e-3)
        else:
            torch.testing.assert_close(da.double(), a64.grad, rtol=1e-2, atol=1e-2)


# A grouped grid with fewer programs than the GPU has SMs (small matmuls: R iterations a program divide the
# programs by R) runs each operand's one-iteration kernel (<kernel>_single, grid (tiles, trips)) instead:
# the same sums in the same order, so the same bits (on a GPU; on the CPU interpreter numpy's matmul orders them).
@pytest.mark.parametrize("m,n,k", [(70, 40, 330), (30, 50, 200)])
def test_small_grids_run_the_one_iteration_kernels(tmp_path, m, n, k):
    text, path = module(tmp_path, sig=SIGR)
    launch = text.split("def launch_matmul_kernel_bwd(")[1]
    for x in ("d_a_ptr", "d_b_ptr"):
        assert f"def matmul_kernel_bwd_{x}_single(" in text
        assert f"_kad_fit(matmul_kernel_bwd_{x}_single, (" in launch
    assert launch.count("if not _kad_fills(_dev, ") == 2
    g = torch.Generator().manual_seed(m + n + k)
    a, b, dc = (torch.randn(*s, generator=g).to(DEVICE) for s in ((m, k), (k, n), (m, n)))
    grid = -(-m // 64) * -(-n // 16)
    runs = {}
    for fills in (True, False):
        with tc.interpreter(DEVICE):
            mod = tc.load_module(str(path), f"mm_small_{m}_{fills}")
            mod._kad_fills = lambda dev, programs, fills=fills: fills
            ran, fit = [], mod._kad_fit
            mod._kad_fit = lambda kern, *r, **kw: (ran.append(getattr(kern, "__name__", None) or kern.fn.__name__),
                                                   fit(kern, *r, **kw))[1]
            da, db = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
            mod.launch_matmul_kernel_bwd((grid,), a, b, torch.empty(m, n, device=a.device), m, n, k, a.stride(0),
                                         a.stride(1), b.stride(0), b.stride(1), n, 1, dc, da, db)
        runs[fills] = (da, db, ran)
    singles = {"matmul_kernel_bwd_d_a_ptr_single", "matmul_kernel_bwd_d_b_ptr_single"}
    assert singles <= set(runs[False][2]) and not singles & set(runs[True][2]), runs
    if DEVICE != "cpu":
        assert torch.equal(runs[True][0], runs[False][0]) and torch.equal(runs[True][1], runs[False][1])
    else:  # Triton's CPU interpreter: tl.dot is numpy's matmul, whose summation order depends on the tile
        # shapes and the CPU's BLAS kernels (bits differ between machines), not on kad's order
        for x, y in ((runs[True][0], runs[False][0]), (runs[True][1], runs[False][1])):
            torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-5)
    _check_grads(runs[False][0], runs[False][1], a, b, dc, 1e-2 if DEVICE != "cpu" else 1e-5)


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m,n,k", [(70, 40, 330), (70, 40, 50), (30, 50, 256), (70, 146, 330)])
def test_grouped_on_kads_interpreter(dt, m, n, k):
    # CPU tensors: kad's interpreter runs the grouped operand kernels (run_gemm, grid (tiles, cdiv(trips, R)))
    import kad
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: `import kernels`
    from kernels import matmul
    kern = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(matmul.matmul_kernel.fn)
    g = torch.Generator().manual_seed(m + 7 * k)
    a, b = (torch.randn(*s, generator=g).to(dt).requires_grad_() for s in ((m, k), (k, n)))
    dc = torch.randn(m, n, generator=g).to(dt)
    grads = []
    for _ in range(2):
        c = torch.empty(m, n, dtype=dt)
        kern[(-(-m // 64) * -(-n // 16),)](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                          c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=16, BLOCK_K=64,
                                          GROUP_SIZE_M=2, ACTIVATION="leaky_relu")
        grads.append(torch.autograd.grad(c, (a, b), dc))
    _check_grads(*grads[0], a, b, dc, 3e-2 if dt == torch.bfloat16 else 1e-5)
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


# Tiles wider than 64 along the other tile id (128 x 128 x 32): each operand kernel sums over the other tile id
# in chunks of 64 of its lanes, a loop over (tile, chunk) with one dot per chunk adding into the accumulator
# (pipelined stages of a quarter of the shared memory), in both the grouped and the one-iteration forms.
SIGC = SIG.replace("BLOCK_M=16,BLOCK_N=16,BLOCK_K=16", "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32")


def test_chunked_contraction_matches_torch(tmp_path):
    text, path = module(tmp_path, sig=SIGC)
    for x, other in (("d_a_ptr", "v"), ("d_b_ptr", "u")):
        heads = [ln for ln in text.splitlines() if ln.startswith(f"# the GEMM form: {x},")]
        assert heads and all("in chunks of 64 of its lanes" in h for h in heads), heads
        for kern in (x, x + "_single")[:len(heads)]:  # d_b: one K iteration a program (32-row tiles), no _single
            body = text.split(f"def matmul_kernel_bwd_{kern}(")[1].split("\n\n\n")[0]
            assert f"for it in range(kad_tiles_{other} * 2):" in body, kern
            assert "acc = acc +" not in body and "tl.dot(" in body
    m, n, k = 200, 150, 70
    g = torch.Generator().manual_seed(9)
    # a, b > 0: c > 0 everywhere, so TF32's rounding on a GPU cannot flip leaky_relu's branch
    a, b = (torch.rand(*s, generator=g).add(0.1).to(DEVICE) for s in ((m, k), (k, n)))
    dc = torch.randn(m, n, generator=g).to(DEVICE)
    grid = -(-m // 128) * -(-n // 128)
    runs = [run_bwd(path, m, n, k, grid, a, b, dc, fills=f)[:2] for f in (True, False, True)]
    assert list(run_bwd(path, m, n, k, grid, a, b, dc)[2]._kad_gemm_plans.values()) != [None]
    _check_grads(*runs[0], a, b, dc, 1e-2 if DEVICE != "cpu" else 1e-5)
    for x in range(2):  # grouped, one-iteration, grouped again: the same bits
        assert torch.equal(runs[0][x], runs[1][x]) and torch.equal(runs[0][x], runs[2][x])


def test_chunks_are_what_runs(tmp_path):
    # every chunk taking the tile's first 64 lanes (its offset made 0) must make d_a wrong
    text, path = module(tmp_path, sig=SIGC)
    body = text.split("def matmul_kernel_bwd_d_a_ptr(")[1].split("\n\n\n")[0]
    line = next(ln for ln in body.splitlines() if "= it % 2 * 64" in ln)
    path.write_text(text.replace(body, body.replace(line, line.replace("it % 2 * 64", "it % 1 * 64"))))
    m, n, k = 200, 150, 70
    g = torch.Generator().manual_seed(9)
    # a, b > 0: c > 0 everywhere, so TF32's rounding on a GPU cannot flip leaky_relu's branch
    a, b = (torch.rand(*s, generator=g).add(0.1).to(DEVICE) for s in ((m, k), (k, n)))
    dc = torch.randn(m, n, generator=g).to(DEVICE)
    da, db, _ = run_bwd(path, m, n, k, -(-m // 128) * -(-n // 128), a, b, dc, fills=True)
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    torch.nn.functional.leaky_relu(a64 @ b64, 0.01).backward(dc.double())
    assert not torch.allclose(da.double(), a64.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(db.double(), b64.grad, rtol=1e-2, atol=1e-2 * b64.grad.abs().max().item())


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16])
def test_chunked_on_kads_interpreter(dt):
    # CPU tensors: kad's interpreter runs the chunked operand kernels (plan_run's run_gemm)
    import kad
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: `import kernels`
    from kernels import matmul
    kern = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(matmul.matmul_kernel.fn)
    m, n, k = 150, 200, 90
    g = torch.Generator().manual_seed(17)
    a, b = (torch.randn(*s, generator=g).to(dt).requires_grad_() for s in ((m, k), (k, n)))
    dc = torch.randn(m, n, generator=g).to(dt)
    c = torch.empty(m, n, dtype=dt)
    kern[(-(-m // 128) * -(-n // 128),)](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=32,
                                        GROUP_SIZE_M=2, ACTIVATION="leaky_relu")
    _check_grads(*torch.autograd.grad(c, (a, b), dc), a, b, dc, 3e-2 if dt == torch.bfloat16 else 1e-5)


def test_launch_options_reach_the_dacc_kernel_only(tmp_path):
    # the forward's num_warps/num_stages (the package passes the launch's, or the autotuner's config) go to
    # the dacc kernel; the operand kernels keep the defaults of their own tiles
    _, path = module(tmp_path, sig=SIGR)
    mod = tc.load_module(str(path), "mm_bwd_opts")
    seen = []
    mod._kad_fit = lambda k, g, a, o, ck, key, tune=None: seen.append((k.__name__ if hasattr(k, "__name__") else str(k), g,
                                                            dict(o)))
    m, n, k = 70, 40, 330
    a, b, dc = torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)
    mod.launch_matmul_kernel_bwd((6,), a, b, torch.empty(m, n), m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                 b.stride(1), n, 1, dc, torch.empty_like(a), torch.empty_like(b),
                                 num_warps=2, num_stages=5)
    assert len(seen) == 3
    assert seen[0][2] == {"num_warps": 2, "num_stages": 5}
    # (tiles * cdiv(6 trips, R), 1, 1), the programs in blocks of tile ids (GEMM_ORDER): d_b 3 tiles, R = 4; d_a
    # 2 tiles, R = 2 (wide)
    assert seen[1][1] == (6, 1, 1) and seen[2][1] == (6, 1, 1)
    for _, _, o in seen[1:]:
        assert o["num_warps"] != 2 and o["num_stages"] != 5


def test_package_passes_the_forward_options_only_to_backwards_with_dots(tmp_path):
    # the module says whether the package hands its launcher the forward's num_warps/num_stages: only
    # when the backward has a tl.dot (the tiles' layout follows the forward's); a row kernel's
    # backward keeps the launcher's defaults (docs/GRAD.md, "Launch parameters")
    text, _ = module(tmp_path, sig=SIGR)
    assert "\n_kad_forward_options = True\n" in text
    p = tc.run_kad(["grad", "tests/kernels/softmax.py:softmax_kernel", "--sig",
                    "output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,output_row_stride=i32,n_cols=i32,"
                    "BLOCK_SIZE=64", "--wrt", "input_ptr", "--out", "output_ptr"])
    assert p.returncode == 0, p.stderr
    assert "tl.dot(" not in p.stdout and "\n_kad_forward_options = False\n" in p.stdout
