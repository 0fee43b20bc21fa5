# The row softmax's backward: two lane-axis reductions of the forward (max, sum) and one of the
# reverse sweep (the sum of dy * y), each a block reduction in a fixed order; plain stores when
# the rows are disjoint for the launch (the flag's condition, printed in C in the launcher).
# RUN: grad tests/kernels/softmax.py:softmax_kernel --sig 'output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,output_row_stride=i32,n_cols=i32,BLOCK_SIZE=128' --wrt input_ptr --out output_ptr --emit cuda
