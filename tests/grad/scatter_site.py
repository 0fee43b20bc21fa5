# Scattered sites (docs/AD.md, "Scattered sites"): an input read densely (each element by one
# program: plain stores) and at an index loaded from memory (kad cannot tell where it lands).
# The backward stores the dense part and a second kernel, `<kernel>_bwd_scatter_<x>`, adds the
# scattered part with atomic_add after it, instead of atomics everywhere.
#   ce_rows:   cross-entropy rows (online log-sum-exp, the target logit at a loaded label);
#   pick_any:  the index is not relative to the row, and the programs' indices collide (labels in
#              [0, 3] for 5 programs), so several programs add into one element;
#   two_loops: the dense sites are two loops over the row (private read-modify-writes);
#   loop_pick: the scattered site inside the row loop, its index anywhere in the rows;
#   two_inputs: two inputs, each with a scattered site: a scatter kernel each.
# Checked against float64 finite differences, then the module (the launcher runs both kernels).
# RUN: check %s:ce_rows --sig 'x_ptr=*fp32,lab_ptr=*i64,loss_ptr=*fp32,stride=i32,V=i32,ignore=i32,BLOCK=16' --wrt x_ptr --out loss_ptr --grid 4 --shape x_ptr=4x40 --shape lab_ptr=4 --shape loss_ptr=4 --range lab_ptr=0:39 --arg stride=40 --arg V=37 --arg ignore=-100
# RUN: check %s:ce_rows --sig 'x_ptr=*fp32,lab_ptr=*i64,loss_ptr=*fp32,stride=i32,V=i32,ignore=i32,BLOCK=16' --wrt x_ptr --out loss_ptr --grid 4 --shape x_ptr=4x40 --shape lab_ptr=4 --shape loss_ptr=4 --range lab_ptr=0:2 --arg stride=40 --arg V=37 --arg ignore=1
# RUN: check %s:pick_any --sig 'x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,n=i32,BLOCK=32' --wrt x_ptr --out y_ptr --grid 5 --shape x_ptr=160 --shape idx_ptr=5 --shape y_ptr=160 --range idx_ptr=0:3 --arg n=150
# RUN: check %s:two_loops --sig 'x_ptr=*fp32,lab_ptr=*i32,y_ptr=*fp32,stride=i32,N=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x20 --shape lab_ptr=3 --shape y_ptr=3x20 --range lab_ptr=0:19 --arg stride=20 --arg N=19
# RUN: check %s:loop_pick --sig 'x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,stride=i32,N=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x30 --shape idx_ptr=12 --shape y_ptr=3 --range idx_ptr=0:29 --arg stride=30 --arg N=30
# RUN: check %s:two_inputs --sig 'x_ptr=*fp32,w_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr --grid 4 --shape x_ptr=4x13 --shape w_ptr=4x13 --shape idx_ptr=4 --shape y_ptr=4x13 --range idx_ptr=0:51 --arg N=13
# RUN: grad %s:ce_rows --sig 'x_ptr=*fp32,lab_ptr=*i64,loss_ptr=*fp32,stride=i32,V=i32,ignore=i32,BLOCK=16' --wrt x_ptr --out loss_ptr
import triton
import triton.language as tl


@triton.jit
def ce_rows(x_ptr, lab_ptr, loss_ptr, stride, V, ignore, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    lab = tl.load(lab_ptr + row)
    m = float("-inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < V, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    if lab == ignore:
        tl.store(loss_ptr + row, 0.0)
    else:
        tl.store(loss_ptr + row, lse - tl.load(x_ptr + lab))


@triton.jit
def pick_any(x_ptr, idx_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    i = tl.load(idx_ptr + pid)
    w = tl.load(x_ptr + i)
    tl.store(y_ptr + offs, x * x * w, mask=offs < n)


@triton.jit
def two_loops(x_ptr, lab_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    t = tl.load(x_ptr + tl.load(lab_ptr + row))
    mean = tl.sum(acc, axis=0) / N + t * t
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + cols, tl.sin(x) * mean, mask=cols < N)


@triton.jit
def loop_pick(x_ptr, idx_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    acc = 0.0
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        j = tl.load(idx_ptr + row * 4 + start // BLOCK)
        acc += tl.sum(x * x, axis=0) * tl.load(x_ptr + j)
    tl.store(y_ptr + row, acc)


@triton.jit
def two_inputs(x_ptr, w_ptr, idx_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    w = tl.load(w_ptr + row * N + cols, mask=cols < N, other=0.0)
    i = tl.load(idx_ptr + row)
    s = tl.load(x_ptr + i) + tl.load(w_ptr + i) * 2.0
    tl.store(y_ptr + row * N + cols, tl.sin(x) * w * s, mask=cols < N)
