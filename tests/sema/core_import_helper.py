# `from other_module import helper` resolves to a @triton.jit function of an
# --include'd source; the helper reads its own module's globals.
# RUN: ir %s:user_kernel --sig 'x_ptr=*fp32,BLOCK=8' --include tests/sema/core_lib_helpers.py
# ROUNDTRIP
import triton
import triton.language as tl
from core_lib_helpers import lib_scale


@triton.jit
def user_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, lib_scale(tl.load(x_ptr + offs)) + 1.0)
