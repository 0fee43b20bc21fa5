"""The CUDA C emitter's modules compile (docs/EMIT.md, "CUDA C").

Every `# RUN:` line of tests/emit_cuda/ that prints a module with `--emit cuda` is run through
build/kad again, one module per line, and the module is compiled with
`nvcc -std=c++17 -arch=sm_90 -c` (nothing runs: that is tests/gpu/test_cuda_emit_gpu.py's job).
Skipped, with the reason, when nvcc is not on PATH.  The refusals (.err goldens) print nothing
to compile.  Also checks what no golden can: each module holds the kernel and its extern "C"
launcher, and a backward's gradients are written with plain stores unless built with --atomics.
"""
import glob
import os
import shlex
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(REPO, "build", "kad"))
NVCC = shutil.which("nvcc")


def _runs():
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "emit_cuda", "*"))):
        if not path.endswith((".py", ".ir")) or os.path.exists(os.path.splitext(path)[0] + ".err"):
            continue
        rel = os.path.relpath(path, REPO)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                s = line.strip()
                if s.startswith("# RUN:") and "--emit cuda" in s:
                    out.append(pytest.param(rel, s[len("# RUN:"):].strip(), id="%s:%d" % (rel, n + 1)))
    return out


def _module(rel, cmd):
    args = [a.replace("%s", rel) for a in shlex.split(cmd)]
    p = subprocess.run([KAD] + args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


RUNS = _runs()


def test_the_goldens_have_modules():
    assert len(RUNS) >= 8


@pytest.mark.parametrize("rel,cmd", RUNS)
def test_module_shape(rel, cmd):
    src = _module(rel, cmd)
    assert 'extern "C" __global__ void' in src
    assert 'extern "C" int launch_' in src
    assert src.index("__global__") < src.index("// ---- the launcher")  # kernels first
    if cmd.split()[0] == "grad":
        launch = src[src.index("// ---- the launcher"):]
        assert "cudaMemsetAsync" in launch  # the input gradients are zero-filled
        if "--atomics" in cmd:
            assert "plain_d_" not in src and "atomicAdd(" in src
        elif "// Input gradients are accumulated with atomicAdd" in src:
            assert "plain_d_" not in src and "atomicAdd(" in src  # the header says so (atomic_header)
        else:  # plain stores (or a gather kernel) under the flag the launcher computes
            assert ("if (plain_d_" in src and "const bool plain_d_" in launch) or \
                ("if (!gather_d_" in src and "const bool gather_d_" in launch)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA C modules are not compiled here")
@pytest.mark.parametrize("rel,cmd", RUNS)
def test_module_compiles(rel, cmd, tmp_path):
    src = _module(rel, cmd)
    cu = tmp_path / "m.cu"
    cu.write_text(src)
    p = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", "-c", str(cu), "-o", str(tmp_path / "m.o")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "warning" not in p.stderr, p.stderr[-3000:]


def test_hip_spelling():
    rel = "tests/emit_cuda/leaky_relu_hip.py"
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        cmd = next(l.strip()[len("# RUN:"):].strip() for l in f if l.strip().startswith("# RUN:"))
    src = _module(rel, cmd)
    assert "#include <hip/hip_runtime.h>" in src and "hipLaunchKernelGGL(" in src
    assert "cuda" not in src.replace("CUDA", "")  # no CUDA runtime name left


def test_refusal_is_located():
    # the padded 16 x 17 tile of the transpose: a __shared__ array longer than the block's 256 threads
    p = subprocess.run([KAD, "grad", "tests/cuda/transpose_tile.cu:transpose", "--block", "16,16",
                        "--wrt", "in", "--out", "out", "--emit", "cuda"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1 and not p.stdout
    assert "tests/cuda/transpose_tile.cu:10:22:" in p.stderr and "has shape fp32[272]" in p.stderr
