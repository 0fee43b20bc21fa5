# Gradients of tl.reduce with a combine function against float64 finite differences
# (kernels: tests/kernels/reduce.py): Welford's (mean, count, M2) combine after a column
# loop (the general rule: the VJP of f(f(P_i, x_i), S_i) with P/S shifted scans), a sum
# combine (a broadcast), a maximum combine with keep_dims, a (value, index) selection, a
# streaming log-sum-exp along rows summed over all axes, the composition of affine maps (a
# non-commutative combine), the method forms x.reduce and x.associative_scan; one output of several differentiated (the slots without an
# adjoint: zero at the last lane); the last RUN prints the Welford backward's IR.
# RUN: check tests/kernels/reduce.py:welford_kernel --sig 'x_ptr=*fp32,var_ptr=*fp32,mean_ptr=*fp32,M=i32,N=i32,correction=fp32,BLOCK_M=2,BLOCK_N=8' --wrt x_ptr --out var_ptr,mean_ptr --grid 3 --shape x_ptr=5x19 --shape var_ptr=5 --shape mean_ptr=5 --arg M=5 --arg N=19 --arg correction=1.0
# RUN: check tests/kernels/reduce.py:reduce_sum_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x13 --shape y_ptr=3 --arg N=13
# RUN: check tests/kernels/reduce.py:reduce_max_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BLOCK_M=2,BLOCK_N=16' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=3x13 --shape y_ptr=3 --arg M=3 --arg N=13
# RUN: check tests/kernels/reduce.py:argmax_pair_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,i_ptr=*i32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x13 --shape y_ptr=3 --shape i_ptr=3 --arg N=13
# RUN: check tests/kernels/reduce.py:logsumexp_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BLOCK_M=4,BLOCK_N=8' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=3x7 --shape y_ptr=1 --arg M=3 --arg N=7
# RUN: check tests/kernels/reduce.py:affine_compose_kernel --sig 'a_ptr=*fp32,b_ptr=*fp32,A_ptr=*fp32,h_ptr=*fp32,T=i32,D=i32,BLOCK_T=16,BLOCK_D=4' --wrt a_ptr,b_ptr --out A_ptr,h_ptr --grid 1 --shape a_ptr=11x3 --shape b_ptr=11x3 --shape A_ptr=3 --shape h_ptr=3 --arg T=11 --arg D=3 --range a_ptr=0.5:1.3
# RUN: check tests/kernels/reduce.py:welford_kernel --sig 'x_ptr=*fp32,var_ptr=*fp32,mean_ptr=*fp32,M=i32,N=i32,correction=fp32,BLOCK_M=2,BLOCK_N=4' --wrt x_ptr --out var_ptr --grid 2 --shape x_ptr=3x11 --shape var_ptr=3 --shape mean_ptr=3 --arg M=3 --arg N=11 --arg correction=1.0
# RUN: check tests/kernels/reduce.py:affine_compose_kernel --sig 'a_ptr=*fp32,b_ptr=*fp32,A_ptr=*fp32,h_ptr=*fp32,T=i32,D=i32,BLOCK_T=16,BLOCK_D=4' --wrt a_ptr,b_ptr --out h_ptr --grid 1 --shape a_ptr=11x3 --shape b_ptr=11x3 --shape A_ptr=3 --shape h_ptr=3 --arg T=11 --arg D=3 --range a_ptr=0.5:1.3
# RUN: check tests/kernels/reduce.py:method_reduce_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,BLOCK_M=2,BLOCK_N=16' --wrt x_ptr --out y_ptr,c_ptr --grid 2 --shape x_ptr=3x13 --shape y_ptr=3 --shape c_ptr=3x13 --arg M=3 --arg N=13
# RUN: grad tests/kernels/reduce.py:welford_kernel --sig 'x_ptr=*fp32,var_ptr=*fp32,mean_ptr=*fp32,M=i32,N=i32,correction=fp32,BLOCK_M=2,BLOCK_N=8' --wrt x_ptr --out var_ptr,mean_ptr --ir
# ROUNDTRIP
