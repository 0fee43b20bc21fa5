# tl.reduce with a combine function in forward mode: a reduce over dual numbers, as a scan is
# (tests/jvp/scans.py): each float slot gets a tangent slot and the combine region is
# differentiated in forward mode.  Welford's (mean, count, m2) combine and a sum; the dot-product
# and finite-difference checks of these kernels are in tests/python/test_jvp.py (corpus cases).
# RUN: jvp tests/kernels/reduce.py:reduce_sum_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: jvp tests/kernels/reduce.py:welford_kernel --sig 'x_ptr=*fp32,var_ptr=*fp32,mean_ptr=*fp32,M=i32,N=i32,correction=fp32,BLOCK_M=2,BLOCK_N=8' --wrt x_ptr --out var_ptr,mean_ptr --ir
