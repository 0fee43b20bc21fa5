"""A helper with an error, defined inside a module-level if: kad reports it
at this file's line (the marker below)."""
import os

import triton
import triton.language as tl

if os.environ.get("LIVEPKG_BAD", "1") == "1":
    @triton.jit
    def broken(x):
        y = x * 2.0
        return tl.exp(y, y, y)  # LIVEPKG-ERROR-HERE
