# RUN: grad tests/kernels/save_loops.py:row_dot_bf16 --ir --save-forward --sig 'x_ptr=*bf16,w_ptr=*bf16,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# ROUNDTRIP
# The saving forward (docs/AD.md, "Saved loop results") of row_dot_bf16 in tests/kernels/save_loops.py:
# the kernel plus the kad_saved parameter and, after the loop, a store of the results the rest reads
# (a bf16 tile, widened to fp32, then a scalar: the slot's offsets 0 and 16) into this program's slot
# of 17 elements, at program * 17 with program = pid0 + G0 * (pid1 + G1 * pid2).
