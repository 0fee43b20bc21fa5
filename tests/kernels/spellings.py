"""Every spelling of a Triton function that Triton 3.6 accepts (issue 33, item 2), and the type
attributes kernels cast with before a store (item 3): each kernel also runs under Triton itself
(TRITON_INTERPRET=1 or a GPU), so a spelling here is one Triton resolves to the same function.

- aliases of the modules: `triton.language.core`, `.standard`, `.math`, `.random` (their names
  shared with triton.language), the modules they import (`standard.math`), `triton.language as
  language`, names imported under other names (`exp as texp`), module-level bindings
  (`tl_exp = tl.exp`);
- libdevice through every import path: `triton.language.extra.libdevice`,
  `triton.language.extra.cuda.libdevice`, `import ... as ld`, `tl.extra.cuda.libdevice`;
- a helper's `tl.constexpr` parameter given a tensor or a runtime scalar (a plain value there:
  Triton's annotations bind only at a kernel's own signature);
- `p.dtype.element_ty`, `p.type.element_ty`, `p.type.scalar.element_ty`, `x.dtype`, `x.type`,
  `x.type.scalar`, `x.shape` (in tl.reshape and tl.zeros) of values, pointer tiles and block
  pointers.
"""
import triton
import triton.language as tl
import triton.language as language
import triton.language.core as tcore
import triton.language.extra.cuda.libdevice as ld
import triton.language.extra.libdevice as xld
from triton.language import core
from triton.language import math as tmath
from triton.language import standard
from triton.language import exp as texp
from triton.language.core import cast
from triton.language.core import where as core_where
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cld
from triton.language.standard import sum as ssum

tl_exp = tl.exp
ld_tanh = ld.tanh
std_max = standard.max


@triton.jit
def core_spelled(x_ptr, out_ptr, n, BLOCK: core.constexpr):
    # out = exp(x) + sin(x) + max(x, 0) + where(x > 0, x * x, -x) + sqrt(x * x + 1) + 2 min(x, 0)
    offs = core.program_id(0) * BLOCK + core.arange(0, BLOCK)
    mask = offs < n
    x = core.load(x_ptr + offs, mask=mask, other=0.0)
    x = cast(core.cast(x, core.float64), tl.float32)
    y = texp(x) * 0.5 + tl_exp(x) * 0.25 + language.exp(x) * 0.25 + language.sin(x)
    y += core.maximum(x, 0.0) + core_where(x > 0, x * x, -x) + tmath.sqrt(x * x + 1.0)
    y += tcore.minimum(x, 0.0) - standard.math.abs(tcore.minimum(x, 0.0))
    core.store(out_ptr + offs, y, mask=mask)


@triton.jit
def libdevice_spelled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out = 2 tanh(x) + log1p(x*x) + expm1(x) + erf(x) + atan(x) + tanh(x)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = ld.tanh(x) + ld_tanh(x) + cld.log1p(x * x) + xld.expm1(x) + libdevice.erf(x)
    y += tl.extra.cuda.libdevice.atan(x) + tl.extra.libdevice.tanh(x)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def standard_spelled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # one row per program: out = softmax(x) + sum(x) / n + max(x)
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=-float("inf"))
    sm = standard.softmax(x)
    xz = tl.where(mask, x, 0.0)
    y = sm + standard.sum(xz, axis=0) / n + ssum(xz, 0) * 0.0 + std_max(x, axis=0)
    y += standard.max(x, 0) * 0.0 + tl.standard.sum(xz, 0) * 0.0
    tl.store(out_ptr + row * n + offs, y, mask=mask)


@triton.jit
def scale(x, s: tl.constexpr):
    return x * s


@triton.jit
def helper_constexpr_spelled(x_ptr, out_ptr, n, w, BLOCK: tl.constexpr):
    # out = x * x + x * w + 2 x: a tl.constexpr parameter of a helper given a tensor, a runtime
    # scalar and a constant
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = scale(x, x) + scale(x, w) + scale(x, 2.0)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def attrs_spelled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out = 3 x + 1 (through every cast spelling; out_ptr may be fp16 or fp32)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    z = tl.zeros(x.shape, x.dtype) + tl.zeros(x.shape, dtype=x.type.scalar) + tl.full(x.type.shape, 1.0, x.dtype)
    r = tl.reshape(x, x.shape) + tl.reshape(x, (x.shape[0],)).to(x.type)
    ptrs = out_ptr + offs
    a = (x.to(out_ptr.dtype.element_ty) + x.to(out_ptr.type.element_ty)).to(tl.float32)
    y = (a + r) * 0.5 + x + z
    tl.static_assert(x.type.numel == BLOCK)
    tl.static_assert(x.type.is_block() and not x.dtype.is_block())
    tl.store(ptrs, y.to(ptrs.dtype.element_ty).to(ptrs.type.scalar.element_ty), mask=mask)


@triton.jit
def block_ptr_attrs_spelled(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # out = 2 x on 2-D tiles through block pointers, cast with the block pointer's types
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    ob = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    x = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
    z = tl.zeros(ob.type.element_ty.shape, dtype=ob.dtype.element_ty.element_ty)
    y = tl.reshape(x * 2.0 + z, (x.shape[0], x.shape[1]))
    tl.store(ob, y.to(ob.dtype.element_ty), boundary_check=(0, 1))
