"""The Python helpers the launchers print verbatim (src/emit/py/*.py), and their embedding.

Each helper file is imported as a module (valid Python, its names defined where its sections
use them), its helpers run on small cases, and linted with ruff or pyflakes when the venv has
one.  tools/embed.py's parser refuses malformed markers, and build/gen/py_embed.c (what the
Makefile compiled into build/libkad.so) is what the generator makes of the files now: a helper
edited without a rebuild fails here.  That the emitted modules print each section byte for
byte is the golden tests' (tests/grad, tests/jvp).
"""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_DIR = os.path.join(REPO, "src", "emit", "py")
FILES = ("launch.py", "tape.py", "cover.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


embed = load(os.path.join(REPO, "tools", "embed.py"), "kad_embed")


def helper(name):
    if name == "launch.py":  # the launchers' modules import torch and triton: so does launch.py
        pytest.importorskip("torch")
        pytest.importorskip("triton")
    return load(os.path.join(PY_DIR, name), "kad_helper_" + name[:-3])


def test_every_helper_file_is_listed():
    assert sorted(os.path.basename(f) for f in embed.helper_files(REPO)) == sorted(FILES)


@pytest.mark.parametrize("name", FILES)
def test_helper_file_imports_and_has_sections(name):
    mod = helper(name)
    with open(os.path.join(PY_DIR, name), encoding="utf-8") as f:
        secs = embed.sections(f.read(), name)
    assert secs and all(text.strip() for _, text in secs)
    for _, text in secs:  # each section's top-level or nested defs exist in the module
        for line in text.splitlines():
            if line.startswith("def "):
                assert hasattr(mod, line[4:line.index("(")]), line


def test_launch_helpers_run():
    import torch
    mod = helper("launch.py")
    nested = mod._kad_host()
    assert [nested["_tdiv"](x, y) for x, y in ((-7, 2), (7, -2), (7, 2))] == [-3, -3, 3]
    assert nested["_trem"](-7, 2) == -1 and nested["_kad_trem"](-7, 2) == -1 and mod._kad_trem(7, -2) == 1
    assert mod._kad_dense(torch.empty(4, 3).t()) and not mod._kad_dense(torch.empty(4, 6)[:, ::2])
    x = torch.tensor([float("nan"), 1.0])
    assert torch.equal(mod._kad_bits(x), mod._kad_bits(x.clone()))
    assert mod._kad_ck(torch.device("cpu")) is None
    assert mod._kad_tma_ok(torch.empty(4)) in (True, False) and not mod._kad_tma_ok(3)
    assert mod._kad_descs([1, 2, 3], ()) == [1, 2, 3]


def test_tape_helpers_run():
    h = helper("tape.py")._kad_host()
    assert h["_kad_iv_div"]((-7, 7), (2, 2)) == (-3, 3)
    assert h["_kad_iv_cdiv"]((5, 9), (4, 4)) == (2, 3)
    with pytest.raises(ValueError, match="divide by zero"):
        h["_kad_iv_rem"]((0, 3), (-1, 1))
    rows = h["_kad_revolve_plan"](10, 3)
    assert rows and sum(r[4] for r in rows) == 10  # every iteration reversed once
    assert h["_kad_revolve_plan"](0, 3) == []
    assert h["_kad_revolve_fit"](0, 4, 8, 4, 100) == (0, [])
    k, plan = h["_kad_revolve_fit"](10, 1, 4, 4, 10 ** 6)
    assert k == 10 and plan == h["_kad_revolve_plan"](10, 10)


def test_cover_helper_runs():
    mod = helper("cover.py")
    now = mod._kad_covers_now
    assert now((4,), (1,), {0: (1, 4)}, [], [-1])
    assert not now((8,), (1,), {0: (1, 4)}, [], [-1])  # writes 4 of 8 elements
    assert not now((4,), (1,), {0: (1, 4)}, [], [0])   # a neg that is not < 0
    assert now((4,), (1,), {0: (1, None)}, [(4, (0,), (1,))], [])  # the clause v < 4 bounds it


def test_markers_refused():
    for text, why in (("# kad-embed: a\nx\n", "has no"), ("# kad-end\n", "outside"),
                      ("# kad-embed: a\n# kad-embed: b\n", "inside"), ("# kad-embedd: a\n", "unknown")):
        with pytest.raises(ValueError, match=why):
            embed.sections(text, "f.py")
    assert embed.sections("x = 1\n# kad-embed: a\n\ny = 2\n    # kad-end\n", "f.py") == [("a", "\ny = 2\n")]


def test_generated_file_is_current():
    gen = os.path.join(REPO, "build", "gen", "py_embed.c")
    assert os.path.exists(gen), "build/gen/py_embed.c is missing: run make"
    with open(gen, encoding="utf-8") as f:
        assert f.read() == embed.generate(REPO), "build/gen/py_embed.c is stale: run make"


def test_lint():
    paths = [os.path.join(PY_DIR, f) for f in FILES] + [os.path.join(REPO, "tools", "embed.py")]
    ruff = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
    if ruff:
        cmd = [ruff, "check", "--no-cache", *paths]
    elif importlib.util.find_spec("pyflakes"):
        cmd = [sys.executable, "-m", "pyflakes", *paths]
    else:
        pytest.skip("neither ruff nor pyflakes is installed in this venv")
    p = subprocess.run(cmd, check=False, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
