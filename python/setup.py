"""Builds kad's C library into the package.

The library is the repository's src/*.c (all but the CLI's main.c), compiled
with the Makefile's flags into kad/libkad.so, which kad/_capi.py loads when
it sits beside it.  Only a C11 compiler and libm are needed ($CC, default
cc).  The sources are read from ../src, so build from a checkout:
`pip install ./python`.
"""
import glob
import os
import re
import shlex
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

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


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        compile_library(os.path.join(self.build_lib, "kad", "libkad.so"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: mark it platform-specific."""

    def has_ext_modules(self):
        return True


# Keep setuptools' metadata folder under build/ (ignored by git), not beside the package.
os.makedirs(os.path.join(HERE, "build"), exist_ok=True)
setup(version=kad_version(), cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution,
      options={"egg_info": {"egg_base": "build"}})
