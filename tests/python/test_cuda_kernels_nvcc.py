"""Every CUDA C module kad prints for the kernels of tests/cuda/ compiles with nvcc: the forward
(`kad emit ... --emit cuda`), the backward (`kad grad ... --emit cuda`, default and --atomics) and
the forward-mode module (`kad jvp ... --emit cuda`), each with `nvcc -std=c++17 -arch=sm_90 -c`;
and each kernel's own source (HIP spelling through a compatibility header) with the launcher that
tests/gpu/test_cuda_kernels_gpu.py adds to it.  The modules kad refuses are listed in
tests/python/cuda_kernel_cases.py with the emitter's message: strict xfails here.

    /work/main/.venv/bin/python -m pytest -q tests/python/test_cuda_kernels_nvcc.py

Skipped when nvcc is not on PATH.  What runs: tests/python/test_cuda_kernels_cpu.py (CPU shim),
tests/gpu/test_cuda_kernels_gpu.py (a GPU).
"""
import shutil
import subprocess

import pytest

pytest.importorskip("torch")

import cuda_kernel_cases as cc  # noqa: E402

NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")


def _nvcc_c(path, tmp_path, extra=()):
    p = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", "-c", *extra, str(path), "-o", str(tmp_path / "m.o")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]


@pytest.mark.parametrize("case,mode", cc.modes_params([c for c in cc.CASES if c.id != "uniform_scale_x0"],
                                                      ["emit", "bwd", "atomics", "jvp"], pytest))
def test_module_compiles(case, mode, tmp_path):
    src = cc.kad_module(case, mode)
    assert ('extern "C" int %s(' % case.launcher(mode)) in src
    cu = tmp_path / "m.cu"
    cu.write_text(src)
    _nvcc_c(cu, tmp_path)


@pytest.mark.parametrize("case", [c for c in cc.CASES if c.original and c.id != "uniform_scale_x0"],
                         ids=lambda c: c.id)
def test_original_source_compiles(case, tmp_path):
    cu = tmp_path / "orig.cu"
    cu.write_text(cc.original_source(case, str(tmp_path / "inc")))
    _nvcc_c(cu, tmp_path, ["-I", str(tmp_path / "inc")])
