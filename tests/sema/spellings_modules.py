# One builtin per Triton function whatever module spells it (triton.language.core, .standard,
# .math, libdevice's import paths, module-level aliases), and the type attributes casts use
# (x.type as a block type, a block pointer's dtype.element_ty).
# RUN: ir %s:spell_kernel --sig 'x_ptr=*fp32,out_ptr=*fp16,BLOCK=32'
# RUN: ir %s:bptr_kernel --sig 'x_ptr=*fp32,out_ptr=*bf16,M=i32,BM=8'
import triton
import triton.language as tl
import triton.language as language
import triton.language.extra.cuda.libdevice as ld
from triton.language import core, standard
from triton.language import exp as texp
from triton.language.core import cast
from triton.language.extra import libdevice

tl_exp = tl.exp


@triton.jit
def spell_kernel(x_ptr, out_ptr, BLOCK: core.constexpr):
    offs = core.arange(0, BLOCK)
    x = cast(core.load(x_ptr + offs), tl.float32)
    a = texp(x) + tl_exp(x) + language.math.exp(x) + standard.math.exp(x)
    b = ld.tanh(x) + libdevice.tanh(x) + tl.extra.libdevice.tanh(x)
    s = standard.sum(a, axis=0) + standard.max(b, 0)
    y = standard.softmax(a) + s + tl.zeros(x.shape, x.type.scalar)
    core.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty).to(x.type))


@triton.jit
def bptr_kernel(x_ptr, out_ptr, M, BM: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (BM,), (0,))
    ob = tl.make_block_ptr(out_ptr, (M,), (1,), (0,), (BM,), (0,))
    x = tl.load(xb, boundary_check=(0,))
    tl.store(ob, x.to(ob.dtype.element_ty), boundary_check=(0,))
