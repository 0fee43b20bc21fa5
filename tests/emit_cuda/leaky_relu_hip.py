# HIP spelling: hip_runtime.h, __hip_bfloat16 (__float2bfloat16, which rounds to nearest even),
# hipLaunchKernelGGL, hipMemsetAsync (not compiled here: no hipcc).
# RUN: grad tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256' --wrt x_ptr --out y_ptr --emit hip
# RUN: emit tests/emit_cuda/cast_where.py:cast_where --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,alpha=fp32,BLOCK=128' --emit hip
