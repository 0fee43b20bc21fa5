"""The wheel a registry would get: `pip wheel ./python` builds the C library into it.

Builds the wheel into a temporary folder (with the test venv's setuptools, no
build isolation: nothing is downloaded), checks its tag (py3-none-PLATFORM, not
`any`: it holds a shared library), its contents (libkad.so, py.typed, the
license) and metadata, installs it with `pip install --target` into a fresh
folder and, from another directory with only that folder on the path, imports
kad and specializes and runs a kernel on the interpreter (numpy only, no torch).
Takes ~20 s on two cores (one cc call compiles the library).
"""
import email
import os
import re
import subprocess
import sys
import zipfile

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


def test_wheel_builds_installs_and_runs(tmp_path):
    out = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", os.path.join(REPO, "python"), "-w", str(out),
                        "--no-deps", "--no-build-isolation", "-q", "--disable-pip-version-check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(out.glob("kad-*.whl"))
    assert len(wheels) == 1, wheels
    whl = wheels[0]
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
        info = f"kad-{version}.dist-info"
        assert f"{info}/licenses/LICENSE" in names, sorted(names)
        assert "MIT License" in z.read(f"{info}/licenses/LICENSE").decode()
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        wheel = email.message_from_bytes(z.read(f"{info}/WHEEL"))
    assert meta["Version"] == version
    assert meta["License-Expression"] == "MIT"
    assert wheel["Root-Is-Purelib"] == "false"
    assert wheel["Tag"] == f"py3-none-{plat}"

    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
                        "--target", str(target), str(whl)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("KAD_LIB", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    r = subprocess.run([sys.executable, "-c", SMOKE, str(target)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"version {version}\nran ok" in r.stdout


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
