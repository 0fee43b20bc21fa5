# Kernels of the test package tests/pkgs/kadpkg (its root is inferred from the
# __init__.py files): relative imports, constants (plain, tl.constexpr, dtype,
# str, bool, None), aliases of tl/libdevice functions, a kernel made by
# triton.jit(f), by heuristics/autotune calls, and one under an unknown
# wrapper decorator.
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:rel_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=64'
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:call_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=32'
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:_plain_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=32'
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:heur_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=32'
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:tuned_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=32'
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:wrapped_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=32'
