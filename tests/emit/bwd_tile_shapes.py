# RUN: grad %s:lookup_sort --sig 'table_ptr=*fp16,ids_ptr=*i32,y_ptr=*fp16,n=i32,V=16,D=8,BLOCK=16' --wrt table_ptr --out y_ptr
# Backward module of an fp16 kernel using tl.split, tl.join, tl.flip, tl.gather and tl.sort: the
# gather's adjoint is a one-hot compare and a sum (no atomics; its cost is in the header), the
# sort's a gather of the output gradient by each input's stable rank, split and join are each
# other's adjoints, flip is its own.
import triton
import triton.language as tl


@triton.jit
def lookup_sort(table_ptr, ids_ptr, y_ptr, n, V: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    table = tl.load(table_ptr + tl.arange(0, V)[:, None] * D + cols[None, :]).to(tl.float32)
    ids = tl.load(ids_ptr + r, mask=r < n, other=0)
    e = tl.gather(table, tl.broadcast_to(ids[:, None], (BLOCK, D)), 0)
    a, b = tl.split(tl.reshape(e, (BLOCK, D // 2, 2)))
    e = tl.reshape(tl.join(tl.flip(b, 1), a * a), (BLOCK, D))
    y = tl.sort(e, descending=True)
    tl.store(y_ptr + r[:, None] * D + cols[None, :], y.to(tl.float16), mask=(r < n)[:, None])
