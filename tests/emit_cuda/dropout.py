# Philox random numbers as tl.rand: the prelude's kad_philox (counter (offset, 0, 0, 0), the seed
# as the key), so the dropout mask of the CUDA C kernel is the Triton kernel's, bit for bit; the
# backward regenerates it from the seed.
# RUN: emit tests/kernels/dropout.py:seeded_dropout_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n_elements=i32,p=fp32,seed=i32,BLOCK_SIZE=128' --emit cuda
# RUN: grad tests/kernels/dropout.py:seeded_dropout_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n_elements=i32,p=fp32,seed=i32,BLOCK_SIZE=128' --wrt x_ptr --out out_ptr --emit cuda
