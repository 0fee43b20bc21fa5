"""Builds kad's C library and its command line into the package.

The library is the repository's src/**/*.c (all but the CLI's main.c) and the
Python helpers its launchers print (src/emit/py/*.py, embedded into a C file by
tools/embed.py, as the Makefile does), compiled with the Makefile's flags into
kad/libkad.so, which kad/_capi.py loads when it sits beside it.  The command line (src/main.c, what `make` builds as
build/kad) is linked from the same objects into kad/bin/kad, a program of its
own that the `kad` console script and `python -m kad` exec (kad/__main__.py):
it runs in its own process, with its own stdio and exit status, and uses
internal functions that libkad.so does not export.  Only a C11 compiler and
libm are needed ($CC, default cc); the sources compile in parallel.  The
sources are read from ../src, so build from a checkout: `pip install ./python`.

The wheel is tagged py3-none-PLATFORM: its Python code is pure (the library
is loaded with ctypes, not as an extension module), so one wheel serves every
Python version, but it holds a shared library and a program, so it is
platform-specific.  On glibc Linux the platform is manylinux_X_Y_ARCH where
X.Y is the newest glibc symbol version the built library or program needs (at
least 2.17), provided they link only against libraries every manylinux system
has (libc, libm): what auditwheel would check.  Elsewhere, or without readelf,
the plain platform tag (linux_x86_64) is used, which a registry such as PyPI
refuses.
"""
import concurrent.futures
import glob
import importlib.util
import os
import platform
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def kad_version():
    with open(os.path.join(REPO, "include", "kad.h"), encoding="utf-8") as f:
        return re.search(r'#define KAD_VERSION "([^"]+)"', f.read()).group(1)


def embed_helpers(out):
    """Writes to out the C file of the Python helpers the launchers print (src/emit/py/*.py), by
    the generator the Makefile runs (tools/embed.py's generate): the same bytes as build/gen/py_embed.c."""
    spec = importlib.util.spec_from_file_location("kad_embed", os.path.join(REPO, "tools", "embed.py"))
    embed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(embed)
    with open(out, "w", encoding="utf-8") as f:
        f.write(embed.generate(REPO))


def compile_kad(tmp, lib, cli):
    """Compiles src/**/*.c (a folder per stage) and the embedded Python helpers (embed_helpers)
    once into objects under tmp, then links the library lib (every object but main.c's) and the
    command line cli (all of them)."""
    srcs = sorted(glob.glob(os.path.join(REPO, "src", "**", "*.c"), recursive=True))
    if not any(os.path.basename(p) == "main.c" for p in srcs):
        raise RuntimeError(f"no C sources under {REPO}/src: build the package from a kad checkout")
    srcs.append(os.path.join(tmp, "py_embed.c"))
    embed_helpers(srcs[-1])
    cc = shlex.split(os.environ.get("CC", "cc"))
    flags = ["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-DKAD_CHECKED", "-D_POSIX_C_SOURCE=200809L",
             "-I" + os.path.join(REPO, "src")]
    # objects named by the source's path under src/ (two folders may hold files of one name)
    def obj(p):
        rel = os.path.relpath(p, os.path.join(REPO, "src")) if p.startswith(REPO) else os.path.basename(p)
        return os.path.join(tmp, rel[:-2].replace(os.sep, "__") + ".o")
    objs = {p: obj(p) for p in srcs}

    def run(cmd):
        print(" ".join(cmd), flush=True)
        subprocess.check_call(cmd)

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(run, [cc + flags + ["-c", p, "-o", o] for p, o in objs.items()]))
    for out in (lib, cli):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    lib_objs = [o for p, o in objs.items() if os.path.basename(p) != "main.c"]
    run(cc + ["-shared", *lib_objs, "-lm", "-o", lib])
    run(cc + list(objs.values()) + ["-lm", "-o", cli])
    os.chmod(cli, 0o755)


# The libraries PEP 600 lets a manylinux wheel assume (those libkad can need).
MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libgcc_s.so.1",
                  "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}


def platform_tag(files):
    """The wheel's platform tag for the built library and program `files` (see the module docstring)."""
    plain = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    readelf = shutil.which("readelf")
    if not plain.startswith("linux_") or readelf is None:
        return plain
    glibc = [(2, 17)]
    for f in files:
        dyn = subprocess.run([readelf, "-d", f], capture_output=True, text=True, check=True).stdout
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn))
        if not needed <= MANYLINUX_LIBS:
            return plain
        syms = subprocess.run([readelf, "-V", f], capture_output=True, text=True, check=True).stdout
        found = [tuple(int(x) for x in m) for m in re.findall(r"GLIBC_(\d+)\.(\d+)", syms)]
        if not found:  # not glibc (musl): no manylinux tag
            return plain
        glibc += found
    major, minor = max(glibc)
    return f"manylinux_{major}_{minor}_{platform.machine()}"


# Where the built files lie in the package (kad/__main__.py and kad/_capi.py look for them there).
LIB = os.path.join("kad", "libkad.so")
CLI = os.path.join("kad", "bin", "kad")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        with tempfile.TemporaryDirectory(prefix="kad-objs-") as tmp:  # (two builds at once never share one)
            compile_kad(tmp, os.path.join(self.build_lib, LIB), os.path.join(self.build_lib, CLI))


class BdistWheel(bdist_wheel):
    """Tags the wheel py3-none-PLATFORM (see the module docstring)."""

    def get_tag(self):
        root = self.bdist_dir if self.bdist_dir and os.path.exists(os.path.join(self.bdist_dir, LIB)) else \
            self.get_finalized_command("build_py").build_lib
        return "py3", "none", platform_tag([os.path.join(root, LIB), os.path.join(root, CLI)])


class BinaryDistribution(Distribution):
    """The wheel holds a shared library and a program: mark it platform-specific."""

    def has_ext_modules(self):
        return True


# Keep setuptools' metadata folder under build/ (ignored by git), not beside the package.
os.makedirs(os.path.join(HERE, "build"), exist_ok=True)
setup(version=kad_version(), cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": BdistWheel}, distclass=BinaryDistribution,
      options={"egg_info": {"egg_base": "build"}})
