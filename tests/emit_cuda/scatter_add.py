# The shared-memory tree softmax's backward: each step of the tree reads red[tid + s], a gather
# along the lanes, whose adjoint is a scatter-add (a one-hot sum over a [8, 8] tile in the IR),
# printed as kad_block_scatter_add: one owner per target when the lanes that add a nonzero value
# target distinct lanes, else an ordered sum over the lanes; no atomics either way.
# RUN: grad tests/cuda/softmax_rows.cu:softmax_rows --sig BLOCK=8 --block 8 --wrt x --out y --emit cuda
