"""pytest setup for tests/python: import paths and a shared kernel cache.

The kad package is imported from python/ of this checkout (no install step);
the library it loads is build/libkad.so unless KAD_LIB says otherwise.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), HERE, os.path.join(REPO, "examples")):
    if p not in sys.path:
        sys.path.insert(0, p)
