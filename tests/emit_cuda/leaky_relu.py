# A Triton kernel with one BLOCK-wide 1-D tile per program as a CUDA C kernel: 256 threads a block.
# RUN: emit tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256' --emit cuda
