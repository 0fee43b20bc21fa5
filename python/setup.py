"""Builds kad's C library into the package.

The library is the repository's src/*.c (all but the CLI's main.c), compiled
with the Makefile's flags into kad/libkad.so, which kad/_capi.py loads when
it sits beside it.  Only a C11 compiler and libm are needed ($CC, default
cc).  The sources are read from ../src, so build from a checkout:
`pip install ./python`.

The wheel is tagged py3-none-PLATFORM: its Python code is pure (the library
is loaded with ctypes, not as an extension module), so one wheel serves every
Python version, but it holds a shared library, so it is platform-specific.
On glibc Linux the platform is manylinux_X_Y_ARCH where X.Y is the newest
glibc symbol version the built library needs (at least 2.17), provided it
links only against libraries every manylinux system has (libc, libm): what
auditwheel would check.  Elsewhere, or without readelf, the plain platform
tag (linux_x86_64) is used, which a registry such as PyPI refuses.
"""
import glob
import os
import platform
import re
import shlex
import shutil
import subprocess
import sysconfig

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


def compile_library(out):
    srcs = sorted(p for p in glob.glob(os.path.join(REPO, "src", "*.c")) if os.path.basename(p) != "main.c")
    if not srcs:
        raise RuntimeError(f"no C sources under {REPO}/src: build the package from a kad checkout")
    cc = shlex.split(os.environ.get("CC", "cc"))
    cmd = cc + ["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-shared", "-DKAD_CHECKED", "-D_POSIX_C_SOURCE=200809L",
                *srcs, "-lm", "-o", out]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    print(" ".join(cmd))
    subprocess.check_call(cmd)


# The libraries PEP 600 lets a manylinux wheel assume (those libkad can need).
MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libgcc_s.so.1",
                  "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}


def platform_tag(lib):
    """The wheel's platform tag for the built library `lib` (see the module docstring)."""
    plain = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    readelf = shutil.which("readelf")
    if not plain.startswith("linux_") or readelf is None:
        return plain
    dyn = subprocess.run([readelf, "-d", lib], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn))
    if not needed <= MANYLINUX_LIBS:
        return plain
    syms = subprocess.run([readelf, "-V", lib], capture_output=True, text=True, check=True).stdout
    glibc = [tuple(int(x) for x in m) for m in re.findall(r"GLIBC_(\d+)\.(\d+)", syms)]
    if not glibc:  # not glibc (musl): no manylinux tag
        return plain
    major, minor = max(glibc + [(2, 17)])
    return f"manylinux_{major}_{minor}_{platform.machine()}"


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        compile_library(os.path.join(self.build_lib, "kad", "libkad.so"))


class BdistWheel(bdist_wheel):
    """Tags the wheel py3-none-PLATFORM (see the module docstring)."""

    def get_tag(self):
        lib = os.path.join(self.bdist_dir, "kad", "libkad.so") if self.bdist_dir else ""
        if not os.path.exists(lib):
            lib = os.path.join(self.get_finalized_command("build_py").build_lib, "kad", "libkad.so")
        return "py3", "none", platform_tag(lib)


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: mark it platform-specific."""

    def has_ext_modules(self):
        return True


# Keep setuptools' metadata folder under build/ (ignored by git), not beside the package.
os.makedirs(os.path.join(HERE, "build"), exist_ok=True)
setup(version=kad_version(), cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": BdistWheel}, distclass=BinaryDistribution,
      options={"egg_info": {"egg_base": "build"}})
