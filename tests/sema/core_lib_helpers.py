# A module of helpers used by core_import_helper.py through --include; its
# own small kernel keeps it a test too.
# RUN: ir %s:lib_kernel --sig 'x_ptr=*fp32,BLOCK=8'
# ROUNDTRIP
import triton
import triton.language as tl

LIB_FACTOR = 4


@triton.jit
def lib_scale(x):
    return x * LIB_FACTOR


@triton.jit
def lib_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, lib_scale(tl.load(x_ptr + offs)))
