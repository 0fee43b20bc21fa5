"""The wheel a registry would get: `pip wheel ./python` builds the C library and the command line into it.

Builds the wheel once into a temporary folder (with the test venv's setuptools,
no build isolation: nothing is downloaded), checks its tag (py3-none-PLATFORM,
not `any`: it holds a shared library and a program), its contents (libkad.so,
bin/kad, py.typed, the license), metadata and console script, installs it
with `pip install --target` into a fresh folder and, from another directory
with only that folder on the path, imports kad and specializes and runs a
kernel on the interpreter (numpy only, no torch).  Then installs it into a
fresh venv (no pip of its own, this venv's packages reachable by a .pth for
numpy) and runs that venv's `kad` console script and `python -m kad` as a
user of the wheel would, from outside the checkout: `kad --help`, `kad
version` and `kad grad` on examples/rms_norm.py (the whole module and
--kernels-only).  The build takes ~20 s on two idle cores (the C sources
compile in parallel); the rest a few seconds.
"""
import email
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

import pytest
from packaging.requirements import Requirement

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SMOKE = r'''
import sys
sys.modules["torch"] = sys.modules["triton"] = None  # importing either fails: the C binding needs numpy alone
import os, numpy as np, kad
target = sys.argv[1]
assert os.path.dirname(kad.__file__).startswith(target), kad.__file__
assert kad.library_path().startswith(target), kad.library_path()
print("version", kad.__version__)
ctx = kad.Context()
ctx.add_source("scale.py", """
import triton
import triton.language as tl

@triton.jit
def scale(x_ptr, y_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, a * tl.load(x_ptr + offs, mask=m), mask=m)
""")
k = ctx.specialize("scale", "x_ptr=*fp32,y_ptr=*fp32,n=i32,a=fp32,BLOCK=16")
x = np.arange(40, dtype=np.float32)
y = np.zeros(40, dtype=np.float32)
k.run((3,), [x, y, 40, 2.5])
assert np.array_equal(y, 2.5 * x), y
print("ran ok")
'''


def kad_h_version():
    with open(os.path.join(REPO, "include", "kad.h"), encoding="utf-8") as f:
        return re.search(r'#define KAD_VERSION "([^"]+)"', f.read()).group(1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel of python/, built once for this module's tests."""
    out = tmp_path_factory.mktemp("wheels")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", os.path.join(REPO, "python"), "-w", str(out),
                        "--no-deps", "--no-build-isolation", "-q", "--disable-pip-version-check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(out.glob("kad-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def clean_env(**more):
    """The environment without what would make kad resolve to this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAD_LIB", "KAD_CLI", "PYTHONPATH")}
    env.update(more)
    return env


def test_wheel_builds_installs_and_runs(wheel, tmp_path):
    whl = wheel
    version = kad_h_version()
    m = re.fullmatch(r"kad-([^-]+)-py3-none-([a-z0-9_]+)\.whl", whl.name)
    assert m, f"unexpected wheel name {whl.name} (wanted kad-VERSION-py3-none-PLATFORM.whl)"
    assert m.group(1) == version
    plat = m.group(2)
    assert plat != "any", plat
    if sys.platform.startswith("linux"):
        # glibc Linux with readelf (this machine): a manylinux tag, which registries accept
        assert re.fullmatch(r"manylinux_2_\d+_(x86_64|aarch64)", plat), plat

    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        assert "kad/libkad.so" in names and "kad/py.typed" in names and "kad/__init__.py" in names
        assert "kad/_native.cpp" in names  # the native backward node, compiled on first GPU use
        assert "kad/bin/kad" in names and "kad/__main__.py" in names, sorted(names)
        assert (z.getinfo("kad/bin/kad").external_attr >> 16) & 0o111, "kad/bin/kad is not executable in the wheel"
        info = f"kad-{version}.dist-info"
        assert f"{info}/licenses/LICENSE" in names, sorted(names)
        assert "MIT License" in z.read(f"{info}/licenses/LICENSE").decode()
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        tags = email.message_from_bytes(z.read(f"{info}/WHEEL"))
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert re.search(r"^\[console_scripts\]\s*^kad = kad\.__main__:main$", entry_points, re.M), entry_points
    assert meta["Version"] == version
    # the extra asks for the tested versions (README.md, "Install")
    extras = {r.name: r.specifier for r in map(Requirement, meta.get_all("Requires-Dist")) if r.marker}
    assert {"2.11.0", "2.13.0"} <= set(extras["torch"].filter(["2.10.0", "2.11.0", "2.13.0", "2.14.0"])), extras
    assert set(extras["triton"].filter(["3.5.0", "3.6.0", "3.6.1", "3.7.0"])) == {"3.6.0", "3.6.1"}, extras
    assert meta["License-Expression"] == "MIT"
    assert tags["Root-Is-Purelib"] == "false"
    assert tags["Tag"] == f"py3-none-{plat}"

    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
                        "--target", str(target), str(whl)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    env = clean_env(PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", SMOKE, str(target)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"version {version}\nran ok" in r.stdout


SIG = "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,n_cols=i32,eps=fp32,BLOCK=128"
MARK = "# ---- the launcher "


def test_console_script_in_a_fresh_venv(wheel, tmp_path):
    """The installed `kad` command is the command line: a venv with the wheel alone (numpy through a
    .pth) runs it from outside the checkout, with nothing of the checkout on its path."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    py = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                        "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "_kad_test_numpy.pth"), "w") as f:  # numpy (and only what is here) of this venv
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    kad = venv / "bin" / "kad"
    assert kad.exists(), sorted(os.listdir(venv / "bin"))
    env = clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    work = tmp_path / "work"
    work.mkdir()

    def run(*argv):
        return subprocess.run(list(argv), capture_output=True, text=True, cwd=str(work), env=env, timeout=60)

    r = run(str(py), "-c", "import kad, kad.__main__ as m; print(kad.__file__); print(m.cli_path())")
    assert r.returncode == 0, r.stdout + r.stderr
    pkg, cli = r.stdout.split()
    assert pkg.startswith(site) and cli == os.path.join(site, "kad", "bin", "kad"), r.stdout

    r = run("kad", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:") and "--kernels-only" in r.stdout, r.stdout + r.stderr
    r = run(str(py), "-m", "kad", "version")
    assert r.returncode == 0 and r.stdout == f"kad {kad_h_version()}\n", r.stdout + r.stderr
    r = run("kad", "grad", "missing.py:k", "--sig", SIG, "--wrt", "x_ptr", "--out", "y_ptr")
    assert r.returncode == 1 and "cannot open file 'missing.py'" in r.stderr, r.stdout + r.stderr

    example = os.path.join(REPO, "examples", "rms_norm.py") + ":rms_norm_kernel"
    r = run("kad", "grad", example, "--sig", SIG, "--wrt", "x_ptr,w_ptr", "--out", "y_ptr", "-o", "bwd.py")
    assert r.returncode == 0, r.stdout + r.stderr
    module = (work / "bwd.py").read_text()
    compile(module, "bwd.py", "exec")
    kernels, _, launcher = module.partition(MARK)
    assert "def rms_norm_kernel_bwd(" in kernels and "def rms_norm_kernel_bwd_sum(" in kernels, kernels
    assert "def launch_rms_norm_kernel_bwd(" in launcher and "@triton.jit" not in launcher, launcher[:2000]
    r = run("kad", "grad", example, "--sig", SIG, "--wrt", "x_ptr,w_ptr", "--out", "y_ptr", "--kernels-only")
    assert r.returncode == 0, r.stdout + r.stderr
    compile(r.stdout, "kernels.py", "exec")
    assert r.stdout.startswith(kernels.rstrip("\n")) and MARK not in r.stdout, r.stdout
    assert "def launch_" not in r.stdout and len(r.stdout.splitlines()) < len(module.splitlines()) // 3


def test_version_is_the_c_librarys():
    import kad
    assert kad.__version__ == kad.version() == kad_h_version()
    assert "__version__" in kad.__all__


def test_public_api_is_typed():
    """py.typed ships beside the package and every public function/method has complete hints
    (typing.get_type_hints resolves them: no stale names)."""
    import inspect
    import typing

    import kad
    assert os.path.exists(os.path.join(os.path.dirname(kad.__file__), "py.typed"))
    from kad import autograd, check
    public = [kad.library_path, kad.version, kad.differentiable, kad.backward_source, kad.check_backward,
              kad.audit, kad.cache_dir, autograd.f64_mode.__wrapped__,
              autograd.DifferentiableKernel.__init__, autograd.DifferentiableKernel.run,
              autograd.DifferentiableKernel.__getitem__, check.BackwardReport.__getitem__]
    for cls in (kad.Context, kad.Kernel):
        public += [f for n, f in vars(cls).items() if callable(f) and (not n.startswith("_") or n == "__init__")]
    public += [p.fget for p in (kad.Kernel.ir, kad.Kernel.params, autograd.DifferentiableKernel.program,
                                check.BackwardReport.ok, check.AuditReport.clean)]
    for f in public:
        hints = typing.get_type_hints(f)
        params = [n for n, p in inspect.signature(f).parameters.items()
                  if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        missing = [n for n in params + ["return"] if n not in hints]
        assert not missing, f"{f.__qualname__}: no type hint for {missing}"
