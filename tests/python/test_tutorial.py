"""Every code block of docs/TUTORIAL.md runs.

Blocks are taken in order: ```python file=NAME (or cuda file=NAME) blocks are written to NAME in a fresh
folder, ```python blocks are joined into one script run there (on the CPU; kad's package from
this checkout, its library build/libkad.so), ```sh blocks run there with `kad` on PATH
(build/kad), and ```python gpu blocks join the script only when a CUDA device is present (else
the test says so on stdout; the CPU blocks still run).  A block with another info string fails
the test: each block is either run or marked as something else on purpose.
"""
import os
import re
import subprocess
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "TUTORIAL.md")
BLOCK = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.S | re.M)


def blocks():
    with open(DOC, encoding="utf-8") as f:
        return [(m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(f.read())]


def test_tutorial_blocks_run(tmp_path):
    bs = blocks()
    assert sum(1 for info, _ in bs if info == "python") >= 6, [i for i, _ in bs]
    gpu = torch.cuda.is_available()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python"), str(tmp_path)])
    env["PATH"] = os.path.join(REPO, "build") + os.pathsep + env.get("PATH", "")
    env["KAD_CACHE_DIR"] = str(tmp_path / "cache")
    script, shells = [], []
    for info, code in bs:
        if re.fullmatch(r"\w+ file=\S+", info):  # (python file=..., cuda file=...)
            (tmp_path / info.split("=", 1)[1]).write_text(code)
        elif info == "python":
            script.append(code)
        elif info == "python gpu":
            if gpu:
                script.append(code)
        elif info == "sh":
            shells.append(code)
        else:
            raise AssertionError(f"docs/TUTORIAL.md: a code block marked {info!r}: run it or mark it")
    (tmp_path / "tutorial.py").write_text("\n\n".join(script))
    r = subprocess.run([sys.executable, "tutorial.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    for needle in ("CPU forward and backward agree with PyTorch", "gradcheck in float64: PASS", "loss ",
                   "kad.cuda: the generated backward replaces the hand-written one"):
        assert needle in r.stdout
    if not gpu:
        print("no CUDA device: the tutorial's `python gpu` block did not run")
    for code in shells:
        r = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"{code}\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    assert (tmp_path / "bwd.py").exists()


def test_tutorial_cuda_pair_is_the_example_file():
    # section 9's kernel pair is examples/cuda/softplus_ext.cu, verbatim
    with open(os.path.join(REPO, "examples", "cuda", "softplus_ext.cu"), encoding="utf-8") as f:
        assert ("cuda file=softplus_ext.cu", f.read()) in blocks()
