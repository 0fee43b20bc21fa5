# Its backward: plain stores under the flag the launcher computes from the grid (one program per
# element block), else atomicAdd; the input gradient zero-filled first.
# RUN: grad tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256' --wrt x_ptr --out y_ptr --emit cuda
