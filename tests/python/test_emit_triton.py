"""Execution test of the Triton emitter: the emitted kernel computes what the original computes.

For every kernel of the corpus (tests/python/corpus.py) and of tests/emit/, kad specializes the
kernel and prints it as Triton source (`kad emit`); then the original and the emitted kernel
both run on Triton's CPU interpreter (TRITON_INTERPRET=1, CPU torch tensors) with the same
inputs, launched with the same keyword arguments (constexprs included), and every buffer must
come out bit-identical.  This checks the emitter against Triton's own semantics, independently
of kad's interpreter.

Skipped when torch or triton is not installed (CI's venv has neither); to run it:
    python -m venv /tmp/evenv
    /tmp/evenv/bin/pip install torch==2.13.0 triton==3.6.0 numpy==2.2.6 pytest
    /tmp/evenv/bin/python -m pytest -q tests/python/test_emit_triton.py

With KAD_EMIT_TEST_DEVICE=cuda the same pairs are compiled by Triton and run on the GPU instead
(no interpreter): this checks that the emitted source also passes Triton's code generator (loop-
carried types, if results, constexpr rules).  There, float buffers must agree to 1e-6 relative
(atomics and instruction selection may reorder rounding); everything else bit for bit.

Triton's interpreter has no libdevice: the few libdevice functions kernels use get numpy
stand-ins while this module's tests run (triton_cpu.py), and interpreter mode is in force only
then, so other test modules keep Triton's compiled-mode functions.  Original and emitted kernel
call the same stand-ins, so the comparison stays exact.
"""
import os

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

import harness  # noqa: E402
import triton_cpu  # noqa: E402
from corpus import CASES  # noqa: E402
from triton_cpu import REPO, load_module  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_EMIT_TEST_DEVICE")


@pytest.fixture(scope="module", autouse=True)
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


# ---------------------------------------------------------------- running one pair


def emit(path, kernel, sig, out_dir, includes=()):
    args = ["emit", f"{path}:{kernel}", "--sig", sig]
    for inc in includes:
        args += ["--include", inc]
    p = triton_cpu.run_kad(args)
    assert p.returncode == 0, f"kad emit failed:\n{p.stderr}"
    dst = os.path.join(out_dir, f"emitted_{kernel}.py")
    with open(dst, "w") as f:
        f.write(p.stdout)
    return dst, p.stdout


def launch(fn, grid, sig, args):
    """Runs fn over grid; args maps runtime names to numpy buffers (changed in place) or scalars."""
    runtime, consts = triton_cpu.sig_params(sig)
    triton_cpu.launch(fn, grid, {n: args[n] for n in runtime}, consts, DEVICE)


def check_pair(original, emitted_path, kernel, sig, grid, make_args, source):
    want = make_args()
    launch(original, grid, sig, want)
    got = make_args()
    mod = load_module(emitted_path, f"kad_emitted_{kernel}_{abs(hash(emitted_path))}")
    launch(getattr(mod, kernel), grid, sig, got)
    for name, buf in want.items():
        if not isinstance(buf, np.ndarray):
            continue
        same = buf.tobytes() == got[name].tobytes()
        if not same and DEVICE != "cpu" and buf.dtype.kind == "f":
            same = np.allclose(got[name], buf, rtol=1e-6, atol=1e-6, equal_nan=True)
        if not same:
            diff = np.flatnonzero(buf.reshape(-1).view(np.uint8) != got[name].reshape(-1).view(np.uint8))
            pytest.fail(f"buffer {name} differs (first differing byte {diff[:5]}); emitted source:\n{source}")


# ---------------------------------------------------------------- the corpus

# Corpus kernels that need more than the interpreter offers.
SKIP = {}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel(case, tmp_path):
    if case.id in SKIP:
        pytest.skip(SKIP[case.id])
    path = os.path.join("tests", "kernels", case.file)
    includes = [os.path.join("tests", "kernels", e) for e in case.extra]
    emitted, source = emit(path, case.kernel, case.sig, str(tmp_path), includes)
    original = getattr(triton_cpu.corpus_module(case.file), case.kernel)
    check_pair(original, emitted, case.kernel, case.sig, case.grid,
               lambda: harness.prepare(case, "as_written").args, source)


# ---------------------------------------------------------------- tests/emit kernels


def _rng():
    return np.random.default_rng(7)


def _f32(n, scale=1.0):
    return lambda r: (scale * r.standard_normal(n)).astype(np.float32)


# (file, kernel, sig, grid, {param: maker(rng) -> array or scalar})
EMIT_KERNELS = [
    ("vector_add.py", "add_kernel", "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=1024", (3,),
     dict(x_ptr=_f32(3000), y_ptr=_f32(3000), out_ptr=lambda r: np.zeros(3000, np.float32),
          n=lambda r: 2500)),
    ("softmax.py", "softmax_kernel",
     "out_ptr=*fp16,in_ptr=*fp16,in_stride=i32,out_stride=i32,n_cols=i32,BLOCK=128", (5,),
     dict(out_ptr=lambda r: np.zeros(5 * 100, np.float16),
          in_ptr=lambda r: r.standard_normal(5 * 100).astype(np.float16),
          in_stride=lambda r: 100, out_stride=lambda r: 100, n_cols=lambda r: 97)),
    ("layer_norm.py", "layer_norm_kernel",
     "X=*fp32,Y=*fp32,W=*fp32,B=*fp32,stride=i32,N=i32,eps=fp32,BLOCK_N=256", (4,),
     dict(X=_f32(4 * 600), Y=lambda r: np.zeros(4 * 600, np.float32), W=_f32(600), B=_f32(600),
          stride=lambda r: 600, N=lambda r: 600, eps=lambda r: 1e-5)),
    ("matmul.py", "matmul_kernel",
     "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,"
     "stride_cm=i32,BLOCK_M=32,BLOCK_N=32,BLOCK_K=16", (2, 3),
     dict(a_ptr=lambda r: r.standard_normal(50 * 40).astype(np.float16),
          b_ptr=lambda r: r.standard_normal(40 * 70).astype(np.float16),
          c_ptr=lambda r: np.zeros(50 * 70, np.float32),
          M=lambda r: 50, N=lambda r: 70, K=lambda r: 40,
          stride_am=lambda r: 40, stride_bk=lambda r: 70, stride_cm=lambda r: 70)),
    ("runtime_if.py", "scale_kernel", "x_ptr=*fp32,out_ptr=*fp32,n=i32,flag=i32,alpha=fp32,BLOCK=64",
     (4,), dict(x_ptr=_f32(250), out_ptr=lambda r: np.zeros(250, np.float32), n=lambda r: 250,
                flag=lambda r: 2, alpha=lambda r: 1.5)),
    ("while_loop.py", "collatz_kernel", "x_ptr=*i32,steps_ptr=*i32,n=i32", (40,),
     dict(x_ptr=lambda r: r.integers(1, 200, 40).astype(np.int32),
          steps_ptr=lambda r: np.zeros(40, np.int32), n=lambda r: 40)),
    ("helpers.py", "fused_kernel", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", (2,),
     dict(x_ptr=_f32(200, 3.0), y_ptr=lambda r: np.zeros(200, np.float32), n=lambda r: 200)),
    ("indexing_2d.py", "transpose_kernel", "x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BM=16,BN=32", (3, 2),
     dict(x_ptr=_f32(40 * 50), y_ptr=lambda r: np.zeros(40 * 50, np.float32),
          M=lambda r: 40, N=lambda r: 50)),
    ("precedence.py", "prec_kernel", "x_ptr=*i32,y_ptr=*i32,n=i32,BLOCK=64", (2,),
     dict(x_ptr=lambda r: r.integers(-100, 100, 120).astype(np.int32),
          y_ptr=lambda r: np.zeros(120, np.int32), n=lambda r: 120)),
]


@pytest.mark.parametrize("spec", EMIT_KERNELS, ids=[k[0][:-3] for k in EMIT_KERNELS])
def test_emit_kernel(spec, tmp_path):
    file, kernel, sig, grid, makers = spec
    path = os.path.join("tests", "emit", file)
    emitted, source = emit(path, kernel, sig, str(tmp_path))
    original = getattr(load_module(os.path.join(REPO, path), f"kad_emit_src_{file[:-3]}"), kernel)

    def make_args():
        r = _rng()
        return {name: mk(r) for name, mk in makers.items()}

    check_pair(original, emitted, kernel, sig, grid, make_args, source)
