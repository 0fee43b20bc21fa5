# Forward mode has no tangent rule for tl.reduce with a combine function yet: a located refusal
# (reverse mode differentiates it: tests/grad/reduce.py).
# RUN: jvp tests/kernels/reduce.py:reduce_sum_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr
