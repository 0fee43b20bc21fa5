"""tests/gpu/distributed.py (kad kernels under DDP and FSDP2, the shared module cache) on the CPU:
two processes through torchrun with gloo, kad's interpreter running the kernels.  On a 2-GPU
machine the same script runs with NCCL: `torchrun --nproc_per_node 2 tests/gpu/distributed.py`
(docs/PYTHON.md, "Distributed training").  --perturb makes the last rank's gradients differ by a
relative 2^-20: the script must then fail its bitwise checks and exit non-zero."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "gpu", "distributed.py")

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available")


def _run(args, tmp_path, timeout=120):
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=str(tmp_path))
    env.pop("KAD_CACHE_DIR", None)  # the script makes its own shared directory
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env)


def _torchrun(extra, tmp_path):
    return _run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", SCRIPT,
                 "--device", "cpu", "--backend", "gloo", *extra], tmp_path)


def test_two_processes_ddp_fsdp2_and_cache(tmp_path):
    r = _torchrun([], tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "kad distributed: PASS: 120 of 120 checks passed (world size 2" in r.stdout, out
    for group in ("ddp grads == g_acc (single device, accumulated), bitwise: 36 of 36 (ranks 0,1)",
                  "fsdp2 grads == g_acc (single device, accumulated), bitwise: 36 of 36 (ranks 0,1)",
                  "cache: 20 rounds x 2 processes writing one module at once, one text: 2 of 2",
                  "cache: no temporary or other file left: 1 of 1 (ranks 0); none"):
        assert group in r.stdout, out
    assert not [f for f in os.listdir(tmp_path) if f.startswith("kad-ddp-cache-")]  # removed at the end


def test_perturbed_rank_fails(tmp_path):
    r = _torchrun(["--perturb"], tmp_path)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "kad distributed: FAIL" in r.stdout and "FAIL ddp grads == g_acc" in r.stdout, r.stdout + r.stderr
    assert "FAIL fsdp2 grads == g_acc" in r.stdout


def test_single_process(tmp_path):
    r = _run([SCRIPT, "--device", "cpu"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kad distributed: PASS: 79 of 79 checks passed (world size 1" in r.stdout, r.stdout + r.stderr
