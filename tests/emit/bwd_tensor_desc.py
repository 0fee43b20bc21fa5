# RUN: emit tests/kernels/tensor_desc.py:desc_chunked --sig 'x_ptr=*fp16,w_ptr=*fp16,y_ptr=*fp32,M=i32,N=i32,stride_x=i64,stride_y=i64,BLOCK_M=16,BLOCK_N=16'
# RUN: grad tests/kernels/tensor_desc.py:desc_swish_tile --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride=i32,BLOCK_M=8,BLOCK_N=8' --wrt x_ptr --out y_ptr
# RUN: grad tests/kernels/tensor_desc_host.py:host_desc_swish_tile --sig 'x_desc=tensordesc<fp32[8, 8]>,y_desc=tensordesc<fp32[8, 8]>,BLOCK_M=8,BLOCK_N=8' --wrt x_desc --out y_desc
# Tensor descriptor accesses print as TMA: the forward (kad emit) makes each descriptor once at the
# top of the kernel (tl.make_tensor_descriptor from the base, shape and strides) and loads and
# stores through it (desc.load / desc.store); the backward's recomputation loads the same way,
# and a plain adjoint store (each element of x read once) stores the gradient through a
# descriptor of d_x under the constexpr TMA_d_x (default False: the pointer store), which the
# launcher sets when d_x's base is 16-byte aligned; the launcher sets Triton's allocator
# (global scratch for in-kernel descriptors) on a GPU when none is set. Host-side descriptors
# (TensorDescriptor parameters, expanded) are rebuilt in the kernel from their parameters.
