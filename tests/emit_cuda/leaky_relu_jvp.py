# The forward-mode derivative: outputs and tangents in one kernel, no zero-fill.
# RUN: jvp tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256' --wrt x_ptr --out y_ptr --emit cuda
