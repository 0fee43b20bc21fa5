"""pytest setup for tests/gpu: the same import paths as tests/python/conftest.py (the kad package
from python/ of this checkout, the shared case tables of tests/python), so that a GPU suite runs
on its own as well as after tests/python's files."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests", "python")):
    if p not in sys.path:
        sys.path.insert(0, p)
