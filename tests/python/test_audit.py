"""kad.audit / Kernel.audit (kad_audit): float atomics and batch-variant
accumulation loops, located in this file (docs/AD.md, "Determinism audit")."""
import inspect

import torch
import triton
import triton.language as tl

import kad


@triton.jit
def row_mean(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row < n_rows:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_ptr + row, tl.sum(acc, axis=0) / n_cols)


@triton.jit
def split_mean(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(y_ptr + row, tl.sum(x, axis=0) / n_cols)  # AUDIT: split


@triton.jit
def persistent_mean(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):  # AUDIT: loop
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + tl.program_id(0), tl.sum(acc, axis=0) / n_cols)


@triton.jit
def add_into(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)  # AUDIT: distinct


def where(fn, tag):
    """file:line of the line of fn's source marked `# AUDIT: tag`."""
    lines, first = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if f"# AUDIT: {tag}" in line:
            return f"{fn.fn.__code__.co_filename}:{first + i}:"
    raise AssertionError(tag)


def test_row_mean_clean():
    x, y = torch.randn(4, 100), torch.empty(4)
    rep = kad.audit(row_mean, (4,), x, y, 4, 100, x.stride(0), BLOCK=32)
    assert rep.clean and rep.findings == []
    assert "row_mean: clean" in str(rep)


def test_split_mean_nondeterministic():
    x, y = torch.randn(4, 100), torch.zeros(4)
    rep = kad.audit(split_mean, (4, 4), x, y, 100, x.stride(0), BLOCK=32)
    assert not rep.clean
    assert [f.kind for f in rep.findings] == ["nondeterministic"]
    f = rep.findings[0]
    assert (f.where + ":").startswith(where(split_mean, "split")), (f.where, where(split_mean, "split"))
    assert "tl.program_id(1)" in f.message and "y_ptr" in f.message
    assert "1 nondeterministic, 0 batch-variant" in str(rep)


def test_persistent_batch_variant():
    x, y = torch.randn(6, 32), torch.empty(2)
    rep = kad.audit(persistent_mean, (2,), x, y, 6, 32, x.stride(0), BLOCK=32)
    assert [f.kind for f in rep.findings] == ["batch-variant"]
    assert (rep.findings[0].where + ":").startswith(where(persistent_mean, "loop"))
    assert "tl.num_programs" in rep.findings[0].message


def test_distinct_atomic_is_a_note():
    x, out = torch.randn(100), torch.zeros(100)
    rep = kad.audit(add_into, (4,), x, out, 100, BLOCK=32)
    assert rep.clean
    assert [f.kind for f in rep.findings] == ["note"]
    assert (rep.findings[0].where + ":").startswith(where(add_into, "distinct"))
    assert "distinct" in rep.findings[0].message


def test_differentiable_kernel_and_backward():
    # a decorated kernel audits like the plain one; the backward of a kernel
    # whose programs all read one weight: with atomics (deterministic=False)
    # d_w is nondeterministic; by default the grid is folded, and the audit
    # finds no atomic on d_w, only the fold loop, whose order of sums
    # depends on the grid (batch-variant: d_w sums every row)
    dk = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(row_mean)
    x, y = torch.randn(4, 100), torch.empty(4)
    assert kad.audit(dk, (4,), x, y, 4, 100, x.stride(0), BLOCK=32).clean
    ctx = kad.Context()
    ctx.add_source("scale.py", SCALE)
    k = ctx.specialize("scale_rows", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=64")
    assert "scale_rows: clean" in k.audit()
    bw = k.grad(["x_ptr", "w_ptr"], ["y_ptr"], deterministic=False).audit()
    assert "scale.py:7:" in bw and "nondeterministic: atomic_add of fp32 into d_w_ptr" in bw, bw
    det = k.grad(["x_ptr", "w_ptr"], ["y_ptr"]).audit()
    assert "into d_w_ptr" not in det and "scale_rows_bwd: 0 nondeterministic, 1 batch-variant" in det, det
    assert "scale.py:4:1: batch-variant: for loop accumulating floats" in det, det


SCALE = """\
import triton
import triton.language as tl
@triton.jit
def scale_rows(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    w = tl.load(w_ptr + cols, mask=cols < n_cols)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(y_ptr + row * n_cols + cols, x * w, mask=cols < n_cols)
"""
