"""Cross-entropy forward over a large vocabulary, one row (token) per program.

loss[row] = logsumexp(logits[row]) - logits[row, label[row]]

The vocabulary is swept in BLOCK_SIZE chunks with an online log-sum-exp (a
running max m and a running sum s of exp(x - m)), so rows of any width fit.
lse is stored for the backward pass.  Rows whose label is ignore_index get a
zero loss; their logits are still read for lse.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def cross_entropy_fwd_kernel(
    logits_ptr,
    labels_ptr,
    loss_ptr,
    lse_ptr,
    logits_row_stride,
    n_cols,
    ignore_index,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    logits_ptr += row * logits_row_stride
    label = tl.load(labels_ptr + row)

    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(logits_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        # Rescale the old sum to the new max before adding this block.
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    tl.store(lse_ptr + row, lse)

    if label == ignore_index:
        tl.store(loss_ptr + row, 0.0)
    else:
        # Gather the target logit straight from memory.
        target = tl.load(logits_ptr + label).to(tl.float32)
        tl.store(loss_ptr + row, lse - target)


def cross_entropy_forward(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100):
    n_rows, n_cols = logits.shape
    loss = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    lse = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    BLOCK_SIZE = min(32768, triton.next_power_of_2(n_cols))
    cross_entropy_fwd_kernel[(n_rows,)](
        logits, labels, loss, lse, logits.stride(0), n_cols, ignore_index,
        BLOCK_SIZE=BLOCK_SIZE, num_warps=32,
    )
    return loss, lse
