"""Scans with tl.associative_scan and tl.cumprod.

linear_recurrence_kernel: h_t = a_t * h_{t-1} + b_t over the time axis of a
[BLOCK_T, BLOCK_D] tile (h_{-1} = 0), as linear RNN and state-space kernels
compute it: an associative scan on (a, b) pairs; REVERSE runs it from the last
time step to the first.  scan_add_kernel: a prefix sum written as an
associative scan with an `add` combine.  cumprod_kernel: tl.cumprod along rows.
running_max_kernel: a running maximum along rows; cummax_index_kernel: with its
index (the combine function selects with tl.where).  chunked_ssm_kernel: a
gated recurrence h_t = a_t * h_{t-1} + (1 - a_t) * x_t over time in chunks of CT
steps, each chunk an associative scan whose result is continued from the state
carried across chunks (the last row of the previous chunk).  scan_mul_kernel: a combine
function no special case of kad's recognizes (a product written by hand): the general scan rule.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def first_order(a1, b1, a2, b2):
    # (a1, b1) then (a2, b2): h -> a2 * (a1 * h + b1) + b2
    return a1 * a2, a2 * b1 + b2


@triton.jit
def add(x, y):
    return x + y


@triton.jit
def larger(x, y):
    return tl.maximum(x, y)


@triton.jit
def times(x, y):
    return x * y


@triton.jit
def linear_recurrence_kernel(a_ptr, b_ptr, h_ptr, T, D, stride_t,
                             BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr, REVERSE: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    d = pid * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (t[:, None] < T) & (d[None, :] < D)
    offs = t[:, None] * stride_t + d[None, :]
    # padding (a, b) = (1, 0) is the identity of the recurrence
    a = tl.load(a_ptr + offs, mask=mask, other=1.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=first_order, reverse=REVERSE)
    tl.store(h_ptr + offs, h, mask=mask)


@triton.jit
def scan_add_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    y = tl.associative_scan(x, 0, add, reverse=REVERSE)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=1.0)
    y = tl.cumprod(x, axis=0, reverse=REVERSE)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def running_max_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    y = tl.associative_scan(x, 0, larger)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def scan_mul_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=1.0)
    y = tl.associative_scan(x, 0, times)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def chunked_ssm_kernel(a_ptr, x_ptr, h_ptr, T, D, CT: tl.constexpr, BD: tl.constexpr):
    d = tl.program_id(0) * BD + tl.arange(0, BD)
    state = tl.zeros([BD], dtype=tl.float32)
    for c in range(0, tl.cdiv(T, CT)):
        t = c * CT + tl.arange(0, CT)
        m = (t[:, None] < T) & (d[None, :] < D)
        offs = t[:, None] * D + d[None, :]
        a = tl.load(a_ptr + offs, mask=m, other=1.0)
        b = tl.load(x_ptr + offs, mask=m, other=0.0) * (1.0 - a)
        A, h = tl.associative_scan((a, b), 0, first_order)
        h = h + A * state[None, :]  # continue from the previous chunk's last state
        tl.store(h_ptr + offs, h, mask=m)
        last = tl.arange(0, CT)[:, None] == CT - 1
        state = tl.sum(tl.where(last, h, 0.0), axis=0)


@triton.jit
def max_with_index(a_value, a_index, b_value, b_index):
    # the later index on ties, NaNs win and count as equal
    mask = a_value > b_value
    equal = a_value == b_value
    a_isnan = a_value != a_value
    b_isnan = b_value != b_value
    mask |= a_isnan and not b_isnan
    equal |= a_isnan and b_isnan
    mask |= equal & (a_index > b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def cummax_index_kernel(x_ptr, y_ptr, i_ptr, n_cols, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    # a running maximum with its index (a selection: differentiated through the index it selects)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    y, i = tl.associative_scan((x, cols), 0, max_with_index, reverse=REVERSE)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
    tl.store(i_ptr + row * n_cols + cols, i, mask=mask)


def linear_recurrence(a: torch.Tensor, b: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    T, D = a.shape
    h = torch.empty_like(b)
    BLOCK_D = 8
    grid = (triton.cdiv(D, BLOCK_D),)
    linear_recurrence_kernel[grid](a, b, h, T, D, a.stride(0), BLOCK_T=triton.next_power_of_2(T),
                                   BLOCK_D=BLOCK_D, REVERSE=reverse)
    return h
